"""Two ways to reach the app: a threaded loopback HTTP server and an in-process requests adapter."""

from __future__ import annotations

import io
import socketserver
import sys
import threading
from collections.abc import Callable, Mapping
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
    """Quiet request handler that closes the socket without an answer on DropConnection."""

    def log_message(self, format: str, *args: object) -> None:
        pass  # the emulator serves tests and notebooks: no access log on stderr

    def handle(self) -> None:
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
    """One thread per connection; threads never keep the process alive."""

    daemon_threads = True
    allow_reuse_address = True


class LoopbackServer:
    """Serve a WSGI app on ``host:port`` from a background thread.

    Parameters
    ----------
    app
        The WSGI callable.
    host, port
        Where to listen; port 0 picks a free one (read it back from ``base_url``).
    """

    def __init__(self, app: Callable, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = ThreadingServer((host, port), _RequestHandler)
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
        for name, value in request.headers.items():
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
