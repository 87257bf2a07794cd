"""Connections whose every socket read, status line and headers included, ends by the deadline.

A read timeout bounds one wait on the socket, not the answer: a server sending its status line
and headers a byte a second would hold a call as long as it likes, since requests reads them
inside ``session.send`` where the transport cannot check its deadline between reads. The
sessions the transport makes therefore send through :class:`DeadlineAdapter`, whose connections
read their answer through a file that shrinks the socket's timeout to what is left of the
attempt before each read, and times out once nothing is left. The attempt's deadline reaches
them through :func:`deadline`, around the send.
"""

from __future__ import annotations

import contextlib
import contextvars
import http.client
import io
import socket
import time
from collections.abc import Iterator
from typing import Any

import requests
import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.poolmanager import PoolManager

__all__ = ["DeadlineAdapter", "deadline", "session"]

# The monotonic time by which the answer being sent for must have arrived whole.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "mediaframe_http_deadline", default=None
)


@contextlib.contextmanager
def deadline(when: float) -> Iterator[None]:
    """Answers to requests sent within this block are read by ``when`` (``time.monotonic``)."""
    token = _DEADLINE.set(when)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def session() -> requests.Session:
    """A ``requests.Session`` that reads every answer by the deadline of its :func:`deadline`."""
    made = requests.Session()
    adapter = DeadlineAdapter()
    made.mount("https://", adapter)
    made.mount("http://", adapter)
    return made


class _DeadlineReader(io.RawIOBase):
    """The reads of a socket, each waiting at most the socket's timeout and never past
    ``deadline``."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)  # counted by the socket, as makefile is
        self._deadline = deadline
        self._wait = sock.gettimeout()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request's deadline passed while its answer was read")
        self._sock.settimeout(remaining if self._wait is None else min(self._wait, remaining))
        return self._raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _DeadlineSocket:
    """What :class:`http.client.HTTPResponse` asks of its socket: a file to read the answer."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))


class _DeadlineResponse(http.client.HTTPResponse):
    """An answer read under the deadline of the :func:`deadline` block it is received in."""

    def __init__(self, sock: Any, *args: Any, **kwargs: Any) -> None:
        when = _DEADLINE.get()
        if when is not None and isinstance(sock, socket.socket):  # an SSLSocket is one too
            sock = _DeadlineSocket(sock, when)
        super().__init__(sock, *args, **kwargs)


class _HTTPConnection(HTTPConnection):
    response_class = _DeadlineResponse


class _HTTPSConnection(HTTPSConnection):
    response_class = _DeadlineResponse


class _HTTPDeadlinePool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSDeadlinePool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOLS: dict[str, type[HTTPConnectionPool]] = {
    "http": _HTTPDeadlinePool,
    "https": _HTTPSDeadlinePool,
}


def _with_deadline_pools(manager: PoolManager) -> PoolManager:
    # only urllib3's own pools are replaced: a SOCKS proxy manager keeps its pools
    if manager.pool_classes_by_scheme is urllib3.poolmanager.pool_classes_by_scheme:
        manager.pool_classes_by_scheme = _POOLS
    return manager


class DeadlineAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter, reading answers by the deadline of the :func:`deadline` block (and
    like requests' own outside one)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        _with_deadline_pools(self.poolmanager)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        return _with_deadline_pools(super().proxy_manager_for(proxy, **proxy_kwargs))
