"""Descriptive metadata: extended mode, captions, status bits, field structures, stories, baskets.

Checked against what "Descriptive metadata" in docs/emulator.md says the emulator does.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

EXTENDED = "application/vnd.phraseanet.record-extended"
EXTENDED_MEMBERS = ("caption", "metadata", "status", "subdefs")


def response(api, path: str, **kwargs) -> dict:
    answer = api.get(path, **kwargs)
    assert answer.status_code == 200, answer.text
    return answer.json()["response"]


def extended_search(api, token: str = "demo", **params) -> dict:
    token = api.emu.token if token == "demo" else token
    answer = api.call(
        "POST", "/api/v1/search/", token=None, data={"oauth_token": token, **params},
        headers={"Accept": f"{EXTENDED}+json"},
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"] == "application/json"
    return answer.json()["response"]


def truth(api, rows=None):
    emu = api.emu
    captions = emu.app.routes.captions
    table = emu.catalogue.records
    return captions.frame(np.flatnonzero(table.alive) if rows is None else rows)


def row_of(api, record: dict) -> int:
    return api.emu.catalogue.row_of(record["databox_id"], record["record_id"])


def test_every_databox_has_a_realistic_structure(api) -> None:
    fields = response(api, "/api/v1/me/structures/", token=api.emu.token_for("auditor"))
    meta = fields["meta_fields"]
    assert set(fields) == {"meta_fields", "aggregable_fields", "technical_fields"}
    for databox_id in (1, 2, 3):
        mine = [f for f in meta if f["databox_id"] == databox_id]
        assert len(mine) == 12
        assert {"name", "id", "databox_id", "multivalue", "indexable", "readonly", "business",
                "source", "labels"} <= set(mine[0])  # fmt: skip
        assert any(f["multivalue"] for f in mine) and any(f["required"] for f in mine)
        assert [f["type"] for f in mine].count("date") == 1
        assert [f["type"] for f in mine].count("number") == 1
        assert sum(f["business"] for f in mine) == 1
        assert set(mine[0]["labels"]) == {"de", "en", "fr", "nl"}


def test_business_fields_are_hidden_from_users_who_may_not_see_them(api) -> None:
    def names(login: str) -> set[str]:
        meta = response(api, "/api/v1/me/structures/", token=api.emu.token_for(login))
        return {f["name"] for f in meta["meta_fields"]}

    assert "InternalNote" in names("demo")  # canmodifrecord on its collections
    assert "InternalNote" not in names("photographer")  # a reader only
    shown = extended_search(api, per_page=200, query="collection:Nature")
    hidden = extended_search(
        api, token=api.emu.token_for("photographer"), per_page=200, query="collection:Nature"
    )
    assert [r["record_id"] for r in shown["results"]["records"]] == [
        r["record_id"] for r in hidden["results"]["records"]
    ]

    def business(answer: dict) -> int:
        return sum(
            c["name"] == "InternalNote" for r in answer["results"]["records"] for c in r["caption"]
        )

    assert business(shown) > 0 and business(hidden) == 0
    for record in hidden["results"]["records"]:
        assert all(m["name"] != "InternalNote" for m in record["metadata"])


def test_extended_search_records_carry_caption_metadata_status_and_subdefs(api) -> None:
    records = extended_search(api, per_page=50)["results"]["records"]
    expected = truth(api, np.array([row_of(api, r) for r in records]))
    for record, (_, row) in zip(records, expected.iterrows(), strict=True):
        assert set(EXTENDED_MEMBERS) <= set(record)
        caption = {c["name"]: c["value"] for c in record["caption"]}
        for name, value in caption.items():
            assert row[f"caption_{name}"] == value
        assert set(caption) >= {"Title", "Creator", "Date"}
        keywords = [m["value"] for m in record["metadata"] if m["name"] == "Keywords"]
        assert " ; ".join(keywords) == caption["Keywords"]  # one entry per value
        assert all({"meta_structure_id", "name", "labels", "meta_id", "value"} <= set(m)
                   for m in record["metadata"])  # fmt: skip
        assert [s["bit"] for s in record["status"]] == [4, 5, 6, 7]
        for status in record["status"]:
            assert status["state"] is bool(row[f"status_{status['bit']}"])
        assert [s["name"] for s in record["subdefs"]] == (
            ["thumbnail", "preview"] if record["thumbnail"] else []
        )


def test_some_records_miss_a_required_field(api) -> None:
    frame = truth(api)
    missing = frame["caption_Copyright"].isna().mean()
    assert 0.02 < missing < 0.15


def test_ordinary_answers_have_no_extended_members(api) -> None:
    records = api.search(per_page=5)["results"]["records"]
    assert all(not set(EXTENDED_MEMBERS) & set(r) for r in records)


def test_extended_yaml_and_jsonp_variants(api) -> None:
    answer = api.call("GET", "/api/v1/search/", params={"per_page": "2"},
                      headers={"Accept": f"{EXTENDED}+yaml"})  # fmt: skip
    assert answer.headers["Content-Type"].startswith("application/yaml")
    records = yaml.safe_load(answer.text)["response"]["results"]["records"]
    assert all("caption" in r for r in records)
    answer = api.call("GET", "/api/v1/search/", params={"per_page": "2", "callback": "cb"},
                      headers={"Accept": f"{EXTENDED}+jsonp"})  # fmt: skip
    assert answer.text.startswith("/**/cb(")
    records = json.loads(answer.text[len("/**/cb(") : -2])["response"]["results"]["records"]
    assert all("status" in r for r in records)


def test_records_inside_stories_are_extended(api) -> None:
    stories = extended_search(api, search_type=1, per_page=20)["results"]["stories"]
    members = [r for s in stories for r in s["records"]]
    assert members and all(set(EXTENDED_MEMBERS) <= set(r) for r in members)


def test_record_story_feed_and_basket_routes_are_extended(api) -> None:
    headers = {"Accept": f"{EXTENDED}+json"}
    record = api.search(per_page=1)["results"]["records"][0]
    got = response(api, f"/api/v1/records/{record['databox_id']}/{record['record_id']}/",
                   headers=headers)["record"]  # fmt: skip
    assert "caption" in got
    story = api.search(search_type=1, per_page=1)["results"]["stories"][0]
    got = response(api, f"/api/v1/stories/{story['databox_id']}/{story['story_id']}/",
                   headers=headers)["story"]  # fmt: skip
    assert all("caption" in r for r in got["records"])
    entries = response(api, "/api/v1/feeds/content/", headers=headers)["entries"]
    items = [i["record"] for e in entries for i in e["items"]]
    assert items and all("status" in r for r in items)
    elements = response(api, "/api/v1/baskets/1/content/", headers=headers)["basket_elements"]
    assert elements and all("caption" in e["record"] for e in elements)


def test_per_record_routes(api) -> None:
    record = api.search(per_page=1, query="collection:Nature")["results"]["records"][0]
    base = f"/api/v1/records/{record['databox_id']}/{record['record_id']}"
    row = row_of(api, record)
    expected = truth(api, np.array([row])).iloc[0]
    caption = response(api, f"{base}/caption/")["caption_metadatas"]
    assert all(set(c) == {"meta_structure_id", "name", "value"} for c in caption)
    assert all(c["name"] != "InternalNote" for c in caption)  # business fields always left out
    assert {c["name"]: c["value"] for c in caption}["Title"] == expected["caption_Title"]
    values = response(api, f"{base}/metadatas/")["record_metadatas"]
    assert len(values) >= len(caption)
    status = response(api, f"{base}/status/")["status"]
    assert {s["bit"]: s["state"] for s in status} == {
        bit: bool(expected[f"status_{bit}"]) for bit in (4, 5, 6, 7)
    }
    related = response(api, f"{base}/related/")
    assert set(related) == {"baskets", "stories"}


def test_related_lists_the_stories_and_baskets_holding_the_record(api) -> None:
    story = api.search(search_type=1, per_page=50)["results"]["stories"]
    story = next(s for s in story if s["records"])
    member = story["records"][0]
    related = response(
        api, f"/api/v1/records/{member['databox_id']}/{member['record_id']}/related/"
    )
    assert story["story_id"] in {s["story_id"] for s in related["stories"]}
    element = response(api, "/api/v1/baskets/1/content/")["basket_elements"][0]["record"]
    path = f"/api/v1/records/{element['databox_id']}/{element['record_id']}/related/"
    assert 1 in {b["basket_id"] for b in response(api, path)["baskets"]}


@pytest.mark.parametrize("suffix", ["caption/", "metadatas/", "status/", "related/"])
def test_per_record_routes_refuse_unknown_and_hidden_records(api, suffix) -> None:
    assert api.get(f"/api/v1/records/1/999999/{suffix}").status_code == 404
    hidden = api.emu.ground_truth(user="*").query("not visible").iloc[0]
    answer = api.get(f"/api/v1/records/{hidden.databox_id}/{hidden.record_id}/{suffix}")
    assert answer.status_code == 401
    assert answer.json()["meta"]["error_details"] == "You are not authorized"


def test_databox_structure_route_needs_modify_struct(api) -> None:
    assert api.get("/api/v1/databoxes/1/metadatas/").status_code == 401  # demo lacks the right
    auditor = api.emu.token_for("auditor")
    fields = response(api, "/api/v1/databoxes/2/metadatas/", token=auditor)["document_metadatas"]
    assert isinstance(fields, dict) and len(fields) == 12
    for key, entry in fields.items():
        assert str(entry["id"]) == key
        assert entry["type"] in ("string", "date", "number")
        assert {
            "namespace",
            "source",
            "tagname",
            "name",
            "labels",
            "separator",
            "thesaurus_branch",
            "indexable",
            "multivalue",
            "readonly",
            "required",
        } <= set(entry)
    assert api.get("/api/v1/databoxes/9/metadatas/", token=auditor).status_code == 404


def test_story_route_gives_every_child(api) -> None:
    emu = api.emu
    stories = emu.catalogue.stories
    row = int(np.argmax([len(emu.catalogue.member_rows_alive(r)) for r in range(stories.size)
                         if int(stories.base_id[r]) <= 6]))  # fmt: skip
    row = [r for r in range(stories.size) if int(stories.base_id[r]) <= 6][row]
    story = response(api, f"/api/v1/stories/{stories.databox_id[row]}/{stories.ident[row]}/")
    members = emu.catalogue.member_rows_alive(row)
    assert [r["record_id"] for r in story["story"]["records"]] == (
        emu.catalogue.records.ident[members].tolist()
    )
    assert story["story"]["record_count"] == len(members)


def test_basket_content_and_validation_baskets(api) -> None:
    plain = response(api, "/api/v1/baskets/1/content/")
    assert set(plain) == {"basket", "basket_elements"}
    assert plain["basket"]["basket_id"] == 1
    element = plain["basket_elements"][0]
    assert {"basket_element_id", "order", "record", "validation_item"} <= set(element)
    assert "validation_choices" not in element
    assert [e["order"] for e in plain["basket_elements"]] == sorted(
        e["order"] for e in plain["basket_elements"]
    )
    validation = response(api, "/api/v1/baskets/2/content/")
    assert validation["basket"]["validation_basket"] is True
    for element in validation["basket_elements"]:
        assert {"validation_choices", "agreement", "note"} <= set(element)
        for choice in element["validation_choices"]:
            assert set(choice) == {"validation_user", "agreement", "updated_on", "note"}
            assert choice["agreement"] in (True, False, None)
        logins = [c["validation_user"]["login"] for c in element["validation_choices"]]
        assert logins == ["demo", "auditor"]
        mine = element["validation_choices"][0]
        assert (element["agreement"], element["note"]) == (mine["agreement"], mine["note"])
    # the pusher takes part in the validation, so reads it too, with their own say
    theirs = response(api, "/api/v1/baskets/2/content/", token=api.emu.token_for("auditor"))
    assert [e["agreement"] for e in theirs["basket_elements"]] == [
        e["validation_choices"][1]["agreement"] for e in validation["basket_elements"]
    ]


def test_basket_content_refusals(api) -> None:
    assert api.get("/api/v1/baskets/99/content/").status_code == 404
    assert api.get("/api/v1/baskets/4/content/").status_code == 403  # the auditor's basket
    assert api.get("/api/v1/baskets/2/content/", token=api.emu.token_for("photographer")
                   ).status_code == 403  # fmt: skip


def test_no_hit_search_suggests_a_spelling(api) -> None:
    answer = api.search(query="sunsett")
    assert answer["total_results"] == 0
    suggestion = answer["suggestions"][0]
    assert suggestion["suggestion"] == "sunset" and suggestion["query"] == "sunset"
    assert suggestion["hits"] == api.search(query="sunset")["total_results"] > 0


@pytest.fixture(scope="module")
def flavoured(api_of):
    from mediaframe.emulator import Emulator
    from mediaframe.emulator.flavours import FLAVOURS

    return {name: api_of(Emulator(records=400, seed=3, flavour=name)) for name in FLAVOURS}


def test_every_flavour_extends_its_own_records(flavoured) -> None:
    for name, api in flavoured.items():
        records = extended_search(api, per_page=20)["results"]["records"]
        plain = api.search(per_page=20)["results"]["records"]
        for record, shaped in zip(records, plain, strict=True):
            # the generation's members in its order, then the four extended ones
            assert list(record) == [*shaped, *EXTENDED_MEMBERS], name
        elements = response(api, "/api/v1/baskets/1/content/",
                            headers={"Accept": f"{EXTENDED}+json"})["basket_elements"]  # fmt: skip
        assert list(elements[0]["record"])[: len(plain[0])] == list(plain[0]), name


def test_legacy_structures_lack_type_and_list_the_admin_fields(flavoured) -> None:
    api = flavoured["legacy"]
    meta = response(api, "/api/v1/me/structures/")["meta_fields"]
    assert meta and all("type" not in f and "required" not in f for f in meta)
    admin = response(api, "/api/v1/databoxes/1/metadatas/", token=api.emu.token_for("auditor"))
    assert isinstance(admin["document_metadatas"], list)
    current = flavoured["current"]
    assert all("type" in f for f in response(current, "/api/v1/me/structures/")["meta_fields"])


def searched(api, query: str, token: str = "demo") -> set[tuple[int, int]]:
    token = api.emu.token if token == "demo" else token
    answer = api.call(
        "POST", "/api/v2/search/", token=None,
        data={"oauth_token": token, "query": query, "per_page": 100_000},
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    return {(r["databox_id"], r["record_id"]) for r in answer.json()["response"]["results"]}


def visible_captions(api, login: str = "demo"):
    keys = api.emu.ground_truth(user=login)[["databox_id", "record_id"]]
    return truth(api).merge(keys, on=["databox_id", "record_id"])


def keys(frame) -> set[tuple[int, int]]:
    return set(zip(frame["databox_id"].tolist(), frame["record_id"].tolist(), strict=True))


@pytest.mark.parametrize(
    ("field", "value"),
    [("Copyright", "Example Media"), ("Credit", "Example Broadcasting"),
     ("Programme", "news"), ("People", "keller"), ("Department", "finance")],
)  # fmt: skip
def test_the_structures_caption_fields_are_searchable(api, field, value) -> None:
    frame = visible_captions(api)
    column = frame[f"caption_{field}"].fillna("")
    want = keys(frame[column.str.lower().str.contains(value.lower())])
    assert want and searched(api, f'{field}:"{value}"') == want
    assert searched(api, f'field.{field.lower()}:"{value}"') == want


def test_a_multi_valued_caption_field_matches_any_of_its_values_exactly(api) -> None:
    frame = visible_captions(api)
    values = frame["caption_People"].fillna("").str.split(" ; ")
    want = keys(frame[values.map(lambda names: "Hanna Keller" in names)])
    assert want and searched(api, 'People="Hanna Keller"') == want
    # a field only databox 1 has: no record of another databox matches
    assert {d for d, _ in searched(api, "People:a")} == {1}


def test_a_number_field_compares_as_numbers(api) -> None:
    frame = visible_captions(api)
    ratings = frame["caption_Rating"].astype("Float64")
    assert searched(api, "Rating>=4") == keys(frame[(ratings >= 4).fillna(False)])
    assert searched(api, "Rating=2.5") == keys(frame[(ratings == 2.5).fillna(False)])
    assert searched(api, "Rating:4") == keys(
        frame[frame["caption_Rating"].fillna("") == "4"]
    ) | keys(frame[frame["caption_Rating"].fillna("") == "4.5"])
    answer = api.call("POST", "/api/v1/search/", data={"query": "Rating>high"})
    assert answer.status_code == 400 and "needs a number" in answer.text


def test_a_business_field_is_searched_only_where_the_user_may_see_it(api) -> None:
    note = "Model release on file"
    demo = visible_captions(api, "demo")
    want = keys(demo[demo["caption_InternalNote"] == note])
    assert want and searched(api, f'InternalNote="{note}"') == want
    photographer = api.emu.token_for("photographer")
    assert searched(api, f'InternalNote="{note}"', token=photographer) == set()
    # the same search, for whom it matches nothing, does not hide the other records
    assert searched(api, f'InternalNote="{note}" OR type:image', token=photographer)
