"""A scripted requests adapter and the golden HTTP answers of tests/data/http (no sockets)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

GOLDEN = Path(__file__).parent / "data" / "http"
BASE = "https://assets.example.org"


@dataclass
class Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def golden(name: str) -> Answer:
    """Read ``tests/data/http/<name>.http``: a status line, headers, a blank line, the body."""
    text = (GOLDEN / f"{name}.http").read_text(encoding="utf-8")
    head, _, body = text.partition("\n\n")
    status_line, *header_lines = head.splitlines()
    headers = dict(line.split(": ", 1) for line in header_lines)
    return Answer(int(status_line.split()[1]), headers, body.rstrip("\n").encode())


def envelope(response: object = None, *, status: int = 200, path: str = "/api/v1/me/") -> Answer:
    """A well-formed JSON envelope answer."""
    import json

    meta = {"api_version": "2.0.0", "request": f"GET {path}", "http_code": status}
    body = json.dumps({"meta": meta, "response": {} if response is None else response})
    return Answer(status, {"Content-Type": "application/json"}, body.encode())


Script = Answer | BaseException | Callable[[requests.PreparedRequest], "Answer"]


class FakeService(BaseAdapter):
    """Answers each request with the next scripted item (the last one repeats)."""

    def __init__(self, *script: Script) -> None:
        super().__init__()
        self.script = list(script)
        self.requests: list[requests.PreparedRequest] = []

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):  # type: ignore[no-untyped-def]
        assert timeout is not None, "every request must carry a timeout"
        self.requests.append(request)
        item = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(item, BaseException):
            raise item
        answer = item(request) if callable(item) else item
        response = requests.Response()
        response.status_code = answer.status
        response.headers = CaseInsensitiveDict(answer.headers)
        response._content = answer.body
        response.url = request.url or ""
        response.request = request
        response.encoding = "utf-8"
        return response

    def close(self) -> None:
        pass

    def session(self) -> requests.Session:
        session = requests.Session()
        session.mount("https://", self)
        session.mount("http://", self)
        return session


def query(request: requests.PreparedRequest) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(request.url or "").query)


def form(request: requests.PreparedRequest) -> list[tuple[str, str]]:
    body = request.body or ""
    if isinstance(body, bytes):
        body = body.decode()
    return parse_qsl(body)
