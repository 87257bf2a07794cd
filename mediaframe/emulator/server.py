"""Two ways to reach the app: a threaded loopback HTTP server and an in-process requests adapter."""

from __future__ import annotations

import io
import socketserver
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from email.message import Message
from typing import Any, cast
from urllib.parse import urlsplit
from wsgiref.headers import Headers
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers

from mediaframe.emulator.faults import DropConnection
from mediaframe.emulator.messages import BODY_ERROR, MAX_BODY_BYTES, too_large


class _Handler(ServerHandler):
    """wsgiref's handler, except that a dropped connection sends nothing at all, and that it
    answers in HTTP/1.1, saying when the connection closes after its answer."""

    request_handler: _RequestHandler | None = None  # set as wsgiref's own handler does
    http_version = "1.1"
    environ: dict[str, Any]  # set by wsgiref's run(), as its own handler uses them
    headers: Headers
    headers_sent: bool

    def cleanup_headers(self) -> None:
        super().cleanup_headers()
        handler = self.request_handler
        assert handler is not None
        # Another request may follow only where this answer says its length, the request was
        # read to its end, and it was no HEAD (wsgiref writes the body even then). Decided
        # before the headers go, so the client never reuses a socket about to close.
        if (
            "Content-Length" not in self.headers
            or not handler.body.whole
            or self.environ["REQUEST_METHOD"] == "HEAD"
        ):
            handler.close_connection = True
        if handler.close_connection:
            self.headers["Connection"] = "close"

    def handle_error(self) -> None:
        assert self.request_handler is not None
        dropped = isinstance(sys.exc_info()[1], DropConnection)
        if dropped or self.headers_sent:  # no answer, or one cut short: the connection ends
            self.request_handler.close_connection = True
        if not dropped:
            super().handle_error()  # a whole 500 when nothing was sent yet

    def log_exception(self, exc_info) -> None:
        if not isinstance(exc_info[1], DropConnection):
            super().log_exception(exc_info)


class _RequestHandler(WSGIRequestHandler):
    """Quiet request handler that closes the socket without an answer on DropConnection.

    Connections are kept alive between requests, as deployed servers keep them (wsgiref's own
    handler serves one request a connection: every request then paid a new connection and a new
    server thread), until the server stops. Its socket times out after
    ``server.connection_timeout`` seconds without a byte within a request, and after
    ``server.keepalive_timeout`` between two, so an idle or dripping client cannot hold its
    thread for ever.
    """

    protocol_version = "HTTP/1.1"
    # wsgiref writes a response's headers and its body apart: on a kept connection Nagle's
    # algorithm held a small body back until the client acknowledged the headers, which a
    # client delays by up to 40 ms (every count and /me/ took 44 ms instead of 1 ms)
    disable_nagle_algorithm = True
    server: ThreadingServer
    body: _Body

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.connection_timeout)

    def log_message(self, format: str, *args: object) -> None:
        pass  # the emulator serves tests and notebooks: no access log on stderr

    def handle(self) -> None:
        self.close_connection = True
        try:
            self._handle()
            while not self.close_connection:
                self.connection.settimeout(self.server.keepalive_timeout)
                waiting = cast(io.BufferedReader, self.rfile).peek(1)
                if not waiting or self.server.stopping.is_set():
                    return  # the client closed its end, or the server stopped meanwhile
                self.connection.settimeout(self.server.connection_timeout)
                self._handle()
        except TimeoutError:
            self.close_connection = True  # the client went quiet: free the thread
        except ConnectionError:
            # a reset or a broken pipe between two requests: a killed client (its kernel resets
            # its connections), let go as a deployed server does, without a traceback
            self.close_connection = True

    def _handle(self) -> None:
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536 or not self.parse_request():
            self.close_connection = True
            return
        self.body = _Body(cast(io.BufferedIOBase, self.rfile), self.headers)
        environ = self.get_environ()
        if self.body.error is not None:
            environ[BODY_ERROR] = self.body.error
            environ.pop("CONTENT_LENGTH", None)
        elif self.body.chunked is not None:
            environ["CONTENT_LENGTH"] = str(self.body.chunked)  # the app reads it decoded
        handler = _Handler(
            cast(io.BufferedIOBase, self.body),  # read as wsgi.input: only read* are used
            self.wfile,  # type: ignore[arg-type]  # a socket writer, as wsgiref passes it too
            self.get_stderr(),
            environ,
            multithread=True,
        )
        handler.request_handler = self
        app = self.server.get_app()
        assert app is not None  # LoopbackServer sets it before serving
        handler.run(app)


