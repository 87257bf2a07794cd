"""Reading an answer: the envelope in JSON, YAML or JSONP, and the error an answer stands for."""

from __future__ import annotations

import datetime
import email.utils
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

import orjson
import requests
import yaml

from mediaframe.exceptions import (
    APIError,
    BadRequestError,
    ForbiddenError,
    MediaframeError,
    MethodNotAllowedError,
    NotAcceptableError,
    NotFoundError,
    OAuthError,
    PermissionDeniedError,
    RateLimitedError,
    ResponseFormatError,
    ServerError,
    TokenMissingError,
    TokenRejectedError,
)
from mediaframe.inert import neutralised
from mediaframe.nesting import DEEP_ADVICE, DEEPEST, nesting, too_deep
from mediaframe.tokens import redact

__all__ = [
    "REPRESENTATIONS",
    "RETRY_STATUSES",
    "Decode",
    "HeaderRefused",
    "Retry",
    "decode_envelope",
    "read_answer",
]

#: Statuses worth asking again: the service or a proxy in front of it is briefly unwell, or
#: limits the rate of requests (429, asked again after the ``Retry-After`` it sends).
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
TOO_MANY_REQUESTS = 429

#: Envelope representations of v1 routes; v2 routes always speak JSON.
REPRESENTATIONS = ("json", "yaml", "jsonp")

# No two neighbouring parts may take the same whitespace: "\s*(?:/\*\*/)?\s*" and "\s*;?\s*"
# tried every split of a long run of it, quadratic in a body of spaces (minutes for a megabyte).
_JSONP = re.compile(rb"^\s*(?:/\*\*/\s*)?[A-Za-z_$][\w$.]*\s*\((.*)\)\s*(?:;\s*)?$", re.DOTALL)
_ENVELOPE_START = re.compile(rb"\s*(\{|/\*\*/|[A-Za-z_$][\w$.]*\s*\()")
#: A whole JSON string (an escaped quote does not end it).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SNIPPET = 160
#: Read past the quoted part, so that a secret it ends in is redacted whole: more than any
#: token or secret is long (a JWT is some hundreds of bytes to 2 KB).
_SECRET_ROOM = 4096

#: Reads a successful JSON body in place of the envelope decoding (``None``: the envelope).
Decode = Callable[[bytes], Any] | None


class Retry(Exception):
    """Internal: this attempt failed in a way worth retrying; ``error`` is raised at the end."""

    def __init__(self, error: MediaframeError, *, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class HeaderRefused(Exception):
    """Internal: the service did not take the token from the header; ``error`` if no fallback."""

    def __init__(self, error: MediaframeError) -> None:
        super().__init__(str(error))
        self.error = error


class _NestedTooDeep(yaml.composer.ComposerError):
    """The YAML composer refused a sequence or mapping deeper than
    :data:`~mediaframe.nesting.DEEPEST` levels."""


class _TooDeep(ValueError):
    """A body nesting deeper than any answer may: refused in the nesting's own words
    (:func:`~mediaframe.nesting.too_deep`), never as a page that is not the service's.

    How deep is not told: the composer stops at the limit, and counting on over the parser's
    events costs seconds for a body of a few kB nested thousands of levels.
    """

    def __init__(self) -> None:
        super().__init__(too_deep())


class _YamlLoader(yaml.SafeLoader):
    """Safe YAML that keeps dates as strings, exactly as the JSON representation gives them.

    Anchors and aliases are refused: the service never sends them, and a few lines of nested
    aliases expand to billions of nodes (the "billion laughs").
    """

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, "YAML anchors and aliases are not read", event.start_mark
            )
        # the composer recurses three frames a level: refused at the limit of every answer,
        # long before the interpreter's recursion limit. Levels are those of sequences and
        # mappings, as a JSON answer's are counted (a scalar nests nothing further).
        level = int(isinstance(event, yaml.CollectionStartEvent))
        if level and self.depth >= DEEPEST:
            raise _NestedTooDeep(
                None, None, f"nested deeper than {DEEPEST} levels", event.start_mark
            )
        self.depth += level
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= level


