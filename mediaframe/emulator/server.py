"""Two ways to reach the app: a threaded loopback HTTP server and an in-process requests adapter."""

from __future__ import annotations

import io
import socketserver
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers

from mediaframe.emulator.faults import DropConnection


class _Handler(ServerHandler):
    """wsgiref's handler, except that a dropped connection sends nothing at all."""

    dropped = False
    request_handler: WSGIRequestHandler | None = None  # set as wsgiref's own handler does

    def handle_error(self) -> None:
        if isinstance(sys.exc_info()[1], DropConnection):
            self.dropped = True
            return
        super().handle_error()

    def log_exception(self, exc_info) -> None:
        if not isinstance(exc_info[1], DropConnection):
            super().log_exception(exc_info)


class _RequestHandler(WSGIRequestHandler):
    """Quiet request handler that closes the socket without an answer on DropConnection.

    Its socket times out after ``server.connection_timeout`` seconds without a byte, so an idle
    or dripping client cannot hold its thread for ever.
    """

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.connection_timeout)  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: object) -> None:
        pass  # the emulator serves tests and notebooks: no access log on stderr

    def handle(self) -> None:
        try:
            self._handle()
        except TimeoutError:
            self.close_connection = True  # the client went quiet: free the thread

    def _handle(self) -> None:
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536 or not self.parse_request():
            return
        handler = _Handler(
            self.rfile,
            self.wfile,  # type: ignore[arg-type]  # a socket writer, as wsgiref passes it too
            self.get_stderr(),
            self.get_environ(),
            multithread=True,
        )
        handler.request_handler = self
        handler.run(self.server.get_app())  # type: ignore[attr-defined]  # our WSGIServer
        if handler.dropped:
            self.close_connection = True


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
    ) -> None:
        super().__init__(address, handler)
        self.connection_timeout = connection_timeout
        self.queue_wait = queue_wait
        self._slots = threading.BoundedSemaphore(max_connections)

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
        Connections served at once, and seconds a connection may stay silent.
    """

    def __init__(
        self,
        app: Callable,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_connections: int = 64,
        connection_timeout: float = 30.0,
    ) -> None:
        self._server = ThreadingServer(
            (host, port),
            _RequestHandler,
            max_connections=max_connections,
            connection_timeout=connection_timeout,
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
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
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
