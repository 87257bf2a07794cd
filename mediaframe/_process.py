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
:func:`redact_log_records`
    A log record factory (``logging.setLogRecordFactory``, wrapping the one in place) scrubs
    secrets from every record of the ``mediaframe`` logger hierarchy as it is made, whichever
    logger of the hierarchy made it and whenever that logger was created: a filter on a logger
    sees only that logger's own records, not its children's. Installed once mediaframe knows a
    secret (:func:`mediaframe.auth.install_redaction`); off, the factory in place before is put
    back, and secrets are still scrubbed by a filter on each logger mediaframe's modules log
    through (attached when a secret becomes known and before each transport sends), but not
    from records of a logger of the hierarchy created after that. On, the filters pass the
    records the factory scrubbed as they are (:func:`is_redacted`): each is scrubbed once.
    The switch is read for the factory when it is put in place or taken out (a secret made
    known, a transport made, :func:`process_tricks`), not per log record.

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
import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from mediaframe import config
from mediaframe.exceptions import ConfigurationError

__all__ = [
    "active",
    "collector_paused",
    "give_back_memory",
    "is_redacted",
    "process_tricks",
    "reader_threads",
    "redact_log_records",
    "redacting_records",
]

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
    _apply_record_redaction()


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


# --- log records ------------------------------------------------------------------------------

_HIERARCHY = "mediaframe"
#: Set on a record the factory scrubbed: the loggers' filters need not scrub it again.
_REDACTED = "_mediaframe_redacted"
_redactor: Callable[[logging.LogRecord], None] | None = None
_installed: _RedactingFactory | None = None
_factory_lock = threading.Lock()


class _RedactingFactory:
    """The record factory: the one it wraps makes the record, mediaframe's are then scrubbed.

    Whether it scrubs (``on``) is decided where the switch is read, by
    :func:`_apply_record_redaction`, not per record: a log call reads no environment.
    """

    def __init__(self, wrapped: Callable[..., logging.LogRecord]) -> None:
        self.wrapped = wrapped
        self.on = True

    def __call__(self, name: str, *args: object, **kwargs: object) -> logging.LogRecord:
        record = self.wrapped(name, *args, **kwargs)
        redactor = _redactor
        if (
            self.on
            and redactor is not None
            and (name == _HIERARCHY or name.startswith(_HIERARCHY + "."))
        ):
            redactor(record)
            setattr(record, _REDACTED, True)
        return record


def is_redacted(record: logging.LogRecord) -> bool:
    """Whether the record factory of :func:`redact_log_records` scrubbed ``record`` as it was
    made (a filter scrubbing the same records then leaves it as it is)."""
    return getattr(record, _REDACTED, False) is True


def _redacting() -> bool:
    """:func:`active`, but on when the environment's switch does not read: the other tricks
    report it where they are used; a log call is no place for it, and redacting is safe."""
    try:
        return active()
    except ConfigurationError:
        return True


def redact_log_records(redactor: Callable[[logging.LogRecord], None]) -> None:
    """Scrub every record of the ``mediaframe`` logger hierarchy with ``redactor`` as it is made
    (while the tricks are on); idempotent."""
    global _redactor
    _redactor = redactor
    _apply_record_redaction()


def redacting_records() -> bool:
    """Whether the record factory of :func:`redact_log_records` is the process's."""
    return _installed is not None and logging.getLogRecordFactory() is _installed


def _apply_record_redaction() -> None:
    """Install the factory (tricks on, a redactor known), or put back the one it wrapped.

    Where the switch is read for the factory: here, when a secret becomes known, a transport
    is made or :func:`process_tricks` is called, never per record.
    """
    global _installed
    with _factory_lock:
        current = logging.getLogRecordFactory()
        on = _redactor is not None and _redacting()
        if on and _installed is None:
            _installed = _RedactingFactory(current)
            logging.setLogRecordFactory(_installed)
        elif not on and _installed is not None and current is _installed:
            logging.setLogRecordFactory(_installed.wrapped)
            _installed = None
        if _installed is not None:
            # a factory set over ours since keeps calling it: off, ours lets records through
            _installed.on = on