_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def decode_envelope(content: bytes, representation: str = "json") -> dict[str, Any]:
    """Parse a body into the envelope ``{"meta": {...}, "response": {...}}``.

    Parameters
    ----------
    content : the raw body.
    representation : ``json``, ``yaml`` or ``jsonp`` (``/**/name({...});``).

    Raises
    ------
    ResponseFormatError
        The body does not parse, or is not an object with a ``meta`` object and a ``response``.
    """
    failure: ValueError | None = None
    try:
        if representation == "yaml":
            envelope = yaml.load(content, Loader=_YamlLoader)
        elif representation == "jsonp" and (match := _JSONP.match(content)):
            envelope = orjson.loads(match.group(1))
        else:
            envelope = orjson.loads(content)
    except _NestedTooDeep:
        failure = _TooDeep()
    except (ValueError, yaml.YAMLError, RecursionError) as err:
        # RecursionError: a parser called from a deep stack may overflow short of the limit
        failure = _parse_failure(err)
    if isinstance(failure, _TooDeep):  # read well up to the limit: only too deep to be read
        raise ResponseFormatError(
            f"the body {failure}. {DEEP_ADVICE}", snippet=_snippet(content)
        ) from failure
    if failure is not None:  # raised out here: the parser's exception keeps the whole body
        raise ResponseFormatError(
            f"the body is not valid {representation.upper()}", snippet=_snippet(content)
        ) from failure
    if not isinstance(envelope, dict) or not isinstance(envelope.get("meta"), dict):
        raise ResponseFormatError("the body is not the service's envelope (no meta object)")
    response = envelope.get("response")
    if response == [] or response is None:
        # PHP encodes an empty associative array as []; older servers send it for "nothing".
        envelope["response"] = {}
    elif not isinstance(response, dict):
        raise ResponseFormatError(
            f"the envelope's response is a {type(response).__name__}, not an object"
        )
    return envelope


def read_answer(
    response: requests.Response,
    content: bytes,
    line: str,
    representation: str,
    placement: str | None,
    decode: Decode = None,
    *,
    not_found: str = "",
) -> Any:
    """The ``response`` member of a whole answer (or what ``decode`` makes of its body).

    Raises the error the answer stands for: a :class:`Retry` for what is worth asking again, a
    :class:`HeaderRefused` when the token was not taken from the header (``placement``), else
    the :class:`~mediaframe.exceptions.MediaframeError` to show. ``not_found`` is the advice
    of a 404 when the base URL itself is the likely mistake.
    """
    status = response.status_code
    if not content.strip():
        raise _bodyless_error(response, line, placement, not_found)
    if _is_cut_short(response):
        raise Retry(
            ResponseFormatError(
                f"{line}: the answer was cut short (HTTP {status}); retried without success",
                status_code=status,
                snippet=_snippet(content),
            )
        )
    refused: ResponseFormatError | None = None
    if decode is not None and status == 200 and representation == "json":
        try:
            return decode(content)
        except ResponseFormatError as err:
            # The reader refuses what is not a page: read as the envelope below, an error
            # envelope is the service's error; a page the reader refused keeps its words.
            refused = err
    failure: Exception | None = None
    try:
        envelope = decode_envelope(content, representation)
    except ResponseFormatError as err:
        failure = _not_an_envelope(response, line, placement, err, not_found)
    if failure is not None:
        # raised out here, told in its own words: a reader's error may chain the parser's,
        # which keeps the whole body (and a token a server or proxy page echoed) in its `doc`
        raise failure
    meta = envelope["meta"]
    said = _status_of(meta)
    # JSONP answers 200 (500 aside) and tells the true status in meta.http_code; an envelope
    # of any representation that says it failed is believed over the status line (an error
    # handler behind a proxy answers 200 with the failure in its envelope).
    failed = said is not None and said >= 400
    code = said if said is not None and (failed or representation == "jsonp") else status
    if code == 401 and _challenge_error(response.headers.get("WWW-Authenticate", "")) in (
        "invalid_token",
        "expired_token",
    ):
        # A server that wraps the bad-token answer in the envelope still says so in its
        # challenge: that is a dead token, not a permission problem.
        raise _bodyless_error(response, line, placement)
    if code >= 400:
        wait = _retry_after(response)
        error = _api_error(code, meta, line, representation, not_found, wait)
        if code in RETRY_STATUSES:
            raise Retry(error, retry_after=wait)
        raise error
    if refused is not None:
        raise _scrubbed(refused)
    if representation != "yaml" and (depth := nesting(content)) > DEEPEST:  # YAML's loader counts
        raise ResponseFormatError(
            f"{line}: the answer {too_deep(depth)}. {DEEP_ADVICE}",
            status_code=status,
            snippet=_snippet(content),
        )
    return envelope["response"]


