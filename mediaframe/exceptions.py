"""Every error and warning mediaframe raises, under one root.

The tree::

    MediaframeError
    ├── ConfigurationError            bad settings: plain-http URL, no credentials, unknown profile
    ├── InvalidParameterError         an argument refused before sending (also a ValueError)
    ├── AuthenticationError           the token or the OAuth exchange failed: log in again
    │   ├── TokenMissingError         the server saw no token (HTTP 400, empty body)
    │   ├── TokenRejectedError        token unknown, revoked or expired (HTTP 401, empty body)
    │   └── OAuthError                the authorize or token endpoint answered an OAuth error code
    │       └── StateMismatchError    `state` returned is not the one sent (possible CSRF)
    ├── TransportError                the request never got a usable HTTP answer
    │   ├── ConnectionFailedError     unreachable host, refused or dropped connection
    │   ├── RequestTimeoutError       no whole answer within the timeout
    │   └── RedirectRefusedError      a 3xx answer: API calls never follow redirects
    ├── APIError                      the service answered with an error envelope
    │   ├── BadRequestError           400: a parameter is invalid or missing
    │   ├── PermissionDeniedError     401 in the envelope: token fine, resource not yours
    │   │   └── ForbiddenError        403
    │   ├── NotFoundError             404
    │   ├── MethodNotAllowedError     405
    │   ├── NotAcceptableError        406
    │   ├── RateLimitedError          429: the service or a proxy limits the rate, after retries
    │   └── ServerError               5xx, after retries
    ├── ResponseFormatError           not the envelope: proxy HTML, truncated JSON, wrong types
    │   ├── MalformedItemError        one item of a response cannot be read; names the item
    │   ├── ResponseTooLargeError     the answer outgrew MEDIAFRAME_MAX_RESPONSE_BYTES
    │   └── FilterIgnoredError        the hits break a filter the search sent: the server ignored it
    ├── IncompleteResultError         a search cannot be retrieved whole under the cap (or the
    │                                 feeds' pages do not add up)
    ├── CacheError                    the parquet cache cannot be read or written
    │   ├── CacheCorruptError         a cached file is damaged or does not match its manifest
    │   └── CacheMissError            offline mode and nothing is cached for the request
    └── ExportError                   an export or report file cannot be written

    MediaframeWarning (UserWarning)
    ├── IncompleteResultWarning       incomplete results were allowed and happened
    ├── CacheWarning                  a cached result was used or discarded in a way worth knowing
    ├── EmptyPlotWarning              a plot was asked of data with nothing to draw
    ├── MalformedItemWarning          a minor member of some items could not be read: kept missing
    ├── NoHitsWarning                 a search found nothing; names the server's suggestions
    ├── SearchWarning                 the search engine warned in its answers (a part of the query
    │                                 ignored, results approximate); the report's notes keep it
    ├── MetadataWarning               descriptive metadata the client could not read as declared
    └── ProfileWarning                a new token could not be stored; the connection still works

Errors never carry a token or a secret: messages hold the request line (method and path), never the
query string. Library exceptions (requests, oauthlib, pyarrow) are translated where they occur, with
``raise ... from err``, so callers need to catch only what is here.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APIError",
    "AuthenticationError",
    "BadRequestError",
    "CacheCorruptError",
    "CacheError",
    "CacheMissError",
    "CacheWarning",
    "ConfigurationError",
    "ConnectionFailedError",
    "EmptyPlotWarning",
    "ExportError",
    "FilterIgnoredError",
    "ForbiddenError",
    "IncompleteResultError",
    "IncompleteResultWarning",
    "InvalidParameterError",
    "MalformedItemError",
    "MalformedItemWarning",
    "MediaframeError",
    "MediaframeWarning",
    "MetadataWarning",
    "MethodNotAllowedError",
    "NoHitsWarning",
    "NotAcceptableError",
    "NotFoundError",
    "OAuthError",
    "PermissionDeniedError",
    "ProfileWarning",
    "RateLimitedError",
    "RedirectRefusedError",
    "RequestTimeoutError",
    "ResponseFormatError",
    "ResponseTooLargeError",
    "SearchWarning",
    "ServerError",
    "StateMismatchError",
    "TokenMissingError",
    "TokenRejectedError",
    "TransportError",
]


class MediaframeError(Exception):
    """Root of every error raised by mediaframe."""


class ConfigurationError(MediaframeError):
    """Settings that cannot work: fix the call or the environment and try again."""


class InvalidParameterError(MediaframeError, ValueError):
    """An argument was rejected before any request was sent."""


class AuthenticationError(MediaframeError):
    """The service does not accept the credentials; logging in again is the usual cure."""


class TokenMissingError(AuthenticationError):
    """The request reached the service without a token."""


class TokenRejectedError(AuthenticationError):
    """The token is unknown, revoked or expired."""


class OAuthError(AuthenticationError):
    """An OAuth endpoint answered with an error code such as ``invalid_grant``."""

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


class StateMismatchError(OAuthError):
    """The authorization answer carries another ``state`` than the one sent."""


class TransportError(MediaframeError):
    """No usable HTTP answer came back."""


class ConnectionFailedError(TransportError):
    """The host could not be reached, or the connection dropped mid-answer."""


class RequestTimeoutError(TransportError):
    """The service did not give its whole answer within the timeout."""


class RedirectRefusedError(TransportError):
    """The service answered with a redirect, which API calls never follow.

    Following it could send the token (or a form body holding it) to another host, or over plain
    http. ``location`` is where the redirect pointed, without its query string.
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, location: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.location = location