class _Body:
    """A request's body as the app reads it: no further than its end, so that the next request
    on the connection starts where this one ends.

    A ``Content-Length`` body is read from the connection as the app asks for it; a chunked
    one is decoded up front (as Apache and nginx decode it for PHP) and the app reads the
    decoded bytes. A body that cannot be read (malformed framing, over ``MAX_BODY_BYTES``, a
    transfer coding other than chunked) sets ``error``: the app answers it with a 400 and the
    connection closes, since where the next request starts is unknown.
    """

    def __init__(self, stream: io.BufferedIOBase, headers: Message) -> None:
        self.stream = stream
        #: bytes of the body the app has not read yet
        self.left = 0
        #: the decoded length of a chunked body, None for any other
        self.chunked: int | None = None
        #: why the body cannot be read, or None
        self.error: str | None = None
        try:
            self._frame(headers)
        except _Unreadable as err:
            self.error, self.left = str(err), 0

    def _frame(self, headers: Message) -> None:
        codings = headers.get_all("Transfer-Encoding") or []
        lengths = headers.get_all("Content-Length") or []
        if codings:
            # RFC 9112 6.1: both at once is how requests are smuggled; a server may refuse it
            if lengths:
                raise _Unreadable("the request has both Transfer-Encoding and Content-Length")
            named = [c.strip().lower() for c in ",".join(codings).split(",")]
            if named != ["chunked"]:
                raise _Unreadable(
                    f"Transfer-Encoding {', '.join(codings)!r} is not supported: send the body "
                    "chunked or with a Content-Length"
                )
            data = _dechunk(self.stream)
            self.stream = io.BytesIO(data)  # read like the socket
            self.left = self.chunked = len(data)
            return
        if not lengths:
            return
        length = lengths[0].strip()
        if len(lengths) > 1 or not (length.isascii() and length.isdigit()):
            raise _Unreadable(f"Content-Length {', '.join(lengths)!r} is not a number of bytes")
        if int(length) > MAX_BODY_BYTES:
            raise _Unreadable(too_large(int(length)))
        self.left = int(length)

    @property
    def whole(self) -> bool:
        """The body was read to its end: the connection is at the next request."""
        return self.error is None and self.left == 0

    def read(self, size: int | None = -1) -> bytes:
        return self._within(self.stream.read, size)

    def readline(self, size: int | None = -1) -> bytes:
        return self._within(self.stream.readline, size)

    def _within(self, reader: Callable[[int | None], bytes], size: int | None) -> bytes:
        """``reader(size)``, never past the body's end."""
        size = self.left if size is None or size < 0 else min(size, self.left)
        data = reader(size) if size else b""
        self.left -= len(data)
        return data

    def readlines(self, hint: int = -1) -> list[bytes]:
        return list(iter(self.readline, b""))  # the hint is optional (PEP 3333)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")


class _Unreadable(Exception):
    """The request's body cannot be read; the message says why."""


_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


def _dechunk(stream: io.BufferedIOBase) -> bytes:
    """The body of a chunked request, read to the end of its trailers (RFC 9112 7.1)."""
    parts: list[bytes] = []
    total = 0
    while True:
        line = stream.readline(1024)
        size = line.split(b";", 1)[0].strip()  # chunk extensions are ignored, as servers do
        if not line.endswith(b"\n") or not size or len(size) > 16 or set(size) - _HEX_DIGITS:
            raise _Unreadable(f"the chunked body has a malformed chunk size line {line[:40]!r}")
        count = int(size, 16)
        if count == 0:
            break
        total += count
        if total > MAX_BODY_BYTES:
            raise _Unreadable(too_large(total))
        data = stream.read(count)
        if len(data) < count or stream.readline(3) not in (b"\r\n", b"\n"):
            raise _Unreadable("the chunked body ends inside a chunk")
        parts.append(data)
    for _ in range(100):  # trailer fields, up to the empty line that ends the request
        line = stream.readline(8192)
        if line in (b"\r\n", b"\n"):
            return b"".join(parts)
        if not line.endswith(b"\n"):
            break
    raise _Unreadable("the chunked body does not end with an empty line after its trailers")


class ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    """One thread per connection, at most ``max_connections`` at once; threads never keep the
    process alive.

    A connection over the cap waits up to ``queue_wait`` seconds for a free thread, then is
    closed unanswered: a flood of idle sockets cannot pin an unbounded number of threads.
    """

    daemon_threads = True
    allow_reuse_address = True
    # connections wait in the listen queue while every thread is busy
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[WSGIRequestHandler],
        *,
        max_connections: int = 64,
        connection_timeout: float = 30.0,
        queue_wait: float = 5.0,
        keepalive_timeout: float = 5.0,
    ) -> None:
        super().__init__(address, handler)
        self.connection_timeout = connection_timeout
        #: Seconds an open connection may wait for its next request (Apache's default): idle
        #: connections a client keeps in its pool give their threads back soon.
        self.keepalive_timeout = min(keepalive_timeout, connection_timeout)
        self.queue_wait = queue_wait
        self._slots = threading.BoundedSemaphore(max_connections)
        #: Set once the server closes: kept-alive connections then end (an outage is one).
        self.stopping = threading.Event()

    def server_close(self) -> None:
        self.stopping.set()
        super().server_close()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(timeout=self.queue_wait):
            self.shutdown_request(request)  # every thread busy for too long: refuse
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class LoopbackServer:
    """Serve a WSGI app on ``host:port`` from a background thread.

    Parameters
    ----------
    app
        The WSGI callable.
    host, port
        Where to listen; port 0 picks a free one (read it back from ``base_url``).
    max_connections, connection_timeout
        Connections served at once, and seconds a connection may stay silent within a request.
    keepalive_timeout
        Seconds a kept-alive connection may wait for its next request.
    """

    def __init__(
        self,
        app: Callable,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_connections: int = 64,
        connection_timeout: float = 30.0,
        keepalive_timeout: float = 5.0,
    ) -> None:
        self._server = ThreadingServer(
            (host, port),
            _RequestHandler,
            max_connections=max_connections,
            connection_timeout=connection_timeout,
            keepalive_timeout=keepalive_timeout,
        )
        self._server.set_app(app)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the listening socket (waits for the serving loop to end)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _bytes(body: object) -> bytes:
    """A prepared request's body as bytes: requests leaves a generator or a file (sent chunked
    over a socket) as it was given."""
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytes):
        return body
    if hasattr(body, "read"):
        return _bytes(body.read())
    return b"".join(_bytes(chunk) for chunk in cast(Iterable[object], body))


class InProcessAdapter(BaseAdapter):
    """A requests transport adapter that calls the WSGI app directly: no socket at all.

    A dropped connection becomes ``requests.exceptions.ConnectionError``, as over a socket.
    """

    def __init__(self, app: Callable) -> None:
        super().__init__()
        self.app = app

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: float | tuple[float, float] | tuple[float, None] | None = None,
        verify: bool | str = True,
        cert: bytes | str | tuple[bytes | str, bytes | str] | None = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        url = urlsplit(request.url)
        body = _bytes(request.body)
        environ = {
            "REQUEST_METHOD": request.method,
            "PATH_INFO": url.path or "/",
            "QUERY_STRING": url.query,
            "SERVER_NAME": url.hostname or "emulator.test",
            "SERVER_PORT": str(url.port or (443 if url.scheme == "https" else 80)),
            "SERVER_PROTOCOL": "HTTP/1.1",
            "CONTENT_TYPE": request.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
            "wsgi.url_scheme": url.scheme,
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "wsgi.version": (1, 0),
        }
        for name, raw in request.headers.items():
            # a server reads header bytes as latin-1 (PEP 3333): so does this adapter
            value = raw.decode("latin-1") if isinstance(raw, bytes) else raw
            key = name.upper().replace("-", "_")
            if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                environ[f"HTTP_{key}"] = value
        captured: dict = {}

        def start_response(status: str, headers: list, exc_info: object = None) -> None:
            captured["status"], captured["headers"] = status, headers

        try:
            chunks = self.app(environ, start_response)
        except DropConnection as err:
            raise requests.exceptions.ConnectionError(
                f"connection to the emulator closed without an answer ({err})", request=request
            ) from None
        return self._response(request, captured, b"".join(chunks))

    @staticmethod
    def _response(
        request: requests.PreparedRequest, captured: dict, body: bytes
    ) -> requests.Response:
        response = requests.Response()
        code, _, reason = captured["status"].partition(" ")
        response.status_code = int(code)
        response.reason = reason
        response.headers = CaseInsensitiveDict(captured["headers"])
        response.encoding = get_encoding_from_headers(response.headers)
        response._content = body
        response.raw = io.BytesIO(body)
        response.url = request.url or ""
        response.request = request
        return response

    def close(self) -> None:
        pass