def _scrubbed(error: ResponseFormatError) -> ResponseFormatError:
    """A reader's own error, without its chain (a parser's error there keeps the whole body)
    and with what it quotes of the body redacted (the reader knows no secret; a server may
    echo the request, token and all)."""
    error.__cause__ = error.__context__ = None
    error.args = tuple(redact(arg) if isinstance(arg, str) else arg for arg in error.args)
    if isinstance(error.snippet, str):
        error.snippet = redact(error.snippet)
    return error


def _parse_failure(err: Exception) -> ValueError:
    """What a parser said and where, without the document it keeps: ``JSONDecodeError.doc``
    and a YAML mark's buffer (which its message quotes) hold the whole body."""
    mark = getattr(err, "problem_mark", None)
    if isinstance(err, yaml.MarkedYAMLError) and mark is not None:
        what, line, column = err.problem or "unreadable", mark.line + 1, mark.column + 1
    elif isinstance(err, json.JSONDecodeError):  # orjson's is one
        what, line, column = err.msg, err.lineno, err.colno
    else:
        return ValueError(type(err).__name__)
    return ValueError(f"{type(err).__name__}: {redact(what)[:100]} (line {line}, column {column})")


# --- answers that are not the envelope --------------------------------------------------------


def _bodyless_error(
    response: requests.Response, line: str, placement: str | None, not_found: str = ""
) -> Exception:
    status = response.status_code
    challenge = response.headers.get("WWW-Authenticate", "")
    oauth_error = _challenge_error(challenge)
    if status == TOO_MANY_REQUESTS:
        return _rate_limited(response, line)
    if status in RETRY_STATUSES:
        return Retry(
            ServerError(
                f"The service failed (HTTP {status}, empty body) on {line}. Try again later",
                status_code=status,
                request=line,
            ),
            retry_after=_retry_after(response),
        )
    if status == 401 or oauth_error in ("invalid_token", "expired_token"):
        return TokenRejectedError(
            f"The token was rejected (HTTP {status}) on {line}: it is unknown, revoked or "
            "expired. Log in again: `mediaframe login --url URL --client-id ID --username NAME`"
        )
    if status == 400 and challenge:
        error = TokenMissingError(
            f"The service saw no token (HTTP 400) on {line}. Log in (`mediaframe login --url URL "
            "--client-id ID --username NAME`) or "
            "pass token= to connect()"
        )
        return HeaderRefused(error) if placement == "header" else error
    advice = (status == 404 and not_found) or "Check base_url points at the service"
    return ResponseFormatError(
        f"{line}: HTTP {status} with an empty body, not the service's envelope. {advice}",
        status_code=status,
        snippet="",
    )


