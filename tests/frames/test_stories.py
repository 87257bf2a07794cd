"""stories(), story_records() and story_record_frame()."""

from __future__ import annotations

import pandas as pd
import pytest

from mediaframe.exceptions import MalformedItemError
from mediaframe.frames import records, stories, story_record_frame, story_records

from .conftest import parquet_round_trip


def items(payload):
    return payload("search_v1_stories")["response"]["results"]["stories"]


def test_one_row_per_story_with_dublin_core_columns(payload):
    df = stories(items(payload))
    assert df[["databox_id", "story_id"]].values.tolist() == [[1, 900], [1, 901]]
    assert df.loc[0, "dc:title"] == "Harbour"
    assert pd.isna(df.loc[0, "dc:contributor"])
    assert df.loc[1, "dc:audience"] == "public"  # an unknown metadata key is kept
    assert df.loc[1, "thumbnail_width"] == 160
    assert "@entity@" not in df.columns and "records" not in df.columns
    assert df["record_count"].dtype == "Int64"
    pd.testing.assert_frame_equal(parquet_round_trip(df), df)


def test_story_records_link_in_story_order(payload):
    df = story_records(items(payload))
    assert df.values.tolist() == [[1, 900, 0, 1, 101], [1, 900, 1, 1, 102], [1, 901, 0, 1, 101]]
    assert (df.dtypes == "Int64").all()


def test_story_record_frame_is_a_records_frame_with_each_record_once(payload):
    df = story_record_frame(items(payload))
    assert df[["databox_id", "record_id"]].values.tolist() == [[1, 101], [1, 102]]
    expected = records([story["records"][0] for story in items(payload)[:1]])
    assert list(df.columns) == list(expected.columns)
    assert df["ISO"].tolist() == [200, 100]


def test_empty_stories():
    assert stories([]).empty and story_records([]).empty and story_record_frame([]).empty


def test_a_bad_nested_record_is_named_by_its_story():
    bad = [{"databox_id": 1, "story_id": 5, "records": [{"databox_id": 1, "record_id": "x"}]}]
    with pytest.raises(
        MalformedItemError, match=r"story #0 \(databox_id=1, story_id=5\), record #0"
    ):
        story_record_frame(bad)
    with pytest.raises(MalformedItemError, match=r"story #0 .*'records' is not an array"):
        story_records([{"databox_id": 1, "story_id": 5, "records": {"a": 1}}])


def test_the_documented_access_to_colon_names_works(payload):
    """docs/metadata.md decides to keep ``dc:title`` and documents how to reach it: every line
    of that block runs on a stories frame and does what it says."""
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "metadata.md").read_text(encoding="utf-8")
    section = doc.split("## Column names such as `dc:title`", 1)[1]
    lines = section.split("```python\n", 1)[1].split("```", 1)[0].splitlines()
    frame = stories(items(payload))
    results = [eval(line.split("#")[0], {"stories": frame}) for line in lines if line.strip()]
    assert results[0].tolist() == frame["dc:title"].tolist()
    assert len(results[1]) == int((frame["dc:creator"] == "Anna Schmidt").sum())
    assert "dc_title" in results[2].columns and "dc:title" not in results[2].columns


def test_a_record_member_named_like_a_story_column_takes_no_ones_place():
    from mediaframe.frames import story_members

    record = {"databox_id": 1, "record_id": 7, "position": 5, "order": 42}
    df = story_members(
        [{"databox_id": 1, "story_id": 9, "records": [record, {"databox_id": 1, "record_id": 8}]}]
    )
    assert df["position"].tolist() == [0, 1]
    assert df["unknown_position"].tolist()[0] == 5
    assert df["order"].tolist()[0] == 42
