"""Search on raw HTTP: parameters, validation, the cap, sorts, the query language, facets."""

from __future__ import annotations

import pandas as pd
import pytest

from mediaframe.emulator import Emulator

V1_ORDER = [
    "offset_start", "per_page", "available_results", "total_results", "error", "warning",
    "query_time", "search_indexes", "suggestions", "facets", "query", "results",
]  # fmt: skip
V2_ORDER = [
    "offset_start", "per_page", "available_results", "total_results", "error", "warning",
    "query_time", "search_indexes", "facets", "search_type", "results",
]  # fmt: skip


@pytest.fixture(scope="module")
def small(api_of):
    """A 400-record emulator without a cap, to compare whole hit sets with the ground truth."""
    return api_of(Emulator(records=400, seed=11, cap=100_000))


def ids(api, **params) -> set[tuple[int, int]]:
    response = api.search(2, per_page=100_000, **params)
    assert response["total_results"] == len(response["results"])
    return {(r["databox_id"], r["record_id"]) for r in response["results"]}


def truth_ids(frame: pd.DataFrame) -> set[tuple[int, int]]:
    return set(zip(frame["databox_id"].tolist(), frame["record_id"].tolist(), strict=True))


def test_v1_and_v2_member_order(api) -> None:
    v1 = api.search(1, query="sunset", per_page=3)
    assert list(v1) == V1_ORDER
    assert set(v1["results"]) == {"records", "stories"} and v1["results"]["stories"] == []
    assert (v1["error"], v1["warning"], v1["query"]) == ("", "", "sunset")
    assert isinstance(v1["query_time"], float)
    v2 = api.search(2, query="sunset", per_page=3)
    assert list(v2) == V2_ORDER
    assert v2["search_type"] == 0
    assert all(
        list(r) == ["databox_id", "record_id", "collection_id", "version"] for r in v2["results"]
    )


def test_records_have_the_servers_keys_in_order(api) -> None:
    record = api.search(per_page=1)["results"]["records"][0]
    assert list(record) == [
        "databox_id", "record_id", "mime_type", "title", "original_name", "updated_on",
        "created_on", "collection_id", "sha256", "thumbnail", "technical_informations",
        "media_type", "uuid", "base_id",
    ]  # fmt: skip


def test_v2_version_is_updated_on_as_unix_time(api) -> None:
    truth = api.emu.ground_truth().set_index(["databox_id", "record_id"])
    for ref in api.search(2, per_page=20)["results"]:
        updated = truth.loc[(ref["databox_id"], ref["record_id"]), "updated_on"]
        assert ref["version"] == int(updated.timestamp())


@pytest.mark.parametrize(
    ("sent", "expected"), [({}, 10), ({"per_page": "0"}, 10), ({"per_page": "x"}, 10)]
)
def test_per_page_defaults_to_10(api, sent, expected) -> None:
    response = api.search(**sent)
    assert response["per_page"] == expected
    assert len(response["results"]["records"]) == expected
    assert response["offset_start"] == 0


@pytest.mark.parametrize("name", ["offset_start", "per_page"])
def test_negative_paging_is_400(api, name) -> None:
    answer = api.call("POST", "/api/v1/search/", data={name: "-5"})
    assert answer.status_code == 400
    assert name in answer.json()["meta"]["error_details"]


def test_the_cap_limits_available_results_and_empties_later_pages(api) -> None:
    visible = len(api.emu.ground_truth())
    assert visible > 1000
    first = api.search(per_page=1)
    assert (first["total_results"], first["available_results"]) == (visible, 1000)
    edge = api.search(offset_start=990, per_page=20)
    assert len(edge["results"]["records"]) == 10
    beyond = api.search(offset_start=1000, per_page=20)
    assert beyond["results"]["records"] == [] and beyond["total_results"] == visible


def test_cap_can_change_live(fresh_emulator) -> None:
    emu = fresh_emulator(records=200, cap=1000)
    emu.set_cap(5)
    with emu.requests_session() as session:
        answer = session.post(
            f"{emu.inprocess_url}/api/v2/search/", data={"oauth_token": emu.token, "per_page": 50}
        )
    response = answer.json()["response"]
    assert response["available_results"] == 5 and len(response["results"]) == 5


def test_empty_query_is_every_visible_record(small) -> None:
    assert ids(small) == truth_ids(small.emu.ground_truth())


