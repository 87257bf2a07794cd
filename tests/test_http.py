"""The transport against scripted answers: placement, retries, envelopes, error mapping, secrets."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from fake_service import BASE, Answer, FakeService, form, golden, query
from safety import servers

from mediaframe.auth import Token
from mediaframe.config import Settings
from mediaframe.exceptions import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConnectionFailedError,
    ForbiddenError,
    MethodNotAllowedError,
    NotAcceptableError,
    NotFoundError,
    OAuthError,
    PermissionDeniedError,
    RequestTimeoutError,
    ResponseFormatError,
    ServerError,
    TokenMissingError,
    TokenRejectedError,
)
from mediaframe.frames.fastjson import read_records
from mediaframe.http import Transport, decode_envelope, slots
from mediaframe.http import answers as answers_module

SECRET = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def settings(tmp_path):
    return Settings(
        config_dir=tmp_path / "config", cache_dir=tmp_path / "cache", backoff=0, retries=2
    )


def transport(fake, settings, **options):
    options.setdefault("token", SECRET)
    return Transport(BASE, settings=settings, session=fake.session(), **options)


# --- success and request shape ----------------------------------------------------------------


def test_get_returns_the_response_member_and_sends_the_oauth_header(settings):
    fake = FakeService(golden("me"))
    answer = transport(fake, settings).get("/api/v1/me/")
    assert answer["user"]["login"] == "ada"
    sent = fake.requests[0]
    assert sent.headers["Authorization"] == f"OAuth {SECRET}"
    assert sent.headers["Accept"] == "application/json"
    assert ("oauth_token", SECRET) not in query(sent)


def test_v1_post_sends_form_parameters(settings):
    fake = FakeService(golden("search_v1_old"))
    transport(fake, settings).post("/api/v1/search/", [("query", "sun"), ("bases[]", "1")])
    sent = fake.requests[0]
    assert sent.method == "POST"
    assert form(sent) == [("query", "sun"), ("bases[]", "1")]


def test_v2_asks_and_sends_json_with_parameters_in_the_query(settings):
    fake = FakeService(golden("search_v2"))
    transport(fake, settings).post("/api/v2/search/", [("query", "sun")])
    sent = fake.requests[0]
    assert sent.headers["Accept"] == "application/json"
    assert sent.headers["Content-Type"] == "application/json"
    assert ("query", "sun") in query(sent)


@pytest.mark.parametrize(
    ("method", "where"), [("GET", "query"), ("POST", "form")], ids=["get", "post"]
)
def test_param_placement_puts_the_token_in_exactly_one_place(settings, method, where):
    fake = FakeService(golden("me"))
    placed = transport(fake, settings.replace(token_placement="param"))
    placed.request(method, "/api/v1/search/", [("query", "")])
    sent = fake.requests[0]
    assert "Authorization" not in sent.headers
    in_query = ("oauth_token", SECRET) in query(sent)
    in_form = ("oauth_token", SECRET) in form(sent)
    assert (in_query, in_form) == ((True, False) if where == "query" else (False, True))


@pytest.mark.parametrize("refusal", ["header_refused", "token_missing"])
def test_auto_placement_falls_back_to_the_parameter_once_and_remembers(settings, refusal):
    fake = FakeService(golden(refusal), golden("me"))
    auto = transport(fake, settings)
    assert auto.get("/api/v1/me/")["user"]["login"] == "ada"
    auto.get("/api/v1/me/")
    first, second, third = fake.requests
    assert first.headers["Authorization"].startswith("OAuth ")
    for later in (second, third):
        assert "Authorization" not in later.headers
        assert ("oauth_token", SECRET) in query(later)
    assert auto.placement == "param"


def test_auto_placement_keeps_the_header_once_it_worked(settings):
    fake = FakeService(golden("me"), golden("header_refused"))
    auto = transport(fake, settings)
    auto.get("/api/v1/me/")
    assert auto.placement == "header"
    with pytest.raises(OAuthError) as caught:
        auto.get("/api/v1/me/")
    assert caught.value.error == "invalid_request"
    assert len(fake.requests) == 2


def test_forced_header_placement_never_falls_back(settings):
    fake = FakeService(golden("header_refused"))
    with pytest.raises(OAuthError, match="MEDIAFRAME_TOKEN_PLACEMENT"):
        transport(fake, settings.replace(token_placement="header")).get("/api/v1/me/")
    assert len(fake.requests) == 1


# --- representations --------------------------------------------------------------------------


def test_jsonp_sends_a_callback_and_reads_the_true_status(settings):
    fake = FakeService(golden("jsonp_me"), golden("jsonp_not_found"))
    jsonp = transport(fake, settings, representation="jsonp")
    assert jsonp.get("/api/v1/me/")["user"]["login"] == "ada"
    assert ("callback", "mediaframe_jsonp") in query(fake.requests[0])
    with pytest.raises(NotFoundError) as caught:
        jsonp.get("/api/v1/records/1/5/")
    assert caught.value.status_code == 404
    assert "Record 5 on database 1 not found" in str(caught.value)


def test_yaml_asks_for_yaml_and_keeps_dates_as_strings(settings):
    fake = FakeService(golden("yaml_me"))
    answer = transport(fake, settings, representation="yaml").get("/api/v1/me/")
    assert fake.requests[0].headers["Accept"] == "application/yaml"
    assert answer["user"]["created_on"] == "2016-06-16T18:59:59+02:00"


def test_decode_envelope_turns_an_empty_list_into_an_empty_object():
    assert decode_envelope(golden("empty_list_response").body)["response"] == {}


def test_unknown_representation_is_refused(settings):
    with pytest.raises(ConfigurationError, match="representation"):
        transport(FakeService(golden("me")), settings, representation="xml")


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "status", "details"),
    [
        ("bad_request", BadRequestError, 400, "No collections match your criteria"),
        ("not_authorized", PermissionDeniedError, 401, "You are not authorized"),
        ("forbidden", ForbiddenError, 403, ""),
        ("not_found", NotFoundError, 404, "Record 12345 on database 1 not found"),
        ("method_not_allowed", MethodNotAllowedError, 405, ""),
        ("not_acceptable", NotAcceptableError, 406, ""),
    ],
)
def test_envelope_errors_map_to_the_tree(settings, name, kind, status, details):
    fake = FakeService(golden(name))
    with pytest.raises(kind) as caught:
        transport(fake, settings).get("/api/v1/records/1/12345/")
    error = caught.value
    assert type(error) is kind
    assert (error.status_code, error.error_details) == (status, details)
    assert error.request == "GET /api/v1/records/1/12345/"
    assert details in str(error)
    assert len(fake.requests) == 1, "4xx answers are never retried"


def test_permission_denied_is_not_an_authentication_error(settings):
    with pytest.raises(PermissionDeniedError) as caught:
        transport(FakeService(golden("not_authorized")), settings).get("/api/v1/records/1/9/")
    assert not isinstance(caught.value, AuthenticationError)
    assert "token is valid" in str(caught.value)


def test_an_empty_401_means_log_in_again(settings):
    fake = FakeService(golden("token_rejected"))
    with pytest.raises(TokenRejectedError, match="mediaframe login"):
        transport(fake, settings).get("/api/v1/me/")
    assert len(fake.requests) == 1


def test_an_empty_400_without_a_token_means_the_token_is_missing(settings):
    fake = FakeService(golden("token_missing"))
    with pytest.raises(TokenMissingError, match="no token"):
        transport(fake, settings, token=None).get("/api/v1/me/")
    assert "Authorization" not in fake.requests[0].headers


def test_an_empty_400_in_param_mode_means_the_token_is_missing(settings):
    fake = FakeService(golden("token_missing"))
    with pytest.raises(TokenMissingError):
        transport(fake, settings.replace(token_placement="param")).get("/api/v1/me/")


@pytest.mark.parametrize("name", ["proxy_login_page", "wrong_types"])
def test_a_body_that_is_not_the_envelope_is_a_format_error(settings, name):
    fake = FakeService(golden(name))
    with pytest.raises(ResponseFormatError) as caught:
        transport(fake, settings).get("/api/v1/me/")
    if name == "proxy_login_page":
        assert caught.value.status_code == 200
        assert "Single sign-on" in caught.value.snippet
    assert len(fake.requests) == 1


# the first window of bytes the snippet is made from; whitespace makes its text shorter
_WINDOW = answers_module._SNIPPET + answers_module._SECRET_ROOM


@pytest.mark.parametrize(
    "before",
    [
        "<html><body>" + "x" * 126 + " Bearer? ",  # the token starts at byte 147, the cut is 160
        # the token across the end of the first window, yet near the start once collapsed
        "<p>" + " " * (_WINDOW - 27) + "invalid token ",
    ],
    ids=["across-the-cut", "across-the-window"],
)
def test_a_page_quoting_the_token_across_the_cut_shows_none_of_it(settings, before):
    page = (before + SECRET + " was presented</body></html>").encode()
    fake = FakeService(Answer(200, {"Content-Type": "text/html"}, page))
    with pytest.raises(ResponseFormatError) as caught:
        transport(fake, settings).get("/api/v1/me/")
    snippet = caught.value.snippet
    assert snippet.startswith(before.split()[0]) and len(snippet) <= 160
    for shown in (snippet, str(caught.value)):
        assert SECRET[:6] not in shown, "the first bytes of a token cut in two were shown"


def test_a_body_the_parser_refuses_says_why(settings):
    """An envelope holding a lone surrogate escape (a server's damaged text) is refused by the
    parser: the error says what it found, not only that the body is no JSON."""
    body = b'{"meta": {"http_code": 200}, "response": {"user": {"login": "\\ud800"}}}'
    fake = FakeService(Answer(200, {"Content-Type": "application/json"}, body))
    with pytest.raises(ResponseFormatError, match="no low surrogate in string"):
        transport(fake, settings).get("/api/v1/me/")


WHOLE_BUT_REFUSED = {
    "huge-number": (b'{"meta": {"http_code": 200}, "response": {"size": 1e400}}', "infinity"),
    "lone-surrogate": (
        b'{"meta": {"http_code": 200}, "response": {"login": "\\ud800 [x] {"}}',
        "no low surrogate",
    ),
}


def _counted(bodies: list[bytes], served: list[bytes]) -> servers.Behaviour:
    """Each connection gets the next body (the last repeats), framed by its own length."""

    def behave(sock) -> None:  # type: ignore[no-untyped-def]
        body = bodies[min(len(served), len(bodies) - 1)]
        served.append(body)
        servers.answering("200 OK", body)(sock)

    return behave


@pytest.mark.parametrize("case", sorted(WHOLE_BUT_REFUSED))
def test_a_whole_body_the_parser_refuses_is_not_retried(settings, case):
    """A body whose framing is whole (its length as announced, every bracket closed) is not cut
    short because the parser refuses a value in it: it fails at once, saying why."""
    body, reason = WHOLE_BUT_REFUSED[case]
    served: list[bytes] = []
    with (
        servers.serving(_counted([body], served)) as url,
        pytest.raises(ResponseFormatError, match=reason),
    ):
        Transport(url, token=SECRET, settings=settings).get("/api/v1/me/")
    assert len(served) == 1


@pytest.mark.parametrize(
    "cut", [20, 66, 78], ids=["in-a-key", "in-a-string-of-brackets", "before-the-last-brackets"]
)
def test_an_envelope_cut_short_and_framed_as_whole_is_retried(settings, cut):
    """A server that cuts its own answer announces the length of what is left: the framing of
    HTTP is whole, the envelope's own is not, and the answer is asked again."""
    whole = b'{"meta": {"http_code": 200}, "response": {"user": {"login": "ada [the {first}"}}}'
    served: list[bytes] = []
    with servers.serving(_counted([whole[:cut], whole], served)) as url:
        answer = Transport(url, token=SECRET, settings=settings).get("/api/v1/me/")
    assert answer["user"]["login"] == "ada [the {first}"
    assert served == [whole[:cut], whole]


@pytest.mark.parametrize(
    ("value", "reason"),
    [(b"1e400", "infinity"), (b'"\\udc00]}"', "surrogate")],
    ids=["huge-number", "lone-surrogate"],
)
def test_a_whole_search_answer_the_reader_refuses_is_not_retried(settings, value, reason):
    """The same through the reader of search pages (decode=), as searches into frames read."""
    body = (
        b'{"meta": {"http_code": 200}, "response": {"total_results": 1, "results": '
        b'{"records": [{"databox_id": 1, "record_id": 7, "size": %s}], "stories": []}}}' % value
    )
    fake = FakeService(Answer(200, {"Content-Type": "application/json"}, body))
    with pytest.raises(ResponseFormatError, match=reason):
        transport(fake, settings).request("POST", "/api/v1/search/", decode=read_records)
    assert len(fake.requests) == 1


def test_an_empty_200_is_a_format_error(settings):
    with pytest.raises(ResponseFormatError, match="empty body"):
        transport(FakeService(Answer(200)), settings).get("/api/v1/me/")


# --- retries ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [
        golden("maintenance"),
        golden("proxy_502"),
        golden("truncated"),
        Answer(500),
        Answer(200, {"Content-Length": "999"}, golden("me").body),
        requests.ConnectionError("connection reset"),
        requests.exceptions.ChunkedEncodingError("dropped mid-body"),
        requests.ReadTimeout("read timed out"),
    ],
    ids=["503", "html-502", "truncated", "empty-500", "short-body", "reset", "dropped", "timeout"],
)
def test_transient_failures_are_retried(settings, failure):
    fake = FakeService(failure, golden("me"))
    assert transport(fake, settings).get("/api/v1/me/")["user"]["login"] == "ada"
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    ("failure", "kind"),
    [
        (golden("maintenance"), ServerError),
        (golden("proxy_502"), ServerError),
        (requests.ConnectionError("refused"), ConnectionFailedError),
        (requests.ConnectTimeout("too slow"), RequestTimeoutError),
        (golden("truncated"), ResponseFormatError),
    ],
    ids=["503", "html-502", "refused", "timeout", "truncated"],
)
def test_retries_are_bounded(settings, failure, kind):
    fake = FakeService(failure)
    with pytest.raises(kind) as caught:
        transport(fake, settings).get("/api/v1/me/")
    assert len(fake.requests) == settings.retries + 1
    if kind is ServerError:
        assert caught.value.status_code in (502, 503)
        assert "try again later" in str(caught.value).lower()


