"""The response envelope and its representations: JSON, YAML and JSONP."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import yaml

from mediaframe.emulator.messages import Response

API_VERSION = "2.0.0"

# Fixed error_type / error_message per status, as current servers send them.
ERRORS = {
    400: ("Bad Request", "Parameter is invalid or missing"),
    401: ("Unauthorized", "The OAuth token was provided but was invalid."),
    403: ("Forbidden", "Access to the requested resource is forbidden"),
    404: ("Not Found", "Requested resource is not found"),
    405: ("Method Not Allowed", "Attempting to use POST with a GET-only endpoint, or vice-versa"),
    406: ("Unacceptable", "Request content type is not acceptable"),
    500: ("Internal Server Error", "Internal Server Error"),
    503: ("Service Temporarily Unavailable", "Server is offline for maintenance, try again soon."),
}
JSON_TYPES = ("application/json", "application/*", "*/*")
YAML_TYPES = ("application/yaml", "text/yaml", "application/x-yaml", "text/x-yaml")
SCRIPT_TYPES = ("text/javascript", "application/javascript", "text/*")
# A JavaScript identifier path such as cb, jQuery_123 or app.callbacks.done.
CALLBACK = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*")


class ApiError(Exception):
    """An error answered inside the envelope (status, error_details, extra headers)."""

    def __init__(self, status: int, details: str = "", *, headers: list | None = None) -> None:
        super().__init__(details)
        self.status = status
        self.details = details
        self.headers = headers or []


def envelope(
    request_line: str,
    status: int,
    response: Any,
    details: str | None = None,
    *,
    api_version: str = API_VERSION,
) -> dict:
    """The envelope with ``meta`` in the servers' member order."""
    error_type, error_message = ERRORS.get(status, (None, None)) if status >= 400 else (None, None)
    return {
        "meta": {
            "api_version": api_version,
            "request": request_line,
            "response_time": datetime.now().astimezone().replace(microsecond=0).isoformat(),
            "http_code": status,
            "error_type": error_type,
            "error_message": error_message,
            "error_details": (details or "") if status >= 400 else None,
            "charset": "UTF-8",
        },
        "response": response if response else {},
    }


def choose_format(accept: str, callback: str | None, *, json_only: bool) -> str:
    """``json``, ``yaml`` or ``jsonp`` for this request; raises ApiError 406 or 400."""
    if callback and not json_only:
        if not CALLBACK.fullmatch(callback):
            raise ApiError(400, f"callback {callback!r} is not a JavaScript identifier")
        return "jsonp"
    for media in _media_ranges(accept):
        if media in JSON_TYPES:
            return "json"
        if media in YAML_TYPES and not json_only:
            return "yaml"
        if media in SCRIPT_TYPES and not json_only:
            return "json"  # JavaScript without a callback gets plain JSON
    if not accept.strip():
        return "json"
    allowed = "application/json" if json_only else "application/json or application/yaml"
    raise ApiError(406, f"cannot answer with {accept!r}; accept {allowed}")


def _media_ranges(accept: str) -> list[str]:
    """Media types of an Accept header, best first (q=0 dropped)."""
    ranked = []
    for position, part in enumerate(accept.split(",")):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if media and q > 0:
            ranked.append((-q, position, media.lower()))
    return [m for _, _, m in sorted(ranked)]


def to_json(data: Any, *, pretty: bool = False) -> bytes:
    """JSON the way the servers write it: ASCII only, slashes escaped; ``pretty``: indented."""
    # As PHP's json_encode writes it: no spaces, "/" as "\/", non-ASCII as \uXXXX; with
    # JSON_PRETTY_PRINT, four spaces a level and ": " after a key.
    if pretty:
        text = json.dumps(data, ensure_ascii=True, indent=4, separators=(",", ": "))
    else:
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("/", "\\/").encode("ascii")


def render(
    data: dict,
    fmt: str,
    *,
    callback: str | None = None,
    headers: list | None = None,
    pretty: bool = False,
) -> Response:
    """Serialise an envelope (``pretty``: JSON indented); JSONP answers 200 unless on a 500."""
    status = data["meta"]["http_code"]
    extra = list(headers or [])
    if fmt == "yaml":
        body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode("utf-8")
        return Response(status, [("Content-Type", "application/yaml; charset=UTF-8"), *extra], body)
    if fmt == "jsonp":
        body = (
            b"/**/" + (callback or "").encode("ascii") + b"(" + to_json(data, pretty=pretty) + b");"
        )
        wire_status = 500 if status == 500 else 200
        return Response(
            wire_status, [("Content-Type", "text/javascript; charset=UTF-8"), *extra], body
        )
    body = to_json(data, pretty=pretty)
    return Response(status, [("Content-Type", "application/json"), *extra], body)
