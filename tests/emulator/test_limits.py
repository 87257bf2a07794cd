"""The emulator as a server facing hostile requests: 400s with details, and bounded threads."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from mediaframe.emulator import Emulator
from mediaframe.emulator.server import LoopbackServer, _RequestHandler

BIG = "9" * 5000


@pytest.fixture(scope="module")
def served():
    with Emulator(records=200, seed=3) as emu:
        yield emu


def search(emu: Emulator, **data: str) -> requests.Response:
    data = {"oauth_token": emu.token, **data}
    return requests.post(emu.base_url + "/api/v1/search/", data=data, timeout=30)


def assert_refused(response: requests.Response, details: str) -> None:
    assert response.status_code == 400, response.text[:300]
    body = response.json()
    said = body["meta"]["error_details"] if "meta" in body else body["error"]
    assert details in said


@pytest.mark.parametrize(
    ("path", "details"),
    [
        (f"/api/v1/records/1/{BIG}/", "5000 digits"),
        (f"/api/v1/stories/{BIG}/1/", "5000 digits"),
        (f"/api/v1/feeds/{BIG}/content/", "5000 digits"),
        (f"/api/v1/feeds/entry/{BIG}/", "5000 digits"),
    ],
)
def test_ids_of_thousands_of_digits_are_bad_requests(served, path, details):
    answer = requests.get(served.base_url + path, params={"oauth_token": served.token}, timeout=30)
    assert_refused(answer, details)


@pytest.mark.parametrize(
    ("data", "details"),
    [
        ({"query": "(" * 5000 + "x" + ")" * 5000}, "at most 500 are read"),
        ({"query": "(" * 200 + "x" + ")" * 200}, "parentheses nest deeper than 50"),
        ({"query": " ".join(f"w{i}" for i in range(20_000))}, "at most 500 are read"),
        ({"query": " OR ".join(f"w{i}" for i in range(5000))}, "at most 500 are read"),
        ({"query": f"recordid:{BIG}"}, "needs a record id"),
        ({"status[4][on][]": BIG}, "takes databox ids"),
        ({"bases[]": BIG}, "takes base ids"),
    ],
)
def test_oversized_queries_and_filters_are_bad_requests(served, data, details):
    assert_refused(search(served, **data), details)


def test_a_long_query_within_the_bound_is_answered(served):
    words = " OR ".join(f"w{i}" for i in range(30))
    answer = search(served, query=words)
    assert answer.status_code == 200, answer.text[:300]


@pytest.mark.parametrize(
    "header",
    [
        b"Basic " + base64.b64encode("\u00e9:\u00fc".encode("latin-1")),
        "Basic \u00e9\u20ac".encode(),
        b"Basic \xff\xfe",
    ],
)
def test_a_non_ascii_basic_header_on_the_token_endpoint_is_a_bad_request(served, header):
    answer = requests.post(
        served.base_url + "/api/oauthv2/token",
        data={"grant_type": "password", "username": "demo", "password": "x"},
        headers={"Authorization": header},
        timeout=30,
    )
    assert answer.status_code == 400 and answer.json() == {"error": "invalid_client"}


@contextlib.contextmanager
def serving(server: LoopbackServer) -> Iterator[tuple[str, int]]:
    """``server`` started, as the address to connect to; stopped afterwards."""
    server.start()
    try:
        host, port = server.base_url.removeprefix("http://").split(":")
        yield host, int(port)
    finally:
        server.stop()


def test_an_idle_connection_is_closed_after_the_connection_timeout():
    emu = Emulator(records=50, seed=1)
    server = LoopbackServer(emu.app, connection_timeout=0.5)
    with serving(server) as address, socket.create_connection(address, timeout=5) as idle:
        idle.sendall(b"GET /api/ HT")  # and then nothing
        started = time.monotonic()
        assert idle.recv(1024) == b""  # the server hung up
    assert time.monotonic() - started < 3


def test_connections_beyond_the_cap_do_not_get_threads():
    emu = Emulator(records=50, seed=1)
    server = LoopbackServer(emu.app, max_connections=2, connection_timeout=3)
    server._server.queue_wait = 0.2
    with serving(server) as address:
        idle = []
        try:
            before = threading.active_count()
            for _ in range(6):
                sock = socket.create_connection(address, timeout=5)
                sock.sendall(b"GET /api/ HT")
                idle.append(sock)
            time.sleep(1.0)
            assert threading.active_count() - before <= 2
            # the connections over the cap were closed unanswered
            closed = 0
            for sock in idle[2:]:
                sock.settimeout(2)
                try:
                    closed += sock.recv(1) == b""
                except OSError:
                    closed += 1
            assert closed == 4
        finally:
            for sock in idle:
                sock.close()


def _answer(sock: socket.socket) -> tuple[bytes, bytes]:
    """One HTTP answer read from ``sock``: its head and its body (by Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the server hung up after {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head, body


def test_a_connection_serves_request_after_request_as_deployed_servers_do():
    """wsgiref alone answers one request a connection: a harvest then opened one per page."""
    emu = Emulator(records=50, seed=1)
    server = LoopbackServer(emu.app)
    with serving(server) as address, socket.create_connection(address, timeout=5) as sock:
        for _ in range(3):
            form = b"per_page=1"
            sock.sendall(
                b"POST /api/v1/search/ HTTP/1.1\r\nHost: x\r\nAuthorization: OAuth "
                + emu.token.encode()
                + b"\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                + b"Content-Length: %d\r\n\r\n" % len(form)
                + form
            )
            head, body = _answer(sock)
            assert head.startswith(b"HTTP/1.1 200") and b'"total_results"' in body
            assert b"connection: close" not in head.lower()
        # a client asking to close gets its answer, then the end of the connection
        sock.sendall(b"GET /api/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head, _ = _answer(sock)
        assert b"connection: close" in head.lower()
        assert sock.recv(1) == b""


def _closed_after(sock: socket.socket) -> bytes:
    """Everything ``sock`` receives until the server hangs up."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def _refusal(received: bytes) -> str:
    """The error_details of the one 400 envelope in ``received``."""
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), received[:300]
    assert b"connection: close" in head.lower()
    return json.loads(body)["meta"]["error_details"]


def test_a_chunked_body_is_read_as_deployed_servers_read_it(served):
    """requests sends a generator or a file without a length chunked: its parameters count."""
    url = served.base_url + "/api/v1/search/"
    form = b"query=sunset&record_type=video&per_page=3&oauth_token=" + served.token.encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    plain = requests.post(url, data=form, headers=headers, timeout=30)
    chunked = requests.post(url, data=iter([form[:10], form[10:]]), headers=headers, timeout=30)
    assert chunked.request.headers["Transfer-Encoding"] == "chunked"
    assert chunked.status_code == 200, chunked.text[:300]
    answer = chunked.json()["response"]
    assert (answer["query"], answer["per_page"]) == ("sunset", 3)
    assert answer["total_results"] == plain.json()["response"]["total_results"]


def test_a_chunked_body_reaches_the_in_process_app_too(served):
    session = served.requests_session()
    url = served.inprocess_url + "/api/v1/search/"
    form = b"query=sunset&per_page=2&oauth_token=" + served.token.encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    answer = session.post(url, data=iter([form]), headers=headers, timeout=30)
    assert answer.json()["response"]["per_page"] == 2


def test_a_connection_serves_the_request_after_a_chunked_one():
    emu = Emulator(records=50, seed=1)
    server = LoopbackServer(emu.app)
    with serving(server) as address, socket.create_connection(address, timeout=5) as sock:
        rest = b"1&oauth_token=" + emu.token.encode()
        sock.sendall(
            b"POST /api/v1/search/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n\r\n"
            b"9;ext=1\r\nper_page=\r\n%x\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n" % (len(rest), rest)
        )
        head, body = _answer(sock)
        assert head.startswith(b"HTTP/1.1 200 ") and b"connection: close" not in head.lower()
        assert json.loads(body)["response"]["per_page"] == 1
        sock.sendall(b"GET /api/ HTTP/1.1\r\nHost: x\r\n\r\n")
        head, _ = _answer(sock)
        assert head.startswith(b"HTTP/1.1 ")


@pytest.mark.parametrize(
    ("framing", "details"),
    [
        (b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", "chunk size"),
        (b"Transfer-Encoding: chunked\r\n\r\n5\r\nabc\r\n0\r\n\r\n", "inside a chunk"),
        (b"Transfer-Encoding: gzip, chunked\r\n\r\n", "is not supported"),
        (
            b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            "both Transfer-Encoding and Content-Length",
        ),
        (b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % (9 * 2**20), "over the 8388608"),
        (b"Content-Length: \xb2\r\n\r\n", "is not a number of bytes"),
        (b"Content-Length: 3, 3\r\n\r\nabc", "is not a number of bytes"),
        (b"Content-Length: 1000000000000000\r\n\r\n", "over the 8388608"),
    ],
)
def test_a_body_that_cannot_be_read_is_a_bad_request_that_ends_its_connection(framing, details):
    """Nothing of it reaches the app; where the next request starts is unknown, so none does."""
    emu = Emulator(records=50, seed=1)
    server = LoopbackServer(emu.app)
    with serving(server) as address, socket.create_connection(address, timeout=5) as sock:
        sock.sendall(b"POST /api/v1/search/ HTTP/1.1\r\nHost: x\r\n" + framing)
        assert details in _refusal(_closed_after(sock))


@pytest.mark.parametrize("path", ["/api/v1/search/", "/api/oauthv2/token", "/no/such/route/"])
def test_a_deeply_nested_json_body_without_a_token_is_answered_as_the_contract_says(served, path):
    answer = requests.post(
        served.base_url + path,
        data=b"[" * 5000,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert answer.status_code in (400, 404), answer.text[:300]
    if path == "/api/v1/search/":  # no token: the empty-body 400
        assert answer.content == b"" and "invalid_request" in answer.headers["WWW-Authenticate"]


@pytest.mark.parametrize("body", [b"[" * 5000, b'{"a":' * 600 + b"1" + b"}" * 600])
def test_a_deeply_nested_json_body_with_a_token_is_a_bad_request(served, body):
    answer = requests.post(
        served.base_url + "/api/v1/search/",
        params={"oauth_token": served.token},
        data=body,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert_refused(answer, "nests deeper than 512 levels")


def test_an_idle_kept_alive_connection_gives_its_thread_back():
    emu = Emulator(records=50, seed=1)
    server = LoopbackServer(emu.app, keepalive_timeout=0.3)
    with serving(server) as address, socket.create_connection(address, timeout=5) as sock:
        sock.sendall(b"GET /api/ HTTP/1.1\r\nHost: x\r\n\r\n")
        _answer(sock)
        started = time.monotonic()
        assert sock.recv(1) == b""  # closed once idle for the keep-alive timeout
        assert time.monotonic() - started < 3


def test_an_answer_cut_by_an_error_ends_its_connection():
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "6")])
        yield b"abc"
        raise RuntimeError("the app failed mid-answer")

    server = LoopbackServer(app)
    with serving(server) as address, socket.create_connection(address, timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        started, received = time.monotonic(), b""
        while chunk := sock.recv(65536):
            received += chunk
        assert received.endswith(b"abc")  # never reused with three bytes missing
        assert time.monotonic() - started < 2


def test_the_answer_to_a_head_request_ends_its_connection():
    """wsgiref writes a body even for HEAD: on a kept connection it would be read as the
    next answer's beginning."""
    emu = Emulator(records=50, seed=1)
    server = LoopbackServer(emu.app)
    with serving(server) as address, socket.create_connection(address, timeout=5) as sock:
        sock.sendall(b"HEAD /api/ HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        assert received.startswith(b"HTTP/1.1 ") and b"connection: close" in received.lower()


def test_kept_connections_end_when_the_server_stops():
    """A stopped emulator is an outage, also for a client holding a pooled connection."""
    emu = Emulator(records=50, seed=1)
    server = LoopbackServer(emu.app)
    with requests.Session() as session:
        with serving(server):
            url = server.base_url + "/api/"
            assert session.get(url, timeout=5).status_code < 500
        with pytest.raises(requests.ConnectionError):
            session.get(url, timeout=5)


def test_kept_connections_send_answers_without_waiting_for_acknowledgements(monkeypatch):
    """Headers and body are written apart: with Nagle's algorithm on, a small body waited for
    the client's delayed acknowledgement of the headers (40 ms a count on a kept connection)."""
    seen: list[int] = []
    setup = _RequestHandler.setup

    def recording(self: _RequestHandler) -> None:
        setup(self)
        seen.append(self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    monkeypatch.setattr(_RequestHandler, "setup", recording)
    emu = Emulator(records=50, seed=1)
    server = LoopbackServer(emu.app)
    with serving(server) as address, socket.create_connection(address, timeout=5) as sock:
        sock.sendall(b"GET /api/ HTTP/1.1\r\nHost: x\r\n\r\n")
        _answer(sock)
    assert seen and all(seen)


def test_a_client_that_resets_a_kept_alive_connection_is_let_go_quietly(capfd):
    """A killed client resets its kept-alive connections: the server lets the thread go, as
    a deployed server does, without a traceback on stderr (the benchmarks kill harvests)."""
    import struct

    emu = Emulator(records=50, seed=1)
    server = LoopbackServer(emu.app)
    with serving(server) as address:
        sock = socket.create_connection(address, timeout=5)
        sock.sendall(b"GET /api/ HTTP/1.1\r\nHost: x\r\n\r\n")
        _answer(sock)
        # closed with a zero linger: a reset, as the kernel sends for a killed process
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        time.sleep(0.3)  # the server's thread meets the reset while waiting for a request
        with socket.create_connection(address, timeout=5) as again:  # still serving
            again.sendall(b"GET /api/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert _answer(again)[0].startswith(b"HTTP/1.1 ")
    assert "Traceback" not in capfd.readouterr().err
