"""The joiner: shard frames joined in batches on a thread of their own, and the shards held in
memory alone kept in the cache a batch at a time (see :class:`Joiner`)."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import pandas as pd

from mediaframe._process import give_back_memory
from mediaframe.cache import HarvestStore
from mediaframe.cache.manifest import ShardEntry
from mediaframe.exceptions import CacheError
from mediaframe.harvest.paging import Combine, join

__all__ = ["Joiner"]

# Shard frames joined (and kept) at a time while paging goes on.
_BATCH = 16
# Seconds a finished shard waits, about at most, to be kept with others in one file (they are
# kept at once when the harvest fails): it bounds the finished work a kill loses.
_KEEP_SHARDS_EVERY = 0.5


class Joiner:
    """Joins shard frames in batches as they are delivered, on a thread of its own, and keeps
    the shards held in memory alone (:attr:`store`), each batch in one checkpoint file.

    Shards are delivered by the threads that fetch them, while other pages are in flight, so
    that little joining is left once the last page is in; the frames of a batch are held by the
    batch alone, so the join can free them as it goes. A batch of shards to keep is joined
    and written at :data:`_BATCH` shards, or :data:`_KEEP_SHARDS_EVERY` seconds after its first
    shard came in (about: keeping shares the thread with the joins), which bounds the finished
    work a kill loses. A shard's page checkpoints go once it is kept. The shards still waiting
    when paging fails are kept at once (with those :meth:`hold` was given); those still waiting
    when it ends are kept only if the harvest then fails before it publishes them
    (:meth:`keep_rest`): a success would clear them at once.
    """

    def __init__(
        self, combine: Combine, store: HarvestStore | None = None, *, every: float | None = None
    ) -> None:
        self._combine, self.store = combine, store
        self._every = _KEEP_SHARDS_EVERY if every is None else every
        self._lock = threading.Lock()
        self._batch: list[pd.DataFrame] = []  # kept already: joined only
        self._unkept: list[tuple[ShardEntry, pd.DataFrame]] = []
        self._timer: threading.Timer | None = None
        self._joins: list[Future] = []
        self._writes: list[Future] = []
        self._failed: BaseException | None = None
        self._rest: list[tuple[ShardEntry, pd.DataFrame]] = []  # handed out by parts()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mediaframe-join")

    def __enter__(self) -> Joiner:
        return self

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        self._stop_timer()
        if error is None:
            # batches still being written go on (the harvest settles them before publishing)
            self._thread.shutdown(wait=False)
            return
        # what finished is kept for the next run (a revoked token, a dropped network)
        with self._lock:
            unkept, self._unkept, self._rest = self._unkept + self._rest, [], []
            if unkept:
                self._joins.append(self._thread.submit(self._keep, unkept))
        self._thread.shutdown(wait=True)

    def add(self, entry: ShardEntry, frame: pd.DataFrame) -> None:
        """Take a finished shard's frame (to keep too, if its entry names no file).

        Raises
        ------
        CacheError
            An earlier batch could not be kept (a full disk, a read-only cache).
        """
        if self._failed is not None:
            raise self._failed
        with self._lock:
            if entry.file or self.store is None:
                self._batch.append(frame)
                if len(self._batch) >= _BATCH:
                    batch, self._batch = self._batch, []
                    self._joins.append(self._thread.submit(self._join, batch))
                return
            self._unkept.append((entry, frame))
            if len(self._unkept) >= _BATCH:
                self._submit_unkept()
            elif self._timer is None:
                self._timer = threading.Timer(self._every, self._due)
                self._timer.daemon = True
                self._timer.start()

    def hold(self, finished: list[tuple[ShardEntry, pd.DataFrame]]) -> None:
        """Take finished shards to keep, not to join: those a harvest that fails had not
        handed on yet (counted whole while planning, before their split was proven)."""
        with self._lock:
            self._rest += finished

    def _submit_unkept(self) -> None:
        """Keep the shards waiting (under :attr:`_lock`)."""
        unkept, self._unkept = self._unkept, []
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        if unkept:
            self._joins.append(self._thread.submit(self._keep, unkept))

    def _due(self) -> None:
        """The first shard waiting waited :attr:`_every` seconds: keep what is there."""
        with self._lock, contextlib.suppress(RuntimeError):  # the joiner was shut down
            if self._timer is not threading.current_thread():
                return  # a timer cancelled too late: a newer one is armed, or none is due
            self._timer = None
            self._submit_unkept()

    def _stop_timer(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _join(self, batch: list[pd.DataFrame]) -> pd.DataFrame:
        joined = join(batch, self._combine)
        give_back_memory()
        return joined

    def _keep(self, unkept: list[tuple[ShardEntry, pd.DataFrame]]) -> pd.DataFrame:
        """Join ``unkept`` (emptied); the joined frame, written as one batch of shards next on
        this thread (a join waited for by :meth:`parts` does not wait for its write)."""
        joined, entries, columns = self._joined(unkept)
        unkept.clear()
        try:
            with self._lock:
                self._writes.append(self._thread.submit(self._write, joined, entries, columns))
        except RuntimeError:  # the joiner is closing (a harvest that failed): write it now
            self._write(joined, entries, columns)
        return joined

    def _joined(
        self, finished: list[tuple[ShardEntry, pd.DataFrame]]
    ) -> tuple[pd.DataFrame, list[ShardEntry], list[list[str]]]:
        """A batch to write: its shards joined, their entries, and each one's own columns."""
        entries = [entry for entry, _ in finished]
        columns = [list(frame.columns) for _, frame in finished]
        return self._join([frame for _, frame in finished]), entries, columns

    def _write(
        self, joined: pd.DataFrame, entries: list[ShardEntry], columns: list[list[str]]
    ) -> None:
        """Write a batch of shards; their page checkpoints go once it is written."""
        assert self.store is not None
        try:
            self.store.write_shards(joined, entries, columns)
        except BaseException as err:
            self._failed = err
            raise
        for entry in entries:
            if entry.paged:  # its page checkpoints are its own no more
                with contextlib.suppress(OSError, CacheError):
                    self.store.pages(entry.id).discard(kept=True)

    def settle(self) -> None:
        """Wait until every batch being kept is written (or could not be: a harvest that goes
        on to publish says why when it writes its dataset)."""
        with self._lock:
            writes, self._writes = self._writes, []
        for write in writes:
            with contextlib.suppress(CacheError, OSError):
                write.result()

    def restart(self) -> None:
        """Start over (the plan is made again): writes settled, nothing handed out kept, no
        failure remembered (the shards are cleared, and the disk with them)."""
        self.settle()
        with self._lock:
            self._rest, self._failed = [], None

    def parts(self) -> list[pd.DataFrame]:
        """Every frame delivered: the joined batches, then the rest. The rest not kept yet is
        held (unchanged: joins only read frames) until :meth:`keep_rest` or the joiner goes;
        batches still being written go on (:meth:`settle`)."""
        self._stop_timer()
        with self._lock:
            self._rest, self._unkept = self._unkept, []
            rest = self._batch + [frame for _, frame in self._rest]
            self._batch = []
            joins, self._joins = self._joins, []
        return [join.result() for join in joins] + rest

    def keep_rest(self) -> None:
        """Keep the shards :meth:`parts` handed out unkept, for a rerun of a harvest that then
        failed (an incomplete result, say); best effort: a failure to keep them is not told
        over the harvest's own."""
        with self._lock:
            rest, self._rest = self._rest, []
        if rest and self.store is not None:
            with contextlib.suppress(CacheError):
                self._write(*self._joined(rest))
        self.settle()
