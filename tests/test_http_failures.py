"""Connection failures told in plain words ("connection refused by host:port"), from the API
and from the login, never a connection pool's repr nor a message cut in the middle of a word."""

from __future__ import annotations

import http.client
import socket

import pytest
import requests
import urllib3

from mediaframe import auth
from mediaframe.config import Settings
from mediaframe.exceptions import ConnectionFailedError, RequestTimeoutError
from mediaframe.http import Transport
from mediaframe.http.failures import describe, library_message

LIBRARY_WORDS = ("Pool(", "Connection(host=", "Max retries", "Caused by")


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
def unresolvable(monkeypatch):
    """Names under .invalid do not resolve; no name is ever looked up on the network."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if str(host).endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


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
    Transport(url, settings=settings, token="5e1f0c9a3b7d4e2f8a6c1b0d9e3f7a25").get("/api/v1/me/")


def log_in(url: str) -> None:
    auth.password_grant(url, client_id="app", username="ada", password="pw-of-ada-8c41f0")


@pytest.mark.parametrize("call", ["api", "login"])
def test_a_refused_connection_names_host_and_port(call, closed_port, settings):
    url = f"http://127.0.0.1:{closed_port}"
    with pytest.raises(ConnectionFailedError) as caught:
        get_me(url, settings) if call == "api" else log_in(url)
    assert f"connection refused by 127.0.0.1:{closed_port}" in plain(str(caught.value))


@pytest.mark.parametrize("call", ["api", "login"])
@pytest.mark.usefixtures("unresolvable")
def test_a_name_that_does_not_resolve_is_named(call, settings):
    url = "https://assets.nonexistent.invalid"
    with pytest.raises(ConnectionFailedError) as caught:
        get_me(url, settings) if call == "api" else log_in(url)
    assert "cannot resolve host assets.nonexistent.invalid" in plain(str(caught.value))


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
