"""What the standard ``concurrent.futures`` lacks, shared by the parsers, the cache reader and the
harvest engine."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

__all__ = ["finished", "run_on"]


def finished(result: Any) -> Future:
    """A future already holding ``result``: work done on the calling thread, handed on beside
    work submitted to a pool (a page parsed inline, a shard written by the thread that counted
    it), so that the caller reads every outcome the same way."""
    future: Future = Future()
    future.set_result(result)
    return future


def run_on(pool: Executor | None, task: Callable[..., Any], *args: Any) -> Future:
    """``task(*args)`` submitted to ``pool``, or done at once on the calling thread when there is
    no pool (work too small for a thread, or no pool given); either way, a future."""
    return pool.submit(task, *args) if pool is not None else finished(task(*args))
