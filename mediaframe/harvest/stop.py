"""A harvest's stop: its first failure, and the word to its tasks to send nothing more.

Nothing in the engine survives an error from a read: the transport already asked again where
asking again can heal (a dropped connection, a timeout, a 5xx, a 429, a truncated answer), so
what reaches the engine is its retries spent (:class:`~mediaframe.exceptions.TransportError`,
:class:`~mediaframe.exceptions.ServerError`, :class:`~mediaframe.exceptions.RateLimitedError`)
or an answer that asking again repeats (an
:class:`~mediaframe.exceptions.AuthenticationError` — a revoked token the transport could not
refresh —, another :class:`~mediaframe.exceptions.APIError`, a
:class:`~mediaframe.exceptions.ResponseFormatError`). The faults the engine heals itself (pages
that disagree, a shard grown past the cap) are its own, raised after a read, never by one. So
the first error a read raises fails the harvest, and every other shard stops before its next
request: queued behind it, each ran its own retries against a server that was down, or sent a
revoked token again, before the user heard of the first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Stop", "Stopped"]

_Read = TypeVar("_Read", bound=Callable[..., Any])


class Stopped(Exception):
    """Raised in place of a read once the harvest has failed; the engine tells the first
    failure instead (:attr:`Stop.first`), never this."""


class Stop:
    """The first failure of one harvest; once there is one, its reads send nothing more.

    Examples
    --------
    >>> stop = Stop()
    >>> stop.fail(KeyError("first")) is stop.fail(KeyError("second"))
    True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        #: The failure the harvest tells: the first read (or task) that failed.
        self.first: BaseException | None = None

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def fail(self, error: BaseException) -> BaseException:
        """Stop the harvest at ``error``, unless it failed already; the error to tell."""
        with self._lock:
            if self.first is None and not isinstance(error, Stopped):
                self.first = error
            self._stopped.set()
            return self.first or error

    def guarding(self, read: _Read) -> _Read:
        """``read`` that sends nothing once the harvest stopped, and stops it when it fails.

        A read already begun goes on, but sends nothing more either when its thread takes its
        slots from :meth:`slots` (the harvest's threads do): a retry waits for a slot.
        """

        def guarded(**params: Any) -> Any:
            if self._stopped.is_set():
                raise Stopped
            try:
                return read(**params)
            except Exception as err:
                self.fail(err)
                raise

        return guarded  # type: ignore[return-value]  # same signature as ``read``

    def slots(self, requests: int) -> threading.BoundedSemaphore:
        """The slots of ``requests`` in flight at once (:func:`mediaframe.http.slots.limit`),
        none given once the harvest stopped: a read begun before sends no retry after, nor
        does one that was waiting for a slot."""
        return _Slots(requests, self._stopped)


class _Slots(threading.BoundedSemaphore):
    """A bounded semaphore that refuses its slots once ``stopped`` is set."""

    def __init__(self, value: int, stopped: threading.Event) -> None:
        super().__init__(value)
        self._stopped = stopped

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if not super().acquire(blocking, timeout):
            return False
        if self._stopped.is_set():
            self.release()
            raise Stopped
        return True

    __enter__ = acquire  # the base class's is its own acquire, not this one
