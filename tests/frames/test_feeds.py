"""feed_entries(), feed_items(), feeds() and baskets()."""

from __future__ import annotations

import pandas as pd
import pytest

from mediaframe.exceptions import MalformedItemError
from mediaframe.frames import baskets, feed_entries, feed_items, feeds, records

from .conftest import parquet_round_trip


def entries(payload):
    return payload("feeds_content")["response"]["entries"]


def test_feed_entries(payload):
    df = feed_entries(entries(payload))
    assert df["id"].tolist() == [31, 30]
    assert df["item_count"].tolist() == [2, 0]
    assert df.loc[0, "feed_title"] == "Press"
    assert "items" not in df.columns
    pd.testing.assert_frame_equal(parquet_round_trip(df), df)


def test_feed_items_carry_record_columns(payload):
    df = feed_items(entries(payload))
    assert list(df.columns[:4]) == ["entry_id", "item_id", "databox_id", "record_id"]
    assert df[["entry_id", "item_id", "record_id"]].values.tolist() == [[31, 1, 101], [31, 2, 101]]
    record_columns = records([item["record"] for item in entries(payload)[0]["items"]]).columns
    assert list(df.columns[2:]) == list(record_columns)
    pd.testing.assert_frame_equal(parquet_round_trip(df), df)


def test_feed_icon_boolean_or_path(payload):
    df = feeds(payload("feeds_list")["response"]["feeds"])
    assert df["has_icon"].tolist() == [True, False, True]
    assert df["icon"].tolist()[2] == "/custom/feed_1.jpg"
    assert df["icon"].isna().tolist()[:2] == [True, True]
    assert pd.isna(df.loc[2, "updated_on"])
    pd.testing.assert_frame_equal(parquet_round_trip(df), df)


def test_baskets_flatten_owner_and_pusher(payload):
    df = baskets(payload("baskets_list")["response"]["baskets"])
    assert df["owner_login"].tolist() == ["ada", "ada"]
    assert pd.isna(df.loc[0, "pusher_id"]) and df.loc[1, "pusher_id"] == 7
    assert df["owner_locale"].tolist() == ["en_GB", "en_GB"]
    pd.testing.assert_frame_equal(parquet_round_trip(df), df)


def test_basket_people_are_typed_like_the_me_user(payload):
    df = baskets(payload("baskets_list")["response"]["baskets"])
    for who in ("owner", "pusher"):
        assert str(df[f"{who}_created_on"].dtype) == "datetime64[us, UTC]"
        assert df[f"{who}_geoname_id"].dtype == "Int64"
        assert df[f"{who}_fax"].dtype == "string", "an all-null member keeps its declared dtype"
    assert not [name for name in df.columns if df[name].dtype == object]


def test_a_bad_feed_item_is_named_by_its_entry():
    bad = [{"id": 4, "items": [{"item_id": 1, "record": None}]}]
    with pytest.raises(MalformedItemError, match=r"feed entry #0 \(id=4\), item #0"):
        feed_items(bad)


def test_a_basket_element_without_a_record_object_is_named():
    from mediaframe.frames import basket_records

    bad = [
        {"basket": {"basket_id": 3}, "basket_elements": [{"basket_element_id": 9, "record": [1]}]}
    ]
    with pytest.raises(MalformedItemError, match=r"basket element #0 .*'record' is not an object"):
        basket_records(bad)


#: A record carrying members named like the container columns (a newer server, an extension).
_CLASHING_RECORD = {
    "databox_id": 1,
    "record_id": 7,
    "order": 42,
    "note": "the record's own note",
    "position": 5,
    "item_id": 99,
    "entry_id": 3,
    "unknown_order": "already there",
}


def test_a_record_member_named_like_a_basket_column_takes_no_ones_place():
    from mediaframe.frames import basket_records

    element = {
        "basket_element_id": 10,
        "order": 1,
        "validation_item": True,
        "agreement": True,
        "note": "the reader's note",
        "record": _CLASHING_RECORD,
    }
    row = basket_records([{"basket": {"basket_id": 2}, "basket_elements": [element]}]).iloc[0]
    assert (row["order"], row["note"]) == (1, "the reader's note")
    assert row["unknown_note"] == "the record's own note"
    assert row["unknown_order"] == "already there"
    assert row["unknown_unknown_order"] == 42
    assert (row["position"], row["item_id"], row["entry_id"]) == (5, 99, 3)


def test_a_record_member_named_like_a_feed_item_column_takes_no_ones_place():
    df = feed_items([{"id": 4, "items": [{"item_id": 1, "record": _CLASHING_RECORD}]}])
    assert list(df.columns[:4]) == ["entry_id", "item_id", "databox_id", "record_id"]
    row = df.iloc[0]
    assert (row["entry_id"], row["item_id"]) == (4, 1)
    assert (row["unknown_entry_id"], row["unknown_item_id"]) == (3, 99)
    assert (row["order"], row["note"]) == (42, "the record's own note")
