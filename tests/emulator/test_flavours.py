"""The emulator speaks three server generations: the contract's shape, a current, a legacy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner

from mediaframe.cli import main
from mediaframe.emulator import Emulator
from mediaframe.emulator.flavours import FLAVOURS

CONTRACT_RECORD = [
    "databox_id", "record_id", "mime_type", "title", "original_name", "updated_on",
    "created_on", "collection_id", "sha256", "thumbnail", "technical_informations", "media_type",
    "uuid", "base_id",
]  # fmt: skip
CURRENT_RECORD = [
    "databox_id", "record_id", "resource_id", "mime_type", "title", "original_name",
    "updated_on", "created_on", "collection_id", "base_id", "sha256", "thumbnail",
    "technical_informations", "phrasea_type", "uuid",
]  # fmt: skip
LEGACY_RECORD = [
    "databox_id", "record_id", "mime_type", "title", "original_name", "updated-on",
    "created_on", "collection_id", "sha256", "thumbnail", "technical_informations",
    "phrasea_type", "uuid",
]  # fmt: skip
SUBDEF = ["name", "permalink", "height", "width", "filesize", "devices", "player_type", "mime_type"]


@pytest.fixture(scope="module")
def apis(api_of):
    return {name: api_of(Emulator(records=600, seed=5, cap=100, flavour=name)) for name in FLAVOURS}


def answer(api, path: str, **params) -> requests.Response:
    got = api.call("POST" if "search" in path else "GET", path, **params)
    assert got.status_code == 200, got.text
    return got


def first_thumbnail(records: list[dict]) -> dict:
    return next(r["thumbnail"] for r in records if r["thumbnail"] is not None)


@pytest.mark.parametrize(
    ("name", "order"),
    [("contract", CONTRACT_RECORD), ("current", CURRENT_RECORD), ("legacy", LEGACY_RECORD)],
)
def test_records_have_each_generations_members_in_its_order(apis, name, order) -> None:
    records = apis[name].search(per_page=20)["results"]["records"]
    assert records and all(list(record) == order for record in records)
    thumbnail = first_thumbnail(records)
    extras = ["substituted", "created_on", "updated_on", "url", "url_ttl"]
    assert list(thumbnail) == SUBDEF + (extras if name == "current" else [])
    download = thumbnail["permalink"]["download_url"]
    assert download.endswith("&download" if name == "legacy" else "&download=1")


def test_every_generation_renders_the_same_catalogue(apis) -> None:
    pages = {name: api.search(per_page=30)["results"]["records"] for name, api in apis.items()}
    contract, current, legacy = (pages[name] for name in FLAVOURS)
    for a, b, c in zip(contract, current, legacy, strict=True):
        assert a["record_id"] == b["record_id"] == c["record_id"]
        assert a["media_type"] == b["phrasea_type"] == c["phrasea_type"]
        assert a["updated_on"] == b["updated_on"] == c["updated-on"]
        assert a["technical_informations"] == b["technical_informations"]
        assert b["resource_id"] == f"emulator_{a['databox_id']}_{a['record_id']}"
        assert b["base_id"] == a["base_id"] and "base_id" not in c


def test_current_counts_the_page_and_has_no_cap(apis) -> None:
    total = apis["contract"].search(per_page=1)["total_results"]
    assert total > 100 + 20  # beyond the cap of 100
    page = apis["current"].search(offset_start=100, per_page=20)
    assert page["available_results"] == len(page["results"]["records"]) == 20
    assert page["total_results"] == total and type(page["query_time"]) is int
    capped = apis["contract"].search(offset_start=100, per_page=20)
    assert capped["available_results"] == 100 and capped["results"]["records"] == []
    legacy = apis["legacy"].search(offset_start=90, per_page=20)
    assert legacy["available_results"] == 100 and len(legacy["results"]["records"]) == 10
    assert type(legacy["query_time"]) is float


def test_facets_and_suggestions_per_generation(apis) -> None:
    names = {}
    for name, api in apis.items():
        found = api.search(query="sunsett", per_page=1)
        assert found["suggestions"], "a misspelt word gets a suggestion"
        facets = api.search(per_page=1)["facets"]
        names[name] = [facet["name"] for facet in facets]
        value = facets[0]["values"][0]
        if name == "legacy":
            assert all(list(facet) == ["name", "values"] for facet in facets)
            assert list(value) == ["value", "count", "query"]
            assert all(list(s) == ["query", "hits"] for s in found["suggestions"])
        else:
            assert all(list(facet) == ["name", "field", "values"] for facet in facets)
            assert list(value) == ["value", "raw_value", "count", "query"]
            assert all(list(s) == ["suggestion", "query", "hits"] for s in found["suggestions"])
    assert (
        names["contract"][:3]
        == names["legacy"][:3]
        == ["Base_Name", "Collection_Name", "Type_Name"]
    )
    assert names["current"][:3] == ["_base", "_collection", "_doctype"]


def test_legacy_bodies_are_pretty_printed_with_escaped_slashes(apis) -> None:
    body = answer(apis["legacy"], "/api/v1/search/", data={"per_page": 2}).content
    assert body.startswith(b'{\n    "meta": {\n        "api_version": "1.3",')
    assert b"https:\\/\\/" in body and json.loads(body)["meta"]["http_code"] == 200
    error = apis["legacy"].get("/api/v1/records/1/999999/")
    assert error.status_code == 404 and error.content.startswith(b"{\n    ")
    compact = answer(apis["current"], "/api/v1/search/", data={"per_page": 2}).content
    assert compact.startswith(b'{"meta":{"api_version":"2.0.0",')


def test_legacy_me_keys_objects_by_id_and_spells_coll_id(apis) -> None:
    me = answer(apis["legacy"], "/api/v1/me/").json()["response"]
    assert isinstance(me["collections"], dict) and isinstance(me["databoxes"], dict)
    for key, collection in me["collections"].items():
        assert key == str(collection["base_id"]) and "coll_id" in collection
        assert "collection_id" not in collection and "order_master" not in collection
    assert me["user"]["geoname_id"] == "2988507"  # a numeric string, as a 3.8 server sends it
    current = answer(apis["current"], "/api/v1/me/").json()["response"]
    assert isinstance(current["collections"], list) and current["user"]["geoname_id"] == 2988507


def test_legacy_baskets_feeds_and_stories(apis) -> None:
    legacy = apis["legacy"]
    owner = answer(legacy, "/api/v1/baskets/list/").json()["response"]["baskets"][0]["owner"]
    assert owner["geoname_id"] == "2988507"
    feeds = answer(legacy, "/api/v1/feeds/list/").json()["response"]["feeds"]
    assert all(isinstance(feed["icon"], str) for feed in feeds)
    entries = answer(legacy, "/api/v1/feeds/content/").json()["response"]["entries"]
    assert entries and all("feed_title" not in entry for entry in entries)
    items = [item["record"] for entry in entries for item in entry["items"]]
    assert items and all(list(record) == LEGACY_RECORD for record in items)
    stories = legacy.search(search_type=1, per_page=5)["results"]["stories"]
    assert stories and all("@entity@" not in story and "base_id" not in story for story in stories)
    members = [record for story in stories for record in story["records"]]
    assert members and all(list(record) == LEGACY_RECORD for record in members)
    one = stories[0]
    routed = answer(legacy, f"/api/v1/stories/{one['databox_id']}/{one['story_id']}/")
    assert routed.json()["response"]["story"] == one


def test_current_record_route_and_feed_items_are_current(apis) -> None:
    current = apis["current"]
    record = current.search(per_page=1)["results"]["records"][0]
    path = f"/api/v1/records/{record['databox_id']}/{record['record_id']}/"
    assert answer(current, path).json()["response"]["record"] == record
    entries = answer(current, "/api/v1/feeds/content/").json()["response"]["entries"]
    items = [item["record"] for entry in entries for item in entry["items"]]
    assert items and all(list(r) == CURRENT_RECORD for r in items)


def test_an_unknown_flavour_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="contract, current, legacy; got 'modern'"):
        Emulator(records=10, flavour="modern")
    assert "flavour='legacy'" in repr(Emulator(records=10, flavour="legacy"))


def test_serve_takes_a_flavour() -> None:
    binary = str(Path(sys.executable).parent / "mediaframe")
    command = [binary, "emulator", "serve", "--records", "100", "--flavour", "current"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            creds = json.loads(proc.stdout.readline())
            got = requests.get(
                f"{creds['base_url']}/api/v1/search/",
                params={"oauth_token": creds["token"], "per_page": 3},
                timeout=10,
            ).json()["response"]
            assert got["available_results"] == 3 and "phrasea_type" in got["results"]["records"][0]
        finally:
            proc.terminate()
            assert proc.wait(timeout=20) == 0
    refused = CliRunner().invoke(main, ["emulator", "serve", "--flavour", "modern"])
    assert refused.exit_code == 2 and "'contract', 'current', 'legacy'" in refused.output