def _not_an_envelope(
    response: requests.Response,
    line: str,
    placement: str | None,
    err: ResponseFormatError,
    not_found: str = "",
) -> Exception:
    status = response.status_code
    snippet = _snippet(response.content)
    if status == TOO_MANY_REQUESTS:  # a rate-limiting proxy's own page
        return _rate_limited(response, line)
    if status >= 500:
        server = ServerError(
            f"The service failed (HTTP {status}) on {line} and answered with something else than "
            f"its envelope: {snippet!r}. Try again later",
            status_code=status,
            request=line,
        )
        return (
            Retry(server, retry_after=_retry_after(response))
            if status in RETRY_STATUSES
            else server
        )
    if status == 401 and _challenge_error(response.headers.get("WWW-Authenticate", "")) in (
        "invalid_token",
        "expired_token",
    ):
        # a proxy's error page in place of the empty body: the challenge still says the token
        # is dead (to be refreshed or logged in again), which the page cannot
        return _bodyless_error(response, line, placement)
    oauth_error = _oauth_body_error(response.content)
    if oauth_error is not None:
        error = OAuthError(
            f"The service refused how the token was sent on {line} ({neutralised(oauth_error)}, "
            f"HTTP {status}). Set MEDIAFRAME_TOKEN_PLACEMENT=param (or header) and try again",
            error=oauth_error,
        )
        return HeaderRefused(error) if placement == "header" else error
    if isinstance(err.__cause__, _TooDeep):
        # the service's answer, whole, only too deep to read: said as a JSON answer's is (a
        # proxy's page and base_url are beside the point)
        return ResponseFormatError(
            f"{line}: the answer {err.__cause__}. {DEEP_ADVICE}",
            status_code=status,
            snippet=snippet,
        )
    # the parser's reason (already stripped of the body and redacted) tells damage from a page
    reason = f" ({err.__cause__})" if isinstance(err.__cause__, ValueError) else ""
    advice = (status == 404 and not_found) or "Check base_url and try again later"
    format_error = ResponseFormatError(
        f"{line}: HTTP {status}, {redact(str(err))}{reason} — not the service's answer (a proxy or "
        f"login page?): {snippet!r}. {advice}",
        status_code=status,
        snippet=snippet,
    )
    # Cut in transit (or by the server, which then frames what is left with its own length):
    # worth asking again. A whole body the parser refuses (1e400, a lone surrogate) is not.
    unparsable = isinstance(err.__cause__, ValueError | yaml.YAMLError)
    content = response.content
    if unparsable and _ENVELOPE_START.match(content[:64]) and _is_unclosed(content):
        return Retry(format_error)
    return format_error


def _rate_limited(response: requests.Response, line: str) -> Retry:
    """A 429 whose body is no envelope (a proxy's page, or nothing), asked again later."""
    wait = _retry_after(response)
    error = RateLimitedError(
        f"Too Many Requests (HTTP {TOO_MANY_REQUESTS}) on {line}. {_rate_advice(wait)}",
        status_code=TOO_MANY_REQUESTS,
        request=line,
    )
    return Retry(error, retry_after=wait)


def _rate_advice(wait: float | None) -> str:
    asked = f" (it asked to wait {wait:g} s)" if wait else ""
    return (
        "The service (or a proxy before it) is rate-limiting this client and refused the "
        f"request through every retry{asked}. Send fewer requests at once (a lower "
        "concurrency=, or MEDIAFRAME_CONCURRENCY) and wait a while before trying again"
    )


def _api_error(
    code: int,
    meta: Mapping[str, Any],
    line: str,
    representation: str,
    not_found: str = "",
    wait: float | None = None,
) -> APIError:
    kind, advice = _STATUS_ERRORS.get(code, (ServerError if code >= 500 else APIError, ""))
    if code == 404 and not_found:
        advice = not_found
    details = meta.get("error_details") or meta.get("error_message") or meta.get("error_type")
    # the message shows the server's words inert (an escape sequence in an uncaught error's
    # traceback would reach the terminal); the attributes keep them as sent
    said = redact(neutralised(str(details))) if details else "no details"
    if code == 406:
        advice = f"the service cannot answer in {representation.upper()}; use JSON"
    elif code == TOO_MANY_REQUESTS:
        advice = _rate_advice(wait)
    kind_said = redact(neutralised(str(meta.get("error_type") or "Error")))
    message = f"{kind_said} (HTTP {code}) on {line}: {said.rstrip('.')}."
    return kind(
        f"{message} {advice}".strip(),
        status_code=code,
        error_type=_redacted(meta.get("error_type")),
        error_message=_redacted(meta.get("error_message")),
        error_details=_redacted(meta.get("error_details")),
        request=line,
    )


def _redacted(value: Any) -> Any:
    """A member of the server's ``meta`` kept on an error, scrubbed (a server may echo a token)."""
    return redact(value) if isinstance(value, str) else value


