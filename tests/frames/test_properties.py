"""Property tests: any well-formed records flatten the same page by page and survive parquet."""

from __future__ import annotations

import datetime as dt

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mediaframe.frames import concat_records, records, technical_long, technical_wide
from mediaframe.frames.arrays import text
from mediaframe.frames.flatten import stable_array

from .conftest import parquet_round_trip

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
# Numbers within 2**53, where every one is exact as a float: beyond it, pages joined may type a
# column otherwise than read at once (concat_records' documented exception).
SCALAR = st.one_of(
    st.integers(-(2**53), 2**53),
    st.floats(-(2.0**53), 2.0**53, allow_nan=False, allow_infinity=False, width=64),
    TEXT,
    st.booleans(),
    st.none(),
)
OFFSETS = st.sampled_from(
    [
        dt.UTC,
        dt.timezone(dt.timedelta(hours=2)),
        dt.timezone(dt.timedelta(hours=-5, minutes=-30)),
    ]
)
DATE = st.one_of(
    st.none(),
    st.just("-0001-11-30T00:00:00+00:09"),
    st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1), timezones=OFFSETS).map(
        lambda d: d.isoformat()
    ),
)
TECH = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["ISO", "Aperture", "CameraModel", "title", "Mode"]),
            "value": SCALAR,
        }
    ),
    max_size=5,
)
PERMALINK = st.fixed_dictionaries(
    {},
    optional={
        "id": st.integers(0, 10**9),
        "url": TEXT,
        "is_activated": st.booleans(),
        "created_on": DATE,
    },
)
THUMBNAIL = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "name": TEXT,
            "width": st.integers(0, 10**5),
            "devices": st.lists(st.sampled_from(["screen", "print", "handheld"]), max_size=2),
            "mime_type": st.sampled_from(["image/jpeg", "image/png"]),
            "permalink": st.one_of(st.none(), PERMALINK),
            "cdn_hint": SCALAR,
        },
    ),
)
RECORD = st.fixed_dictionaries(
    {"databox_id": st.integers(1, 4), "record_id": st.integers(1, 10**6)},
    optional={
        "base_id": st.integers(1, 20),
        "title": st.one_of(st.none(), TEXT),
        "mime_type": st.sampled_from(["image/jpeg", "video/mp4", "application/pdf"]),
        "media_type": st.sampled_from(["image", "video", "document"]),
        "phrasea_type": st.sampled_from(["image", "audio"]),
        "created_on": DATE,
        "updated-on": DATE,
        "thumbnail": THUMBNAIL,
        "technical_informations": TECH,
        "score": SCALAR,
        "flags": st.one_of(st.none(), st.booleans()),
    },
)
PAGES = st.lists(st.lists(RECORD, max_size=6), min_size=1, max_size=4)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(PAGES)
def test_pages_concatenate_to_the_frame_of_all_items(pages):
    whole = records([item for page in pages for item in page])
    pd.testing.assert_frame_equal(concat_records([records(page) for page in pages]), whole)


# Many names, each on a few of many pages: most pages lack most names (the join lays each column
# out over the pages holding it), and some records carry an unknown member. Scalars only: where a
# nested value on one page meets a page typing the member as text, that page's numbers join as
# the text they were rendered to, while read at once they stay numbers (a limit of joining typed
# pages, older than laying the columns out).
SPREAD_TECH = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from([f"Tag{n}" for n in range(40)]), "value": SCALAR}
    ),
    max_size=4,
)
SPREAD_RECORD = st.fixed_dictionaries(
    {"databox_id": st.integers(1, 4), "record_id": st.integers(1, 10**6)},
    optional={
        "technical_informations": SPREAD_TECH,
        "extra": SCALAR,
        "score": SCALAR,
    },
)
SPREAD_PAGES = st.lists(st.lists(SPREAD_RECORD, max_size=3), min_size=1, max_size=16)


@SETTINGS
@given(SPREAD_PAGES)
def test_pages_holding_few_of_many_names_concatenate_to_the_frame_of_all_items(pages):
    whole = records([item for page in pages for item in page])
    pd.testing.assert_frame_equal(concat_records([records(page) for page in pages]), whole)
    parts = [records(page) for page in pages]
    pd.testing.assert_frame_equal(concat_records(parts, consume=True), whole)


