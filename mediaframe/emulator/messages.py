"""HTTP request and response values exchanged between the WSGI layer and the handlers."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

REASONS = {
    200: "OK",
    302: "Found",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


@dataclass
class Response:
    """What the WSGI app sends: status, headers and body."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    @property
    def status_line(self) -> str:
        return f"{self.status} {REASONS.get(self.status, 'Unknown')}"


@dataclass
class Request:
    """The parts of a WSGI request the emulator looks at.

    ``form`` holds parameters of a form-encoded body, ``body_json`` a JSON body (None when the
    body is not JSON); ``headers`` keys are lower-case.
    """

    method: str
    path: str
    query: dict[str, list[str]]
    form: dict[str, list[str]]
    body_json: Any
    headers: dict[str, str]

    @classmethod
    def from_environ(cls, environ: dict) -> Request:
        headers = {
            k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")
        }
        content_type = environ.get("CONTENT_TYPE", "") or ""
        headers["content-type"] = content_type
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        body = environ["wsgi.input"].read(length) if length > 0 else b""
        form: dict[str, list[str]] = {}
        body_json = None
        media = content_type.split(";")[0].strip().lower()
        if media == "application/x-www-form-urlencoded":
            form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        elif media == "application/json" and body.strip():
            try:
                body_json = json.loads(body)
            except ValueError:
                body_json = ValueError("the body is not valid JSON")
        return cls(
            method=environ.get("REQUEST_METHOD", "GET").upper(),
            path=environ.get("PATH_INFO", "") or "/",
            query=parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True),
            form=form,
            body_json=body_json,
            headers=headers,
        )

    @property
    def line(self) -> str:
        """``<METHOD> <path>``, without the query string (what ``meta.request`` holds)."""
        return f"{self.method} {self.path}"

    def basic_auth(self) -> tuple[str, str] | None:
        """Credentials of an ``Authorization: Basic`` header, or None."""
        scheme, _, value = self.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, sep, password = (
                base64.b64decode(value.strip(), validate=True).decode().partition(":")
            )
        except (ValueError, UnicodeDecodeError):  # binascii.Error, or non-ASCII base64
            return None
        return (user, password) if sep else None


def flatten(data: Any, prefix: str = "") -> dict[str, list[str]]:
    """A JSON body as form-style parameters: lists become ``name[]``, objects ``name[key]``."""
    out: dict[str, list[str]] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            name = f"{prefix}[{key}]" if prefix else str(key)
            for k, v in flatten(value, name).items():
                out.setdefault(k, []).extend(v)
    elif isinstance(data, list):
        for value in data:
            for k, v in flatten(value, f"{prefix}[]").items():
                out.setdefault(k, []).extend(v)
    elif data is not None:
        text = ("1" if data else "0") if isinstance(data, bool) else str(data)
        out[prefix] = [text]
    return out
