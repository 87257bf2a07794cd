"""technical_long() and its way back, technical_wide()."""

from __future__ import annotations

import weakref

import pandas as pd
import pytest

from mediaframe.exceptions import InvalidParameterError
from mediaframe.frames import concat_records, records, technical_long, technical_wide


def items(payload):
    return payload("search_v1_current")["response"]["results"]["records"]


def test_long_form_keeps_every_value_raw(payload):
    long = technical_long(items(payload))
    assert list(long.columns) == ["databox_id", "record_id", "name", "value"]
    assert len(long) == 13 + 6 + 6
    first = long.iloc[0]
    assert (first["databox_id"], first["record_id"], first["name"], first["value"]) == (
        1,
        101,
        "Aperture",
        5,
    )
    assert type(long["value"].iloc[0]) is int
    assert long["value"].iloc[5] == "-3"


def test_wide_is_the_way_back_to_the_records_columns(payload):
    data = items(payload)
    wide = technical_wide(technical_long(data))
    flat = records(data)
    for name in wide.columns:
        pd.testing.assert_series_equal(wide[name], flat[name], check_names=True)


def test_wide_prefixes_names_that_clash_with_record_columns():
    data = [
        {
            "databox_id": 1,
            "record_id": 1,
            "technical_informations": [{"name": "title", "value": "x"}],
        }
    ]
    assert list(technical_wide(technical_long(data)).columns) == [
        "databox_id",
        "record_id",
        "technical_title",
    ]


def test_records_without_technical_values_give_empty_frames():
    data = [{"databox_id": 1, "record_id": 1}]
    assert technical_long(data).empty
    assert list(technical_wide(technical_long(data)).columns) == ["databox_id", "record_id"]


def test_wide_refuses_a_frame_without_the_long_columns():
    with pytest.raises(InvalidParameterError, match="technical_long"):
        technical_wide(pd.DataFrame({"name": ["ISO"]}))


def test_a_name_repeated_in_a_record_is_typed_by_the_value_that_remains():
    # found by the page-by-page property test: the overwritten 0.0 made one page Float64
    # (a name outside the contract's list, typed by the rule)
    page_one = [{"databox_id": 1, "record_id": 1, "technical_informations": [
        {"name": "Zoom", "value": ""}, {"name": "Zoom", "value": 0}]}]  # fmt: skip
    page_two = [{"databox_id": 1, "record_id": 2, "technical_informations": [
        {"name": "Zoom", "value": 0.0}, {"name": "Zoom", "value": 4}]}]  # fmt: skip
    for items in (page_one, page_two, page_one + page_two):
        assert records(items)["Zoom"].dtype == "Int64"
    assert records(page_two)["Zoom"].tolist() == [4]
    pd.testing.assert_frame_equal(
        concat_records([records(page_one), records(page_two)]), records(page_one + page_two)
    )


def test_consuming_join_gives_the_same_frame_and_releases_the_parts():
    pages = [
        [{"databox_id": 1, "record_id": i, "technical_informations": [{"name": "ISO", "value": i}]}]
        for i in range(1, 4)
    ]
    expected = concat_records([records(page) for page in pages])
    parts = [records(page) for page in pages]
    alive = [weakref.ref(part) for part in parts]
    pd.testing.assert_frame_equal(concat_records(parts, consume=True), expected)
    assert parts == [], "the frames are taken out of the list"
    assert all(ref() is None for ref in alive), "nothing keeps the joined frames alive"


def test_consuming_join_needs_a_list_it_can_empty():
    with pytest.raises(InvalidParameterError, match="pass a list"):
        concat_records((records([]),), consume=True)