def test_backoff_grows_and_stays_bounded(settings):
    paced = Transport(BASE, settings=settings.replace(backoff=1.0), session=requests.Session())
    delays = [paced.backoff(attempt) for attempt in range(10)]
    assert 0.5 <= delays[0] <= 1.0
    assert 4.0 <= delays[3] <= 8.0
    assert max(delays) <= 60.0
    assert paced.backoff(0, 5.0) >= 5.0


def test_plain_http_to_a_remote_host_is_refused(settings):
    with pytest.raises(ConfigurationError, match="https"):
        Transport("http://assets.example.org", settings=settings)


# --- refresh ------------------------------------------------------------------------------------


def test_an_expired_token_is_refreshed_before_it_is_used(settings):
    fake = FakeService(golden("me"))
    calls = []

    def refresh(stale):
        calls.append(stale)
        return Token("fresh-token", refresh_token="r2")

    stale = Token("old-token", refresh_token="r1", expires_at=1.0)
    transport(fake, settings, token=stale, refresh=refresh).get("/api/v1/me/")
    assert calls == [stale]
    assert fake.requests[0].headers["Authorization"] == "OAuth fresh-token"


def test_a_rejected_refreshable_token_is_refreshed_once(settings):
    fake = FakeService(golden("token_rejected"), golden("me"))
    token = Token("old-token", refresh_token="r1")
    answer = transport(fake, settings, token=token, refresh=lambda t: Token("new-token")).get(
        "/api/v1/me/"
    )
    assert answer["user"]["login"] == "ada"
    assert fake.requests[1].headers["Authorization"] == "OAuth new-token"


