"""What the standard ``concurrent.futures`` lacks, shared by the parsers and the harvest engine."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

__all__ = ["finished"]


def finished(result: Any) -> Future:
    """A future already holding ``result``: work done on the calling thread, handed on beside
    work submitted to a pool (a page parsed inline, a shard written by the thread that counted
    it), so that the caller reads every outcome the same way."""
    future: Future = Future()
    future.set_result(result)
    return future
