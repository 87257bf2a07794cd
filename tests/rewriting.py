"""A server of another age, or a lying one: the emulator in process, behind a rewriting front.

``Rewriting(emu)`` is a WSGI application in front of ``emu.app``. ``answer(path, envelope)``
may change a JSON answer in place (an engine error, a capped total, a missing member);
``drop`` names request parameters the server ignores (they never reach the emulator);
``missing`` names path prefixes the server does not have (404, as a v1-only server's
``/api/v2/``). No socket: the client's session goes straight to it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode

import requests

from mediaframe.emulator import Emulator
from mediaframe.emulator.server import InProcessAdapter

Envelope = dict[str, Any]


class Rewriting:
    """The emulator's app behind a front that rewrites what goes in and what comes out."""

    def __init__(self, emu: Emulator) -> None:
        self.emu = emu
        self.answer: Callable[[str, Envelope], None] | None = None
        #: Rewrites a JSON answer's bytes (after ``answer``): what ``json`` cannot write.
        self.body: Callable[[str, bytes], bytes] | None = None
        #: Parameter names (or prefixes ending in ``[``) the server ignores, per path prefix.
        self.drop: dict[str, tuple[str, ...]] = {}
        self.missing: tuple[str, ...] = ()
        #: ``(path, params)`` of every request, as sent by the client.
        self.seen: list[tuple[str, list[tuple[str, str]]]] = []

    def session(self) -> requests.Session:
        session = requests.Session()
        session.mount(self.emu.inprocess_url, InProcessAdapter(self))
        return session

    def searches(self, prefix: str = "/api/") -> int:
        return sum(1 for path, _ in self.seen if path.startswith(prefix) and "/search/" in path)

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        path = environ["PATH_INFO"]
        environ.pop("HTTP_ACCEPT_ENCODING", None)  # plain bodies, to be read and rewritten
        body = environ["wsgi.input"].read()
        query = parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        form = (
            parse_qsl(body.decode("latin-1"), keep_blank_values=True) if _is_form(environ) else []
        )
        self.seen.append((path, query + form))
        if any(path.startswith(prefix) for prefix in self.missing):
            return _send(start_response, 404, _not_found(path))
        dropped = next((names for where, names in self.drop.items() if path.startswith(where)), ())
        if dropped:
            environ["QUERY_STRING"] = urlencode(_kept(query, dropped))
            if form:
                body = urlencode(_kept(form, dropped)).encode()
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        answered: dict[str, Any] = {}

        def keep(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            answered.update(status=status, headers=headers)
            return lambda data: None

        content = b"".join(self.emu.app(environ, keep))
        status = int(answered["status"].split()[0])
        headers = dict(answered["headers"])
        if self.answer is not None and "json" in headers.get("Content-Type", ""):
            envelope = json.loads(content)
            self.answer(path, envelope)
            content = json.dumps(envelope).encode()
        if self.body is not None and "json" in headers.get("Content-Type", ""):
            content = self.body(path, content)
        return _send(start_response, status, content, headers.get("Content-Type"))


def _is_form(environ: dict[str, Any]) -> bool:
    return "form" in environ.get("CONTENT_TYPE", "")


def _kept(pairs: list[tuple[str, str]], dropped: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(name, value) for name, value in pairs if not name.startswith(dropped)]


def _not_found(path: str) -> bytes:
    meta = {
        "api_version": "1.3.0",
        "request": f"POST {path}",
        "http_code": 404,
        "error_type": "Not Found",
        "error_message": "Not Found",
        "error_details": None,
    }
    return json.dumps({"meta": meta, "response": {}}).encode()


def _send(
    start_response: Callable[..., Any],
    status: int,
    content: bytes,
    content_type: str | None = "application/json",
) -> list[bytes]:
    reason = {200: "OK", 404: "Not Found"}.get(status, "Status")
    start_response(
        f"{status} {reason}",
        [
            ("Content-Type", content_type or "application/json"),
            ("Content-Length", str(len(content))),
        ],
    )
    return [content]
