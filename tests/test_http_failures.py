"""Connection failures told in plain words ("connection refused by host:port"), from the API
and from the login, never a connection pool's repr nor a message cut in the middle of a word."""

from __future__ import annotations

import http.client
import socket

import pytest
import requests
import urllib3

from mediaframe import auth
from mediaframe.auth import Token
from mediaframe.config import Settings
from mediaframe.exceptions import ConnectionFailedError, RequestTimeoutError
from mediaframe.http import Transport
from mediaframe.http import transport as transport_module
from mediaframe.http.failures import describe, is_unknown_host, library_message
from mediaframe.remote import RemoteSearch

LIBRARY_WORDS = ("Pool(", "Connection(host=", "Max retries", "Caused by")
TOKEN = "5e1f0c9a3b7d4e2f8a6c1b0d9e3f7a25"
#: A mistyped host; names under .invalid go to the ``resolver`` fixture, never to the network.
NO_SUCH_HOST = "https://dam.exampel.invalid"


@pytest.fixture
def settings(tmp_path):
    return Settings(config_dir=tmp_path / "c", cache_dir=tmp_path / "k", retries=0, backoff=0)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def slow_to_connect(monkeypatch):
    """Every new connection times out while it is made (as a host dropping SYNs would)."""

    def create_connection(*args, **kwargs):
        raise TimeoutError("timed out")

    monkeypatch.setattr(urllib3.util.connection, "create_connection", create_connection)


def plain(message: str) -> str:
    assert not [word for word in LIBRARY_WORDS if word in message], message
    return message


def get_me(url: str, settings: Settings) -> None:
    Transport(url, settings=settings, token=TOKEN).get("/api/v1/me/")


def log_in(url: str) -> None:
    auth.password_grant(url, client_id="app", username="ada", password="pw-of-ada-8c41f0")


@pytest.mark.parametrize("call", ["api", "login"])
def test_a_refused_connection_names_host_and_port(call, closed_port, settings):
    url = f"http://127.0.0.1:{closed_port}"
    with pytest.raises(ConnectionFailedError) as caught:
        get_me(url, settings) if call == "api" else log_in(url)
    assert f"connection refused by 127.0.0.1:{closed_port}" in plain(str(caught.value))