def test_rights_limit_search_and_bases_intersect(small) -> None:
    truth = small.emu.ground_truth(user="*")
    assert ids(small, **{"bases[]": ["1", "2", "7"]}) == truth_ids(
        truth[truth["base_id"].isin([1, 2])]
    )
    answer = small.call("POST", "/api/v1/search/", data={"bases[]": ["7", "8"]})
    assert answer.status_code == 400
    assert answer.json()["meta"]["error_details"] == "No collections match your criteria"
    auditor = small.emu.token_for("auditor")
    everything = small.call("POST", "/api/v1/search/", token=auditor, data={"per_page": 1})
    assert everything.json()["response"]["total_results"] == len(truth)


def test_record_type_filter(small) -> None:
    truth = small.emu.ground_truth()
    for media in ("image", "video", "audio", "document", "flash", "unknown"):
        assert ids(small, record_type=media) == truth_ids(truth[truth["media_type"] == media])


def test_date_window_is_inclusive_and_needs_date_field(small) -> None:
    truth = small.emu.ground_truth()
    low, high = pd.Timestamp("2018-03-01", tz="UTC"), pd.Timestamp("2019-06-30 23:59:59", tz="UTC")
    expected = truth[(truth["created_on"] >= low) & (truth["created_on"] <= high)]
    window = {"date_min": "2018/03/01", "date_max": "2019/06/30"}
    assert ids(small, date_field="created_on", **window) == truth_ids(expected)
    assert ids(small, **window) == truth_ids(truth)  # ignored without date_field


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"date_field": "created_on", "date_min": "2018-03-01"}, "date_min"),
        ({"date_field": "created_on", "date_max": "2018/13/01"}, "date_max"),
        ({"date_field": "shoe_size"}, "date_field"),
        ({"record_type": "hologram"}, "record_type"),
        ({"search_type": "3"}, "search_type"),
        ({"sort": "colour"}, "sort"),
        ({"ord": "sideways"}, "ord"),
        ({"bases[]": "one"}, "bases"),
        ({"status[4][maybe][]": "1"}, "status"),
        ({"fields[]": "Shoe"}, "fields"),
        ({"query": "(sunset"}, "missing ')'"),
        ({"query": "sunset)"}, "unexpected ')'"),
        ({"query": "sunset OR"}, "query"),
        ({"query": "AND sunset"}, "AND"),
        ({"query": "Shoe:red"}, "unknown field 'Shoe'"),
        ({"query": "created_on>2020/14"}, "invalid date"),
        ({"query": 'Title:"open'}, "unterminated quote"),
        ({"query": "meta.Colour>3"}, "unknown technical field"),
        ({"query": "type:hologram"}, "unknown type"),
        ({"query": "recordid:\u00b2"}, "needs a record id"),  # isdigit() but not int()-able
        ({"status[4][on][]": "\u00b2"}, "takes databox ids"),
    ],
)
def test_bad_parameters_are_400_with_a_helpful_detail(api, params, fragment) -> None:
    answer = api.call("POST", "/api/v1/search/", data=params)
    assert answer.status_code == 400
    assert fragment in answer.json()["meta"]["error_details"]


def test_status_filter_in_the_contracts_form(small) -> None:
    truth = small.emu.ground_truth()
    bit4_on = truth["status"] // 2**4 % 2 == 1
    expected = truth[(truth["databox_id"] != 1) | bit4_on]
    assert ids(small, **{"status[4][on][]": "1"}) == truth_ids(expected)
    bit6_off = truth["status"] // 2**6 % 2 == 0
    both = truth[((truth["databox_id"] != 1) | bit4_on) & ((truth["databox_id"] != 2) | bit6_off)]
    assert ids(small, **{"status[4][on][]": "1", "status[6][off][]": "2"}) == truth_ids(both)


# ------------------------------------------------------------------- sorting


def test_created_on_sort_is_stable_with_record_id_tie_breaker(small) -> None:
    ascending = small.search(2, sort="created_on", ord="asc", per_page=1000)["results"]
    truth = small.emu.ground_truth().set_index(["databox_id", "record_id"])
    keys = [
        (
            truth.loc[(r["databox_id"], r["record_id"]), "created_on"],
            r["databox_id"],
            r["record_id"],
        )
        for r in ascending
    ]
    assert keys == sorted(keys)
    descending = small.search(2, sort="created_on", ord="desc", per_page=1000)["results"]
    assert descending == ascending[::-1]


def test_paging_a_random_sort_sees_every_hit_once(small) -> None:
    pages = [
        small.search(2, sort="random", offset_start=o, per_page=50)["results"]
        for o in range(0, 400, 50)
    ]
    seen = [(r["databox_id"], r["record_id"]) for page in pages for r in page]
    assert len(seen) == len(set(seen)) == small.search(2, per_page=1)["total_results"]


