"""records() and concat_records() on golden payloads of current and old servers."""

from __future__ import annotations

import pandas as pd
import pytest

from mediaframe.exceptions import InvalidParameterError, MalformedItemError
from mediaframe.frames import concat_records, records
from mediaframe.frames.schema import FRAMES

from .conftest import parquet_round_trip

SCHEMA = FRAMES["records"]


def current(payload):
    return payload("search_v1_current")["response"]["results"]["records"]


def old(payload):
    return payload("search_v1_old")["response"]["results"]["records"]


def test_key_first_as_plain_columns_and_declared_dtypes(payload):
    df = records(current(payload))
    assert list(df.columns[:2]) == ["databox_id", "record_id"]
    assert isinstance(df.index, pd.RangeIndex)
    assert list(df.columns[: len(SCHEMA.columns)]) == list(SCHEMA.names)
    for name, dtype in SCHEMA.dtypes.items():
        assert df[name].dtype == dtype, name
    assert df[["databox_id", "record_id"]].values.tolist() == [[1, 101], [1, 102], [2, 101]]
    assert df["base_id"].tolist() == [2, 2, 4]


def test_dates_are_utc_normalised(payload):
    df = records(current(payload))
    assert df.loc[0, "created_on"] == pd.Timestamp("2023-10-30T17:02:11Z")
    assert str(df["created_on"].dt.tz) == "UTC"


def test_thumbnail_and_permalink_flattened_null_thumbnail_is_na(payload):
    df = records(current(payload))
    assert df.loc[0, "thumbnail_width"] == 240
    assert df.loc[0, "thumbnail_permalink_id"] == 5001
    assert df.loc[0, "thumbnail_permalink_is_activated"]
    assert df.loc[0, "thumbnail_devices"] == "screen"
    assert df.loc[2, "thumbnail_devices"] == ""  # an empty list is not a missing thumbnail
    assert df.loc[0, "thumbnail_url_ttl"] == 7200
    thumbnail = [c for c in df.columns if c.startswith("thumbnail_")]
    assert df.loc[1, thumbnail].isna().all()


def test_technical_values_pivoted_and_typed_over_the_whole_input(payload):
    df = records(current(payload))
    assert df["ISO"].dtype == "Int64"
    assert df["ISO"].tolist()[:2] == [200, 100]
    assert df["Aperture"].dtype == "Float64"  # 5 in one record, 2.8 in another
    assert df["Aperture"].tolist()[:2] == [5.0, 2.8]
    # a name of the contract's list has its declared dtype: the text "-3" is read as a number
    assert df["LightValue"].dtype == "Float64"
    assert df["LightValue"].tolist()[:2] == [-3.0, 12.0]
    assert df["CameraModel"].dtype == "string"
    assert pd.isna(df.loc[2, "ISO"])
    dynamic = list(df.columns[len(SCHEMA.columns) :])
    assert dynamic == sorted(dynamic)


def test_old_spellings_placeholders_and_unknown_members(payload):
    df = records(old(payload))
    assert df["media_type"].tolist() == ["image", "document"]  # from phrasea_type
    assert df.loc[0, "updated_on"] == pd.Timestamp("2013-05-02T12:11:09Z")  # from updated-on
    assert pd.isna(df.loc[0, "created_on"])  # -0001-11-30T00:00:00+00:09
    assert pd.isna(df.loc[0, "thumbnail_permalink_updated_on"])
    assert df["base_id"].isna().all()
    assert df.loc[0, "thumbnail_devices"] == "screen,handheld"
    # Unknown members are kept, typed by the rule.
    assert df["is_story"].dtype == "boolean"
    assert df["status_bits"].dtype == "string"
    assert df.loc[0, "thumbnail_cdn_hint"] == "edge-3"
    # A technical name equal to a record member is prefixed instead of overwriting it.
    assert df.loc[0, "title"] == "Paris rooftops"
    assert df.loc[0, "technical_title"] == "IMG_7"
    assert "updated-on" not in df.columns and "phrasea_type" not in df.columns


def test_empty_input_gives_declared_columns_and_dtypes():
    df = records([])
    # the declared columns, then the contract's technical names (always there), sorted
    assert list(df.columns) == [*SCHEMA.names, *sorted(SCHEMA.stable)]
    for name, dtype in {**SCHEMA.dtypes, **SCHEMA.stable}.items():
        assert df[name].dtype == dtype, name
    assert len(df) == 0


@pytest.mark.parametrize("name", ["search_v1_current", "search_v1_old"])
def test_parquet_round_trip_is_identical(payload, name):
    df = records(payload(name)["response"]["results"]["records"])
    pd.testing.assert_frame_equal(parquet_round_trip(df), df)


