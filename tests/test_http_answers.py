"""Answers that say something else than their status line: an HTTP 200 whose envelope reports
a failure, rate limiting (429 and ``Retry-After``), a body that is not what its headers say."""

from __future__ import annotations

import json

import pytest
import requests
import yaml
from fake_service import BASE, Answer, FakeService, golden
from safety import servers

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.exceptions import (
    APIError,
    BadRequestError,
    MalformedItemError,
    NotFoundError,
    RateLimitedError,
    ResponseFormatError,
    ServerError,
)
from mediaframe.frames.fastjson import read_records
from mediaframe.http import Transport
from mediaframe.http import answers as answers_module
from mediaframe.http import transport as transport_module
from mediaframe.nesting import DEEP_ADVICE

SECRET = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def settings(tmp_path):
    return Settings(
        config_dir=tmp_path / "config", cache_dir=tmp_path / "cache", backoff=0, retries=2
    )


@pytest.fixture
def waits(monkeypatch):
    """The delays the transport waited before each retry, recorded instead of slept."""
    delays: list[float] = []
    monkeypatch.setattr(transport_module, "_wait", delays.append)
    return delays


def transport(fake, settings, **options):
    options.setdefault("token", SECRET)
    return Transport(BASE, settings=settings, session=fake.session(), **options)


# --- an HTTP 200 whose envelope says it failed (review 14, finding 3) --------------------------

FAILED_META = {
    "api_version": "2.0.0",
    "request": "GET /api/v1/me/",
    "http_code": 503,
    "error_type": "Service Temporarily Unavailable",
    "error_message": "Server is offline for maintenance, try again soon.",
    "error_details": "",
}
ME = {"user": {"id": 7, "login": "ada"}}


def said_in_200(representation: str, http_code: object, response: object = None) -> Answer:
    """An HTTP 200 whose envelope carries ``http_code`` (as a PHP error handler behind a proxy
    answers), in the representation asked."""
    envelope = {"meta": {**FAILED_META, "http_code": http_code}, "response": response or {}}
    if representation == "yaml":
        return Answer(200, {"Content-Type": "application/yaml"}, yaml.safe_dump(envelope).encode())
    body = json.dumps(envelope).encode()
    if representation == "jsonp":
        body = b"/**/mediaframe_jsonp(" + body + b");"
    return Answer(200, {"Content-Type": "application/json"}, body)


def ok_in(representation: str) -> Answer:
    return said_in_200(representation, 200, ME)


@pytest.mark.parametrize("representation", ["json", "yaml", "jsonp"])
def test_a_200_whose_envelope_says_503_is_retried_then_a_server_error(settings, representation):
    fake = FakeService(said_in_200(representation, 503))
    with pytest.raises(ServerError) as caught:
        transport(fake, settings, representation=representation).get("/api/v1/me/")
    assert caught.value.status_code == 503
    assert "offline for maintenance" in str(caught.value)
    assert len(fake.requests) == settings.retries + 1


@pytest.mark.parametrize("representation", ["json", "yaml", "jsonp"])
def test_a_200_whose_envelope_says_503_once_is_asked_again(settings, representation):
    fake = FakeService(said_in_200(representation, 503), ok_in(representation))
    answer = transport(fake, settings, representation=representation).get("/api/v1/me/")
    assert answer["user"]["login"] == "ada"
    assert len(fake.requests) == 2


@pytest.mark.parametrize("http_code", [404, "404"], ids=["integer", "string"])
@pytest.mark.parametrize("representation", ["json", "yaml"])
def test_a_200_whose_envelope_says_404_is_not_found(settings, representation, http_code):
    fake = FakeService(said_in_200(representation, http_code))
    with pytest.raises(NotFoundError) as caught:
        transport(fake, settings, representation=representation).get("/api/v1/records/1/5/")
    assert caught.value.status_code == 404
    assert len(fake.requests) == 1, "a 4xx is never asked again"


@pytest.mark.parametrize("http_code", [200, "200", None, True, "x"], ids=str)
def test_an_envelope_not_saying_it_failed_is_read(settings, http_code):
    """Only an integer status of 400 or more in the envelope makes an error: a missing, boolean
    or unreadable ``http_code`` leaves the status line as it is."""
    fake = FakeService(said_in_200("json", http_code, ME))
    assert transport(fake, settings).get("/api/v1/me/")["user"]["login"] == "ada"


