"""Tokens: where they may travel, how they are placed, redacted and kept in memory."""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import logging
import re
import threading
import time
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import SplitResult, quote, quote_plus, urlsplit

import urllib3

from mediaframe import _process
from mediaframe.exceptions import (
    ConfigurationError,
)

__all__ = [
    "TOKEN_PARAM",
    "RedactingFilter",
    "Token",
    "check_base_url",
    "install_redaction",
    "is_loopback_url",
    "least_run",
    "proxies_for",
    "redact",
    "redact_record",
    "redact_url",
    "register_secret",
    "same_origin",
    "service_root_hint",
    "shown_url",
    "split_url",
    "token_header",
]

#: Name of the query or form parameter that carries the token on older servers.
TOKEN_PARAM = "oauth_token"


def _host(url: str) -> str:
    """The host as the transport (urllib3, under requests) will connect to it, lower case."""
    try:
        host = urllib3.util.parse_url(url).host or ""
    except urllib3.exceptions.LocationParseError:
        return ""
    return host.strip("[]").lower()


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` names this machine (127.0.0.0/8, ``::1`` or ``localhost``).

    The host is read the way the transport reads it, so that a URL parsed one way here and
    another way when sent cannot pass for loopback.
    """
    host = _host(url)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _unsafe_character(url: str) -> str | None:
    """The first character a service URL must not hold: a backslash, a space or a control."""
    for char in url:
        if char == "\\" or unicodedata.category(char)[0] in "CZ":
            return char
    return None


def split_url(url: str, *, name: str = "base_url") -> SplitResult:
    """``url`` split as urllib reads it, its port checked (urllib checks it only when read).

    Raises
    ------
    ConfigurationError
        urllib cannot read ``url``; the error names it ``name``, as :func:`shown_url` shows it.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (urllib checks the port only when it is read)
    except ValueError:
        pass  # said below, not chained: urllib's message may repeat a user name and password
    else:
        return parts
    raise ConfigurationError(
        f"{name} {shown_url(url)!r} cannot be read as a URL: look for a '[' not closed, a port "
        "that is not a number from 0 to 65535, or a host that changes under Unicode "
        "normalisation"
    )


def check_base_url(base_url: str) -> str:
    """Validate the service URL and return it without a trailing slash.

    Tokens and passwords travel only over https; plain http is allowed for loopback hosts, where
    the emulator runs and nothing crosses a network. The URL is refused when it could be read
    two ways (a backslash, a space or a control character in it, or two parsers disagreeing on
    its host), and when it carries credentials (``user:password@``), which would otherwise
    travel into reprs, messages and cache metadata.

    Raises
    ------
    ConfigurationError
        The URL cannot be read, is not absolute, is ambiguous, carries credentials, or is plain
        http to another host.
    """
    if not isinstance(base_url, str) or not base_url.strip():
        raise ConfigurationError("base_url is empty: give the service URL, e.g. https://host")
    url = base_url.strip().rstrip("/")
    bad = _unsafe_character(url)
    if bad is not None:
        raise ConfigurationError(
            f"base_url holds {bad!r} (a backslash, a space or a control character): it could "
            "be read as another host. Give a plain URL such as https://assets.example.org"
        )
    parts = split_url(url)
    if "@" in parts.netloc:
        raise ConfigurationError(
            f"base_url {shown_url(url)!r} carries a user name or password: they would be stored "
            "and shown with the URL. Give the URL alone, and log in with token=, "
            "username=/password= or `mediaframe login`"
        )
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ConfigurationError(
            f"base_url {shown_url(url)!r} is not an absolute http(s) URL: give e.g. https://assets.example.org"
        )
    if "?" in url or "#" in url:  # even empty: the paths joined to the URL would follow them
        raise ConfigurationError(
            f"base_url {shown_url(url)!r} must not carry a query or a fragment"
        )
    if _host(url) != parts.hostname.lower():
        raise ConfigurationError(
            f"base_url {shown_url(url)!r} names its host ambiguously; give a plain URL such as "
            "https://assets.example.org"
        )
    if parts.scheme == "http" and not is_loopback_url(url):
        raise ConfigurationError(
            f"base_url {shown_url(url)!r} uses plain http: tokens would travel in clear text. "
            "Use https (plain http is allowed only for 127.0.0.1, ::1 and localhost)"
        )
    route = _API_ROUTE.search(parts.path)
    if route is not None:
        # Every path mediaframe asks for starts with /api/: joined to this URL, each would
        # become /api/v1/api/v1/..., and the first answer a 404 that says nothing of why.
        root = parts._replace(path=parts.path[: route.start()]).geturl()
        raise ConfigurationError(
            f"base_url {shown_url(url)!r} ends in the API's own path {route.group()!r}: give "
            f"the service root, e.g. {shown_url(root)} (mediaframe adds /api/v1/... itself)"
        )
    return url


def service_root_hint(url: str) -> str:
    """For an answer saying there is nothing at a path under ``url``: when ``url`` ends in
    ``/api`` (the one API path :func:`check_base_url` lets through, as a gateway may mount a
    service there), which base_url to give instead; else ``""``."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if not path.lower().endswith("/api"):
        return ""
    root = shown_url(parts._replace(path=path[: -len("/api")]).geturl())
    return f"base_url ends in /api: give the service root, e.g. {root}"


#: The API's own route prefixes, which no service root ends in.
_API_ROUTE = re.compile(r"/api/(?:v\d+|oauthv2(?:/token|/authorize)?)$", re.IGNORECASE)


def same_origin(url: str, base_url: str) -> bool:
    """Whether a request to ``url`` may leave: it goes, as the transport parses it, to
    ``base_url``'s scheme, host and port, under the https rule, with no credentials in it.

    The last check before a request leaves: the URL requests prepared must still be the
    service's, whatever happened to ``base_url`` since it was checked.
    """
    try:
        sent, base = urllib3.util.parse_url(url), urllib3.util.parse_url(base_url)
    except urllib3.exceptions.LocationParseError:
        return False
    if sent.auth or _unsafe_character(url.partition("?")[0]) or _unsafe_character(base_url):
        return False
    if _host(base_url) != (urlsplit(base_url).hostname or "").lower():
        return False  # the service URL itself reads two ways
    if sent.scheme != "https" and not is_loopback_url(url):
        return False
    return (sent.scheme, _host(url), sent.port) == (base.scheme, _host(base_url), base.port)


def proxies_for(url: str, proxies: Mapping[str, str]) -> dict[str, str]:
    """The proxies a request to ``url`` may go through: all of them for https, and for plain
    http only those on loopback themselves.

    Plain http is allowed only because it does not leave this machine; a proxy elsewhere (an
    ``http_proxy`` variable, common on managed machines) would carry the token or password to
    it in clear text. Without one, the request goes straight to its loopback host.
    """
    if urlsplit(url).scheme != "http":
        return dict(proxies)
    # a proxy written without a scheme ("localhost:3128") is http, as requests reads it
    return {
        key: proxy
        for key, proxy in proxies.items()
        if proxy and is_loopback_url(proxy if "://" in proxy else f"http://{proxy}")
    }


# --- placement and redaction ----------------------------------------------------------------


def token_header(access_token: str) -> dict[str, str]:
    """The header that carries a token: ``Authorization: OAuth <token>`` (not Bearer)."""
    return {"Authorization": f"OAuth {access_token}"}


_SECRET_VALUE = re.compile(
    r"""(?ix)
    \b(oauth_token|access_token|refresh_token|token|client_secret|password|code)
    (["']?\s*[:=]\s*["']?)          # = in a query string, ": " in JSON or a dict repr
    ([^"'&\s,;}\])]+)
    """
)
_SECRET_HEADER = re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)(\w+)\s+[^\"'\s,}]+")


#: Secrets shorter than this are not redacted by value: replacing every "ab" in every message
#: would make messages unreadable, and such a secret is no secret (names still redact them).
MIN_SECRET_LENGTH = 6
_SECRETS: dict[str, None] = {}  # insertion-ordered set, longest replaced first
_SECRETS_LOCK = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember a secret *value* (token, client secret, password): :func:`redact` hides it.

    Its URL-encoded forms are remembered too, since that is how it travels in a query string or
    a form body, and its upper- and lower-case forms: a proxy or a log may echo a header folded
    to one case (a hexadecimal token loses nothing by it).
    """
    if not isinstance(value, str) or len(value) < MIN_SECRET_LENGTH:
        return
    with _SECRETS_LOCK:
        for case in {value, value.upper(), value.lower()}:
            for form in {case, quote(case, safe=""), quote_plus(case)}:
                _SECRETS[form] = None
    install_redaction()


def least_run(length: int) -> int:
    """The fewest consecutive characters of a known secret of ``length`` characters that
    :func:`redact` hides wherever they appear, not only the whole secret: a proxy's page or a
    WAF's log echoes a header cut to some length.

    12 for a secret of 16 characters or more (a 32-character token keeps at least 21 of them
    unseen), three quarters of a shorter one, but never fewer than 10, and the whole of one
    shorter than that. A run of 10 random characters is never ordinary text; fewer would hide
    words a password shares a stretch with ("password" in "passwords1"), mangling messages.
    """
    return min(length, max(_LEAST_RUN, min(_RUN, -(-3 * length // 4))))


_RUN = 12
_LEAST_RUN = 10


def _redact_values(text: str) -> str:
    # a plain substring scan (in C) per secret: a process holds few, the test suite some hundreds
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    spans = sorted(span for secret in list(_SECRETS) for span in _runs(secret, text))
    if not spans:
        return text
    merged = [list(spans[0])]
    for start, end in spans[1:]:
        if start <= merged[-1][1]:  # overlapping or touching the last: one run
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    kept, at = [], 0
    for start, end in merged:
        kept += [text[at:start], "***"]
        at = end
    return "".join([*kept, text[at:]])


def _runs(secret: str, text: str) -> Iterator[tuple[int, int]]:
    """The spans of ``text`` that are runs of at least :func:`least_run` characters of
    ``secret``, maybe overlapping.

    Any such run holds one of the secret's pieces cut at fixed offsets, each half a run long
    (a run of ``2c - 1`` characters or more covers a whole piece of ``c``): each piece is found by
    a substring scan in C, and only a hit is widened, character by character, as far as text
    and secret agree. Ordinary text holds no piece, so a long text costs a few scans a secret.
    """
    least, pieces = _pieces(secret)
    if least == len(secret):  # the whole secret only, which the plain scan replaced
        return
    for offset, piece in pieces:
        found = text.find(piece)
        while found >= 0:
            start, end = found, found + len(piece)
            left, right = offset, offset + len(piece)
            while start > 0 and left > 0 and text[start - 1] == secret[left - 1]:
                start, left = start - 1, left - 1
            while end < len(text) and right < len(secret) and text[end] == secret[right]:
                end, right = end + 1, right + 1
            if end - start >= least:
                yield start, end
            found = text.find(piece, found + 1)


@functools.lru_cache(maxsize=4096)
def _pieces(secret: str) -> tuple[int, tuple[tuple[int, str], ...]]:
    least = least_run(len(secret))
    size = (least + 1) // 2
    offsets = range(0, len(secret) - size + 1, size)
    return least, tuple((offset, secret[offset : offset + size]) for offset in offsets)


def redact(text: str) -> str:
    """Replace tokens, secrets, passwords and codes in ``text`` by ``***``.

    Known secret values (:func:`register_secret`: every :class:`Token`, client secret and
    password mediaframe was given) are replaced wherever they appear; values of parameters,
    members and headers named like secrets are replaced whatever they are.

    Examples
    --------
    >>> redact("GET /api/v1/me/?oauth_token=abc123&x=1")
    'GET /api/v1/me/?oauth_token=***&x=1'
    >>> redact("{'Authorization': 'OAuth abc123'}")
    "{'Authorization': 'OAuth ***'}"
    """
    text = _redact_values(text)
    text = _SECRET_HEADER.sub(r"\1\2 ***", text)
    return _SECRET_VALUE.sub(r"\1\2***", text)


def shown_url(url: str) -> str:
    """``url`` fit to quote in a message about it, even when it is malformed: what stands before
    an ``@`` of its authority (a user name and password; the first segment when there is no
    ``//``) becomes ``***``, a query or fragment (it may hold a token) ``?...``, known secrets
    ``***``; ``***@`` shows where credentials were.

    Examples
    --------
    >>> shown_url("https://ada:pw@assets.example.org/api?oauth_token=abc")
    'https://***@assets.example.org/api?...'
    >>> shown_url("ada:pw@assets.example.org")
    '***@assets.example.org'
    """
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    head, sep, rest = url[:cut].partition("//")
    if not sep:
        head, rest = "", url[:cut]
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    return redact(head + sep + authority + slash + path + ("?..." if cut < len(url) else ""))


def redact_url(url: str) -> str:
    """``url`` fit to show, ``(none)`` when empty: :func:`shown_url`, which also hides what a
    URL without a scheme (a lying server's ``Location``) holds before its ``@``.

    Examples
    --------
    >>> redact_url("http://ada:pw@evil.example/api/?oauth_token=abc")
    'http://***@evil.example/api/?...'
    >>> redact_url("ada:pw@evil.example/api/")
    '***@evil.example/api/'
    """
    return shown_url(url) or "(none)"


def redact_record(record: logging.LogRecord) -> None:
    """Scrub a log record in place: its message, its exception and its stack.

    The exception is kept as its redacted text (``exc_text``, which formatters print as they
    would have printed the exception) and ``exc_info`` is dropped: a handler that formats the
    live exception itself would show its unredacted message.
    """
    try:
        message = record.getMessage()
    except Exception:  # a message that does not format: shown as it is, scrubbed
        message = f"{record.msg} (arguments: {record.args!r})"
    clean = redact(message)
    if clean != message or record.args:
        record.msg, record.args = clean, None
    if record.exc_info:
        if not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.exc_info = None
    if record.exc_text:
        record.exc_text = redact(record.exc_text)
    if record.stack_info:
        record.stack_info = redact(record.stack_info)


class RedactingFilter(logging.Filter):
    """A logging filter that scrubs secrets from every record it sees, then lets it through.

    A record the process's record factory already scrubbed (the ``mediaframe`` hierarchy's,
    while the process tricks are on) is let through as it is: scrubbing it again would find
    nothing and cost a second pass over every message.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not _process.is_redacted(record):
            redact_record(record)
        return True


# Loggers that may see a secret beside mediaframe's own: requests-oauthlib (logs token bodies
# and headers at DEBUG) and urllib3 (logs request URLs, which carry the token in `oauth_token`
# mode).
_GUARDED_LOGGERS = ("requests_oauthlib.oauth2_session", "urllib3.connectionpool")
_HIERARCHY = "mediaframe"


def install_redaction() -> None:
    """Scrub secrets from the records of every logger that can see one (idempotent).

    A logger's filter applies only to records made on that very logger, not on its children,
    hence: a :class:`RedactingFilter` on the loggers of requests-oauthlib and urllib3 above and
    on every logger of the ``mediaframe`` hierarchy that exists now, and a log record factory
    that scrubs every record of that hierarchy as it is made, whatever logger made it and
    whenever that logger was created — a process-wide trick, in ``mediaframe._process`` with
    the others, turned off with them. Called when a secret becomes known and before
    mediaframe sends anything; safe to call again, and cheap: only loggers made since the last
    call are looked for (:func:`_guard_new_loggers`).
    """
    for name in (*_GUARDED_LOGGERS, _HIERARCHY):
        _guard(logging.getLogger(name))
    _guard_new_loggers()
    _process.redact_log_records(redact_record)


def _guard(logger: logging.Logger) -> None:
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())


#: What logging's registry of loggers held when the hierarchy's were last given their filters:
#: its size, and the names of the hierarchy that were placeholders (the parents of loggers not
#: made yet). The registry only grows, and a placeholder turns into a logger in place: while
#: both are as they were, no logger was made since.
_guarded_size = -1
_guarded_placeholders: tuple[str, ...] = ()
_GUARD_LOCK = threading.Lock()


def _guard_new_loggers() -> None:
    """Give a filter to each logger of the hierarchy made since the last call: registering a
    secret (each token, often) must not cost a pass over every logger of the process."""
    global _guarded_size, _guarded_placeholders
    registry = logging.Logger.manager.loggerDict
    with _GUARD_LOCK:
        if len(registry) == _guarded_size and all(
            isinstance(registry.get(name), logging.PlaceHolder) for name in _guarded_placeholders
        ):
            return
        placeholders = []
        loggers = list(registry.items())  # its size now: one made meanwhile is found next time
        for name, logger in loggers:
            if not name.startswith(_HIERARCHY + "."):
                continue
            if isinstance(logger, logging.Logger):
                _guard(logger)
            elif isinstance(logger, logging.PlaceHolder):
                placeholders.append(name)
        _guarded_size, _guarded_placeholders = len(loggers), tuple(placeholders)


# Tokens are printable ASCII (RFC 6750's b64token, the service's hex): whitespace, controls and
# anything past ASCII (a pasted "…" or curly quote) cannot be part of one, and the header could
# not even be encoded (http.client raised a bare UnicodeEncodeError holding the header).
_TOKEN_FORBIDDEN = re.compile(r"[^\x21-\x7e]")


# --- the token --------------------------------------------------------------------------------


#: How long before its expiry a token is refreshed: a minute, so that no request leaves with a
#: token that dies on the way...
REFRESH_LEEWAY = 60.0
#: ...or this share of its lifetime as issued, when that is shorter: with a fixed minute, a
#: token living a minute or less would count as expired when issued, and every request would
#: refresh it first (hammering the token endpoint, churning rotating refresh tokens).
REFRESH_SHARE = 0.25


@dataclasses.dataclass(frozen=True, repr=False)
class Token:
    """An access token, with the refresh token and expiry a server may one day send.

    Today's servers send tokens that never expire, so ``refresh_token``, ``expires_at`` and
    ``lifetime`` are usually ``None``. ``lifetime`` is the ``expires_in`` it was issued with,
    in seconds: it sets how early it is refreshed (:attr:`leeway`). The repr never shows a
    secret.
    """

    access_token: str
    refresh_token: str | None = None
    expires_at: float | None = None
    lifetime: float | None = None

    def __post_init__(self) -> None:
        # A token read from a file or pasted often ends in a newline: strip the edges. Inside,
        # whitespace, a control character or a non-ASCII one cannot be part of a token (and
        # would break the header), so it is refused.
        for name in ("access_token", "refresh_token"):
            value = getattr(self, name)
            if value is None and name == "refresh_token":
                continue
            if not isinstance(value, str) or not value.strip():
                raise ConfigurationError(f"the {name.replace('_', ' ')} is empty: log in again")
            value = value.strip()
            if _TOKEN_FORBIDDEN.search(value):
                raise ConfigurationError(
                    f"the {name.replace('_', ' ')} holds whitespace or control characters, or "
                    "characters outside ASCII: copy it again, exactly as issued"
                )
            object.__setattr__(self, name, value)
            register_secret(value)

    def __repr__(self) -> str:
        refresh = "***" if self.refresh_token else None
        return (
            f"Token(access_token='***', refresh_token={refresh!r}, expires_at={self.expires_at!r}, "
            f"lifetime={self.lifetime!r})"
        )

    @property
    def leeway(self) -> float:
        """How many seconds before ``expires_at`` the token counts as expired: a minute, or a
        quarter of its lifetime as issued when that is shorter (a token issued for 30 s is
        refreshed 7.5 s before its end, not before every request); a minute when the lifetime
        is unknown."""
        if self.lifetime is None:
            return REFRESH_LEEWAY
        # clamped: a lifetime that is negative or not a number (a hand-edited profile) gives
        # no leeway rather than a negative one or a NaN
        return min(REFRESH_LEEWAY, max(0.0, self.lifetime * REFRESH_SHARE))

    def is_expired(self, *, leeway: float | None = None, now: float | None = None) -> bool:
        """Whether the token expires within ``leeway`` seconds (default :attr:`leeway`; never,
        without ``expires_at``)."""
        if self.expires_at is None:
            return False
        leeway = self.leeway if leeway is None else leeway
        return (time.time() if now is None else now) + leeway >= self.expires_at

    @classmethod
    def from_oauth(cls, data: Mapping[str, Any]) -> Token:
        """Build from a token-endpoint answer as parsed by oauthlib (``expires_at`` derived,
        ``lifetime`` from ``expires_in``), or from a stored profile (``lifetime`` kept)."""
        expires_in = data.get("expires_in")
        if expires_in == "":
            expires_in = None
        expires_at = data.get("expires_at")
        if expires_at is None and expires_in is not None:
            expires_at = time.time() + float(expires_in)
        lifetime = data.get("lifetime", expires_in)
        return cls(
            access_token=str(data.get("access_token") or ""),
            refresh_token=data.get("refresh_token") or None,
            expires_at=float(expires_at) if expires_at is not None else None,
            lifetime=float(lifetime) if lifetime is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The members worth storing (``None`` members left out)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
