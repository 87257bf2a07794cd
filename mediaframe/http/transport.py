"""The transport: retries with backoff, the token (refresh, placement), one attempt built."""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import requests

from mediaframe.config import Settings
from mediaframe.exceptions import ConfigurationError, TokenRejectedError
from mediaframe.http import deadline
from mediaframe.http.answers import REPRESENTATIONS, Decode, HeaderRefused, Retry, read_answer
from mediaframe.http.slots import slot
from mediaframe.http.wire import read_body, release, send
from mediaframe.tokens import (
    TOKEN_PARAM,
    Token,
    check_base_url,
    install_redaction,
    service_root_hint,
)
from mediaframe.tokens import token_header as _token_header

__all__ = ["Params", "Transport"]

# the logger of mediaframe.http, whichever of its modules logs
log = logging.getLogger("mediaframe.http")

#: Parameters as ``(name, value)`` pairs (repeated names for arrays) or a mapping.
Params = Sequence[tuple[str, str]] | Mapping[str, str]

JSONP_CALLBACK = "mediaframe_jsonp"
#: The vendor media type asking for extended records (``+json``, ``+yaml`` or ``+jsonp``).
EXTENDED_TYPE = "application/vnd.phraseanet.record-extended"
_ACCEPT = {"json": "application/json", "yaml": "application/yaml"}
_MAX_DELAY = 60.0


def _no_automatic_auth(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """The request's own authorisation, as built: given as ``auth``, it keeps requests from
    replacing the token's header by a ``~/.netrc`` login for the host, or by ``session.auth``
    (requests-oauthlib guards its sessions the same way)."""
    return request


def _wait(seconds: float) -> None:
    """Wait before a retry (tests record the delay here instead of sleeping it)."""
    time.sleep(seconds)


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
        made here reads the status line and headers under the attempt's deadline too
        (:mod:`mediaframe.http.deadline`) and is closed by :meth:`close`; one passed in keeps
        its adapters and is left to its owner.
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
        self._not_found = service_root_hint(self.base_url)  # a 404's advice, for a URL ending /api
        self.settings = settings or Settings.from_env()
        self.representation = representation
        self._token = Token(token) if isinstance(token, str) else token
        self._refresh = refresh
        self._owns_session = session is None
        self.session = session if session is not None else deadline.session()
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
        exponential backoff and jitter. Other errors are raised at once, among them a host name
        the resolver says does not exist (a resolver failing for now is retried).

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
            except Retry as retry:
                if attempt >= self.settings.retries:
                    raise retry.error from retry.error.__cause__
                delay = self.backoff(attempt, retry.retry_after)
                log.debug("%s %s: %s; retry %d in %.2f s", method, path, retry, attempt + 1, delay)
                _wait(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- token: refresh, placement fallback --------------------------------------------------

    def _send_with_token(
        self,
        method: str,
        path: str,
        pairs: list[tuple[str, str]],
        decode: Decode,
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
        decode: Decode,
        extended: bool = False,
    ) -> Any:
        placement = self._placement or "header"
        try:
            return self._send(method, path, pairs, token, placement, decode, extended)
        except HeaderRefused as refused:
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
        decode: Decode = None,
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
        log.debug("%s (token placement: %s)", line, placement if token else "no token")
        request = requests.Request(
            method,
            self.base_url + path,
            params=query or None,
            data=data,
            headers=headers,
            auth=_no_automatic_auth,
        )
        prepared = self.session.prepare_request(request)
        # A slot, where the thread has them, only while on the wire: the answer is read into a
        # frame after it is given back. The attempt's time starts once it has one.
        with slot():
            started = time.monotonic()
            deadline = started + self.settings.timeout
            response = send(
                self.session,
                prepared,
                base_url=self.base_url,
                line=line,
                timeout=self.settings.timeout,
                deadline=deadline,
            )
            try:
                content = read_body(
                    response,
                    line=line,
                    limit=self.settings.max_response_bytes,
                    timeout=self.settings.timeout,
                    deadline=deadline,
                )
            finally:
                release(response)
        log.debug("%s -> %s in %.3f s", line, response.status_code, time.monotonic() - started)
        result = read_answer(
            response,
            content,
            line,
            representation,
            placement if token else None,
            decode,
            not_found=self._not_found,
        )
        if self._placement is None and token is not None:
            self._placement = "header"  # the header worked: no need to test it again
        return result

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before asking again after ``attempt`` failed (0 the first), at
        least ``retry_after`` when the server asked for it: the one pacing of every retry."""
        # Equal jitter: half of the exponential delay is fixed, half random, so that clients
        # that failed together do not come back together.
        delay = self.settings.backoff * 2**attempt
        delay = delay / 2 + random.uniform(0, delay / 2)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, _MAX_DELAY)
