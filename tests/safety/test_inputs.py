"""Every option of the public API is checked where it is passed, before anything is sent."""

from __future__ import annotations

import datetime as dt

import pytest
from fake_service import BASE, FakeService, envelope

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.exceptions import InvalidParameterError, ResponseFormatError
from mediaframe.routes import search_params, search_rights
from mediaframe.validate import duration


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False, backoff=0, retries=0
    )


@pytest.fixture
def offline(settings):
    """A client on a service that must never be asked anything."""
    fake = FakeService(envelope({}))
    client = mf.connect(BASE, token="t0ken-never-sent", settings=settings, session=fake.session())
    yield client
    assert fake.requests == [], "an option was sent before it was checked"


def test_an_unknown_date_field_is_refused_after_reading_only_the_structure(settings):
    # Whether a name is a date field depends on the databoxes' structure: reading it is the only
    # request made, and no search is sent.
    fake = FakeService(envelope({}), envelope({}))
    client = mf.connect(BASE, token="t0ken-never-sent", settings=settings, session=fake.session())
    with pytest.raises(InvalidParameterError, match="not a date field of this service"):
        client.records(date_field="shoe_size")
    assert [r.path_url.split("?")[0] for r in fake.requests] == [
        "/api/v1/me/structures/",
        "/api/v1/me/",
    ]


@pytest.fixture(scope="module")
def emulator():
    return Emulator(records=300, seed=5)


@pytest.fixture
def client(emulator, settings):
    return mf.connect(
        emulator.inprocess_url,
        token=emulator.token,
        settings=settings,
        session=emulator.requests_session(),
    )


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"concurrency": -1}, "concurrency must be >= 1"),
        ({"concurrency": 0}, "concurrency must be >= 1"),
        ({"concurrency": "4"}, "concurrency must be an integer"),
        ({"per_page": "10"}, "per_page must be an integer"),
        ({"per_page": 0}, "per_page must be >= 1"),
        ({"ttl": "abc"}, "ttl='abc' is not a duration"),
        ({"ttl": -5}, "ttl must not be negative"),
        ({"ttl": [1]}, "ttl must be seconds"),
        ({"refresh": "no"}, "refresh must be True or False"),
        ({"offline": "0"}, "offline must be True or False"),
        ({"cache_dir": 3}, "cache_dir must be a path"),
        ({"status": {4: {"on": None}}}, r"status\[4\]\['on'\] must name at least one"),
        ({"status": {4: {}}}, r"status\[4\] must map"),
        ({"status": {4: {"on": []}}}, "at least one databox"),
        ({"status": {40: {"on": [1]}}}, "between 0 and 31"),
        ({"status": {4: {"maybe": [1]}}}, "must map 'on' and/or 'off'"),
        ({"status": [4]}, "status must be a mapping"),
        ({"stemme": "0"}, "stemme must be True or False"),
        ({"stemme": 2}, "stemme must be True or False"),
        ({"sort": "created"}, "did you mean 'created_on'"),
        ({"ord": "up"}, "ord must be one of asc, desc"),
        ({"record_type": "images"}, "did you mean 'image'"),
        ({"bases": []}, "bases is empty"),
        ({"bases": "12"}, "bases must be a list"),
        ({"bases": [True]}, "bases must be an integer"),
        ({"fields": [""]}, "fields must hold non-empty strings"),
        ({"date_field": "created_onn"}, "did you mean 'created_on'"),
        ({"date_min": "2024/02/30", "date_field": "created_on"}, "not a real day"),
        (
            {"recordtype": "image"},
            "records.. has no option 'recordtype': did you mean 'record_type'",
        ),
        ({"per_pgae": 10}, "did you mean 'per_page'"),
    ],
)
def test_bad_options_are_refused_before_anything_is_sent(offline, options, named):
    with pytest.raises(InvalidParameterError, match=named):
        offline.records(**options)


@pytest.mark.parametrize("method", ["records", "stories", "facets", "cache_path"])
def test_every_search_method_names_itself_and_suggests(offline, method):
    with pytest.raises(InvalidParameterError, match=rf"{method}\(\) has no option 'base'") as err:
        getattr(offline, method)(base=[1])
    assert "did you mean 'bases'" in str(err.value)


def test_the_routes_refuse_misspelt_keywords_by_their_public_name():
    with pytest.raises(
        InvalidParameterError, match=r"search_params\(\) has no option 'recordtype'"
    ):
        search_params("x", recordtype="image")


@pytest.mark.parametrize(
    ("given", "seconds"),
    # a number without a unit is seconds, as in MEDIAFRAME_CACHE_TTL and `--ttl` (pandas alone
    # would read '3600' as 3,600 nanoseconds)
    [("1h", 3600), ("30min", 1800), (90, 90), ("3600", 3600), (" 1.5 ", 1.5), ("2 days", 172800)],
)
def test_durations_are_read_as_people_write_them(given, seconds):
    assert duration(given, "ttl") == dt.timedelta(seconds=seconds)


def test_a_ttl_string_is_accepted_by_records(client):
    first = client.records(ttl="1h")
    again = client.records(ttl="30min")
    assert again.attrs["harvest"]["from_cache"] and len(again) == len(first)


def test_filters_given_as_iterators_still_filter(client, emulator):
    base = int(emulator.ground_truth()["base_id"].iloc[0])
    as_list = client.cache_path(bases=[base])
    assert client.cache_path(bases=iter([base])) == as_list
    assert client.cache_path(bases=(b for b in [base])) == as_list
    frame = client.records(bases=iter([base]))
    assert len(frame) and set(frame["base_id"].astype(int)) == {base}
    status = client.cache_path(status={4: {"on": iter([1])}})
    assert status == client.cache_path(status={4: {"on": [1]}})
    assert status != client.cache_path()


@pytest.mark.parametrize(
    ("me", "member"),
    [
        ({"collections": [{"base_id": "abc", "rights": ["actif"]}]}, r"collections\[0\]\.base_id"),
        ({"collections": ["x"]}, r"collections\[0\] is 'x'"),
        ({"collections": "x"}, "collections is 'x'"),
        ({"collections": [{"base_id": 1, "rights": "actif"}]}, r"collections\[0\]\.rights"),
        (
            {"collections": [{"base_id": 1, "rights": ["actif"], "statuses": [{"position": "x"}]}]},
            r"statuses\[0\]\.position",
        ),
        (
            {"collections": [{"base_id": 1, "rights": ["actif"], "statuses": [7]}]},
            r"statuses\[0\] is 7",
        ),
        (
            {
                "collections": [
                    {
                        "base_id": 1,
                        "databox_id": [],
                        "rights": ["actif"],
                        "statuses": [{"position": 4}],
                    }
                ]
            },
            r"collections\[0\]\.databox_id",
        ),
    ],
)
def test_odd_me_answers_name_the_member(me, member):
    with pytest.raises(ResponseFormatError, match=member):
        search_rights(me)


def test_me_rights_read_older_spellings():
    me = {
        "collections": [
            {
                "base_id": "3",
                "databox_id": "1",
                "rights": ["actif"],
                "statuses": [{"position": "4"}],
            },
            {"base_id": 2, "rights": []},
        ]
    }
    assert search_rights(me) == ((3,), {3: (1, [4])})
