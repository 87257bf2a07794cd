"""v2_results(), facets(), suggestions() and search_info()."""

from __future__ import annotations

import pandas as pd
import pytest

from mediaframe.exceptions import MalformedItemError, MalformedItemWarning
from mediaframe.frames import facets, search_info, suggestions, v2_results

from .conftest import parquet_round_trip


def test_v2_results(payload):
    df = v2_results(payload("search_v2_current")["response"]["results"])
    assert df.values.tolist() == [[1, 101, 2, 1698912900], [2, 101, 1, 1705305600]]
    assert (df.dtypes == "Int64").all()


def test_facets_long_form_current_server(payload):
    df = facets(payload("search_v2_current")["response"]["facets"])
    assert list(df.columns[:6]) == ["facet", "field", "value", "raw_value", "count", "query"]
    assert df["facet"].tolist() == ["_base", "_base", "_iso", "Keywords"]
    assert df["facet"].dtype == "category" and df["value"].dtype == "string"
    assert df.loc[2, "raw_value"] == "200"  # a number rendered as text
    assert df.loc[3, "query"] == 'field.Keywords="sunset"'
    assert df["selected"].tolist()[3] is False  # unknown value member kept
    pd.testing.assert_frame_equal(parquet_round_trip(df), df)


def test_facets_of_old_servers_lack_field_and_raw_value(payload):
    df = facets(payload("search_v2_old")["response"]["facets"])
    assert df["facet"].tolist() == ["Type_Name", "Collection_Name"]
    assert df["field"].isna().all() and df["raw_value"].isna().all()
    pd.testing.assert_frame_equal(parquet_round_trip(df), df)


def test_an_unreadable_facet_count_is_missing_and_named():
    with pytest.warns(MalformedItemWarning, match=r"facet #0 \(name='_iso'\), value #1"):
        frame = facets(
            [{"name": "_iso", "values": [{"value": "1", "count": 1}, {"value": "2", "count": "x"}]}]
        )
    assert frame["count"].tolist()[0] == 1 and frame["count"].isna().tolist() == [False, True]


@pytest.mark.parametrize(
    ("name", "seconds"),
    [("search_v1_current", 0.012), ("search_v1_old", 0.0172), ("search_v2_current", 0.037)],
)
def test_search_info_normalises_query_time_to_seconds(payload, name, seconds):
    info = search_info(payload(name)["response"])
    assert info["query_time"] == pytest.approx(seconds)


def test_search_info_summary(payload):
    info = search_info(payload("search_v2_current")["response"])
    assert (info["total_results"], info["available_results"], info["result_count"]) == (57, 2, 2)
    assert info["search_type"] == 0 and info["facet_count"] == 3
    assert pd.isna(info["query"])  # v2 sends none
    info = search_info(payload("search_v1_current")["response"])
    assert info["query"] == "sunset" and info["suggestion_count"] == 1


def test_search_info_refuses_a_non_number_query_time():
    with pytest.raises(MalformedItemError, match="query_time"):
        search_info({"query_time": "12ms"})


def test_suggestions_old_and_new(payload):
    new = suggestions(payload("search_v1_current")["response"]["suggestions"])
    old = suggestions(payload("search_v1_old")["response"]["suggestions"])
    assert new.values.tolist() == [["sunsets", "sunsets", 4]]
    assert pd.isna(old.loc[0, "suggestion"]) and old.loc[0, "query"] == "paris"