SEARCH_PAGE = {
    "total_results": 1,
    "results": {"records": [{"databox_id": 1, "record_id": 7}], "stories": []},
}


@pytest.mark.parametrize(
    "response", [None, SEARCH_PAGE], ids=["empty-response", "records-in-a-failed-envelope"]
)
def test_a_search_page_read_from_bytes_is_refused_when_its_envelope_failed(settings, response):
    """Search pages are read into frames straight from their bytes (decode=): an envelope that
    says it failed is the service's error, retried as a 503, never an empty (or any) page."""
    fake = FakeService(said_in_200("json", 503, response))
    with pytest.raises(ServerError) as caught:
        transport(fake, settings).request("POST", "/api/v1/search/", decode=read_records)
    assert caught.value.status_code == 503
    assert len(fake.requests) == settings.retries + 1


def test_a_search_page_the_reader_refuses_in_a_whole_envelope_keeps_the_readers_words(settings):
    """A record key sent as a string is the reader's finding about one item, not a proxy page
    (review 14, finding 14)."""
    page = {"total_results": 1, "results": {"records": [{"databox_id": "2", "record_id": 7}]}}
    fake = FakeService(said_in_200("json", 200, page))
    with pytest.raises(MalformedItemError) as caught:
        transport(fake, settings).request("POST", "/api/v1/search/", decode=read_records)
    assert "databox_id" in str(caught.value)
    assert "proxy" not in str(caught.value)
    assert len(fake.requests) == 1


def test_a_search_page_the_reader_refuses_quotes_no_secret(settings):
    """The reader's own words are kept, but what it quotes of the body is scrubbed: it knows no
    secret, and a server may echo the request, token and all, in ``meta.request``."""
    body = (
        b'{"meta": {"request": "POST /api/v1/search/?oauth_token=%s", "http_code": 200}, '
        b'"response": {"total_results": 0}}' % SECRET.encode()
    )
    fake = FakeService(Answer(200, {"Content-Type": "application/json"}, body))
    with pytest.raises(ResponseFormatError) as caught:
        transport(fake, settings).request("POST", "/api/v1/search/", decode=read_records)
    assert "response.results.records" in str(caught.value)
    assert SECRET[:6] not in str(caught.value) and SECRET[:6] not in caught.value.snippet


def test_a_me_answer_whose_envelope_failed_is_never_kept_by_the_client(settings):
    """The failed ``/me/`` raises before the client keeps it: the next call asks again, and
    gets the user (an empty /me/ kept for the session made every later search fail)."""
    fake = FakeService(said_in_200("json", 503), golden("me"))
    client = mf.connect(
        BASE, token=SECRET, settings=settings.replace(retries=0), session=fake.session()
    )
    with pytest.raises(ServerError):
        client.whoami()
    assert client.whoami()["login"] == "ada"


# --- rate limiting: 429 and Retry-After (review 14, finding 12) -------------------------------

#: The ``Date`` of the answers below: a ``Retry-After`` date is read against the server's clock.
NOW = "Wed, 21 Oct 2026 07:28:00 GMT"
TOO_MANY = {
    "api_version": "2.0.0",
    "request": "POST /api/v1/search/",
    "http_code": 429,
    "error_type": "Too Many Requests",
    "error_message": "Too Many Requests",
}


def too_many(kind: str, retry_after: str | None = "7") -> Answer:
    """A 429 as a rate-limiting proxy or the service sends it."""
    headers = {"Date": NOW} | ({"Retry-After": retry_after} if retry_after is not None else {})
    if kind == "envelope":
        body = json.dumps({"meta": TOO_MANY, "response": {}}).encode()
        return Answer(429, {**headers, "Content-Type": "application/json"}, body)
    if kind == "in-a-200":
        body = json.dumps({"meta": TOO_MANY, "response": {}}).encode()
        return Answer(200, {**headers, "Content-Type": "application/json"}, body)
    if kind == "html":
        page = b"<html><head><title>429 Too Many Requests</title></head><body>nginx</body></html>"
        return Answer(429, {**headers, "Content-Type": "text/html"}, page)
    return Answer(429, headers)  # no body at all


