"""records() and concat_records() on golden payloads of current and old servers."""

from __future__ import annotations

import sys
import weakref

import pandas as pd
import pytest

from mediaframe.exceptions import InvalidParameterError, MalformedItemError, MalformedItemWarning
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


def _spread_value(name: int, part: int, record: int) -> object:
    """A value of every kind the rule types, some names changing kind from part to part."""
    kind = name % 9
    if kind == 0:
        return name * 100 + record  # integers: Int64
    if kind == 1:
        return name + 0.5 if part % 2 else name  # integers here, floats there: Float64
    if kind == 2:
        return f"t{name}.{record}"  # text
    if kind == 3:
        return name if part % 3 else f"n{name}"  # numbers here, text there: string
    if kind == 4:
        return record % 2 == 0  # booleans
    if kind == 5:
        return -name if record else None  # integers and nulls
    if kind == 6:
        return None  # null only
    if kind == 7:
        return 2**70 + name if part % 2 else name  # beyond int64 on some parts: text
    return 2**53 + 1 if record else True  # an integer and a boolean: text


def _spread_pages(parts: int, names: int, per_part: int = 3) -> list[list[dict]]:
    """``parts`` pages of 3 records, each page holding a few of ``names`` technical names and a
    member of its own (nested on some records: kept as objects), some pages none, a few names on
    every page (the stable ``ISO`` and ``Aperture`` too), some pages empty."""
    pages = []
    for part in range(parts):
        own = [(part * per_part + k) % names for k in range(per_part)] if part % 5 else []
        page = []
        for record in range(3 if part % 7 else 0):
            item = _record(
                part * 3 + record + 1,
                tech=[("ISO", part), ("Aperture", record / 2), ("Everywhere", part % 2 == 0)]
                + [(f"Tag{name:04d}", _spread_value(name, part, record)) for name in own],
            )
            item[f"member{part % 40}"] = {"raw": [part, record]} if record == 1 else part
            page.append(item)
        pages.append(page)
    return pages


def test_concat_of_many_names_spread_over_many_parts_is_records_of_all_items():
    pages = _spread_pages(parts=120, names=250)
    whole = records([item for page in pages for item in page])
    assert whole.shape[1] > 250 and len(whole) > 250
    pd.testing.assert_frame_equal(concat_records([records(page) for page in pages]), whole)
    kinds = {str(dtype) for name, dtype in whole.dtypes.items() if name.startswith("Tag")}
    assert kinds == {"Int64", "Float64", "string", "boolean", "object"}  # object: nulls only
    assert whole["member1"].dtype == object and {"raw": [1, 1]} in whole["member1"].tolist()


def test_consuming_join_of_names_spread_over_parts_gives_the_same_frame_and_releases_them():
    pages = _spread_pages(parts=40, names=60)
    expected = records([item for page in pages for item in page])
    parts = [records(page) for page in pages]
    alive = [weakref.ref(part) for part in parts]
    pd.testing.assert_frame_equal(concat_records(parts, consume=True), expected)
    assert parts == [] and all(ref() is None for ref in alive)


