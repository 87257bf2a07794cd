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


#: The largest request body read, in bytes: PHP's default ``post_max_size`` (8M).
MAX_BODY_BYTES = 8 * 1024 * 1024
#: Levels a JSON body may nest: PHP's ``json_decode`` default depth.
MAX_JSON_DEPTH = 512
#: The WSGI environ key where the server says why a request's body could not be read.
BODY_ERROR = "mediaframe.body_error"


def too_large(length: int) -> str:
    """Why a body of ``length`` bytes is refused."""
    return (
        f"the request body has {length} bytes, over the {MAX_BODY_BYTES} the server reads: "
        "send fewer parameters"
    )


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
    body is not JSON, a ValueError saying why when it is not valid JSON); ``headers`` keys are
    lower-case. ``body_error`` says why the body could not be read at all (its framing or its
    size), and then nothing of it is read.
    """

    method: str
    path: str
    query: dict[str, list[str]]
    form: dict[str, list[str]]
    body_json: Any
    headers: dict[str, str]
    body_error: str | None = None

    @classmethod
    def from_environ(cls, environ: dict) -> Request:
        headers = {
            k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")
        }
        content_type = environ.get("CONTENT_TYPE", "") or ""
        headers["content-type"] = content_type
        body_error: str | None = environ.get(BODY_ERROR)
        length_text = str(environ.get("CONTENT_LENGTH") or "0").strip()
        length = int(length_text) if length_text.isascii() and length_text.isdigit() else 0
        if body_error is None and length > MAX_BODY_BYTES:
            body_error = too_large(length)
        body = environ["wsgi.input"].read(length) if length > 0 and body_error is None else b""
        form: dict[str, list[str]] = {}
        body_json = None
        media = content_type.split(";")[0].strip().lower()
        if media == "application/x-www-form-urlencoded":
            form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        elif media == "application/json" and body.strip():
            body_json = _json(body)
        return cls(
            method=environ.get("REQUEST_METHOD", "GET").upper(),
            path=environ.get("PATH_INFO", "") or "/",
            query=parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True),
            form=form,
            body_json=body_json,
            headers=headers,
            body_error=body_error,
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


def _json(body: bytes) -> Any:
    """A JSON body, or a ValueError saying why it cannot be read (never raised: the token check
    still comes first)."""
    try:
        data = json.loads(body)
    except RecursionError:  # nested past what the parser recurses into
        return ValueError(f"the request body nests deeper than {MAX_JSON_DEPTH} levels")
    except ValueError:
        return ValueError("the request body is not valid JSON; send a JSON object or form fields")
    if _deeper_than(data, MAX_JSON_DEPTH):
        return ValueError(f"the request body nests deeper than {MAX_JSON_DEPTH} levels")
    return data


def _deeper_than(data: Any, limit: int) -> bool:
    """Whether ``data`` nests arrays and objects more than ``limit`` levels deep."""
    level: list[Any] = [data]
    for _ in range(limit):
        level = [
            child
            for value in level
            if isinstance(value, (dict, list))
            for child in (value.values() if isinstance(value, dict) else value)
        ]
        if not level:
            return False
    return any(isinstance(value, (dict, list)) for value in level)


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