# ------------------------------------------------------------ query language


def test_free_words_are_case_and_accent_insensitive(small) -> None:
    assert ids(small, query="ZURICH") == ids(small, query="zürich") != set()
    truth = small.emu.ground_truth()
    expected = truth[truth["title"].str.contains("Zürich")]
    assert truth_ids(expected) <= ids(small, query="zurich")


def test_all_free_words_must_match(small) -> None:
    both = ids(small, query="sunset harbour")
    assert both == ids(small, query="sunset") & ids(small, query="harbour")
    assert both == ids(small, query="sunset AND harbour")


def test_precedence_and_over_or_over_except(small) -> None:
    a, b, c = (ids(small, query=w) for w in ("sunset", "harbour", "Paris"))
    assert ids(small, query="sunset OR harbour Paris") == a | (b & c)
    assert ids(small, query="sunset OR harbour EXCEPT Paris") == (a | b) - c
    assert ids(small, query="sunset EXCEPT harbour OR Paris") == a - (b | c)
    assert ids(small, query="(sunset OR harbour) Paris") == (a | b) & c


def test_phrase_matches_words_in_sequence(small) -> None:
    truth = small.emu.ground_truth()
    title = truth["title"].str.lower()
    expected = truth[title.str.contains("golden sunset")]
    found = ids(small, query='"golden sunset"')
    assert truth_ids(expected) <= found
    assert found <= ids(small, query="golden sunset")


def test_field_contains_equals_and_field_prefix(small) -> None:
    truth = small.emu.ground_truth()
    creator = truth["creator"].iloc[0]
    exact = truth_ids(truth[truth["creator"] == creator])
    assert ids(small, query=f'Creator="{creator}"') == exact
    assert ids(small, query=f'field.Creator="{creator}"') == exact
    last_name = creator.split()[-1]
    assert ids(small, query=f"creator:{last_name}") == truth_ids(
        truth[truth["creator"].str.contains(last_name)]
    )


def test_keys_select_what_they_name(small) -> None:
    truth = small.emu.ground_truth()
    first = truth.iloc[0]
    assert ids(small, query="type:video") == truth_ids(truth[truth["media_type"] == "video"])
    assert ids(small, query='collection:"Press photos"') == truth_ids(truth[truth["base_id"] == 1])
    assert ids(small, query='database:"Broadcast archive"') == truth_ids(
        truth[truth["databox_id"] == 2]
    )
    assert ids(small, query=f"recordid:{first['record_id']}") == truth_ids(
        truth[truth["record_id"] == first["record_id"]]
    )
    assert ids(small, query=f"sha256:{first['sha256']}") == truth_ids(
        truth[truth["sha256"] == first["sha256"]]
    )
    assert ids(small, query=f"uuid:{first['uuid']}") == {(first["databox_id"], first["record_id"])}


@pytest.mark.parametrize(
    ("query", "keep"),
    [
        ("created_on>=2020", lambda d: d >= pd.Timestamp("2020-01-01", tz="UTC")),
        ("created_on<2017/06", lambda d: d < pd.Timestamp("2017-06-01", tz="UTC")),
        ("created_on<=2017/06", lambda d: d < pd.Timestamp("2017-07-01", tz="UTC")),
        ("created_on>2021/02/03", lambda d: d >= pd.Timestamp("2021-02-04", tz="UTC")),
        ("created_on=2019", lambda d: d.dt.year == 2019),
        # the last year datetime holds: its period ends in year 10000
        ("created_on<9999", lambda d: d.notna()),
        ("created_on<=9999", lambda d: d.notna()),
        ("created_on>9999/12", lambda d: d.isna()),
        ("created_on=9999", lambda d: d.isna()),
    ],
)
def test_date_comparisons(small, query, keep) -> None:
    truth = small.emu.ground_truth()
    assert ids(small, query=query) == truth_ids(truth[keep(truth["created_on"])])


def test_a_caption_date_compared_with_the_last_year_is_answered(small) -> None:
    answer = small.call("POST", "/api/v1/search/", data={"query": "Date<=9999"})
    assert answer.status_code == 200, answer.text[:300]