def _calls(work) -> int:
    """How many Python and C functions ``work()`` calls: a count of operations, not a time."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def test_a_join_costs_the_columns_parts_hold_not_parts_times_names():
    # Each part holds names of its own: 4 x the parts bring 4 x the names and the cells, so the
    # work must grow about 4 x. Padding every part lacking a name gave 16 x (parts x names).
    def join(parts: int):
        frames = [records(page) for page in _spread_pages(parts=parts, names=parts * 3)]
        return lambda: concat_records(frames)

    small, large = join(20), join(80)
    small()  # caches warmed
    growth = _calls(large) / _calls(small)
    assert growth < 7, f"a join of 4 x the parts and names made {growth:.1f} x the calls"


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
        ([{"databox_id": 1.5, "record_id": 2}], r"member 'databox_id' is float 1.5"),
    ],
)
def test_malformed_items_are_named(items, match):
    with pytest.raises(MalformedItemError, match=match) as caught:
        records(items)
    assert not isinstance(caught.value.__cause__, KeyError)


@pytest.mark.parametrize(
    ("member", "value", "column", "expected"),
    [
        ("title", 5, "title", "5"),  # a number where text is declared: its JSON text
        ("collection_id", "12", "collection_id", 12),  # a numeric string for an integer
        ("collection_id", 12.0, "collection_id", 12),
        (
            "thumbnail",
            {"width": "240", "permalink": {"is_activated": "true"}},
            "thumbnail_width",
            240,
        ),
        (
            "thumbnail",
            {"permalink": {"is_activated": "false"}},
            "thumbnail_permalink_is_activated",
            False,
        ),
        ("thumbnail", {"permalink": {"is_activated": 1}}, "thumbnail_permalink_is_activated", True),
    ],
)
def test_an_unambiguous_minor_member_of_the_wrong_type_is_coerced(member, value, column, expected):
    frame = records([_record(1), {**_record(2), member: value}])
    assert frame[column][1] == expected
    assert frame.dtypes[column] == SCHEMA.dtypes[column]


@pytest.mark.parametrize(
    ("member", "value", "columns", "named"),
    [
        ("collection_id", "twelve", ["collection_id"], "'collection_id'"),
        ("collection_id", 2.5, ["collection_id"], "'collection_id'"),
        ("title", {"en": "x"}, ["title"], "'title'"),
        ("thumbnail", "x", ["thumbnail_name", "thumbnail_width"], "'thumbnail'"),
        ("created_on", "last tuesday", ["created_on"], "'created_on'"),
        ("thumbnail", {"devices": "screen"}, ["thumbnail_devices"], "'thumbnail.devices'"),
        ("thumbnail", {"permalink": {"is_activated": "maybe"}},
         ["thumbnail_permalink_is_activated"], "'thumbnail.permalink.is_activated'"),
    ],
)  # fmt: skip
def test_an_unreadable_minor_member_is_missing_with_one_warning(member, value, columns, named):
    items = [_record(1), {**_record(2), member: value}, {**_record(3), member: value}]
    with pytest.warns(
        MalformedItemWarning, match=rf"{named} could not be read in 2 of 3 item"
    ) as w:
        frame = records(items)
    assert len(w) == 1, "one warning per member, not one per item"
    assert "record #1 (databox_id=1, record_id=2)" in str(w[0].message)
    for column in columns:
        assert frame[column][1:].isna().all() and frame.dtypes[column] == SCHEMA.dtypes[column]
    assert frame["record_id"].tolist() == [1, 2, 3], "no item is lost"


@pytest.mark.parametrize(
    ("technical", "named"),
    [
        ({"ISO": 1}, r"'technical_informations' could not be read in 1 of 2"),
        ([{"name": 5, "value": 1}, {"name": "ISO", "value": 100}], r"\[\]\.name' .* 1 of 2"),
        ([{"value": 1}, 7, {"name": "ISO", "value": 100}], r"\[\]\.name' .* 1 of 2"),
        ([{"name": "ISO", "value": []}], r"\[\]\.value' .* 1 of 2"),
    ],
)
def test_unreadable_technical_entries_are_left_out_with_one_warning(technical, named):
    items = [_record(1, tech=[("ISO", 200)]), {**_record(2), "technical_informations": technical}]
    with pytest.warns(MalformedItemWarning, match=named) as w:
        frame = records(items)
    assert len(w) == 1
    assert frame["ISO"].tolist()[0] == 200 and len(frame) == 2


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


# ------------------------------------------------------------- every member a column of its own


def _one(**members):
    return {"databox_id": 1, "record_id": 7, **members}


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        pytest.param(
            _one(thumbnail={"name": "the thumbnail's"}, **{"thumbnail.name": "the record's"}),
            {"thumbnail_name": "the thumbnail's", "thumbnail.name": "the record's"},
            id="a member named as a path",
        ),
        pytest.param(
            _one(thumbnail={"name": "the thumbnail's"}, thumbnail_name="the record's"),
            {"thumbnail_name": "the thumbnail's", "unknown_thumbnail_name": "the record's"},
            id="a member named as a declared column",
        ),
        pytest.param(
            _one(thumbnail={"cdn": "the thumbnail's"}, thumbnail_cdn="the record's"),
            {"thumbnail_cdn": "the record's", "unknown_thumbnail_cdn": "the thumbnail's"},
            id="a thumbnail's member named as a record's",
        ),
        pytest.param(
            _one(
                thumbnail={"permalink_x": "the thumbnail's", "permalink": {"x": "the permalink's"}}
            ),
            {
                "thumbnail_permalink_x": "the thumbnail's",
                "unknown_thumbnail_permalink_x": "the permalink's",
            },
            id="a permalink's member named as a thumbnail's",
        ),
        pytest.param(
            _one(
                title="the title",
                technical_title="the record's",
                technical_informations=[{"name": "title", "value": "technical"}],
            ),
            {
                "title": "the title",
                "technical_title": "the record's",
                "technical_technical_title": "technical",
            },
            id="a technical name beside its prefixed name",
        ),
        pytest.param(
            _one(
                Mode="the record's",
                technical_Mode="the record's too",
                technical_informations=[{"name": "Mode", "value": "technical"}],
            ),
            {
                "Mode": "the record's",
                "technical_Mode": "the record's too",
                "technical_technical_Mode": "technical",
            },
            id="a technical name beside an unknown member and its prefixed name",
        ),
    ],
)
def test_every_member_keeps_its_value_in_a_column_of_its_own(item, expected):
    frame = records([item])
    assert {name: frame.loc[0, name] for name in expected} == expected


def test_column_names_do_not_depend_on_the_order_of_members():
    members = {"thumbnail_name": "clashes", "unknown_thumbnail_name": "free", "zeta": "z"}
    forward = records([_one(**members)])
    backward = records([_one(**dict(reversed(members.items())))])
    pd.testing.assert_frame_equal(forward, backward)
    assert forward.loc[0, "unknown_thumbnail_name"] == "free"
    assert forward.loc[0, "unknown_unknown_thumbnail_name"] == "clashes"


@pytest.mark.parametrize("order", [1, -1], ids=["X first", "technical_X first"])
def test_technical_names_do_not_depend_on_which_record_holds_them_first(order):
    # both names are taken by members of the record: both want technical_technical_X
    entries = [{"name": "X", "value": "of X"}, {"name": "technical_X", "value": "of technical_X"}]
    items = [
        _one(X="a member", technical_X="a member too", technical_informations=[entry])
        for entry in entries[::order]
    ]
    frame = records(items).set_index("record_id", drop=False)  # rows as given
    values = {value for name in frame.columns for value in frame[name] if isinstance(value, str)}
    assert {"of X", "of technical_X", "a member", "a member too"} <= values
    by_name = {
        name: {v for v in frame[name] if isinstance(v, str)}
        for name in ("technical_technical_X", "technical_technical_technical_X")
    }
    assert by_name == {
        "technical_technical_X": {"of X"},
        "technical_technical_technical_X": {"of technical_X"},
    }


def test_field_labels_fill_their_declared_columns_and_others_keep_theirs():
    # the declared label_<lang> columns were filled by members of the same name taking their
    # place; a field without labels left them as objects, not text
    from mediaframe.frames.captions import fields

    frame = fields(
        [
            {"databox_id": 1, "id": 2, "name": "Title", "labels": {"fr": "Titre", "xx": "X"}},
            {"databox_id": 1, "id": 3, "name": "Date"},
        ]
    )
    assert frame["label_fr"].fillna("-").tolist() == ["Titre", "-"]
    assert frame["label_xx"].fillna("-").tolist() == ["X", "-"]
    assert str(frame["label_en"].dtype) == "string"
    assert not [name for name in frame.columns if name.startswith("unknown_")]