def test_a_token_without_refresh_is_never_refreshed(settings):
    fake = FakeService(golden("me"))
    transport(fake, settings, refresh=pytest.fail).get("/api/v1/me/")


# --- secrets --------------------------------------------------------------------------------------


def test_repr_hides_the_token(settings):
    assert SECRET not in repr(transport(FakeService(golden("me")), settings))


def test_errors_never_carry_the_token(settings):
    leaky = requests.ConnectionError(
        f"Max retries exceeded with url: /api/v1/me/?oauth_token={SECRET}"
    )
    fake = FakeService(leaky)
    with pytest.raises(ConnectionFailedError) as caught:
        transport(fake, settings.replace(token_placement="param", retries=0)).get("/api/v1/me/")
    assert SECRET not in str(caught.value)
    assert caught.value.__cause__ is None


def test_debug_logs_never_carry_the_token(settings, caplog):
    caplog.set_level(logging.DEBUG)
    fake = FakeService(golden("header_refused"), golden("me"))
    transport(fake, settings).get("/api/v1/me/")
    logging.getLogger("urllib3.connectionpool").debug("GET /api/v1/me/?oauth_token=%s", SECRET)
    assert caplog.records
    assert all(SECRET not in record.getMessage() for record in caplog.records)


def test_api_errors_are_api_errors(settings):
    with pytest.raises(APIError):
        transport(FakeService(golden("bad_request")), settings).post("/api/v1/search/")


