"""user(), collections(), statuses() and databoxes() on current and old /me/ answers."""

from __future__ import annotations

import pandas as pd
import pytest

from mediaframe import frames
from mediaframe.exceptions import MalformedItemError, MalformedItemWarning
from mediaframe.frames import collections, databoxes, statuses, user
from mediaframe.frames.schema import COLLECTION_RIGHTS

from .conftest import parquet_round_trip


def me(payload, name):
    return payload(name)["response"]


def test_user_series_with_dates_and_placeholders(payload):
    series = user(me(payload, "me_current")["user"])
    assert series.name == "ada"
    assert series["id"] == 42 and series["locale"] == "en_GB"
    assert series["created_on"] == pd.Timestamp("2019-04-01T06:00:00Z")
    assert pd.isna(series["updated_on"])  # placeholder date
    assert pd.isna(series["address"])
    assert "@entity@" not in series.index


def test_collections_one_boolean_per_right_and_unknowns_kept(payload):
    df = collections(me(payload, "me_current")["collections"])
    assert list(df.columns[3 : 3 + len(COLLECTION_RIGHTS)]) == list(COLLECTION_RIGHTS)
    assert df.loc[0, "canaddrecord"] and not df.loc[1, "canaddrecord"]
    assert df["canshare"].tolist() == [False, True]  # a right outside the contract's list
    assert df["order_master"].dtype == "boolean" and df["restrict_dwnld"].dtype == "Int64"
    assert df["actif"].dtype == "boolean"
    pd.testing.assert_frame_equal(parquet_round_trip(df), df)


def test_collections_keyed_by_id_with_coll_id(payload):
    df = collections(me(payload, "me_old")["collections"])
    assert df[["databox_id", "base_id", "collection_id"]].values.tolist() == [[1, 5, 1], [1, 6, 2]]
    assert "coll_id" not in df.columns


def test_statuses_per_language(payload):
    df = statuses(me(payload, "me_current")["collections"])
    assert df[["base_id", "position"]].values.tolist() == [[2, 4], [2, 5]]
    assert df.loc[0, "label_on_de"] == "Veröffentlicht" and df.loc[1, "label_off_nl"] == "Vrij"
    assert df["restricted"].tolist() == [False, True]
    pd.testing.assert_frame_equal(parquet_round_trip(df), df)


def test_statuses_of_old_servers_keep_other_languages(payload):
    df = statuses(me(payload, "me_old")["collections"])
    assert df.loc[0, "label_on_es"] == "Publicado"
    assert pd.isna(df.loc[0, "label_on_de"])
    assert df.loc[0, "collection_id"] == 1  # from coll_id


def test_databoxes_list_and_keyed_by_id(payload):
    current = databoxes(me(payload, "me_current")["databoxes"])
    assert current.loc[0, ["bas_chupub", "bas_modif_th", "bas_manage"]].tolist() == [
        True,
        True,
        False,
    ]
    old = databoxes(me(payload, "me_old")["databoxes"])
    assert old.loc[0, "databox_id"] == 1 and old.loc[0, "bas_manage"]


def test_rights_that_are_not_an_array_of_strings_are_missing_with_one_warning():
    items = [
        {"databox_id": 1, "base_id": 1, "rights": ["actif"]},
        {"databox_id": 1, "base_id": 2, "rights": "actif"},
        {"databox_id": 1, "base_id": 3, "rights": ["actif", 5]},
    ]
    with pytest.warns(MalformedItemWarning, match=r"'rights' .* 2 of 3 .*collection #1") as w:
        frame = collections(items)
    assert len(w) == 1 and frame["base_id"].tolist() == [1, 2, 3]
    assert frame["actif"].tolist()[0] is True and frame["actif"][1:].isna().all()


def test_a_key_of_the_wrong_type_still_raises():
    with pytest.raises(MalformedItemError, match=r"collection #0 .*'databox_id'"):
        collections([{"databox_id": "one", "base_id": 2, "rights": ["actif"]}])


def test_a_users_numeric_string_is_read_as_the_number():
    # As a 3.8 server sends a basket owner's geoname_id.
    series = user({"id": 4, "login": "ada", "geoname_id": "2988507"})
    assert series["geoname_id"] == 2988507
    with pytest.warns(MalformedItemWarning, match="'geoname_id' could not be read in 1 of 1"):
        odd = user({"id": 4, "login": "ada", "geoname_id": "Paris"})
    assert odd["geoname_id"] is pd.NA


def test_missing_base_ids_are_read_from_the_collections_pairs():
    # a legacy /me/: collections keyed by base id, spelling coll_id
    mine = frames.collections(
        {
            "4": {"base_id": 4, "databox_id": 1, "coll_id": 2},
            "9": {"base_id": 9, "databox_id": 2, "coll_id": 2},
        }
    )
    old = frames.records(
        [
            {"databox_id": 1, "record_id": 1, "collection_id": 2},
            {"databox_id": 2, "record_id": 1, "collection_id": 2},
            {"databox_id": 2, "record_id": 2, "collection_id": 5},  # not among the user's
            {"databox_id": 1, "record_id": 3, "collection_id": 2, "base_id": 7},  # kept as sent
        ]
    )
    filled = frames.with_base_ids(old, mine)
    assert filled["base_id"].tolist() == [4, 9, pd.NA, 7]
    assert str(filled["base_id"].dtype) == "Int64"
    assert old["base_id"].isna().sum() == 3  # the frame given is left as it was
    whole = frames.records([{"databox_id": 1, "record_id": 1, "base_id": 3}])
    assert frames.with_base_ids(whole, mine) is whole


def test_a_right_named_as_a_member_keeps_both_values():
    # the right's column took the place of the collection's own member of that name
    item = {"base_id": 1, "databox_id": 2, "collection_id": 3, "rights": ["canfoo"]}
    frame = collections([{**item, "canfoo": "a member"}])
    assert frame.loc[0, "canfoo"] == "a member"
    assert frame.loc[0, "right_canfoo"]