def test_technical_value_comparisons(small) -> None:
    cat = small.emu.catalogue
    rows = [r for r in range(cat.records.size) if cat.records.base_id[r] <= 6]
    records = cat.record_dicts(rows)

    def having(test) -> set[tuple[int, int]]:
        return {
            (r["databox_id"], r["record_id"])
            for r in records
            if any(test(t["name"], t["value"]) for t in r["technical_informations"])
        }

    assert ids(small, query="meta.ISO>800") == having(lambda n, v: n == "ISO" and v > 800)
    assert ids(small, query="meta.Aperture=2.8") == having(
        lambda n, v: n == "Aperture" and v == 2.8
    )
    canon = having(lambda n, v: n == "CameraModel" and "canon" in v.lower())
    assert ids(small, query="meta.CameraModel:canon") == canon != set()


def test_fields_restrict_where_free_words_are_looked_for(small) -> None:
    in_title = ids(small, query="sunset", **{"fields[]": "Title"})
    truth = small.emu.ground_truth()
    assert in_title == truth_ids(truth[truth["title"].str.contains("sunset")])
    assert in_title < ids(small, query="sunset")


# ------------------------------------------------------ facets, suggestions


@pytest.mark.parametrize("query", ["", "harbour OR market", "type:image EXCEPT Paris"])
def test_each_facet_query_selects_its_value(small, query) -> None:
    facets = small.search(2, query=query, per_page=1)["facets"]
    names = {f["name"] for f in facets}
    assert {"Base_Name", "Collection_Name", "Type_Name", "Keywords"} <= names
    for facet in facets:
        assert list(facet) == ["name", "field", "values"]
        for value in facet["values"]:
            combined = f"({query}) AND {value['query']}" if query else value["query"]
            assert small.search(2, query=combined, per_page=1)["total_results"] == value["count"], (
                value
            )


def test_facets_cover_the_whole_hit_set_not_only_the_cap(api) -> None:
    response = api.search(2, per_page=1)
    types = next(f for f in response["facets"] if f["name"] == "Type_Name")
    assert sum(v["count"] for v in types["values"]) == response["total_results"] > 1000


def test_suggestions_offer_close_words(api) -> None:
    suggestions = api.search(query="sunest")["suggestions"]
    assert {
        "suggestion": "sunset",
        "query": "sunset",
        "hits": api.search(query="sunset")["total_results"],
    } in suggestions
    assert api.search(query="sunset")["suggestions"] == []


# ------------------------------------------------------------------- stories


@pytest.mark.parametrize("search_type", ["1", "2"])
def test_story_search(small, search_type) -> None:
    response = small.search(1, search_type=search_type, per_page=5)
    assert response["results"]["records"] == []
    stories = response["results"]["stories"]
    assert stories and list(stories[0])[:3] == ["@entity@", "databox_id", "story_id"]
    truth = small.emu.ground_truth("stories")
    assert response["total_results"] == len(truth)
    refs = small.search(2, search_type=search_type, per_page=1000)["results"]
    assert {(r["databox_id"], r["record_id"]) for r in refs} == set(
        zip(truth["databox_id"], truth["story_id"], strict=True)
    )


def test_v2_accepts_a_json_body(small) -> None:
    body = {"query": "sunset", "per_page": 3, "bases": [1, 2], "oauth_token": small.emu.token}
    answer = small.session.post(f"{small.base_url}/api/v2/search/", json=body)
    assert answer.status_code == 200
    response = answer.json()["response"]
    assert response["per_page"] == 3
    assert {r["collection_id"] for r in response["results"]} <= {1, 2}


def test_list_parameters_in_php_forms(small) -> None:
    expected = ids(small, **{"bases[]": ["1", "2"]})
    assert ids(small, **{"bases[0]": "1", "bases[1]": "2"}) == expected
    assert ids(small, bases=["1", "2"]) == expected


def test_prefix_wildcard(small) -> None:
    assert ids(small, query="harb*") == ids(small, query="harbour")


def test_caption_fields_are_made_once_per_business_set() -> None:
    # they were made again for every search, each a pass over every databox's structure
    from mediaframe.emulator.catalogue import Catalogue
    from mediaframe.emulator.search import Search

    search = Search(Catalogue(records=50, seed=1))
    mine = search.caption_fields(frozenset({4}))
    assert search.caption_fields(frozenset({4})) is mine
    assert dict(mine) == search._caption_fields_for(frozenset({4}))
    others = search.caption_fields(frozenset())
    business = [name for name, field in mine.items() if field.bases is not None]
    assert business and all(others[name].bases == frozenset() for name in business)
    search.invalidate()  # a catalogue change: they hang on nothing it touches
    assert search.caption_fields(frozenset({4})) is mine