# --- end to end, against the emulator -----------------------------------------------------------


def emulator_transport(emu, settings, **options):
    options.setdefault("token", emu.token)
    return Transport(
        emu.inprocess_url, settings=settings, session=emu.requests_session(), **options
    )


def test_a_revoked_token_is_rejected_by_the_emulator(inprocess_emulator, settings):
    token = inprocess_emulator.token_for("demo")
    live = emulator_transport(inprocess_emulator, settings, token=token)
    assert live.get("/api/v1/me/")["user"]["login"] == "demo"
    inprocess_emulator.revoke(token)
    with pytest.raises(TokenRejectedError, match="mediaframe login"):
        live.get("/api/v1/me/")


def test_the_emulator_answers_missing_tokens_and_unknown_routes_apart(inprocess_emulator, settings):
    with pytest.raises(TokenMissingError):
        emulator_transport(inprocess_emulator, settings, token=None).get("/api/v1/me/")
    with pytest.raises(NotFoundError):
        emulator_transport(inprocess_emulator, settings).get("/api/v1/nowhere/")
    with pytest.raises(MethodNotAllowedError):
        emulator_transport(inprocess_emulator, settings).post("/api/v1/me/")


class _BearerProxy(requests.adapters.BaseAdapter):
    """Rewrites the header to Bearer, as a server that refuses our header form would see it."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def send(self, request, **kwargs):
        if "Authorization" in request.headers:
            request.headers["Authorization"] = request.headers["Authorization"].replace(
                "OAuth ", "Bearer "
            )
        return self.inner.send(request, **kwargs)

    def close(self):
        self.inner.close()


def test_header_refusal_falls_back_to_the_parameter_against_the_emulator(
    inprocess_emulator, settings
):
    session = inprocess_emulator.requests_session()
    session.mount(
        inprocess_emulator.inprocess_url,
        _BearerProxy(session.get_adapter(inprocess_emulator.inprocess_url)),
    )
    auto = Transport(
        inprocess_emulator.inprocess_url,
        token=inprocess_emulator.token,
        settings=settings,
        session=session,
    )
    assert auto.get("/api/v1/me/")["user"]["login"] == "demo"
    assert auto.placement == "param"
    assert auto.post("/api/v1/search/", [("query", ""), ("per_page", "1")])["per_page"] == 1


@pytest.mark.parametrize("representation", ["json", "yaml", "jsonp"])
def test_every_representation_against_the_emulator(inprocess_emulator, settings, representation):
    speaker = emulator_transport(inprocess_emulator, settings, representation=representation)
    assert speaker.get("/api/v1/me/")["user"]["login"] == "demo"
    with pytest.raises(NotFoundError):
        speaker.get("/api/v1/records/1/99999999/")


def test_param_placement_against_the_emulator(inprocess_emulator, settings):
    placed = emulator_transport(inprocess_emulator, settings.replace(token_placement="param"))
    assert placed.get("/api/v1/me/")["user"]["login"] == "demo"
    assert placed.post("/api/v1/search/", [("per_page", "2")])["per_page"] == 2
    assert placed.post("/api/v2/search/", [("per_page", "2")])["per_page"] == 2


def test_faults_are_retried_until_every_answer_arrives(fresh_emulator, settings, caplog):
    caplog.set_level(logging.DEBUG, logger="mediaframe.http")
    emu = fresh_emulator(fail_rate=0.25, drop_rate=0.15, truncate_rate=0.15, fault_seed=3)
    flaky = Transport(emu.base_url, token=emu.token, settings=settings.replace(retries=12))
    counts = {
        flaky.post("/api/v1/search/", [("per_page", "5")])["total_results"] for _ in range(25)
    }
    assert len(counts) == 1
    retried = " ".join(r.getMessage() for r in caplog.records if "retry" in r.getMessage())
    assert (
        "Internal Server Error" in retried and "closed the connection without answering" in retried
    )
    flaky.close()


def test_a_bad_token_wrapped_in_the_envelope_is_still_a_rejected_token(settings):
    with pytest.raises(TokenRejectedError):
        transport(FakeService(golden("rejected_in_envelope")), settings).get("/api/v1/me/")


def test_a_bad_token_answered_with_a_proxys_html_page_is_still_a_rejected_token(settings):
    page = b"<html><head><title>401 Authorization Required</title></head><body>nginx</body></html>"
    head = (
        b"HTTP/1.1 401 Unauthorized\r\nContent-Type: text/html\r\n"
        b"WWW-Authenticate: OAuth realm='Service', error='invalid_token'\r\n"
        b"Content-Length: %d" % len(page)
    )
    with (
        servers.serving(servers.raw(head, page)) as url,
        pytest.raises(TokenRejectedError, match="mediaframe login"),
    ):
        Transport(url, token=SECRET, settings=settings).get("/api/v1/me/")


def test_jsonp_status_given_as_a_string_is_read(settings):
    fake = FakeService(golden("jsonp_string_status"))
    with pytest.raises(ForbiddenError):
        transport(fake, settings, representation="jsonp").get("/api/v1/records/1/5/")


# --- requests in flight (mediaframe.http.slots) -----------------------------------------------


class _Counting:
    """A server behaviour answering the envelope after ``hold`` seconds, counting how many
    requests it holds at once; ``arrived`` is set when the ``nth`` request comes in."""

    def __init__(self, hold: float, nth: int = 0) -> None:
        self.hold, self.nth = hold, nth
        self.now = self.most = self.seen = 0
        self.arrived = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, sock) -> None:  # type: ignore[no-untyped-def]
        with self._lock:
            self.now += 1
            self.seen += 1
            self.most = max(self.most, self.now)
            if self.seen == self.nth:
                self.arrived.set()
        try:
            time.sleep(self.hold)
            servers.answering("200 OK", servers.ENVELOPE)(sock)
        finally:
            with self._lock:
                self.now -= 1


def test_threads_given_slots_keep_that_many_requests_in_flight(settings):
    """Six threads sharing two slots never have more than two requests at the server."""
    server = _Counting(hold=0.05)
    with servers.serving(server) as url:
        sender = Transport(url, token=SECRET, settings=settings)
        pool = ThreadPoolExecutor(6, initializer=slots.limit, initargs=(threading.Semaphore(2),))
        with pool:
            list(pool.map(lambda _: sender.get("/api/v1/me/"), range(12)))
    assert server.seen == 12
    assert server.most == 2


def test_a_slot_is_given_back_before_the_answer_is_read_into_a_frame(settings):
    """With one slot and two threads, the second request goes out while the first answer is
    still being read (``decode``): a thread reading a page holds no connection idle."""
    server = _Counting(hold=0.0, nth=2)
    seen_while_reading: list[bool] = []

    def decode(body: bytes) -> object:
        if not seen_while_reading:  # the first answer waits here for the second request
            seen_while_reading.append(server.arrived.wait(timeout=10))
        return decode_envelope(body)

    with servers.serving(server) as url:
        sender = Transport(url, token=SECRET, settings=settings)
        pool = ThreadPoolExecutor(2, initializer=slots.limit, initargs=(threading.Semaphore(1),))
        with pool:
            list(pool.map(lambda _: sender.request("GET", "/api/v1/me/", decode=decode), range(2)))
    assert seen_while_reading == [True]
    assert server.most == 1


def test_threads_without_slots_send_as_many_requests_as_they_are(settings):
    server = _Counting(hold=0.2)
    with servers.serving(server) as url:
        sender = Transport(url, token=SECRET, settings=settings)
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda _: sender.get("/api/v1/me/"), range(3)))
    assert server.most == 3


# --- a base URL ending in /api -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (golden("not_found"), NotFoundError),
        (Answer(404, {"Content-Type": "text/html"}, b"<h1>Not Found</h1>"), ResponseFormatError),
        (Answer(404, {}, b""), ResponseFormatError),
    ],
    ids=["envelope", "html", "empty"],
)
@pytest.mark.parametrize("base", [f"{BASE}/api", f"{BASE}/api/", BASE])
def test_a_404_under_a_base_url_ending_in_api_says_to_give_the_root(settings, answer, kind, base):
    """Such a URL doubles every path (/api/api/v1/me/); a gateway may mount a service there, so
    it is not refused, and its first 404 says which URL to give."""
    fake = FakeService(answer)
    at = Transport(base, token=SECRET, settings=settings, session=fake.session())
    with pytest.raises(kind) as caught:
        at.get("/api/v1/me/")
    hint = f"base_url ends in /api: give the service root, e.g. {BASE}"
    assert (hint in str(caught.value)) == (base != BASE)
