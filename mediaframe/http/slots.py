"""Requests in flight at once, whatever the number of threads that send them.

A harvest runs more threads than the requests it may have in flight, so that a thread turning
an answer into a frame holds none of them: the server is already answering the next request
meanwhile, where a thread that read its page before sending again would leave its connection
idle for the whole read (a tenth of a page's time, on a server a network away). The threads
take their slots with :func:`limit` once, as their pool's ``initializer``; the transport holds a
slot only while a request is sent and its answer read (:func:`slot`).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator

__all__ = ["limit", "slot"]

# The slots of the requests sent from this thread; None: as many in flight as threads sending.
_SLOTS: contextvars.ContextVar[threading.Semaphore | None] = contextvars.ContextVar(
    "mediaframe_http_slots", default=None
)


def limit(slots: threading.Semaphore) -> None:
    """Let every request this thread sends from now on wait for one of ``slots``.

    Meant as a thread pool's ``initializer`` (a worker thread keeps its context across the
    tasks it runs): ``ThreadPoolExecutor(6, initializer=limit, initargs=(Semaphore(4),))``.
    """
    _SLOTS.set(slots)


@contextlib.contextmanager
def slot() -> Iterator[None]:
    """One of this thread's slots (see :func:`limit`) held for the block, if it has any."""
    slots = _SLOTS.get()
    if slots is None:
        yield
        return
    with slots:
        yield
