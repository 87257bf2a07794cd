"""What went wrong on a connection, said in plain words from the library's exception chain.

requests wraps urllib3, which wraps the socket's error: the message a person needs ("cannot
resolve host x", "connection refused by x:443") is at the bottom, under a pool's repr that
says nothing to them. :func:`describe` walks the chain and names the first cause it knows;
:func:`library_message` is the fallback, redacted and shortened at a word boundary;
:func:`is_unknown_host` tells a name that does not exist from a resolver failing for now.
"""

from __future__ import annotations

import http.client
import re
import socket
import ssl
import textwrap
from collections.abc import Iterator
from urllib.parse import urlsplit

import requests
import urllib3

from mediaframe.tokens import redact

__all__ = ["describe", "is_proxy_failure", "is_unknown_host", "library_message"]

#: Characters of a library's own message kept in a fallback (cut at a word boundary).
_MESSAGE_WIDTH = 160

#: getaddrinfo's answers that the name (or the port's service) does not exist: the resolver got
#: an answer, and a moment later it gets the same one. EAI_AGAIN (no answer in time, a resolver
#: down), EAI_FAIL, EAI_MEMORY, EAI_SYSTEM and any errno not listed may pass: they are asked
#: again. EAI_NODATA is not defined everywhere (glibc and macOS have it).
_NO_SUCH_NAME = frozenset(
    code
    for code in (
        socket.EAI_NONAME,
        getattr(socket, "EAI_NODATA", None),
        getattr(socket, "EAI_SERVICE", None),
    )
    if code is not None
)

# "HTTPSConnectionPool(host='x', port=443): " and "_HTTPSConnection(host='x', port=443): ":
# internals that tell a person nothing the sentence around them does not.
_POOL_REPR = re.compile(r"\b_?\w*(?:Pool|Connection)\(host=[^)]*\):\s*")


def describe(err: BaseException, url: str) -> str:
    """What failed, in a few words naming the host (and port) of ``url``.

    Examples
    --------
    >>> describe(requests.ConnectionError(ConnectionRefusedError(111, "refused")),
    ...          "http://127.0.0.1:9/api/")
    'connection refused by 127.0.0.1:9'
    """
    chain = list(_chain(err))
    host, where = _where(url)
    found = {type(cause) for cause in chain}

    def has(*kinds: type[BaseException]) -> bool:
        return any(issubclass(kind, kinds) for kind in found)

    if is_proxy_failure(err):
        if has(socket.gaierror):  # the proxy's own name: the proxy resolves the service's
            return f"cannot resolve the host of the proxy for {where}{_reason(chain)}"
        return f"the proxy failed to connect to {where}{_reason(chain)}"
    if has(urllib3.exceptions.NameResolutionError, socket.gaierror):
        return f"cannot resolve host {host}{_reason(chain, socket.gaierror)}"
    if has(ConnectionRefusedError):
        return f"connection refused by {where}"
    if has(ssl.SSLCertVerificationError):
        verify = next(c for c in chain if isinstance(c, ssl.SSLCertVerificationError))
        detail = f" ({verify.verify_message})" if verify.verify_message else ""
        return f"the TLS certificate of {where} could not be verified{detail}"
    if has(ssl.SSLError, requests.exceptions.SSLError, urllib3.exceptions.SSLError):
        return f"the TLS handshake with {where} failed{_reason(chain, ssl.SSLError)}"
    if has(requests.ConnectTimeout) or _connect_timed_out(chain):
        return f"timed out connecting to {where}"
    if has(requests.ReadTimeout, urllib3.exceptions.ReadTimeoutError, TimeoutError):
        return f"{where} sent no answer in time"
    if has(http.client.RemoteDisconnected):  # a ConnectionResetError too: asked first
        return f"{where} closed the connection without answering"
    if has(ConnectionResetError):
        return f"connection reset by {where}"
    if has(
        http.client.IncompleteRead,
        urllib3.exceptions.IncompleteRead,
        urllib3.exceptions.ProtocolError,
        requests.exceptions.ChunkedEncodingError,
        BrokenPipeError,
        ConnectionAbortedError,
    ):
        return f"the connection to {where} dropped in the middle of the exchange"
    if has(urllib3.exceptions.DecodeError, requests.exceptions.ContentDecodingError):
        return f"the compressed answer of {where} could not be decoded"
    system = next((c for c in chain if isinstance(c, OSError) and c.strerror), None)
    if system is not None:  # "Network is unreachable", "No route to host", …
        return f"cannot connect to {where}: {system.strerror}"
    return f"the connection to {where} failed ({library_message(chain[-1])})"


def is_unknown_host(err: BaseException) -> bool:
    """Whether ``err`` says a host name does not exist (the resolver answered "no such name"),
    which no retry can change: a mistyped base_url, or a proxy's.

    Examples
    --------
    >>> is_unknown_host(requests.ConnectionError(socket.gaierror(socket.EAI_NONAME, "unknown")))
    True
    >>> is_unknown_host(requests.ConnectionError(socket.gaierror(socket.EAI_AGAIN, "try again")))
    False
    """
    return any(
        isinstance(cause, socket.gaierror) and cause.errno in _NO_SUCH_NAME for cause in _chain(err)
    )


def is_proxy_failure(err: BaseException) -> bool:
    """Whether ``err`` failed at a proxy: reaching it, or the tunnel through it."""
    proxy = (urllib3.exceptions.ProxyError, requests.exceptions.ProxyError)
    return any(isinstance(cause, proxy) for cause in _chain(err))


def library_message(err: BaseException) -> str:
    """A library exception told in a few redacted words (its URL may carry the token), never
    cut in the middle of a word and without a connection pool's repr."""
    text = _POOL_REPR.sub("", redact(str(err)))
    text = textwrap.shorten(text, _MESSAGE_WIDTH, placeholder=" …") if text else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _chain(err: BaseException) -> Iterator[BaseException]:
    """``err`` and what it wraps: urllib3's ``reason``, exceptions among its ``args``, its
    cause and context; each once, outermost first."""
    seen: set[int] = set()
    todo = [err]
    while todo:
        cause = todo.pop(0)
        if id(cause) in seen:
            continue
        seen.add(id(cause))
        yield cause
        inner = [getattr(cause, "reason", None), *cause.args, cause.__cause__, cause.__context__]
        todo.extend(each for each in inner if isinstance(each, BaseException))


def _where(url: str) -> tuple[str, str]:
    """The host of ``url``, and ``host:port`` with the scheme's port when none is written."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    try:
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:  # a port that is no number: the URL's own check says so elsewhere
        port = None
    shown = f"[{host}]" if ":" in host else host
    return host, f"{shown}:{port}" if port else shown


def _connect_timed_out(chain: list[BaseException]) -> bool:
    """urllib3 raises NewConnectionError (a subclass of ConnectTimeoutError) for every failed
    connection: only the class itself, or a socket timeout beneath, means time ran out."""
    for cause in chain:
        if type(cause) is urllib3.exceptions.ConnectTimeoutError:
            return True
        if isinstance(cause, urllib3.exceptions.NewConnectionError) and any(
            isinstance(inner, TimeoutError) for inner in chain
        ):
            return True
    return False


def _reason(chain: list[BaseException], kind: type[OSError] = OSError) -> str:
    """`` (the system's words)`` of the first ``kind`` in the chain that has them, or ``""``."""
    for cause in chain:
        if isinstance(cause, kind) and cause.strerror:
            return f" ({cause.strerror})"
        if isinstance(cause, ssl.SSLError) and kind is ssl.SSLError and cause.reason:
            return f" ({cause.reason})"
    return ""
