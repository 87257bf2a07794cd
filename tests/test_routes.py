"""Route functions: parameters validated and encoded before sending, answers normalised."""

from __future__ import annotations

import datetime as dt

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