class APIError(MediaframeError):
    """The service answered with an error envelope.

    Attributes
    ----------
    status_code : the true HTTP status: ``meta.http_code`` for JSONP, and in any
        representation when the envelope says 400 or more under another status line.
    error_type, error_message, error_details : the envelope's ``meta`` members.
    request : the request line, ``"<METHOD> <path>"``, never with its query string.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        error_type: str | None = None,
        error_message: str | None = None,
        error_details: Any = None,
        request: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_type = error_type
        self.error_message = error_message
        self.error_details = error_details
        self.request = request


class BadRequestError(APIError):
    """HTTP 400: the service rejected a parameter."""


class PermissionDeniedError(APIError):
    """The token is valid, but the user may not see this record, collection or route."""


class ForbiddenError(PermissionDeniedError):
    """HTTP 403."""


class NotFoundError(APIError):
    """HTTP 404."""


class MethodNotAllowedError(APIError):
    """HTTP 405."""


class NotAcceptableError(APIError):
    """HTTP 406: the service cannot produce the requested representation."""


class RateLimitedError(APIError):
    """HTTP 429 (in the status line or the envelope) that persisted through every retry, each
    after the wait ``Retry-After`` asked for: send fewer requests at once, and wait."""


class ServerError(APIError):
    """HTTP 5xx that persisted through every retry."""


class ResponseFormatError(MediaframeError):
    """The body is not a readable envelope.

    Attributes
    ----------
    status_code : the HTTP status of the answer, when there was one.
    snippet : the first characters of the body, to show what came back instead.
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, snippet: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.snippet = snippet


class MalformedItemError(ResponseFormatError):
    """One item of a response cannot be flattened; ``item`` says which."""

    def __init__(self, message: str, *, item: Any = None) -> None:
        super().__init__(message)
        self.item = item


class ResponseTooLargeError(ResponseFormatError):
    """The answer grew past the size limit (counted after decompression) and was dropped."""


class FilterIgnoredError(ResponseFormatError):
    """The hits of a harvest break a filter the search sent: the server ignored it.

    ``filter_name`` names it (``record_type``, ``bases``, ``date_min``/``date_max``, ``status``);
    ``rows`` is how many hits broke it. Nothing was published or cached.
    """

    def __init__(self, message: str, *, filter_name: str, rows: int) -> None:
        super().__init__(message)
        self.filter_name = filter_name
        self.rows = rows


class IncompleteResultError(MediaframeError):
    """A search could not be split under the server's retrieval cap, or the feeds' pages did not
    add up (:meth:`~mediaframe.Client.feed_entries`: ``shards`` and ``report`` are then None).

    Attributes
    ----------
    shards : descriptions of the shards that stayed above the cap.
    report : the harvest report so far, when there is one.
    """

    def __init__(self, message: str, *, shards: Any = None, report: Any = None) -> None:
        super().__init__(message)
        self.shards = shards
        self.report = report


class CacheError(MediaframeError):
    """The parquet cache cannot be read or written."""


class CacheCorruptError(CacheError):
    """A cached file is damaged or disagrees with its manifest; it will be fetched again."""


class CacheMissError(CacheError):
    """Offline mode was asked for, and nothing is cached for this request."""


class ExportError(MediaframeError):
    """An export or report file cannot be written (unknown format, unwritable path)."""


class MediaframeWarning(UserWarning):
    """Root of every warning mediaframe emits."""


class IncompleteResultWarning(MediaframeWarning):
    """Incomplete results were allowed, and the result is incomplete."""


class CacheWarning(MediaframeWarning):
    """Something about the cache the user should know, e.g. a stale copy used offline."""


class EmptyPlotWarning(MediaframeWarning):
    """A plot was asked of data with nothing to draw; the (empty) axes are returned anyway."""


class MalformedItemWarning(MediaframeWarning):
    """A minor member had a value of the wrong type in some items; it is missing there.

    Keys and the members an item cannot be identified without still raise
    :class:`MalformedItemError`; a minor member never rejects the whole list.
    """


class NoHitsWarning(MediaframeWarning):
    """A search matched nothing; the message names the queries the server suggests instead."""


class SearchWarning(MediaframeWarning):
    """The search engine answered with hits and a ``warning`` (a part of the query ignored,
    results approximate): told once per harvest, its words kept in the report's ``notes``."""


class MetadataWarning(MediaframeWarning):
    """Captions or field structures the client could not read as declared (e.g. a date field
    holding something else, or a server that sends no captions in extended mode)."""


class ProfileWarning(MediaframeWarning):
    """A token just issued could not be stored in its profile (a full disk, say); the connection
    holding it still works, and ``client.save_profile(name)`` stores it once the cause is gone."""