def test_all_null_category_columns_round_trip_through_parquet():
    df = records([{"databox_id": 1, "record_id": 2}])
    assert df["mime_type"].cat.categories.tolist() == [""]
    pd.testing.assert_frame_equal(parquet_round_trip(df), df)


def test_empty_frame_round_trips_except_for_unstorable_categories():
    # Without rows pyarrow stores no dictionary, so categories come back empty: the one
    # difference a zero-row frame cannot avoid.
    df = records([])
    back = parquet_round_trip(df)
    pd.testing.assert_frame_equal(back, df, check_dtype=False, check_categorical=False)
    assert back.dtypes.astype(str).tolist() == df.dtypes.astype(str).tolist()


def test_concat_equals_records_of_all_items(payload):
    items = current(payload) + old(payload)
    parts = [records(items[i : i + 2]) for i in range(0, len(items), 2)]
    pd.testing.assert_frame_equal(concat_records(parts), records(items))


def test_concat_retypes_a_column_a_later_page_widens():
    page1 = [_record(1, tech=[("ISO", 100), ("Mode", 1)])]
    page2 = [_record(2, tech=[("ISO", 2.5), ("Mode", "auto")]), _record(3)]
    whole = concat_records([records(page1), records(page2)])
    assert whole["ISO"].dtype == "Float64"
    assert whole["Mode"].tolist()[:2] == ["1", "auto"]
    pd.testing.assert_frame_equal(whole, records(page1 + page2))


def test_concat_of_nothing_is_the_empty_frame():
    pd.testing.assert_frame_equal(concat_records([]), records([]))


def test_concat_refuses_frames_not_built_by_records():
    with pytest.raises(InvalidParameterError, match=r"records\(\)"):
        concat_records([pd.DataFrame({"x": [1]})])


@pytest.mark.parametrize(
    ("items", "match"),
    [
        ("not a list", "expected a list of records"),
        ([_r := {"databox_id": 1, "record_id": 1}, 5], r"record #1 is int"),
        ([{"record_id": 3}], r"record #0 \(record_id=3\): member 'databox_id' is missing"),
        (
            [{"databox_id": 1, "record_id": "9"}],
            r"member 'record_id' is str '9', expected an integer",
        ),
        (
            [{"databox_id": 1, "record_id": 2, "title": 5}],
            r"member 'title' is int 5, expected a string",
        ),
        ([{"databox_id": 1, "record_id": 2, "thumbnail": "x"}], r"member 'thumbnail' is str"),
        (
            [{"databox_id": 1, "record_id": 2, "created_on": "last tuesday"}],
            r"'created_on' is 'last tuesday', not an ISO 8601",
        ),
        (
            [{"databox_id": 1, "record_id": 2, "technical_informations": {"ISO": 1}}],
            r"record #0 .*technical_informations' is not an array",
        ),
        (
            [_r, {"databox_id": 1, "record_id": 2, "technical_informations": [{"value": 1}]}],
            r"record #1 \(databox_id=1, record_id=2\): technical_informations\[0\] has no name",
        ),
        (
            [
                {
                    "databox_id": 1,
                    "record_id": 2,
                    "technical_informations": [{"name": 5, "value": 1}],
                }
            ],
            r"record #0 .*technical_informations name 5, expected",
        ),
        (
            [
                {
                    "databox_id": 1,
                    "record_id": 2,
                    "technical_informations": [{"name": "a", "value": []}],
                }
            ],
            r"record #0 .*technical_informations 'a' has value \[\]",
        ),
    ],
)
def test_malformed_items_are_named(items, match):
    with pytest.raises(MalformedItemError, match=match) as caught:
        records(items)
    assert not isinstance(caught.value.__cause__, KeyError)


def test_malformed_item_error_carries_the_index():
    with pytest.raises(MalformedItemError) as caught:
        records([_record(1), _record(2), {"databox_id": 1}])
    assert caught.value.item == 2


def _record(record_id, *, tech=()):
    return {
        "databox_id": 1,
        "record_id": record_id,
        "technical_informations": [{"name": n, "value": v} for n, v in tech],
    }


def test_records_restores_the_garbage_collector_state():
    import gc

    assert gc.isenabled()
    records([_record(1, tech=[("ISO", 1)])])
    assert gc.isenabled()
    gc.disable()
    try:
        records([_record(1)])
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(MalformedItemError):
        records([{"databox_id": 1, "record_id": "x"}])
    assert gc.isenabled()