@pytest.mark.parametrize("call", ["api", "login"])
@pytest.mark.usefixtures("resolver")  # names under .invalid do not exist
def test_a_name_that_does_not_resolve_is_named(call, settings):
    url = "https://assets.nonexistent.invalid"
    with pytest.raises(ConnectionFailedError) as caught:
        get_me(url, settings) if call == "api" else log_in(url)
    assert "cannot resolve host assets.nonexistent.invalid" in plain(str(caught.value))


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The delays the transport waited before each retry, recorded instead of slept."""
    delays: list[float] = []
    monkeypatch.setattr(transport_module, "_wait", delays.append)
    return delays


def search(url: str, settings: Settings) -> None:
    """A search as a Dask worker sends it: through a transport of its own."""
    RemoteSearch(url, Token(TOKEN), settings, "search_records_frame")("sunset")


@pytest.mark.parametrize("call", ["api", "dask", "login"])
@pytest.mark.parametrize("errno", [socket.EAI_NONAME, socket.EAI_NODATA], ids=["noname", "nodata"])
def test_a_host_that_does_not_exist_is_asked_for_once(call, errno, resolver, waits, settings):
    resolver.errno = errno
    retrying = settings.replace(retries=3, backoff=0.5)
    with pytest.raises(ConnectionFailedError) as caught:
        if call == "api":
            get_me(NO_SUCH_HOST, retrying)
        elif call == "dask":
            search(NO_SUCH_HOST, retrying)
        else:
            log_in(NO_SUCH_HOST)
    assert resolver.lookups == ["dam.exampel.invalid"]
    assert waits == []
    message = plain(str(caught.value))
    assert "cannot resolve host dam.exampel.invalid" in message
    assert "base_url" in message
    assert TOKEN not in message and "pw-of-ada" not in message


def test_a_proxy_whose_host_does_not_exist_is_asked_for_once(
    resolver, waits, settings, monkeypatch
):
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.exampel.invalid:3128")
    with pytest.raises(ConnectionFailedError) as caught:
        get_me(NO_SUCH_HOST, settings.replace(retries=3, backoff=0.5))
    assert resolver.lookups == ["proxy.exampel.invalid"]  # the proxy resolves the service's name
    assert waits == []
    message = plain(str(caught.value))
    assert "cannot resolve the host of the proxy for dam.exampel.invalid:443" in message
    assert "HTTPS_PROXY" in message and "base_url" not in message


@pytest.mark.parametrize("call", ["api", "dask"])
@pytest.mark.parametrize("errno", [socket.EAI_AGAIN, -999], ids=["again", "unknown-errno"])
def test_a_resolver_failing_for_now_is_asked_again(call, errno, resolver, waits, settings):
    resolver.errno = errno
    retrying = settings.replace(retries=3, backoff=0.5)
    with pytest.raises(ConnectionFailedError) as caught:
        get_me(NO_SUCH_HOST, retrying) if call == "api" else search(NO_SUCH_HOST, retrying)
    assert len(resolver.lookups) == retrying.retries + 1
    assert len(waits) == retrying.retries
    assert "cannot resolve host dam.exampel.invalid" in plain(str(caught.value))


@pytest.mark.parametrize(
    ("cause", "unknown"),
    [
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), True),
        (socket.gaierror(socket.EAI_NODATA, "No address associated with hostname"), True),
        (socket.gaierror(socket.EAI_SERVICE, "Servname not supported for ai_socktype"), True),
        (socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"), False),
        (socket.gaierror("no errno at all"), False),
        (ConnectionRefusedError(111, "Connection refused"), False),
        (OSError(socket.EAI_NONAME, "an errno of another family"), False),
    ],
    ids=["noname", "nodata", "service", "again", "no-errno", "refused", "not-gai"],
)
def test_only_an_answer_that_the_name_does_not_exist_is_an_unknown_host(cause, unknown):
    assert is_unknown_host(wrapped(cause)) is unknown


@pytest.mark.parametrize("call", ["api", "login"])
@pytest.mark.usefixtures("slow_to_connect")
def test_a_connection_that_times_out_is_named(call, closed_port, settings):
    url = f"http://127.0.0.1:{closed_port}"
    with pytest.raises(RequestTimeoutError) as caught:
        get_me(url, settings) if call == "api" else log_in(url)
    assert f"timed out connecting to 127.0.0.1:{closed_port}" in plain(str(caught.value))


def wrapped(cause: BaseException) -> requests.ConnectionError:
    """``cause`` as requests raises it: inside urllib3's MaxRetryError, with a pool's repr."""
    pool = urllib3.HTTPSConnectionPool("assets.example.org", 8443)
    return requests.ConnectionError(urllib3.exceptions.MaxRetryError(pool, "/api/", cause))


@pytest.mark.parametrize(
    ("cause", "said"),
    [
        (ConnectionResetError(104, "Connection reset by peer"), "connection reset by"),
        (
            urllib3.exceptions.ProtocolError(
                "Connection aborted.", http.client.RemoteDisconnected("closed")
            ),
            "assets.example.org:8443 closed the connection without answering",
        ),
        (OSError(101, "Network is unreachable"), "Network is unreachable"),
    ],
    ids=["reset", "disconnected", "unreachable"],
)
def test_causes_deep_in_the_chain_are_named(cause, said):
    message = describe(wrapped(cause), "https://assets.example.org:8443/api/v1/me/")
    assert said in plain(message)


def test_an_ipv6_host_is_written_with_brackets_and_the_schemes_port():
    refused = requests.ConnectionError(ConnectionRefusedError(111, "Connection refused"))
    assert describe(refused, "https://[::1]/api/") == "connection refused by [::1]:443"


def test_an_unknown_failure_is_shortened_between_words_without_the_pools_repr():
    words = [f"word{i}" for i in range(80)]
    odd = urllib3.exceptions.HTTPError(
        "HTTPSConnectionPool(host='assets.example.org', port=443): " + " ".join(words)
    )
    message = library_message(odd)
    assert message.startswith("HTTPError: word0 word1")
    assert message.endswith(" …")
    assert set(message.removeprefix("HTTPError: ").split()) - {"…"} <= set(words)
    plain(message)