_STATUS_ERRORS: dict[int, tuple[type[APIError], str]] = {
    400: (BadRequestError, "Check the parameters of the call"),
    401: (
        PermissionDeniedError,
        "Your token is valid, but this user may not see this resource; ask an administrator "
        "for the rights",
    ),
    403: (ForbiddenError, "Ask an administrator of the service for access"),
    404: (NotFoundError, "Check the id, the path and base_url"),
    405: (
        MethodNotAllowedError,
        "This route does not take that method; the server may be of another version — please "
        "report it",
    ),
    406: (NotAcceptableError, ""),
    **dict.fromkeys(
        sorted(RETRY_STATUSES - {TOO_MANY_REQUESTS}),
        (ServerError, "The service failed through every retry; try again later"),
    ),
    TOO_MANY_REQUESTS: (RateLimitedError, ""),  # its advice says how long the service asked
}


def _status_of(meta: Mapping[str, Any]) -> int | None:
    """``meta.http_code`` as an integer (some servers send it as a string); ``None`` if it is
    missing or no integer."""
    code = meta.get("http_code")
    if isinstance(code, str) and _is_number(code.strip()):
        return int(code)
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _challenge_error(challenge: str) -> str | None:
    match = re.search(r"""error\s*=\s*["']?([\w-]+)""", challenge)
    return match.group(1) if match else None


def _oauth_body_error(content: bytes) -> str | None:
    """The code of an OAuth-style ``{"error": "..."}`` body (the resource server's refusals)."""
    try:
        body = orjson.loads(content)
    except ValueError:
        return None
    if isinstance(body, dict) and "meta" not in body and isinstance(body.get("error"), str):
        return redact(body["error"])  # a server may echo the token it refused
    return None


def _is_cut_short(response: requests.Response) -> bool:
    """Whether fewer bytes arrived than ``Content-Length`` announced (uncompressed answers)."""
    announced = response.headers.get("Content-Length")
    if not _is_number(announced) or response.headers.get("Content-Encoding"):
        return False
    return len(response.content) < int(announced)


def _is_unclosed(content: bytes) -> bool:
    """Whether the body ends inside its document: in a string, or with an object, array or
    JSONP call left open (the envelope's own framing, whatever the parser thinks of its
    values). Brackets inside strings do not count; strings are taken whole first."""
    rest = _STRING.sub(b"", content)
    if b'"' in rest:  # a string that never closes
        return True
    opened = rest.count(b"{") + rest.count(b"[") + rest.count(b"(")
    return opened > rest.count(b"}") + rest.count(b"]") + rest.count(b")")


def _retry_after(response: requests.Response) -> float | None:
    """The seconds ``Retry-After`` asks to wait: a number of seconds, or an HTTP date read
    against the answer's own ``Date`` (the server's clock; this machine's without one).
    ``None`` when absent or unreadable; a date already past is 0."""
    value = response.headers.get("Retry-After", "").strip()
    if _is_number(value):
        return float(value)
    when = _http_date(value)
    if when is None:
        return None
    now = _http_date(response.headers.get("Date", ""))
    return max(0.0, when - (_now() if now is None else now))


def _http_date(value: str) -> float | None:
    """An HTTP date (``Wed, 21 Oct 2026 07:28:00 GMT``) as a POSIX time; ``None`` if it is not
    one."""
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, its offset unknown
        when = when.replace(tzinfo=datetime.UTC)
    return when.timestamp()


def _now() -> float:
    """This machine's clock, for a ``Retry-After`` date of an answer without ``Date``."""
    return time.time()


def _is_number(text: str | None) -> TypeGuard[str]:
    """Whether a header or member is a plain decimal number (``"²"`` is a digit to
    ``str.isdigit``, and no number to ``int``)."""
    return text is not None and text.isascii() and text.isdigit()


def _snippet(content: bytes) -> str:
    # Redacted whole, then cut: a secret the cut went through would not be recognised, and its
    # first bytes would be shown. So read on until the text (its whitespace collapsed, which
    # shrinks it) runs past the cut by more than any secret is long, or to the end.
    size = _SNIPPET + _SECRET_ROOM
    while True:
        text = " ".join(content[:size].decode("utf-8", "replace").split())
        if len(text) >= _SNIPPET + _SECRET_ROOM or size >= len(content):
            return redact(text)[:_SNIPPET]
        size *= 2
