"""Route functions: parameters validated and encoded before sending, answers normalised."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from fake_service import BASE, FakeService, form, golden, query
from hypothesis import given
from hypothesis import strategies as st

from mediaframe.config import Settings
from mediaframe.exceptions import InvalidParameterError
from mediaframe.http import Transport
from mediaframe.routes import API, as_list, search_params, to_ymd


@pytest.fixture
def settings(tmp_path):
    return Settings(config_dir=tmp_path, cache_dir=tmp_path, backoff=0, retries=0)


def api_for(fake, settings):
    return API(Transport(BASE, token="t", settings=settings, session=fake.session()))


# --- search_params ------------------------------------------------------------------------------


def test_search_params_encode_every_filter_in_the_contract_form():
    pairs = search_params(
        "sunset",
        bases=[10, 11],
        offset_start=0,
        per_page=50,
        ord="asc",
        sort="created_on",
        record_type="image",
        search_type="stories",
        stemme=True,
        date_field="created_on",
        date_min=dt.date(2024, 1, 2),
        date_max=dt.datetime(2024, 3, 4, 23, 59, tzinfo=dt.UTC),
        status={4: {"on": [1, 2], "off": 3}},
        fields=["Title", "Keywords"],
    )
    assert pairs == [
        ("query", "sunset"),
        ("bases[]", "10"),
        ("bases[]", "11"),
        ("offset_start", "0"),
        ("per_page", "50"),
        ("ord", "asc"),
        ("sort", "created_on"),
        ("record_type", "image"),
        ("search_type", "1"),
        ("stemme", "1"),
        ("date_field", "created_on"),
        ("date_min", "2024/01/02"),
        ("date_max", "2024/03/04"),
        ("status[4][on][]", "1"),
        ("status[4][on][]", "2"),
        ("status[4][off][]", "3"),
        ("fields[]", "Title"),
        ("fields[]", "Keywords"),
    ]


def test_search_params_leave_out_what_is_not_given():
    assert search_params() == [("query", "")]


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"offset_start": -1}, "offset_start must be >= 0"),
        ({"per_page": 0}, "per_page must be >= 1"),
        ({"per_page": True}, "per_page must be an integer"),
        ({"sort": "title"}, "sort must be one of"),
        ({"ord": "up"}, "ord must be one of"),
        ({"record_type": "photo"}, "record_type must be one of"),
        ({"search_type": 2}, "search_type must be 0"),
        ({"date_min": "2024/01/01"}, "need date_field"),
        ({"date_field": "created_on", "date_min": "01/02/2024"}, "is not a date"),
        ({"date_field": "created_on", "date_min": "2024/02/30"}, "not a real day"),
        (
            {"date_field": "created_on", "date_min": "2024/03/01", "date_max": "2024/02/01"},
            "after date_max",
        ),
        ({"bases": "10"}, "bases must be a list"),
        ({"bases": [-1]}, "bases must be >= 0"),
        ({"status": {40: {"on": [1]}}}, "status bit must be between 0 and 31"),
        ({"status": {4: {"yes": [1]}}}, "'on' and/or 'off'"),
        ({"fields": [""]}, "non-empty strings"),
    ],
)
def test_search_params_refuse_bad_values_with_advice(filters, message):
    with pytest.raises(InvalidParameterError, match=message):
        search_params("x", **filters)


def test_invalid_parameter_error_is_also_a_value_error():
    with pytest.raises(ValueError):
        search_params(per_page=-5)


@given(st.dates(min_value=dt.date(1000, 1, 1)))
def test_to_ymd_round_trips_every_date(day):
    text = to_ymd(day)
    assert dt.datetime.strptime(text, "%Y/%m/%d").date() == day
    assert to_ymd(text) == text
    assert to_ymd(day.isoformat()) == text


# --- normalisation --------------------------------------------------------------------------------


def test_old_search_spellings_are_normalised_and_kept(settings):
    fake = FakeService(golden("search_v1_old"))
    answer = api_for(fake, settings).search("sunset", per_page=10)
    record = answer["results"]["records"][0]
    assert record["updated_on"] == record["updated-on"] == "2013-06-16T18:59:59+02:00"
    assert record["media_type"] == record["phrasea_type"] == "image"
    assert record["extra_member"] == "kept"
    assert answer["query_time"] == 0.0123
    assert form(fake.requests[0]) == [("query", "sunset"), ("per_page", "10")]
    assert fake.requests[0].path_url.startswith("/api/v1/search/")


def test_me_with_keyed_objects_and_coll_id_becomes_lists(settings):
    answer = api_for(FakeService(golden("me_keyed_old")), settings).me()
    assert answer["collections"] == [
        {
            "databox_id": 2,
            "coll_id": 4,
            "collection_id": 4,
            "rights": ["actif"],
            "statuses": [],
            "base_id": 12,
        }
    ]
    assert answer["databoxes"] == [{"rights": ["bas_chupub"], "databox_id": 2}]
    assert answer["user"]["created_on"] == "-0001-11-30T00:00:00+00:09", "frames reads placeholders"


def test_databoxes_keyed_by_id_become_a_list(settings):
    answer = api_for(FakeService(golden("databoxes_keyed")), settings).databoxes_list()
    assert answer["databoxes"] == [
        {"databox_id": 1, "name": "Press"},
        {"name": "Archive", "databox_id": 2},
    ]


def test_as_list_leaves_lists_alone():
    assert as_list([{"a": 1}], key="id") == [{"a": 1}]
    assert as_list({}, key="id") == []


def test_feed_items_records_are_normalised(settings):
    fake = FakeService(golden("feeds_content"))
    answer = api_for(fake, settings).feeds_content(offset_start=0, per_page=20)
    record = answer["entries"][0]["items"][0]["record"]
    assert record["updated_on"] and record["media_type"] == "image"
    assert query(fake.requests[0]) == [("offset_start", "0"), ("per_page", "20")]


# --- routes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "method", "path"),
    [
        (lambda api: api.root(), "GET", "/api/"),
        (lambda api: api.me(), "GET", "/api/v1/me/"),
        (lambda api: api.search_v2("x"), "POST", "/api/v2/search/"),
        (lambda api: api.feeds_list(), "GET", "/api/v1/feeds/list/"),
        (lambda api: api.feed_content(3, per_page=100), "GET", "/api/v1/feeds/3/content/"),
        (lambda api: api.feed_entry(4), "GET", "/api/v1/feeds/entry/4/"),
        (lambda api: api.baskets_list(), "GET", "/api/v1/baskets/list/"),
        (lambda api: api.record(1, 5), "GET", "/api/v1/records/1/5/"),
        (lambda api: api.story(1, 6), "GET", "/api/v1/stories/1/6/"),
        (lambda api: api.databoxes_list(), "GET", "/api/v1/databoxes/list/"),
    ],
)
def test_each_route_sends_its_method_and_path(settings, call, method, path):
    fake = FakeService(golden("empty_list_response"))
    assert call(api_for(fake, settings)) == {}
    assert fake.requests[0].method == method
    assert fake.requests[0].path_url.split("?")[0] == path


@pytest.mark.parametrize(
    "call",
    [
        lambda api: api.feeds_content(per_page=21),
        lambda api: api.feed_content(3, per_page=101),
        lambda api: api.record(0, 5),
        lambda api: api.story(1, "6"),
        lambda api: api.search_with([], version=3),
    ],
)
def test_routes_validate_before_sending(settings, call):
    fake = FakeService(golden("empty_list_response"))
    with pytest.raises(InvalidParameterError):
        call(api_for(fake, settings))
    assert fake.requests == []


# --- end to end, against the emulator -----------------------------------------------------------


@pytest.fixture
def live(flavoured_emulator, settings):
    emu = flavoured_emulator
    return API(
        Transport(
            emu.inprocess_url, token=emu.token, settings=settings, session=emu.requests_session()
        )
    )


def test_every_route_answers_from_the_emulator(live):
    assert "routes" in live.root()
    me = live.me()
    assert me["user"]["login"] == "demo" and isinstance(me["collections"], list)
    page = live.search("", per_page=3, sort="created_on", ord="asc")
    record = page["results"]["records"][0]
    assert len(page["results"]["records"]) == 3 and page["results"]["stories"] == []
    assert (
        live.record(record["databox_id"], record["record_id"])["record"]["uuid"] == record["uuid"]
    )
    stories = live.search("", search_type="stories", per_page=1)["results"]["stories"]
    story = live.story(stories[0]["databox_id"], stories[0]["story_id"])["story"]
    assert story["story_id"] == stories[0]["story_id"]
    v2 = live.search_v2("", per_page=2)
    assert set(v2["results"][0]) >= {"databox_id", "record_id", "collection_id", "version"}
    assert isinstance(live.databoxes_list()["databoxes"], list)
    feeds = live.feeds_list()["feeds"]
    content = live.feed_content(feeds[0]["id"], per_page=2)
    assert len(content["entries"]) <= 2
    entries = live.feeds_content(per_page=2)["entries"]
    assert live.feed_entry(entries[0]["id"])["entry"]["id"] == entries[0]["id"]
    assert isinstance(live.baskets_list()["baskets"], list)


def test_every_filter_is_understood_by_the_emulator(live):
    me = live.me()
    base_id = me["collections"][0]["base_id"]
    databox_id = me["collections"][0]["databox_id"]
    everything = live.search("", per_page=1)["total_results"]
    narrowed = live.search(
        "", bases=[base_id], record_type="image", date_field="created_on",
        date_min=dt.date(2000, 1, 1), date_max="2100/12/31", status={4: {"on": [databox_id]}},
        per_page=1, stemme=False, sort="updated_on", ord="desc",
    )  # fmt: skip
    assert 0 <= narrowed["total_results"] < everything


def test_paging_against_the_emulator_is_stable(live):
    whole = live.search("", per_page=20, sort="created_on", ord="asc")["results"]["records"]
    halves = [
        live.search("", offset_start=start, per_page=10, sort="created_on", ord="asc")
        for start in (0, 10)
    ]
    paged = [r for half in halves for r in half["results"]["records"]]
    assert [r["record_id"] for r in paged] == [r["record_id"] for r in whole]


def test_server_side_refusals_are_typed(live, flavoured_emulator):
    from mediaframe.exceptions import BadRequestError, NotFoundError, PermissionDeniedError

    with pytest.raises(BadRequestError, match="No collections match"):
        live.search("", bases=[987654])
    with pytest.raises(BadRequestError):
        live.search('"unclosed')
    with pytest.raises(NotFoundError):
        live.record(1, 99999999)
    demo = flavoured_emulator.ground_truth("records", user="demo")
    everything = flavoured_emulator.ground_truth("records", user="auditor")
    keys = ["databox_id", "record_id"]
    hidden = everything.merge(demo[keys], on=keys, how="left", indicator=True)
    row = hidden[hidden["_merge"] == "left_only"].iloc[0]
    with pytest.raises(PermissionDeniedError, match="not authorized"):
        live.record(int(row["databox_id"]), int(row["record_id"]))


def test_a_records_page_says_how_it_was_read(live, caplog):
    with caplog.at_level(logging.DEBUG, logger="mediaframe.routes"):
        info, frame = live.search_records_frame("", per_page=25)
    assert len(frame) == 25 and info["per_page"] == 25
    assert frame.attrs["read"] == {"native": True}  # every generation's page, natively
    assert [r.getMessage() for r in caplog.records if r.name == "mediaframe.routes"] == [
        "search page of 25 records read natively"
    ]


def test_legacy_base_ids_are_looked_up_in_one_table_built_per_me_read(settings, monkeypatch):
    # a legacy server sends no base_id: each page's are read from /me/'s pairs, whose lookup
    # table was built again for every page
    import mediaframe as mf
    from mediaframe import routes
    from mediaframe.emulator import Emulator
    from mediaframe.frames import me

    built = []
    real = me.base_id_lookup

    def counted(collections):
        built.append(1)
        return real(collections)

    monkeypatch.setattr(me, "base_id_lookup", counted)
    monkeypatch.setattr(routes, "base_id_lookup", counted, raising=False)  # (before: none)
    with Emulator(records=60, seed=3, flavour="legacy") as emu:
        api = mf.connect(emu.base_url, token=emu.token, settings=settings).api
        pages = [api.search_records_frame(per_page=20, offset_start=i)[1] for i in (0, 20, 40)]
        truth = emu.ground_truth().set_index(["databox_id", "record_id"])["base_id"]
    for page in pages:
        assert page["base_id"].notna().all()
        expected = truth.loc[list(zip(page["databox_id"], page["record_id"], strict=True))]
        assert page["base_id"].tolist() == expected.tolist()
    assert len(built) == 1


@pytest.mark.parametrize("said", ["engine\x1b]0;PWNED\x07down\u202e", ["engine\x1b[2J", 1]])
def test_a_search_engine_s_error_is_told_inert(said):
    # review 15s, finding 3: it reaches exception messages, so a terminal
    from mediaframe.routes import search_error

    told = search_error({"error": said})
    assert told is not None and "engine" in told
    assert not any(char in told for char in "\x1b\x07\u202e"), repr(told)
