"""The https rule cannot be bypassed, redirects are refused, and no secret leaves in an error."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator

import orjson
import pytest
import requests
from fake_service import BASE, Answer, FakeService, envelope

from mediaframe import auth
from mediaframe.auth import Profile, Token, TokenStore, check_base_url, redact, same_origin
from mediaframe.config import Settings
from mediaframe.exceptions import (
    BadRequestError,
    ConfigurationError,
    ConnectionFailedError,
    OAuthError,
    RedirectRefusedError,
    ResponseFormatError,
)
from mediaframe.http import Transport
from mediaframe.tokens import least_run

from . import servers
from .helpers import texts_of

SECRET = "5ec7e75ec7e75ec7e75ec7e75ec7e7aa"


@pytest.fixture
def settings(tmp_path):
    return Settings(config_dir=tmp_path / "c", cache_dir=tmp_path / "k", backoff=0, retries=0)


@pytest.mark.parametrize(
    "url",
    [
        "http://example.org\\@127.0.0.1:9",  # urllib sees 127.0.0.1, requests example.org
        "http://example.org\\\\@localhost",
        "https://assets.example.org\\evil",
        "http://127.0.0.1\t.example.org",
        "http://127.0.0.1:9 @example.org",
        "https://assets.exa\nmple.org",
        "https://assets.example.org/\x00",
        "https://assets.example.org\u3000/",
        "https://assets.example.org/\u200bpath",
    ],
)
def test_urls_that_parse_two_ways_are_refused(url):
    with pytest.raises(ConfigurationError, match="backslash, a space or a control"):
        check_base_url(url)


@pytest.mark.parametrize(
    "url",
    ["https://ada:pa55w0rd-top@assets.example.org", "http://ada:pa55w0rd-top@127.0.0.1:8080"],
)
def test_credentials_in_the_url_are_refused_without_being_repeated(url):
    with pytest.raises(ConfigurationError, match="user name or password") as caught:
        check_base_url(url)
    assert "pa55w0rd-top" not in texts_of(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "ada:pa55w0rd-top@assets.example.org",  # no scheme: urllib sees no authority
        "https://assets.example.org/?oauth_token=pa55w0rd-top",
        "https://assets.example.org/api#pa55w0rd-top",
        "http://assets.example.org/?password=pa55w0rd-top",
        "ftp://ada:pa55w0rd-top@assets.example.org",
    ],
)
def test_a_refused_url_is_quoted_without_what_may_be_a_secret(url):
    with pytest.raises(ConfigurationError) as caught:
        check_base_url(url)
    assert "pa55w0rd-top" not in texts_of(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://[bad",  # urllib: "Invalid IPv6 URL"
        "https://ada:pa55w0rd-top@[::1",
        "https://ada:pa55w0rd-top@assets.example.org:99999",  # read only when .port is
        "http://127.0.0.1:port",
        "https://ada:pa55w0rd-top@assets.exa\u2100mple.org",  # urllib repeats the whole netloc
    ],
)
def test_a_url_urllib_cannot_read_is_a_configuration_error_without_its_secrets(url):
    with pytest.raises(ConfigurationError, match="cannot be read as a URL") as caught:
        check_base_url(url)
    assert "pa55w0rd-top" not in texts_of(caught.value)


def test_the_transport_checks_the_prepared_url_before_sending(settings):
    fake = FakeService(envelope({}))
    transport = Transport(BASE, token=SECRET, settings=settings, session=fake.session())
    # as if a later change let an ambiguous URL through: the last check still holds
    transport.base_url = "http://example.org\\@127.0.0.1:9"
    with pytest.raises(ConfigurationError, match="not the service"):
        transport.get("/api/v1/me/")
    assert fake.requests == []


def test_same_origin_reads_hosts_as_the_transport_does():
    assert same_origin("https://assets.example.org/api/v1/me/?x=1", "https://assets.example.org")
    assert not same_origin("http://assets.example.org/api/", "https://assets.example.org")
    assert not same_origin("https://assets.example.org:444/", "https://assets.example.org")
    assert not same_origin("https://u:p@assets.example.org/", "https://assets.example.org")
    assert not same_origin("http://example.org\\@127.0.0.1:9/", "http://127.0.0.1:9")


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("placement", ["header", "param"])
def test_api_calls_never_follow_a_redirect(settings, status, placement):
    evil = f"http://evil.example/api/v1/search/?oauth_token={SECRET}"
    fake = FakeService(Answer(status, {"Location": evil}), envelope({}))
    transport = Transport(
        BASE,
        token=SECRET,
        settings=settings.replace(token_placement=placement),
        session=fake.session(),
    )
    with pytest.raises(RedirectRefusedError) as caught:
        transport.post("/api/v1/search/", [("query", "x")])
    assert len(fake.requests) == 1  # nothing went to evil.example
    error = caught.value
    assert error.status_code == status
    assert error.location == "http://evil.example/api/v1/search/?..."
    assert "evil.example" in str(error)
    assert SECRET not in texts_of(error)


@pytest.mark.parametrize(
    "location", ["ada:s3cret-pw@evil.example/x", "//ada:s3cret-pw@evil.example/x"]
)
def test_a_redirect_error_never_repeats_credentials_of_a_location_without_a_scheme(
    settings, location
):
    fake = FakeService(Answer(302, {"Location": location}), envelope({}))
    transport = Transport(BASE, token=SECRET, settings=settings, session=fake.session())
    with pytest.raises(RedirectRefusedError) as caught:
        transport.post("/api/v1/search/", [("query", "x")])
    assert "evil.example" in caught.value.location
    assert "s3cret-pw" not in texts_of(caught.value)


def test_the_token_endpoint_never_follows_a_redirect():
    password = "correct-horse-battery"
    fake = FakeService(Answer(307, {"Location": "http://evil.example/token"}), Answer(200))
    with pytest.raises(RedirectRefusedError, match=r"evil\.example") as caught:
        auth.password_grant(
            BASE, client_id="app", username="ada", password=password, session=fake.session()
        )
    assert len(fake.requests) == 1
    assert password not in texts_of(caught.value)


@pytest.mark.parametrize("raw", [SECRET + "\n", " " + SECRET, SECRET + "\r\n"])
def test_tokens_lose_surrounding_whitespace(raw):
    assert Token(raw).access_token == SECRET


@pytest.mark.parametrize(
    "raw",
    [
        "abc def0123",
        "abc\x00def0123",
        "abc\ndef0123",
        "abc\u0085def",
        "abcdef0123\u2026",  # copied from a page that shows it cut short
        "\u201cabcdef0123\u201d",  # curly quotes
    ],
)
def test_tokens_with_inner_whitespace_or_controls_are_refused(raw):
    with pytest.raises(ConfigurationError, match="whitespace or control") as caught:
        Token(raw)
    assert raw not in texts_of(caught.value)


def test_a_token_the_header_cannot_carry_is_refused_before_sending(settings):
    pasted = "5ec7e75ec7e7\u2026"  # latin-1 cannot encode it: http.client would raise
    with (
        servers.serving(servers.answering("200 OK", servers.ENVELOPE)) as url,
        pytest.raises(ConfigurationError, match="outside ASCII") as caught,
    ):
        Transport(url, token=pasted, settings=settings).get("/api/v1/me/")
    assert pasted not in texts_of(caught.value)


def test_a_token_read_from_a_file_is_sent_clean(settings):
    fake = FakeService(envelope({}))
    Transport(BASE, token=SECRET + "\n", settings=settings, session=fake.session()).get(
        "/api/v1/me/"
    )
    assert fake.requests[0].headers["Authorization"] == f"OAuth {SECRET}"


@pytest.mark.parametrize("placement", ["header", "param"])
def test_a_failed_connection_carries_no_secret_in_its_chain(settings, placement):
    def refuse(request):
        raise requests.ConnectionError(f"cannot reach {request.url} with {request.headers}")

    fake = FakeService(refuse)
    transport = Transport(
        BASE,
        token=SECRET,
        settings=settings.replace(token_placement=placement),
        session=fake.session(),
    )
    with pytest.raises(ConnectionFailedError) as caught:
        transport.get("/api/v1/me/")
    assert SECRET not in texts_of(caught.value)
    assert "ConnectionError" in str(caught.value)  # the useful fact is kept


def test_known_secret_values_are_redacted_whatever_names_them(settings):
    Token(SECRET)  # known from now on
    echo = envelope(status=400)
    echo.body = echo.body.replace(b'"meta": {', f'"meta": {{"error_details": "{SECRET}",'.encode())
    fake = FakeService(echo)
    transport = Transport(BASE, token=SECRET, settings=settings, session=fake.session())
    with pytest.raises(BadRequestError) as caught:
        transport.get("/api/v1/me/")
    assert SECRET not in texts_of(caught.value)  # message and error_details alike
    assert redact(f"the value {SECRET} appears") == "the value *** appears"


def test_passwords_and_client_secrets_are_redacted_by_value():
    fake = FakeService(Answer(400, {"Content-Type": "application/json"}, b'{"error":"x"}'))
    with pytest.raises(Exception):  # noqa: B017 -- only the registration matters here
        auth.password_grant(
            BASE,
            client_id="app",
            client_secret="app-secret-42",
            username="ada",
            password="s3cret pass/word",
            session=fake.session(),
        )
    text = redact("sent s3cret pass/word, s3cret+pass%2Fword and app-secret-42")
    assert text == "sent ***, *** and ***"


CUT_TOKEN = "cedf43c9af586f1e129ac8030f59a1b2"


@pytest.mark.parametrize(
    "echo",
    [
        CUT_TOKEN[:28] + "...",  # a proxy's page: the header cut to 28 characters
        CUT_TOKEN[:12],  # as short as a run is hidden
        CUT_TOKEN[9:30],  # from within
        CUT_TOKEN[-12:],
        CUT_TOKEN[:16] + " and " + CUT_TOKEN[16:],  # both halves, apart
        CUT_TOKEN.upper(),  # a header folded to upper case by a proxy
        CUT_TOKEN.upper()[:20],
    ],
)
def test_a_token_echoed_cut_short_is_redacted(settings, echo):
    # review 15s, finding 5: 28 of 32 hex characters were shown, 16 bits left to guess
    Token(CUT_TOKEN)
    body = json.dumps({"meta": {"http_code": 400, "error_message": f"rejected {echo}."}}).encode()
    fake = FakeService(Answer(400, {"Content-Type": "application/json"}, body))
    transport = Transport(BASE, token=CUT_TOKEN, settings=settings, session=fake.session())
    with pytest.raises(BadRequestError) as caught:
        transport.get("/api/v1/me/")
    for text in (str(caught.value), caught.value.error_message):
        assert "rejected ***" in text
        assert CUT_TOKEN[:6] not in text.lower() and CUT_TOKEN[-6:] not in text.lower()


def test_runs_of_a_secret_shorter_than_the_least_run_and_ordinary_text_are_kept():
    Token(CUT_TOKEN)
    auth.register_secret("passwords1")  # 10 characters: hidden whole only
    assert least_run(len(CUT_TOKEN)) == 12 and least_run(10) == 10 and least_run(14) == 11
    kept = f"id {CUT_TOKEN[:11]}, the passwords, a password"
    assert redact(kept) == kept
    assert redact(f"x{CUT_TOKEN[3:15]}y") == "x***y"


def test_a_run_of_a_secret_at_the_end_of_a_long_text_is_redacted():
    # how long it takes is bench/edges.py's to say; here only that the scan reaches the end
    Token(CUT_TOKEN)
    text = "Lorem ipsum dolor sit amet, 0123456789abcdef. " * 22_000  # 1 MB
    assert redact(text + CUT_TOKEN[:20]).endswith(". ***")


@pytest.mark.parametrize("name", ["work\n", "work\r\n", "wo\nrk", "work/.."])
def test_profile_names_must_match_in_full(tmp_path, name):
    with pytest.raises(ConfigurationError, match="profile name"):
        TokenStore(tmp_path).path(name)


def test_connect_refuses_credentials_in_the_url(settings):
    import mediaframe as mf

    with pytest.raises(ConfigurationError, match="user name or password") as caught:
        mf.connect("https://ada:pa55w0rd-top@assets.example.org", token=SECRET, settings=settings)
    assert "pa55w0rd-top" not in texts_of(caught.value)


# --- a server echoing the secret it refused -------------------------------------------------------


def _answer(status: str, body: dict) -> servers.Behaviour:
    return servers.answering(status, json.dumps(body).encode())


@pytest.mark.parametrize(
    ("body", "placement", "kind"),
    [
        # the envelope's error_type is quoted first in the message
        (
            {"meta": {"http_code": 400, "error_type": f"Bad token {SECRET}"}, "response": {}},
            "header",
            BadRequestError,
        ),
        # a resource server's OAuth-style refusal quotes its error code
        ({"error": f"invalid_token {SECRET}"}, "param", OAuthError),
    ],
    ids=["error_type", "oauth_error"],
)
def test_an_error_echoing_the_token_is_shown_redacted(settings, body, placement, kind):
    Token(SECRET)  # known, as every token mediaframe is handed
    with servers.serving(_answer("400 Bad Request", body)) as url:
        transport = Transport(
            url, token=SECRET, settings=settings.replace(token_placement=placement)
        )
        with pytest.raises(kind) as caught:
            transport.get("/api/v1/me/")
    assert SECRET not in texts_of(caught.value)
    assert "***" in str(caught.value)


def test_a_token_endpoint_echoing_the_password_is_shown_redacted():
    password = "correct-horse-battery"
    refusal = {"error": f"invalid_grant: no user with password {password}"}
    with (
        servers.serving(_answer("400 Bad Request", refusal)) as url,
        pytest.raises(OAuthError) as caught,
    ):
        auth.password_grant(url, client_id="app", username="ada", password=password)
    assert password not in texts_of(caught.value)
    assert "invalid_grant" in str(caught.value)


@pytest.mark.parametrize("before", [0, 140, 150])
def test_a_token_endpoint_page_echoing_the_password_shows_none_of_it(before):
    """The page is quoted in part: cut before it was redacted, a password the cut went through
    was not recognised, and its first characters were shown."""
    password = "correct-horse-battery-staple"
    page = ("x" * before + " " + password + " was refused").encode()
    fake = FakeService(Answer(200, {"Content-Type": "text/html"}, page))
    with pytest.raises(ResponseFormatError) as caught:
        auth.password_grant(
            BASE, client_id="app", username="ada", password=password, session=fake.session()
        )
    assert password[:6] not in texts_of(caught.value)


# --- plain http stays on this machine ---------------------------------------------------------


class _NoProxyElsewhere(requests.adapters.HTTPAdapter):
    """Sends as requests would, unless the request was to go through a proxy off this machine:
    then it refuses, and nothing is sent (the test talks to loopback only)."""

    def send(self, request, **kwargs):
        proxy = requests.utils.select_proxy(request.url, kwargs.get("proxies") or {})
        if proxy is not None and not auth.is_loopback_url(proxy):
            raise RuntimeError(f"{request.url} would have gone through the proxy {proxy}")
        return super().send(request, **kwargs)


def _watched_session() -> requests.Session:
    session = requests.Session()
    session.mount("http://", _NoProxyElsewhere())
    return session


def test_plain_http_to_loopback_never_goes_through_a_proxy_elsewhere(settings, monkeypatch):
    monkeypatch.setenv("http_proxy", "http://192.0.2.1:3128")  # a managed machine's proxy
    monkeypatch.setenv("no_proxy", "")
    with servers.serving(servers.answering("200 OK", servers.ENVELOPE)) as url:
        transport = Transport(url, token=SECRET, settings=settings, session=_watched_session())
        assert transport.get("/api/v1/me/") == {"ok": True}


def test_the_token_endpoint_on_loopback_never_goes_through_a_proxy_elsewhere(monkeypatch):
    monkeypatch.setenv("http_proxy", "http://192.0.2.1:3128")
    monkeypatch.setenv("no_proxy", "")
    issued = json.dumps({"access_token": SECRET, "scope": None}).encode()
    with servers.serving(servers.answering("200 OK", issued)) as url:
        token = auth.password_grant(
            url, client_id="app", username="ada", password="pw-123456", session=_watched_session()
        )
    assert token.access_token == SECRET


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request itself (a token for the token endpoint, an envelope else) and
    keeps its request target: absolute (``http://host:port/path``) when sent to a proxy."""

    server: _RecordingServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.do_GET()

    def do_GET(self) -> None:
        self.server.seen.append(self.path)
        token = {"access_token": SECRET, "scope": None, "refresh_token": "r2-123456"}
        issued = self.path.endswith("/api/oauthv2/token")
        body = json.dumps(token).encode() if issued else servers.ENVELOPE
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the token rides in the request."""


class _RecordingServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Recorder)
        self.seen: list[str] = []


@contextlib.contextmanager
def _recording() -> Iterator[tuple[str, list[str]]]:
    """A recording server on loopback: its URL and the request targets it was sent."""
    server = _RecordingServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _only_proxy(monkeypatch: pytest.MonkeyPatch, proxy: str) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy", "NO_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", proxy)
    monkeypatch.setenv("no_proxy", "")


@pytest.mark.parametrize("call", ["password", "refresh"])
def test_a_loopback_proxy_carries_token_calls_as_it_carries_api_calls(settings, monkeypatch, call):
    """A debugging proxy on this machine (http_proxy=http://127.0.0.1:3128) sees the token
    endpoint's calls as it sees the API's: plain http never leaves the machine either way."""
    with _recording() as (service, direct), _recording() as (proxy, proxied):
        _only_proxy(monkeypatch, proxy)
        if call == "password":
            token = auth.password_grant(
                service, client_id="app", username="ada", password="pw-123456"
            )
        else:
            token = auth.refresh(service, Token("old-123456", refresh_token="r1"), client_id="app")
        with Transport(service, token=token, settings=settings) as transport:
            assert transport.get("/api/v1/me/") == {"ok": True}
    assert proxied == [f"{service}/api/oauthv2/token", f"{service}/api/v1/me/"]
    assert direct == []


def test_a_proxy_is_kept_for_https_and_for_loopback_proxies():
    proxies = {"http": "http://192.0.2.1:3128", "https": "http://192.0.2.1:3128"}
    assert auth.proxies_for("https://assets.example.org/api/", proxies) == proxies
    assert auth.proxies_for("http://127.0.0.1:8080/api/", proxies) == {}
    local = {"http": "http://127.0.0.1:3128"}
    assert auth.proxies_for("http://127.0.0.1:8080/api/", local) == local
    # written without a scheme, as the variables often are: requests reads it as http
    bare = {"http": "localhost:3128", "https": "192.0.2.1:3128"}
    assert auth.proxies_for("http://127.0.0.1:8080/api/", bare) == {"http": "localhost:3128"}


def test_a_damaged_profile_is_refused_without_its_secrets_in_the_chain(tmp_path):
    store = TokenStore(tmp_path)
    path = store.save("work", Profile("https://assets.example.org", Token(SECRET)))
    path.write_text(path.read_text().replace("}", ",}"))  # a trailing comma: not JSON
    with pytest.raises(ConfigurationError, match="damaged") as caught:
        store.load("work")
    assert SECRET not in texts_of(caught.value)  # a JSONDecodeError keeps the whole file


_ECHOING_PAGE = f"<html><body>Not found: /api/v1/me/?oauth_token={SECRET}</body></html>".encode()


@pytest.mark.parametrize(
    ("representation", "body"),
    [
        ("json", _ECHOING_PAGE),  # JSONDecodeError.doc keeps the whole body
        ("jsonp", _ECHOING_PAGE),
        ("yaml", f"meta: {{a: [\n  {SECRET}".encode()),  # YAML quotes the line in its message
    ],
    ids=["json", "jsonp", "yaml"],
)
@pytest.mark.parametrize("status", ["404 Not Found", "200 OK"])
def test_a_page_echoing_the_token_leaves_no_trace_of_it_in_the_chain(
    settings, representation, body, status
):
    Token(SECRET)
    with servers.serving(servers.answering(status, body)) as url:
        transport = Transport(
            url,
            token=SECRET,
            settings=settings.replace(token_placement="param"),
            representation=representation,
        )
        with pytest.raises(ResponseFormatError) as caught:
            transport.get("/api/v1/me/")
    assert SECRET not in texts_of(caught.value)


def test_a_reader_failing_on_a_page_echoing_the_token_leaves_no_trace_of_it(settings):
    Token(SECRET)

    def read_records(body: bytes) -> object:  # as a byte reader does: quoting the body
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as error:
            raise ResponseFormatError(f"not JSON; it begins {body[:90]!r}") from error

    with servers.serving(servers.answering("200 OK", _ECHOING_PAGE)) as url:
        transport = Transport(url, token=SECRET, settings=settings)
        with pytest.raises(ResponseFormatError) as caught:
            transport.request("GET", "/api/v1/search/", decode=read_records)
    assert SECRET not in texts_of(caught.value)