@SETTINGS
@given(st.lists(RECORD, min_size=1, max_size=8))
def test_records_round_trip_through_parquet(items):
    frame = records(items)
    pd.testing.assert_frame_equal(parquet_round_trip(frame), frame)


@SETTINGS
@given(st.lists(RECORD, max_size=8, unique_by=lambda r: (r["databox_id"], r["record_id"])))
def test_technical_wide_is_the_way_back(items):
    key = ["databox_id", "record_id"]
    wide = technical_wide(technical_long(items)).set_index(key)
    flat = records(items).set_index(key)
    for name in wide.columns:
        pd.testing.assert_series_equal(wide[name], flat.loc[wide.index, name])


def test_an_integer_of_2_53_on_one_page_and_a_float_on_another_concatenate_alike():
    # found by test_pages_concatenate_to_the_frame_of_all_items: 2**53 is exact as a float, so
    # the stable Int64 column keeps its dtype whether the pages are joined or read at once
    pages = [
        [{"databox_id": 1, "record_id": 1, "technical_informations": [
            {"name": "ISO", "value": 2**53}]}],
        [{"databox_id": 1, "record_id": 2, "technical_informations": [
            {"name": "ISO", "value": 0.0}]}],
    ]  # fmt: skip
    whole = records([item for page in pages for item in page])
    pd.testing.assert_frame_equal(concat_records([records(page) for page in pages]), whole)
    assert str(whole["ISO"].dtype) == "Int64" and whole["ISO"].tolist() == [2**53, 0]


def test_numeric_text_beside_other_text_is_rendered_as_a_page_of_numbers_alone_gives_it():
    # found by test_pages_concatenate_to_the_frame_of_all_items: "00" alone on a page is the
    # number 0 of the stable Int64 column, which a join with a page of "" renders "0"; read at
    # once the column was text and kept "00"
    pages = [
        [{"databox_id": 1, "record_id": 1, "technical_informations": [
            {"name": "ISO", "value": ""}]}],
        [{"databox_id": 1, "record_id": 2, "technical_informations": [
            {"name": "ISO", "value": "00"}, {"name": "Aperture", "value": "+2.50"}]}],
        [{"databox_id": 1, "record_id": 3, "technical_informations": [
            {"name": "Aperture", "value": "f/2"}]}],
    ]  # fmt: skip
    whole = records([item for page in pages for item in page])
    pd.testing.assert_frame_equal(concat_records([records(page) for page in pages]), whole)
    assert whole["ISO"].tolist() == ["", "0", pd.NA]
    assert whole["Aperture"].tolist() == [pd.NA, "2.5", "f/2"]


NUMERIC_TEXT = st.one_of(
    st.none(),
    st.sampled_from(["12", "-3", "10.3", "-0", " 7", "+3", "1e5", "nan", "inf", "1/250", "", "x"]),
    st.integers(-(2**64), 2**64).map(str),
    st.floats(allow_nan=False).map(repr),
)


@SETTINGS
@given(st.lists(NUMERIC_TEXT, max_size=12), st.sampled_from(["Int64", "Float64"]))
def test_stable_numbers_from_a_text_array_are_those_from_a_series_of_it(values, dtype):
    # a text array takes its own shorter steps; a Series of it takes the general ones
    array = text(values)
    fast = stable_array(array, dtype, len(values))
    general = stable_array(pd.Series(array), dtype, len(values))
    pd.testing.assert_extension_array_equal(fast, pd.Series(general).array, check_exact=True)


def test_a_text_zero_written_negative_is_the_zero_the_general_steps_give():
    # Arrow reads "-0" as -0.0; to_numeric, among integers, as the integer 0 (a 0.0 in Float64):
    # the sign must not differ by route (assert_extension_array_equal takes -0.0 for 0.0)
    values = ["-0", "1", None]
    fast = stable_array(text(values), "Float64", 3)
    general = pd.Series(stable_array(pd.Series(text(values)), "Float64", 3)).array
    assert str(fast.dtype) == str(general.dtype) == "Float64"
    assert [str(v) for v in fast] == [str(v) for v in general] == ["0.0", "1.0", "<NA>"]
