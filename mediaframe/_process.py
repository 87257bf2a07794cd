"""The process-wide tricks mediaframe plays for speed and memory, in one place, with one switch.

They reach beyond the call that uses them — into the garbage collector, the C library's heap,
Arrow's default memory pool and threads kept for the life of the process — so an application
with its own ideas about these (a server embedding mediaframe, a profiler, a worker under a
memory limit) can turn them all off at once:

- ``MEDIAFRAME_PROCESS_TRICKS=0`` in the environment (read by :mod:`mediaframe.config`), or
- ``mediaframe.process_tricks(False)`` at run time (``True`` turns them on again, ``None``
  returns to what the environment says).

Off, mediaframe gives the same frames, a little slower (figures in ``docs/performance.md``).

The tricks, each measured where it is used:

:func:`collector_paused`
    Automatic garbage collection is held while a frame is built from decoded JSON: the millions
    of short-lived, acyclic containers it allocates trigger collections that each walk every
    object of the parsed answer (``records()`` 2.5 times slower without it).
:func:`give_back_memory`
    After each join of a harvest's frames, Arrow's default pool and, on glibc, the C heap
    (``malloc_trim``) are asked to hand freed pages back to the system: otherwise the process's
    peak keeps what the joins already dropped (2.66 → 2.23 times the final frame). Arrow's pool
    is asked again after each cache write.
:func:`reader_threads`
    The threads that read cached datasets are started once and kept for the process: a
    thread's allocator keeps the memory it has used, and threads started afresh for each read
    fault every page of their buffers in again (34.4 vs 38.7 ms a read).

Arrow's parser of search answers allocates from the C library's allocator rather than Arrow's
default pool; that is chosen per call (``memory_pool=`` of that one parse), not for the
process, so it is not one of these tricks and stays on.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from mediaframe import config

__all__ = ["active", "collector_paused", "give_back_memory", "process_tricks", "reader_threads"]

_chosen: bool | None = None


def process_tricks(enabled: bool | None) -> None:
    """Turn mediaframe's process-wide tricks on (``True``) or off (``False``) for this process;
    ``None`` goes back to ``MEDIAFRAME_PROCESS_TRICKS`` (on unless it says ``0``).

    Examples
    --------
    >>> import mediaframe as mf
    >>> mf.process_tricks(False)   # no gc pauses, no malloc_trim, no threads kept
    >>> mf.process_tricks(None)    # as the environment says
    """
    global _chosen
    if enabled is not None and not isinstance(enabled, bool):
        from mediaframe.exceptions import InvalidParameterError

        raise InvalidParameterError(f"process_tricks() takes True, False or None, not {enabled!r}")
    _chosen = enabled


def active() -> bool:
    """Whether the tricks are on: as chosen by :func:`process_tricks`, else by the environment."""
    return config.process_tricks() if _chosen is None else _chosen


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Hold automatic garbage collection while a frame is built, then restore it.

    Nothing cyclic is created while a frame is built, so nothing is left for the collector to
    find later.
    """
    enabled = gc.isenabled()
    if enabled and active():
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def give_back_memory(*, heap: bool = True) -> None:
    """Ask Arrow's default pool and, on glibc (unless ``heap`` is false), the C heap to return
    freed pages to the system."""
    if not active():
        return
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim() if heap else None
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where the C library has none (macOS, musl...)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


@contextlib.contextmanager
def reader_threads() -> Iterator[ThreadPoolExecutor]:
    """Threads to read a cached dataset with, one file each: the process's kept ones, or (with
    the tricks off) threads of this read alone, stopped once it is done."""
    if active():
        yield _kept_readers(os.getpid())
        return
    with _new_readers() as pool:
        yield pool


@functools.cache
def _kept_readers(pid: int) -> ThreadPoolExecutor:
    """The reader threads of process ``pid``: started by the first read, kept. As many as
    Arrow's own threads, as each decodes a file on one thread. Keyed by process: a forked child
    has none of its parent's."""
    return _new_readers()


def _new_readers() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=pa.cpu_count(), thread_name_prefix="mediaframe-read")
