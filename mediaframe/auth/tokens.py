"""Tokens: where they may travel, how they are placed, redacted and kept in memory."""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import re
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

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
    "redact",
    "token_header",
]

#: Name of the query or form parameter that carries the token on older servers.
TOKEN_PARAM = "oauth_token"


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` names this machine (127.0.0.0/8, ``::1`` or ``localhost``)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(base_url: str) -> str:
    """Validate the service URL and return it without a trailing slash.

    Tokens and passwords travel only over https; plain http is allowed for loopback hosts, where
    the emulator runs and nothing crosses a network.

    Raises
    ------
    ConfigurationError
        The URL is not absolute, or is plain http to another host.
    """
    if not isinstance(base_url, str) or not base_url.strip():
        raise ConfigurationError("base_url is empty: give the service URL, e.g. https://host")
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ConfigurationError(
            f"base_url {url!r} is not an absolute http(s) URL: give e.g. https://assets.example.org"
        )
    if parts.query or parts.fragment:
        raise ConfigurationError(f"base_url {url!r} must not carry a query or a fragment")
    if parts.scheme == "http" and not is_loopback_url(url):
        raise ConfigurationError(
            f"base_url {url!r} uses plain http: tokens would travel in clear text. "
            "Use https (plain http is allowed only for 127.0.0.1, ::1 and localhost)"
        )
    return url


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


def redact(text: str) -> str:
    """Replace tokens, secrets, passwords and codes in ``text`` by ``***``.

    Examples
    --------
    >>> redact("GET /api/v1/me/?oauth_token=abc123&x=1")
    'GET /api/v1/me/?oauth_token=***&x=1'
    >>> redact("{'Authorization': 'OAuth abc123'}")
    "{'Authorization': 'OAuth ***'}"
    """
    text = _SECRET_HEADER.sub(r"\1\2 ***", text)
    return _SECRET_VALUE.sub(r"\1\2***", text)


class RedactingFilter(logging.Filter):
    """A logging filter that scrubs secrets from every record it sees, then lets it through."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


# Loggers that may see a secret: ours, requests-oauthlib (logs token bodies and headers at
# DEBUG) and urllib3 (logs request URLs, which carry the token in `oauth_token` mode).
_GUARDED_LOGGERS = (
    "mediaframe",
    "mediaframe.auth",
    "mediaframe.http",
    "requests_oauthlib.oauth2_session",
    "urllib3.connectionpool",
)


def install_redaction() -> None:
    """Attach a :class:`RedactingFilter` to every logger that can see a secret (idempotent).

    A logger filter applies only to records created on that very logger, hence the list. Called
    before mediaframe sends anything; safe to call again.
    """
    for name in _GUARDED_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())


# --- the token --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, repr=False)
class Token:
    """An access token, with the refresh token and expiry a server may one day send.

    Today's servers send tokens that never expire, so ``refresh_token`` and ``expires_at`` are
    usually ``None``. The repr never shows a secret.
    """

    access_token: str
    refresh_token: str | None = None
    expires_at: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.access_token, str) or not self.access_token.strip():
            raise ConfigurationError("the access token is empty: log in again")

    def __repr__(self) -> str:
        refresh = "***" if self.refresh_token else None
        return (
            f"Token(access_token='***', refresh_token={refresh!r}, expires_at={self.expires_at!r})"
        )

    def is_expired(self, *, leeway: float = 60.0, now: float | None = None) -> bool:
        """Whether the token expires within ``leeway`` seconds (never, without ``expires_at``)."""
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) + leeway >= self.expires_at

    @classmethod
    def from_oauth(cls, data: Mapping[str, Any]) -> Token:
        """Build from a token-endpoint answer as parsed by oauthlib (``expires_at`` derived)."""
        expires_at = data.get("expires_at")
        if expires_at is None and data.get("expires_in") not in (None, ""):
            expires_at = time.time() + float(data["expires_in"])
        return cls(
            access_token=str(data.get("access_token") or ""),
            refresh_token=data.get("refresh_token") or None,
            expires_at=float(expires_at) if expires_at is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The members worth storing (``None`` members left out)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
