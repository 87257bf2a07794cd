"""The only door to the network: timeouts, retries, token placement, envelopes and errors."""

from __future__ import annotations

import itertools
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
import requests
import urllib3
import yaml

from mediaframe.auth import (
    TOKEN_PARAM,
    Token,
    check_base_url,
    install_redaction,
    redact,
    redact_url,
    same_origin,
)
from mediaframe.auth import token_header as _token_header
from mediaframe.config import Settings
from mediaframe.exceptions import (
    APIError,
    BadRequestError,
    ConfigurationError,
    ConnectionFailedError,
    ForbiddenError,
    MediaframeError,
    MethodNotAllowedError,
    NotAcceptableError,
    NotFoundError,
    OAuthError,
    PermissionDeniedError,
    RedirectRefusedError,
    RequestTimeoutError,
    ResponseFormatError,
    ResponseTooLargeError,
    ServerError,
    TokenMissingError,
    TokenRejectedError,
    TransportError,
)

__all__ = ["REPRESENTATIONS", "RETRY_STATUSES", "Params", "Transport", "decode_envelope"]

log = logging.getLogger(__name__)

#: Statuses worth asking again: the service or a proxy in front of it is briefly unwell.
RETRY_STATUSES = frozenset({500, 502, 503, 504})

#: Envelope representations of v1 routes; v2 routes always speak JSON.
REPRESENTATIONS = ("json", "yaml", "jsonp")

#: Parameters as ``(name, value)`` pairs (repeated names for arrays) or a mapping.
Params = Sequence[tuple[str, str]] | Mapping[str, str]

JSONP_CALLBACK = "mediaframe_jsonp"
#: The vendor media type asking for extended records (``+json``, ``+yaml`` or ``+jsonp``).
EXTENDED_TYPE = "application/vnd.phraseanet.record-extended"
_ACCEPT = {"json": "application/json", "yaml": "application/yaml"}
_JSONP = re.compile(rb"^\s*(?:/\*\*/)?\s*[A-Za-z_$][\w$.]*\s*\((.*)\)\s*;?\s*$", re.DOTALL)
_ENVELOPE_START = re.compile(rb"\s*(\{|/\*\*/|[A-Za-z_$][\w$.]*\s*\()")
_SNIPPET = 160
_MAX_DELAY = 60.0
# Bytes asked of the socket per read while streaming an answer (a read returns what has come).
_CHUNK = 1 << 18


class _YamlLoader(yaml.SafeLoader):
    """Safe YAML that keeps dates as strings, exactly as the JSON representation gives them.

    Anchors and aliases are refused: the service never sends them, and a few lines of nested
    aliases expand to billions of nodes (the "billion laughs").
    """

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, "YAML anchors and aliases are not read", event.start_mark
            )
        return super().compose_node(parent, index)


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
    try:
        if representation == "yaml":
            envelope = yaml.load(content, Loader=_YamlLoader)
        elif representation == "jsonp" and (match := _JSONP.match(content)):
            envelope = orjson.loads(match.group(1))
        else:
            envelope = orjson.loads(content)
    except (ValueError, yaml.YAMLError) as err:
        raise ResponseFormatError(
            f"the body is not valid {representation.upper()}", snippet=_snippet(content)
        ) from err
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


#: Reads a successful JSON body in place of the envelope decoding (``None``: the envelope).
_Decode = Callable[[bytes], Any] | None


