"""Fuzzing the public API's parameters: whatever a user passes, only mediaframe's errors escape.

Values of every type (and iterators, mappings, dates, paths) go to every option of the search
calls, to the settings, to the base URL and to tokens. A client's service answers 400 to
anything that gets through, so a call ends at once whether or not its options were accepted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import pathlib
import warnings
from typing import Any

import pytest
from fake_service import BASE, FakeService, envelope
from hypothesis import given
from hypothesis import strategies as st

import mediaframe as mf
from mediaframe.auth import Token, TokenStore, check_base_url
from mediaframe.config import Settings
from mediaframe.exceptions import MediaframeError, MediaframeWarning
from mediaframe.routes import search_params, to_ymd

from .strategies import JSON, MEMBERS

OPTIONS = (
    "bases", "record_type", "date_field", "date_min", "date_max", "status", "fields", "stemme",
    "sort", "ord", "refresh", "offline", "ttl", "allow_incomplete", "progress", "concurrency",
    "per_page", "cache_dir", "offset_start", "search_type", "per_pgae", "recordtype",
)  # fmt: skip
VALUES = st.one_of(
    JSON,
    st.integers(-5, 40),
    st.sampled_from(["image", "created_on", "updated_on", "asc", "desc", "1h", "30min", "abc"]),
    st.dates().map(lambda d: d),
    st.datetimes(),
    st.timedeltas(),
    st.lists(st.integers(-2, 2**64), max_size=3).map(iter),
    st.dictionaries(
        st.integers(-1, 40), st.dictionaries(st.sampled_from(["on", "off", "x"]), JSON)
    ),
    st.builds(pathlib.Path, st.text(max_size=5)),
    st.sampled_from([float("nan"), float("inf"), True, False, object(), b"bytes"]),
)
FILTERS = st.dictionaries(st.sampled_from(OPTIONS), VALUES, max_size=4)


def survives(call: Any, *args: Any, **kwargs: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", MediaframeWarning)
        with contextlib.suppress(MediaframeError):
            call(*args, **kwargs)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-client")
    settings = Settings.from_env({"HOME": str(root)}).replace(
        progress=False, retries=0, backoff=0, cache_dir=root / "cache"
    )
    fake = FakeService(envelope(status=400))
    return mf.connect(BASE, token="fuzz-t0ken-value", settings=settings, session=fake.session())


@given(query=st.one_of(st.text(max_size=10), VALUES), filters=FILTERS)
def test_search_params(query, filters):
    survives(search_params, query, **filters)


@pytest.mark.parametrize("method", ["records", "stories", "facets", "cache_path"])
@given(filters=FILTERS)
def test_client_search_methods(client, method, filters):
    survives(getattr(client, method), **filters)


@given(st.one_of(VALUES, st.text(max_size=12)))
def test_dates(value):
    survives(to_ymd, value)


NUMBERS = ("timeout", "retries", "backoff", "concurrency", "per_page", "cache_ttl", "sync_lag")


@given(
    st.dictionaries(st.sampled_from([*NUMBERS, "token_placement", "max_response_bytes"]), VALUES)
)
def test_settings(changes):
    survives(Settings, config_dir=pathlib.Path("c"), cache_dir=pathlib.Path("k"), **changes)


@given(
    st.dictionaries(
        st.sampled_from([f"MEDIAFRAME_{n.upper()}" for n in (*NUMBERS, "progress", "offline")]),
        st.text(max_size=8),
    )
)
def test_settings_from_the_environment(env):
    survives(Settings.from_env, {"HOME": "/nonexistent", **env})


URL_PIECES = st.sampled_from(
    ["https://", "http://", "127.0.0.1", "localhost", "[::1]", "example.org", ":", "@", "\\",
     "/", "?", "#", "%", " ", "\n", "\x00", "user:pw", ":8080", "..", "\u3000", "xn--", "ftp://"]
)  # fmt: skip


@given(st.one_of(st.lists(URL_PIECES, max_size=8).map("".join), st.text(max_size=20), VALUES))
def test_base_urls(url):
    survives(check_base_url, url)
    survives(mf.connect, url, token="fuzz-t0ken-value")


@contextlib.contextmanager
def secrets_kept() -> Any:
    """Forget the secrets a fuzzed call registers: random text must not be redacted later."""
    from mediaframe import tokens

    with tokens._SECRETS_LOCK:
        before = dict(tokens._SECRETS)
    try:
        yield
    finally:
        with tokens._SECRETS_LOCK:
            tokens._SECRETS.clear()
            tokens._SECRETS.update(before)


@given(st.one_of(st.text(max_size=40), VALUES))
def test_tokens_and_profile_names(value):
    with secrets_kept():
        survives(Token, value)
    survives(TokenStore("/nonexistent").path, value)


@given(st.sampled_from(MEMBERS), VALUES)
def test_routes_ids(name, value):
    api = mf.connect(
        BASE, token="fuzz-t0ken-value", session=FakeService(envelope({})).session()
    ).api
    survives(api.record, value, 1)
    survives(api.feed_content, value, per_page=value)
    survives(api.feeds_content, offset_start=value)
    survives(api.search_with, [("query", "x")], version=value)


def test_dates_are_fuzzed_with_real_dates_too():
    assert to_ymd(dt.date(2024, 3, 1)) == "2024/03/01"