KINDS = ["envelope", "in-a-200", "html", "empty"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_429_is_asked_again_after_the_wait_the_server_asked_for(settings, waits, kind):
    fake = FakeService(too_many(kind), envelope_of(SEARCH_PAGE))
    answer = transport(fake, settings).post("/api/v1/search/")
    assert answer["total_results"] == 1
    assert len(fake.requests) == 2
    assert waits == [7.0]


@pytest.mark.parametrize("kind", KINDS)
def test_a_429_through_every_retry_says_the_service_is_rate_limiting(settings, waits, kind):
    fake = FakeService(too_many(kind, retry_after=None))
    with pytest.raises(RateLimitedError) as caught:
        transport(fake, settings).post("/api/v1/search/")
    error = caught.value
    assert isinstance(error, APIError) and error.status_code == 429
    assert error.request == "POST /api/v1/search/"
    message = str(error)
    assert "rate-limiting" in message and "concurrency" in message and "wait" in message
    assert "proxy or login page" not in message
    assert len(fake.requests) == settings.retries + 1
    assert len(waits) == settings.retries


@pytest.mark.parametrize(
    ("retry_after", "seconds"),
    [
        ("7", 7.0),
        ("Wed, 21 Oct 2026 07:28:30 GMT", 30.0),  # 30 s after the answer's Date
        ("Wed, 21 Oct 2026 07:27:00 GMT", 0.0),  # already past
        ("3600", 60.0),  # capped as any backoff
        ("soon", 0.0),  # unreadable: the backoff alone (0 in these settings)
        ("-5", 0.0),
    ],
)
def test_retry_after_is_read_in_seconds_or_as_a_date_and_capped(
    settings, waits, retry_after, seconds
):
    fake = FakeService(too_many("envelope", retry_after), envelope_of(SEARCH_PAGE))
    transport(fake, settings).post("/api/v1/search/")
    assert waits == [seconds]


def test_a_rate_limit_that_outlasts_the_retries_says_how_long_the_server_asked(settings, waits):
    fake = FakeService(too_many("html", retry_after="120"))
    with pytest.raises(RateLimitedError, match="120 s"):
        transport(fake, settings).post("/api/v1/search/")
    assert waits == [60.0, 60.0]


def test_a_retry_after_date_without_a_date_header_is_read_against_the_clock(monkeypatch):
    monkeypatch.setattr(answers_module, "_now", lambda: 1_000_000.0)
    response = requests.Response()
    response.headers["Retry-After"] = "Mon, 12 Jan 1970 13:47:00 GMT"  # 1,000,020 s
    assert answers_module._retry_after(response) == 20.0


def envelope_of(response: object) -> Answer:
    return said_in_200("json", 200, response)


# --- a body that is not what its headers say (review 14, finding 14) --------------------------


def _counting(behaviour: servers.Behaviour, served: list[int]) -> servers.Behaviour:
    def behave(sock) -> None:  # type: ignore[no-untyped-def]
        served.append(1)
        behaviour(sock)

    return behave


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_plain_body_said_to_be_compressed_is_a_format_error_not_retried(settings, coding):
    """A false ``Content-Encoding`` is the server's (or a proxy's) mistake, the same on every
    attempt: not a network failure, and not asked again."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: %s\r\n" % (
        coding.encode()
    ) + b"Content-Length: %d" % len(servers.ENVELOPE)
    served: list[int] = []
    with (
        servers.serving(_counting(servers.raw(head, servers.ENVELOPE), served)) as url,
        pytest.raises(ResponseFormatError) as caught,
    ):
        Transport(url, token=SECRET, settings=settings).get("/api/v1/me/")
    message = str(caught.value)
    assert f"Content-Encoding: {coding}" in message and "GET /api/v1/me/" in message
    assert "network" not in message
    assert len(served) == 1


def test_a_body_requests_cannot_decompress_is_a_format_error(settings):
    """The same through a session whose adapter reads the body itself (requests says so)."""
    failure = requests.exceptions.ContentDecodingError("Received response with content-encoding")
    fake = FakeService(failure)
    with pytest.raises(ResponseFormatError, match="does not decompress"):
        transport(fake, settings).get("/api/v1/me/")
    assert len(fake.requests) == 1


# --- answers nested deeper than any answer nests (review 15s, findings 1 and 2) ----------------


def _deep_yaml(levels: int, style: str) -> bytes:
    if style == "flow":
        return b"meta: {}\nresponse: " + b"[" * levels + b"x" + b"]" * levels
    lines = b"".join(b"  " * i + b"k:\n" for i in range(1, levels))
    return b"meta: {}\nresponse:\n" + lines + b"  " * levels + b"x\n"


@pytest.mark.parametrize(("levels", "style"), [(5_000, "flow"), (3_000, "block"), (200, "flow")])
def test_a_yaml_answer_nested_too_deep_is_a_format_error(settings, levels, style):
    """Told as a JSON answer nested too deep is, with its advice: the answer is the service's,
    whole, so neither a proxy's page nor base_url is the matter (nor is it asked again)."""
    fake = FakeService(Answer(200, {"Content-Type": "application/yaml"}, _deep_yaml(levels, style)))
    with pytest.raises(ResponseFormatError, match="the answer nests deeper than the 128") as caught:
        transport(fake, settings, representation="yaml").request("GET", "/api/v1/me/")
    said = str(caught.value)
    assert DEEP_ADVICE in said and caught.value.status_code == 200
    assert "proxy" not in said and "base_url" not in said and "not valid YAML" not in said
    assert len(fake.requests) == 1


def test_a_yaml_answer_nests_as_deep_as_a_json_one(settings):
    """Levels are those of sequences and mappings in either representation: 128 are read."""
    deepest = {"meta": {}, "response": {"user": [[1]]}}
    for _ in range(128 - 4):
        deepest["response"]["user"] = [deepest["response"]["user"]]
    body = json.dumps(deepest).encode()  # YAML's flow style too
    for representation, kind in (("json", "application/json"), ("yaml", "application/yaml")):
        fake = FakeService(Answer(200, {"Content-Type": kind}, body))
        found = transport(fake, settings, representation=representation).request(
            "GET", "/api/v1/me/"
        )
        assert found == deepest["response"], representation


@pytest.mark.parametrize("representation", ["json", "jsonp"])
def test_a_json_answer_nested_too_deep_is_a_format_error(settings, representation):
    body = b'{"meta": {"http_code": 200}, "response": {"user": ' + b"[" * 200 + b"]" * 200 + b"}}"
    if representation == "jsonp":
        body = b"/**/mediaframe_jsonp(" + body + b");"
    fake = FakeService(Answer(200, {"Content-Type": "application/json"}, body))
    with pytest.raises(ResponseFormatError, match="nests 202 levels deep, deeper than the 128"):
        transport(fake, settings, representation=representation).request("GET", "/api/v1/me/")


def test_a_search_page_nested_too_deep_keeps_the_readers_words(settings):
    records = b'[{"databox_id": 1, "record_id": 7, "x": ' + b"[" * 1_000 + b"]" * 1_000 + b"}]"
    body = b'{"meta": {"http_code": 200}, "response": {"results": {"records": %s}}}' % records
    fake = FakeService(Answer(200, {"Content-Type": "application/json"}, body))
    with pytest.raises(ResponseFormatError, match="the search answer nests 1,005 levels") as caught:
        transport(fake, settings).request("POST", "/api/v1/search/", decode=read_records)
    assert "proxy" not in str(caught.value)


# --- server text in exceptions is shown inert (review 15s, finding 3) ---------------------------

ESCAPES = "bad\x1b]0;PWNED\x07\x1b[2J\u202eevil\x9b"


def _shown_inert(text: str) -> bool:
    return not any(char in text for char in "\x1b\x07\u202e\x9b") and "\ufffd" in text


def test_a_server_s_error_message_is_shown_inert_and_kept_as_sent(settings):
    meta = {"http_code": 400, "error_type": ESCAPES, "error_message": ESCAPES}
    body = json.dumps({"meta": {**meta, "error_details": ESCAPES}, "response": {}}).encode()
    fake = FakeService(Answer(400, {"Content-Type": "application/json"}, body))
    with pytest.raises(BadRequestError) as caught:
        transport(fake, settings).request("GET", "/api/v1/me/")
    assert _shown_inert(str(caught.value)), repr(str(caught.value))
    assert "PWNED" in str(caught.value)  # shown, inert
    # the attributes keep what the server sent, for code that reads them
    assert caught.value.error_message == caught.value.error_details == ESCAPES


def test_an_oauth_error_code_is_shown_inert(settings):
    body = json.dumps({"error": ESCAPES}).encode()
    fake = FakeService(Answer(400, {"Content-Type": "application/json"}, body))
    with pytest.raises(mf.OAuthError) as caught:
        transport(fake, settings.replace(token_placement="param")).request("GET", "/api/v1/me/")
    assert _shown_inert(str(caught.value)), repr(str(caught.value))
    assert caught.value.error == ESCAPES