class _Retry(Exception):
    """Internal: this attempt failed in a way worth retrying; ``error`` is raised at the end."""

    def __init__(self, error: MediaframeError, *, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class _HeaderRefused(Exception):
    """Internal: the service did not take the token from the header; ``error`` if no fallback."""

    def __init__(self, error: MediaframeError) -> None:
        super().__init__(str(error))
        self.error = error


class Transport:
    """Sends reads to one service and returns the ``response`` member of its envelope.

    Parameters
    ----------
    base_url : the service root, ``https://...`` (plain http only on loopback hosts).
    token : the access token (a :class:`~mediaframe.auth.Token` or a string); ``None`` sends none.
    refresh : called with the current token when it expires (or is rejected and carries a
        refresh token); must persist and return the new token.
    settings : timeouts, retries, backoff and token placement; ``Settings.from_env()`` if omitted.
    session : a ``requests.Session`` to send through (tests pass an in-process one). A session
        made here is closed by :meth:`close`; one passed in is left to its owner.
    representation : ``json`` (default), ``yaml`` or ``jsonp`` for v1 routes.

    Examples
    --------
    >>> transport = Transport("https://assets.example.org", token="...")  # doctest: +SKIP
    >>> transport.get("/api/v1/me/")["user"]["login"]                     # doctest: +SKIP
    'ada'
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: Token | str | None = None,
        refresh: Callable[[Token], Token] | None = None,
        settings: Settings | None = None,
        session: requests.Session | None = None,
        representation: str = "json",
    ) -> None:
        if representation not in REPRESENTATIONS:
            raise ConfigurationError(
                f"representation must be json, yaml or jsonp, not {representation!r}"
            )
        self.base_url = check_base_url(base_url)
        self.settings = settings or Settings.from_env()
        self.representation = representation
        self._token = Token(token) if isinstance(token, str) else token
        self._refresh = refresh
        self._owns_session = session is None
        self.session = session if session is not None else requests.Session()
        forced = self.settings.token_placement
        self._placement: str | None = None if forced == "auto" else forced
        self._lock = threading.Lock()
        install_redaction()

    def __repr__(self) -> str:
        token = "***" if self._token else None
        return f"Transport({self.base_url!r}, token={token!r}, placement={self.placement!r})"

    @property
    def placement(self) -> str:
        """Where the token goes: ``header``, ``param``, or ``auto`` until the service told."""
        return self._placement or "auto"

    @property
    def token(self) -> Token | None:
        """The token in use (its repr shows no secret)."""
        return self._token

    def close(self) -> None:
        """Close the session if this transport made it."""
        if self._owns_session:
            self.session.close()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def get(self, path: str, params: Params = (), *, extended: bool = False) -> dict[str, Any]:
        """GET ``path`` (e.g. ``/api/v1/me/``); see :meth:`request`."""
        return self.request("GET", path, params, extended=extended)

    def post(self, path: str, params: Params = (), *, extended: bool = False) -> dict[str, Any]:
        """POST ``path`` with form (v1) or query (v2) parameters; see :meth:`request`."""
        return self.request("POST", path, params, extended=extended)

    def request(
        self,
        method: str,
        path: str,
        params: Params = (),
        *,
        decode: Callable[[bytes], Any] | None = None,
        extended: bool = False,
    ) -> Any:
        """Send one read, retrying transient failures, and return the envelope's ``response``.

        Every route of the service only reads, so connection failures, timeouts, dropped or
        truncated answers and HTTP 500/502/503/504 are retried ``settings.retries`` times with
        exponential backoff and jitter. Other errors are raised at once.

        ``decode``, when given, reads the raw body of a successful JSON answer instead (e.g.
        straight into a frame); its result is returned as is, and a
        :class:`ResponseFormatError` it raises is reported like any unreadable answer. Error
        answers and other representations are read as usual.

        ``extended`` asks a v1 route for extended records (captions, status bits, subdefs) with
        the vendor media type, in the transport's representation.

        Raises
        ------
        MediaframeError
            A subclass saying what happened and what to do; see ``docs/errors.md``.
        """
        pairs = list(params.items()) if isinstance(params, Mapping) else list(params)
        for attempt in itertools.count():
            try:
                return self._send_with_token(method.upper(), path, pairs, decode, extended)
            except _Retry as retry:
                if attempt >= self.settings.retries:
                    raise retry.error from retry.error.__cause__
                delay = self._backoff(attempt, retry.retry_after)
                log.debug("%s %s: %s; retry %d in %.2f s", method, path, retry, attempt + 1, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- token: refresh, placement fallback --------------------------------------------------

    def _send_with_token(
        self,
        method: str,
        path: str,
        pairs: list[tuple[str, str]],
        decode: _Decode,
        extended: bool = False,
    ) -> Any:
        token = self._current_token()
        try:
            return self._send_placed(method, path, pairs, token, decode, extended)
        except TokenRejectedError:
            if not (self._refresh and token and token.refresh_token):
                raise
            return self._send_placed(method, path, pairs, self._refreshed(token), decode, extended)

    def _send_placed(
        self,
        method: str,
        path: str,
        pairs: list[tuple[str, str]],
        token: Token | None,
        decode: _Decode,
        extended: bool = False,
    ) -> Any:
        placement = self._placement or "header"
        try:
            return self._send(method, path, pairs, token, placement, decode, extended)
        except _HeaderRefused as refused:
            if self._placement is not None:
                raise refused.error from refused.error.__cause__
            # Servers older than 2019 read the token only from the `oauth_token` parameter.
            log.info("the service refuses the Authorization header; using oauth_token from now on")
            self._placement = "param"
            return self._send(method, path, pairs, token, "param", decode, extended)

    def _current_token(self) -> Token | None:
        token = self._token
        if token is not None and self._refresh and token.refresh_token and token.is_expired():
            return self._refreshed(token)
        return token

    def _refreshed(self, stale: Token) -> Token:
        with self._lock:
            if self._token is stale:  # another thread may have refreshed it already
                assert self._refresh is not None
                self._token = self._refresh(stale)
            assert self._token is not None
            return self._token

    # -- one attempt ---------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        pairs: list[tuple[str, str]],
        token: Token | None,
        placement: str,
        decode: _Decode = None,
        extended: bool = False,
    ) -> Any:
        line = f"{method} {path}"
        v2 = path.startswith("/api/v2/")
        representation = "json" if v2 else self.representation
        headers: dict[str, str] = {}
        if extended and not v2:
            headers["Accept"] = f"{EXTENDED_TYPE}+{representation}"
        elif representation in _ACCEPT:
            headers["Accept"] = _ACCEPT[representation]
        query = [("callback", JSONP_CALLBACK)] if representation == "jsonp" else []
        data: Any = None
        if v2 or method == "GET":
            query += pairs
        else:
            data = list(pairs)
        if v2:
            headers["Content-Type"] = "application/json"
            data = b"{}" if method != "GET" else None
        if token is not None and placement == "header":
            headers.update(_token_header(token.access_token))
        elif token is not None:
            # One place only: the form body of a v1 POST, else the query string.
            (data if isinstance(data, list) else query).append((TOKEN_PARAM, token.access_token))
        log.debug("%s (token: %s)", line, placement if token else "none")
        started = time.monotonic()
        deadline = started + self.settings.timeout
        request = requests.Request(
            method, self.base_url + path, params=query or None, data=data, headers=headers
        )
        response = self._exchange(self.session.prepare_request(request), line, deadline)
        try:
            content = self._body(response, line, deadline)
        finally:
            _release(response)
        log.debug("%s -> %s in %.3f s", line, response.status_code, time.monotonic() - started)
        result = self._read(
            response, content, line, representation, placement if token else None, decode
        )
        if self._placement is None and token is not None:
            self._placement = "header"  # the header worked: no need to test it again
        return result

    def _exchange(
        self, prepared: requests.PreparedRequest, line: str, deadline: float
    ) -> requests.Response:
        """Send, never following a redirect; the body is left on the wire for :meth:`_body`.

        Failures are raised after the ``except`` blocks, so that no library exception (whose
        message may hold the request URL, and the token in it) rides along as ``__context__``.
        """
        if not same_origin(prepared.url or "", self.base_url):
            raise ConfigurationError(
                f"{line}: refusing to send to {redact_url(prepared.url or '')}, which is not "
                f"the service at {self.base_url}"
            )
        environment = self.session.merge_environment_settings(prepared.url, {}, True, None, None)
        timeout = min(self.settings.timeout, max(deadline - time.monotonic(), 0.001))
        failure: Exception
        try:
            response = self.session.send(
                prepared, timeout=timeout, allow_redirects=False, **environment
            )
        except requests.Timeout as err:
            failure = _Retry(self._timed_out(line, err))
        except (
            requests.ConnectionError,
            requests.exceptions.ChunkedEncodingError,
            requests.exceptions.ContentDecodingError,
        ) as err:
            failure = _Retry(_dropped(line, err))
        except requests.RequestException as err:
            failure = TransportError(f"{line}: {_library_message(err)}")
        else:
            if 300 <= response.status_code < 400:
                _release(response)
                raise _redirect_error(response, line)
            return response
        raise failure

    def _body(self, response: requests.Response, line: str, deadline: float) -> bytes:
        """The whole body, decompressed, within the size limit and the request's deadline.

        Read as it comes (one socket read at a time, so a server dripping bytes cannot outlast
        the deadline) into a list joined once: one copy of a large page, as before.
        """
        limit = self.settings.max_response_bytes
        raw = response.raw
        if response._content is not False or not isinstance(raw, urllib3.BaseHTTPResponse):
            content = response.content  # an adapter that answered from memory
            if len(content) > limit:
                raise _too_large(line, limit)
            return content
        chunks: list[bytes] = []
        size = 0
        failure: Exception | None = None
        while failure is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                failure = _Retry(self._timed_out(line))
                break
            _shorten_read_timeout(raw, remaining)
            try:
                chunk = raw.read1(_CHUNK, decode_content=True)
            except (urllib3.exceptions.TimeoutError, requests.Timeout) as err:
                failure = _Retry(self._timed_out(line, err))
            except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as err:
                failure = _Retry(_dropped(line, err))
            else:
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    failure = _too_large(line, limit)
                chunks.append(chunk)
        if failure is not None:
            raise failure
        content = b"".join(chunks)
        # as requests would have it after reading: its accessors see the body read here, and
        # the connection goes back to the pool
        response._content = content
        response._content_consumed = True  # requests' own flag
        return content

    def _timed_out(self, line: str, err: Exception | None = None) -> RequestTimeoutError:
        cause = f" ({_library_message(err)})" if err is not None else ""
        return RequestTimeoutError(
            f"{line}: no whole answer within {self.settings.timeout} s{cause}. "
            "Try again later or raise MEDIAFRAME_TIMEOUT"
        )

    def _read(
        self,
        response: requests.Response,
        content: bytes,
        line: str,
        representation: str,
        placement: str | None,
        decode: _Decode = None,
    ) -> Any:
        status = response.status_code
        if not content.strip():
            raise _bodyless_error(response, line, placement)
        if _is_cut_short(response):
            raise _Retry(
                ResponseFormatError(
                    f"{line}: the answer was cut short (HTTP {status}); retried without success",
                    status_code=status,
                    snippet=_snippet(content),
                )
            )
        if decode is not None and status == 200 and representation == "json":
            try:
                return decode(content)
            except ResponseFormatError as err:
                raise _not_an_envelope(response, line, placement, err) from err
        try:
            envelope = decode_envelope(content, representation)
        except ResponseFormatError as err:
            raise _not_an_envelope(response, line, placement, err) from err
        meta = envelope["meta"]
        code = _status_of(meta, status) if representation == "jsonp" else status
        if code == 401 and _challenge_error(response.headers.get("WWW-Authenticate", "")) in (
            "invalid_token",
            "expired_token",
        ):
            # A server that wraps the bad-token answer in the envelope still says so in its
            # challenge: that is a dead token, not a permission problem.
            raise _bodyless_error(response, line, placement)
        if code >= 400:
            error = _api_error(code, meta, line, representation)
            if code in RETRY_STATUSES:
                raise _Retry(error, retry_after=_retry_after(response))
            raise error
        return envelope["response"]

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        # Equal jitter: half of the exponential delay is fixed, half random, so that clients
        # that failed together do not come back together.
        delay = self.settings.backoff * 2**attempt
        delay = delay / 2 + random.uniform(0, delay / 2)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, _MAX_DELAY)


# --- answers that are not the envelope --------------------------------------------------------


def _bodyless_error(response: requests.Response, line: str, placement: str | None) -> Exception:
    status = response.status_code
    challenge = response.headers.get("WWW-Authenticate", "")
    oauth_error = _challenge_error(challenge)
    if status in RETRY_STATUSES:
        return _Retry(
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
            "expired. Log in again: `mediaframe login`"
        )
    if status == 400 and challenge:
        error = TokenMissingError(
            f"The service saw no token (HTTP 400) on {line}. Log in (`mediaframe login`) or "
            "pass token= to connect()"
        )
        return _HeaderRefused(error) if placement == "header" else error
    return ResponseFormatError(
        f"{line}: HTTP {status} with an empty body, not the service's envelope. "
        "Check base_url points at the service",
        status_code=status,
        snippet="",
    )


def _not_an_envelope(
    response: requests.Response, line: str, placement: str | None, err: ResponseFormatError
) -> Exception:
    status = response.status_code
    snippet = _snippet(response.content)
    if status >= 500:
        server = ServerError(
            f"The service failed (HTTP {status}) on {line} and answered with something else than "
            f"its envelope: {snippet!r}. Try again later",
            status_code=status,
            request=line,
        )
        return (
            _Retry(server, retry_after=_retry_after(response))
            if status in RETRY_STATUSES
            else server
        )
    oauth_error = _oauth_body_error(response.content)
    if oauth_error is not None:
        error = OAuthError(
            f"The service refused how the token was sent on {line} ({oauth_error}, HTTP {status}). "
            "Set MEDIAFRAME_TOKEN_PLACEMENT=param (or header) and try again",
            error=oauth_error,
        )
        return _HeaderRefused(error) if placement == "header" else error
    format_error = ResponseFormatError(
        f"{line}: HTTP {status}, {err} — not the service's answer (a proxy or login page?): "
        f"{snippet!r}. Check base_url and try again later",
        status_code=status,
        snippet=snippet,
    )
    # A body that starts like the envelope but does not parse was most likely cut in transit.
    unparsable = isinstance(err.__cause__, ValueError | yaml.YAMLError)
    if unparsable and _ENVELOPE_START.match(response.content[:64]):
        return _Retry(format_error)
    return format_error


def _api_error(code: int, meta: Mapping[str, Any], line: str, representation: str) -> APIError:
    kind, advice = _STATUS_ERRORS.get(code, (ServerError if code >= 500 else APIError, ""))
    details = meta.get("error_details") or meta.get("error_message") or meta.get("error_type")
    said = redact(str(details)) if details else "no details"
    if code == 406:
        advice = f"the service cannot answer in {representation.upper()}; use JSON"
    message = f"{meta.get('error_type') or 'Error'} (HTTP {code}) on {line}: {said}."
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
    500: (ServerError, "The service failed through every retry; try again later"),
    502: (ServerError, "The service failed through every retry; try again later"),
    503: (ServerError, "The service failed through every retry; try again later"),
    504: (ServerError, "The service failed through every retry; try again later"),
}


def _status_of(meta: Mapping[str, Any], fallback: int) -> int:
    """``meta.http_code`` as an integer (some servers send it as a string)."""
    code = meta.get("http_code")
    if isinstance(code, str) and code.strip().isdigit():
        return int(code)
    return code if isinstance(code, int) and not isinstance(code, bool) else fallback


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
        return str(body["error"])
    return None


def _is_cut_short(response: requests.Response) -> bool:
    """Whether fewer bytes arrived than ``Content-Length`` announced (uncompressed answers)."""
    announced = response.headers.get("Content-Length")
    if not announced or not announced.isdigit() or response.headers.get("Content-Encoding"):
        return False
    return len(response.content) < int(announced)


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    return float(value) if value.isdigit() else None


def _snippet(content: bytes) -> str:
    text = content[:_SNIPPET].decode("utf-8", "replace")
    return redact(" ".join(text.split()))


def _library_message(err: BaseException) -> str:
    """A library exception told in a few redacted words (its URL may carry the token)."""
    return f"{type(err).__name__}: {redact(str(err))[:200]}"


def _dropped(line: str, err: BaseException) -> ConnectionFailedError:
    return ConnectionFailedError(
        f"{line}: the connection failed or dropped ({_library_message(err)}). "
        "Check the URL and the network, then try again"
    )


def _too_large(line: str, limit: int) -> ResponseTooLargeError:
    return ResponseTooLargeError(
        f"{line}: the answer grew past {limit:,} bytes (decompressed) and was dropped. Ask "
        "for smaller pages (per_page=), or raise MEDIAFRAME_MAX_RESPONSE_BYTES if the service "
        "is trusted"
    )


def _redirect_error(response: requests.Response, line: str) -> RedirectRefusedError:
    location = redact_url(response.headers.get("Location", ""))
    return RedirectRefusedError(
        f"{line}: the service answered HTTP {response.status_code}, a redirect to {location}. "
        "API calls never follow redirects (the token would go along): set base_url to the "
        "address the service answers on itself",
        status_code=response.status_code,
        location=location,
    )


def _release(response: requests.Response) -> None:
    """Give a fully read connection back to the pool; close one left half read."""
    raw = response.raw
    if isinstance(raw, urllib3.BaseHTTPResponse):
        if getattr(response, "_content_consumed", False):
            raw.release_conn()
        else:
            raw.close()


def _shorten_read_timeout(raw: urllib3.BaseHTTPResponse, remaining: float) -> None:
    """Let the next socket read wait no longer than the request's deadline allows."""
    connection = getattr(raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        current = sock.gettimeout()
        if current is None or current > remaining:
            sock.settimeout(remaining)
