"""The routes besides search: me, feeds, baskets, records, stories, databoxes."""

from __future__ import annotations

import pytest

from mediaframe.emulator.accounts import COLLECTION_RIGHTS


def response(api, path: str, **kwargs) -> dict:
    answer = api.get(path, **kwargs)
    assert answer.status_code == 200, answer.text
    return answer.json()["response"]


def test_me_lists_user_collections_with_rights_in_contract_order(api) -> None:
    me = response(api, "/api/v1/me/")
    assert list(me) == ["user", "collections", "databoxes"]
    user = me["user"]
    assert list(user)[:4] == ["@entity@", "id", "email", "login"]
    assert user["login"] == "demo" and user["gender"] in ("Mr", "Mrs", "Miss")
    bases = {c["base_id"] for c in me["collections"]}
    assert bases == {1, 2, 3, 4, 5, 6}
    for entry in me["collections"]:
        assert list(entry)[:5] == ["databox_id", "base_id", "collection_id", "name", "rights"]
        assert entry["rights"] == [r for r in COLLECTION_RIGHTS if r in entry["rights"]]
        positions = [s["position"] for s in entry["statuses"]]
        assert positions == [4, 5, 6, 7]
        for status in entry["statuses"]:
            assert set(status["labels"]) == {"on", "off"}
            assert set(status["labels"]["on"]) == {"de", "en", "fr", "nl"}
    assert all(set(d) == {"databox_id", "rights"} for d in me["databoxes"])


def test_legacy_user_has_placeholder_dates_and_null_fields(api) -> None:
    me = response(api, "/api/v1/me/", token=api.emu.token_for("legacy"))
    user = me["user"]
    assert user["last_connection"] == "-0001-11-30T00:00:00+00:09"
    assert user["email"] is None and user["first_name"] is None and user["geoname_id"] is None


def test_feeds_content_paging_and_clamping(api) -> None:
    default = response(api, "/api/v1/feeds/content/")
    assert list(default) == ["total_entries", "offset_start", "per_page", "entries"]
    assert default["per_page"] == 5 and len(default["entries"]) == 5
    for sent in ("0", "21", "-3"):
        assert response(api, "/api/v1/feeds/content/", params={"per_page": sent})["per_page"] == 20
    entry = default["entries"][0]
    assert entry["feed_url"] == f"/feeds/{entry['feed_id']}/content/"
    assert entry["url"] == f"/feeds/entry/{entry['id']}/"
    for item in entry["items"]:
        assert set(item) == {"item_id", "record"}
    second = response(api, "/api/v1/feeds/content/", params={"offset_start": "5"})
    assert {e["id"] for e in second["entries"]}.isdisjoint({e["id"] for e in default["entries"]})


def test_private_feed_is_hidden_from_demo_but_not_from_its_owner(api) -> None:
    listed = {f["id"] for f in response(api, "/api/v1/feeds/list/")["feeds"]}
    assert 4 not in listed and listed
    assert response(api, "/api/v1/feeds/4/content/") == {}
    owner = response(api, "/api/v1/feeds/4/content/", token=api.emu.token_for("auditor"))
    assert list(owner) == ["feed", "offset_start", "per_page", "entries"]
    assert owner["feed"]["id"] == 4 and owner["feed"]["public"] is False


@pytest.mark.parametrize(("sent", "expected"), [(None, 5), ("0", 100), ("101", 100), ("7", 7)])
def test_one_feed_per_page_clamping(api, sent, expected) -> None:
    params = {"per_page": sent} if sent else {}
    assert response(api, "/api/v1/feeds/1/content/", params=params)["per_page"] == expected


def test_feed_entry_and_unknown_feed(api) -> None:
    entry_id = response(api, "/api/v1/feeds/content/")["entries"][0]["id"]
    assert response(api, f"/api/v1/feeds/entry/{entry_id}/")["entry"]["id"] == entry_id
    assert api.get("/api/v1/feeds/99/content/").status_code == 404


def test_feed_list_members(api) -> None:
    feed = response(api, "/api/v1/feeds/list/")["feeds"][0]
    assert list(feed) == [
        "id", "title", "subtitle", "total_entries", "icon", "public", "readonly", "deletable",
        "created_on", "updated_on",
    ]  # fmt: skip


def test_baskets_list(api) -> None:
    baskets = response(api, "/api/v1/baskets/list/")["baskets"]
    assert baskets
    assert list(baskets[0]) == [
        "basket_id", "owner", "created_on", "description", "name", "pusher_usr_id", "pusher",
        "updated_on", "unread", "validation_basket",
    ]  # fmt: skip
    assert all(b["owner"]["login"] == "demo" for b in baskets)
    assert any(b["pusher"] is not None for b in baskets)


def test_record_route_matches_search_results(api) -> None:
    record = api.search(per_page=1)["results"]["records"][0]
    path = f"/api/v1/records/{record['databox_id']}/{record['record_id']}/"
    assert response(api, path) == {"record": record}


def test_story_route_and_its_members(api) -> None:
    story = api.search(search_type=1, per_page=1)["results"]["stories"][0]
    fetched = response(api, f"/api/v1/stories/{story['databox_id']}/{story['story_id']}/")["story"]
    assert fetched["story_id"] == story["story_id"]
    assert fetched["record_count"] == len(fetched["records"])
    assert "@entity@" in fetched["metadatas"] and "dc:title" in fetched["metadatas"]
    assert api.get("/api/v1/stories/1/99999999/").status_code == 404


def test_databoxes_are_an_object_keyed_by_id(api) -> None:
    databoxes = response(api, "/api/v1/databoxes/list/")["databoxes"]
    assert isinstance(databoxes, dict)
    assert all(str(v["databox_id"]) == k for k, v in databoxes.items())
