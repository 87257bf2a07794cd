"""One shard's work, and what the engine runs beside the plan.

A shard task pages its shard and hands its frame on, to the joiner that keeps it with others
(:mod:`mediaframe.harvest.joiner`), or on a Dask worker writes it to the store itself; shards
whose counts brought every hit are taken while the plan is still being made
(:class:`EarlyShards`). Shard tasks are picklable, so a Dask cluster can run them against
shared storage.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future
from typing import Any

import pandas as pd

from mediaframe._process import give_back_memory
from mediaframe.cache import HarvestStore
from mediaframe.cache.manifest import PlannedShard, ShardEntry
from mediaframe.cache.pages import PageCheckpoints
from mediaframe.exceptions import CacheError
from mediaframe.futures import finished
from mediaframe.harvest.answers import int_member, optional_int_member, repeated_keys
from mediaframe.harvest.counter import Count, ShardCounter
from mediaframe.harvest.plan import plan
from mediaframe.harvest.reads import PageReads
from mediaframe.harvest.spec import Page, Shard, Spec
from mediaframe.harvest.warned import ServerWarnings

__all__ = [
    "PAST_TOTAL",
    "Combine",
    "Deliver",
    "EarlyShards",
    "Edges",
    "PagingFault",
    "ShardOverCap",
    "ShardTask",
    "fetch_shard",
    "give_back_memory",
    "join",
]

#: How a shard's fault says the server served hits past its reported total (no cap).
PAST_TOTAL = "the server serves hits past its total_results"
# Times a shard whose pages disagree is paged again before it is given up as incomplete.
_REPAGES = 2
# Seconds of paging a shard after which the pages read so far are kept (they are kept at once
# when paging fails): a kill loses at most this much of a shard's pages.
_KEEP_EVERY = 2.0


Combine = Callable[[list[pd.DataFrame]], pd.DataFrame]


#: Takes a finished shard's frame with its entry: one kept already (read back from the store,
#: or written by the task) names its file; one held in memory alone names none.
Deliver = Callable[[ShardEntry, pd.DataFrame], None]


class PagingFault(Exception):
    """Raised inside the engine when a shard's pages disagree even after paging it again."""

    def __init__(self, reason: str, frame: pd.DataFrame, total: int, requests: int) -> None:
        super().__init__(reason)
        self.reason, self.frame, self.total, self.requests = reason, frame, total, requests


class ShardOverCap(Exception):
    """Raised inside the engine when a shard grew past the cap since it was planned."""

    def __init__(self, total: int) -> None:
        super().__init__(total)
        self.total = total


def fetch_shard(
    page: Page,
    spec: Spec,
    shard: Shard,
    *,
    per_page: int,
    capped_engine: bool,
    combine: Combine,
    partial: bool = False,
    pages: PageCheckpoints | None = None,
    resume: bool = True,
) -> tuple[pd.DataFrame, int, int, Edges]:
    """Page every hit of one shard; returns ``(frame, total, requests, edges)``.

    Each page after the first is asked from one hit before where the previous page ended, and
    must begin with the hit that page ended on: pages that meet so hold every hit that was in
    the shard while it was paged, whatever moved (a record deleted early in the paging order
    and another added later leave every total as it was, yet shift the later offsets). The
    overlapping hit is dropped. A shard whose pages do not meet, repeat a key, or whose total
    moved while it was paged is paged again, up to twice. With ``pages``, the pages read are
    kept when paging fails (and every few seconds while it goes on), and paging goes on from
    the pages an interrupted run kept (its requests are not counted again) unless the shard
    has moved since; without ``resume`` (a fresh harvest, which cleared them), no kept page is
    looked for.

    Raises
    ------
    ShardOverCap
        The shard can no longer be paged whole, unless ``partial``: then it takes what the
        server lets it retrieve.
    PagingFault
        The pages still disagree after paging again; it carries the distinct rows read.
    """
    requests = 0
    for attempt in range(1 + _REPAGES):
        if attempt and pages is not None:
            pages.discard()  # pages of a paging that disagreed are never resumed from
        paging = _Paging(page, spec, shard, per_page, capped_engine, partial, pages)
        frame, totals, spent = paging.through(combine, resume=resume and attempt == 0)
        requests += spent
        fault = paging_fault(frame, totals, spec.key_columns) or paging.broken
        if fault is None and paging.past_total:  # paging again would not change its count
            if pages is not None:
                pages.discard()
            raise PagingFault(
                f"shard {shard.id}: {PAST_TOTAL} ({totals[-1]}): at offset_start={totals[-1]} "
                "it still served a hit",
                frame.drop_duplicates(list(spec.key_columns)),
                totals[-1],
                requests,
            )
        if fault is None and shard.window is not None and totals[-1] != shard.window[2]:
            # offsets of the whole search shift when it moves: windows then miss or repeat hits
            fault = f"the search's total moved from {shard.window[2]} to {totals[-1]}"
        if fault is None:
            return frame, shard.size(totals[-1]), requests, paging.edges()
    if pages is not None:
        pages.discard()
    raise PagingFault(
        f"shard {shard.id}: {fault}",
        frame.drop_duplicates(list(spec.key_columns)),
        totals[-1],
        requests,
    )


#: A shard's key before its first hit (an offset window after the search's first: as its first
#: page served it) and of its last hit, where known: adjacent windows must meet on them.
Edges = tuple[list[int] | None, list[int] | None]


@dataclasses.dataclass
class _Paging:
    """One pass over a shard's pages, from where an interrupted run's kept pages end."""

    page: Page
    spec: Spec
    shard: Shard
    per_page: int
    capped_engine: bool
    partial: bool
    pages: PageCheckpoints | None
    #: A server with no cap served a hit past the total it reported: its total is capped.
    past_total: bool = False
    #: Why two pages do not meet (the later one did not begin with the hit the earlier ended
    #: on): hits moved between them, or the server does not page by ``offset_start``.
    broken: str | None = None
    #: The key of the hit before the shard's first (an offset window after the search's
    #: first), and of the last hit read.
    before: tuple[int, ...] | None = None
    last: tuple[int, ...] | None = None

    def edges(self) -> Edges:
        """Where the shard begins and ends, as keys (see :data:`Edges`)."""
        if self.shard.window is None:
            return None, None
        before = list(self.before) if self.before is not None else None
        return before, list(self.last) if self.last is not None else None

    def through(self, combine: Combine, *, resume: bool) -> tuple[pd.DataFrame, list[int], int]:
        """``(frame, every page's total, requests)``.

        Pages read are kept (:attr:`pages`) when paging fails — a revoked token, a dropped
        network: the next run goes on from them — and every :data:`_KEEP_EVERY` seconds while
        it goes on, so that a kill loses at most that much of a shard. A harvest whose shards
        page faster than that writes no page at all.
        """
        kept = self.pages.restore() if resume and self.pages is not None else []
        parts = [frame for _, frame in kept]
        totals = [entry.total for entry, _ in kept]
        offset = sum(entry.rows for entry, _ in kept)
        if kept:
            self.before = _as_key(kept[0][0].before)
            self.last = _key_of(parts[-1], -1, self.spec.key_columns)
        unsaved: list[tuple[int, pd.DataFrame, int, list[int] | None]] = []
        saved_at = time.monotonic()
        requests = 0
        try:
            while True:
                # every page but the search's first overlaps the hit read before it
                overlap = offset > 0 or self._window_start() > 0
                # no more than the hits left as the last page counted them (those past the
                # total are for _serves_past to find)
                left = self.shard.size(totals[-1]) - offset if totals else None
                frame, total = self._read(offset, overlap=overlap, left=left)
                requests += 1
                broken = self._disjoint(frame, offset) if overlap else None
                if kept and requests == 1 and (total != totals[0] or broken):
                    # the shard moved while the harvest was down: the kept pages shifted
                    assert self.pages is not None
                    self.pages.discard()
                    kept, parts, totals, offset = [], [], [], 0
                    self.before = self.last = None
                    continue
                totals.append(total)
                if broken:
                    self.broken = broken
                    # whole, a page served again shows as repeated keys (a hit without a key
                    # would show as one, and is told as what it is)
                    keyed = _key_of(frame, 0, self.spec.key_columns) is not None
                    parts.append(frame if keyed else frame.iloc[1:].reset_index(drop=True))
                    break
                hits = frame.iloc[1:].reset_index(drop=True) if overlap else frame
                if overlap and offset == 0:  # a window's first page: the hit before it
                    self.before = _key_of(frame, 0, self.spec.key_columns)
                if len(hits) or not parts:  # keep one (maybe empty) page: it has the columns
                    parts.append(hits)
                last = not len(hits) or offset + len(hits) >= self.shard.size(total)
                if not last:
                    before = list(self.before) if offset == 0 and self.before else None
                    unsaved.append((offset, hits, total, before))
                if len(hits):
                    self.last = _key_of(hits, -1, self.spec.key_columns)
                offset += len(hits)
                if last:
                    if len(hits) and self._ends_search(total):
                        self.past_total = self._serves_past(total, hits)
                        requests += 1
                    break
                if time.monotonic() - saved_at >= _KEEP_EVERY:
                    self._keep(unsaved)
                    saved_at = time.monotonic()
        except ShardOverCap:
            raise  # the shard is planned again: its pages are of no use
        except Exception:
            # what this run read is not read again by the next; a page that cannot be kept
            # (a full disk) is simply read again: the error told is the one that stopped paging
            with contextlib.suppress(CacheError):
                self._keep(unsaved)
            raise
        return join(parts, combine), totals, requests

    def _disjoint(self, frame: pd.DataFrame, offset: int) -> str | None:
        """Why a page asked from one hit before ``offset`` does not begin with the hit read
        there (``None`` when it does, and for a window's first page, which has none to meet)."""
        if offset == 0:
            return None
        where = f"offset_start={self._window_start() + offset - 1}"
        if not len(frame):
            return f"its page at {where} came back empty, though a hit was read there before"
        first = _key_of(frame, 0, self.spec.key_columns)
        if first is None or self.last is None:
            return f"its pages cannot be joined: a hit at {where} has no key to tell it by"
        if first != self.last:
            return (
                f"its pages do not meet: the page at {where} began with {first}, not with "
                f"{self.last}, the hit the page before ended on (hits moved between the pages, "
                "or offset_start is ignored)"
            )
        return None

    def _window_start(self) -> int:
        return 0 if self.shard.window is None else self.shard.window[0]

    def _ends_search(self, total: int) -> bool:
        """Whether the shard's last hit is its search's last, on a server with no cap: the
        total is then all that says no hit follows. Engines that count only so far (a search
        index reporting at most 10,000 hits unless told to count them all) still serve hits
        past it."""
        if self.capped_engine or self.partial:
            return False  # a capped server's total is proven by its cap and its empty pages
        return self.shard.window is None or self.shard.window[1] >= total

    def _serves_past(self, total: int, last: pd.DataFrame) -> bool:
        """Whether one hit comes back at ``offset_start=total`` (one request), sorted after
        the ``last`` page's: an earlier one is a server ignoring offset_start, which the
        repeated keys tell. A hit under a larger total is a record added since the last page
        (a live catalogue), not a total that stopped counting."""
        sort = self.spec.paging_sort
        params = {**self.spec.params(self.shard), "sort": sort, "ord": "asc"}
        response, frame = self.page(**params, offset_start=total, per_page=1)
        if not len(frame) or int_member(response, "total_results") != total:
            return False
        key = list(self.spec.key_columns)
        if set(key) <= set(frame.columns) & set(last.columns):
            seen = last[key].astype("int64").itertuples(index=False, name=None)
            if tuple(frame[key].astype("int64").iloc[0]) in set(seen):
                return False  # a hit served again: offsets ignored, which the repeats tell
        if sort not in frame.columns or sort not in last.columns:
            return True
        past, final = frame[sort].iloc[0], last[sort].iloc[-1]
        return bool(pd.isna(past) or pd.isna(final) or past >= final)

    def _keep(self, unsaved: list[tuple[int, pd.DataFrame, int, list[int] | None]]) -> None:
        if self.pages is not None:
            for offset, frame, total, before in unsaved:
                self.pages.save(offset, frame, total, before)
        unsaved.clear()

    def _read(
        self, offset: int, *, overlap: bool, left: int | None = None
    ) -> tuple[pd.DataFrame, int]:
        """The page of hits from ``offset`` (of the shard), from one hit before if ``overlap``;
        of at most ``left`` new hits, where known."""
        params = {**self.spec.params(self.shard), "sort": self.spec.paging_sort, "ord": "asc"}
        per_page = max(self.per_page, 2) if overlap else self.per_page  # one new hit at least
        if left is not None and left > 0:
            per_page = min(per_page, left + overlap)
        offset += self._window_start() - overlap
        if self.shard.window is not None:  # offsets within the window
            per_page = max(1, min(per_page, self.shard.window[1] - offset))
        response, frame = self.page(**params, offset_start=offset, per_page=per_page)
        total = int_member(response, "total_results")
        # available_results is read only where it means the cap (not all servers send it)
        capped = self.capped_engine and not self.partial
        available = optional_int_member(response, "available_results")
        if capped and available is not None and available < total:
            raise ShardOverCap(total)
        return frame, total


def join(parts: list[pd.DataFrame], combine: Combine) -> pd.DataFrame:
    """``combine(parts)``, where one part is its own join: a harvest's parts are pages or
    frames ``combine`` built, and joining one alone would rebuild its ~54 columns for nothing
    (2 ms of CPU a page; on a capped server whose cap is the page size, every shard is one)."""
    return parts[0] if len(parts) == 1 else combine(parts)


def _key_of(frame: pd.DataFrame, row: int, key: tuple[str, ...]) -> tuple[int, ...] | None:
    """The key of ``frame``'s ``row`` (``-1``: its last); ``None`` where it has none to tell
    it by (a missing value proves nothing about which hit it is)."""
    if not len(frame) or not all(name in frame.columns for name in key):
        return None
    values = [frame[name].iloc[row] for name in key]
    if any(pd.isna(value) for value in values):
        return None
    return tuple(int(value) for value in values)


def _as_key(values: list[int] | None) -> tuple[int, ...] | None:
    return None if values is None else tuple(values)


def paging_fault(frame: pd.DataFrame, totals: list[int], key: tuple[str, ...]) -> str | None:
    """Why a shard's pages cannot be trusted, or ``None``: a key served twice (a server or
    proxy ignoring ``offset_start``), or a total that moved between pages."""
    if len(set(totals)) > 1:
        return f"its total moved from {totals[0]} to {totals[-1]} while it was paged"
    repeated = repeated_keys(frame, key)
    if repeated:
        return f"its pages served {repeated} key(s) twice (is offset_start ignored?)"
    return None


class EarlyShards:
    """Shards dealt with while the plan is still being made, each as soon as its count is in.

    A count under the cap often brings every hit of its shard (the probe reads a whole page,
    and when pages and the cap are the same size most shards are fetched that way): the thread
    that counted it writes it at once, and its frame is delivered once the planner proves the
    shard a leaf. Queued behind the other counts, every such shard was written at the end of
    planning, which is then the end of the harvest. A shard finished by a run killed while it
    planned is kept: for free when nothing in the search changed since (``trusted``), else when
    its ``check`` (one request) says it has not changed.
    """

    def __init__(
        self,
        new_task: Callable[..., ShardTask],
        runner: Executor,
        pool: Executor,
        deliver: Deliver | None,
    ) -> None:
        self._new_task, self._runner, self._pool = new_task, runner, pool
        self._deliver = deliver
        self._kept: dict[str, ShardEntry] = {}
        self._trusted = False
        self._check: Callable[[Shard, ShardEntry], bool] | None = None
        self._held: dict[str, tuple[ShardEntry, pd.DataFrame]] = {}  # not yet proven leaves
        #: Shards written or started, by id: their outcomes to come.
        self.futures: dict[str, Future[ShardEntry]] = {}
        #: Kept shards, by id: their entries in the store.
        self.reused: dict[str, ShardEntry] = {}

    def keep(
        self,
        entries: Mapping[str, ShardEntry],
        *,
        trusted: bool = False,
        check: Callable[[Shard, ShardEntry], bool] | None = None,
    ) -> None:
        """Keep these finished shards where the plan finds them again; ``trusted``: take their
        totals as counts, with no request; else keep those ``check`` finds unchanged (without
        a check, those a one-hit count finds of the same total)."""
        self._kept, self._trusted, self._check = dict(entries), trusted, check

    def counting(self, counter: ShardCounter, limit: int) -> Callable[..., Count]:
        """``counter``, also writing or keeping every shard it finds whole under ``limit``."""
        # Dask workers leave frames in the store; threads hold them until proven.
        hold: Deliver | None = None
        if self._deliver is not None:

            def hold(entry: ShardEntry, frame: pd.DataFrame) -> None:
                self._held[entry.id] = (entry, frame)

        def count(shard: Shard, expected: float | None = None) -> Count:
            kept = self._kept.get(shard.id)
            if kept is not None and self._trusted:
                self.reused[shard.id] = kept
                return Count(kept.total, kept.total)
            if kept is not None and self._check is not None:
                if self._check(shard, kept):  # one request rather than a page
                    self.reused[shard.id] = kept
                    return Count(kept.total, kept.total)
            elif kept is not None:
                counted = counter(shard)  # one hit rather than a page
                if counted.total == kept.total:
                    self.reused[shard.id] = kept
                    return counted
            counted = counter(shard, expected)
            if counted.frame is not None and 0 < counted.total <= limit:
                entry = PlannedShard(shard.id, shard.to_dict(), counted.total)
                task = self._new_task(hold)
                self.futures[shard.id] = finished(task.fetched(entry, counted.frame, counted.total))
            return counted

        return count

    def start(self, shard: Shard, total: int, frame: pd.DataFrame | None) -> None:
        """Start on a proven leaf: deliver it if written, else page it, or write the hits its
        count brought (the root's); on the same bounded pool as the rest of planning."""
        if shard.id in self._held:
            assert self._deliver is not None
            self._deliver(*self._held.pop(shard.id))
        if shard.id in self.futures or shard.id in self.reused:
            return
        kept = self._kept.get(shard.id)
        if kept is not None and self._trusted and kept.total == total:
            self.reused[shard.id] = kept  # a leaf of a replayed split, finished before
            return
        entry = PlannedShard(shard.id, shard.to_dict(), total)
        task = self._new_task()
        if frame is None:
            self.futures[shard.id] = self._runner.submit(task, entry)
        else:
            self.futures[shard.id] = self._pool.submit(task.fetched, entry, frame, total)

    def unproven(self) -> list[tuple[ShardEntry, pd.DataFrame]]:
        """The shards counted whole whose split is not proven yet (taken: handed on no more)."""
        held, self._held = list(self._held.values()), {}
        return held

    def forget_all_but(self, planned: set[str]) -> None:
        """Drop shards counted under a split the planner gave up (its parts did not add up)."""
        for found in (self.futures, self.reused, self._held):
            for shard_id in set(found) - planned:
                del found[shard_id]


@dataclasses.dataclass
class ShardTask:
    """Fetch one planned shard and write it to the store; picklable for Dask workers."""

    page: Page
    spec: Spec
    store: HarvestStore
    per_page: int
    capped_engine: bool
    combine: Combine
    #: Takes the frame once written (threads); ``None`` leaves it in the store (Dask).
    deliver: Deliver | None = None
    #: Count how pages are read, and what they warned of, into the shard's entry: set where
    #: the harvest's own counter cannot see them (a Dask worker's process).
    count_reads: bool = False
    #: An interrupted run's pages may be kept in the store (a resume): only then are they
    #: looked for. A fresh harvest cleared them, so it would look for nothing, file by file.
    resume: bool = True

    def __call__(self, entry: PlannedShard) -> ShardEntry:
        if self.count_reads:
            reads, heard = PageReads(), ServerWarnings()
            page = reads.counting(heard.watching(self.page))
            outcome = dataclasses.replace(self, page=page, count_reads=False)(entry)
            warned = heard.counts() or None
            return dataclasses.replace(outcome, page_reads=reads.summary(), warned=warned)
        started = time.monotonic()
        shard = Shard.from_dict(entry.shard)
        pages = self.store.pages(entry.id)
        try:
            try:
                frame, total, requests, (before, last) = self._fetch(
                    shard, partial=entry.stuck, pages=pages, resume=self.resume
                )
            except ShardOverCap:
                pages.discard()
                return self._replan(shard, started)
        except PagingFault as fault:
            # Kept (deduplicated) for allow_incomplete, but never reused by a resume.
            return self._written(
                entry.id,
                fault.frame,
                started,
                total=fault.total,
                requests=fault.requests,
                fault=fault.reason,
            )
        # the joiner drops the pages kept while it was paged once it has kept the shard
        touched = pages.touched
        outcome = self._written(
            entry.id,
            frame,
            started,
            total=total,
            requests=requests,
            paged=touched,
            before=before,
            last=last,
        )
        if outcome.file:
            pages.discard()  # the shard's own checkpoint now holds its pages
        return outcome

    def fetched(self, entry: PlannedShard, frame: pd.DataFrame, total: int) -> ShardEntry:
        """Write a shard whose every hit came with its count (the request was the planner's)."""
        return self._written(entry.id, frame, time.monotonic(), total=total, probed=True)

    def _written(
        self, shard_id: str, frame: pd.DataFrame, started: float, **facts: Any
    ) -> ShardEntry:
        """The shard's outcome; its frame is handed on (threads: the joiner keeps it, with
        others) or written to the store at once (Dask: the store is where it is taken)."""
        facts.update(
            seconds=time.monotonic() - started, worker=_worker(), updated_last=_updated_last(frame)
        )
        if self.deliver is None:
            return self.store.write_shard(shard_id, frame, **facts)
        outcome = ShardEntry(id=shard_id, rows=len(frame), **facts)
        self.deliver(outcome, frame)
        return outcome

    def _fetch(
        self,
        shard: Shard,
        *,
        partial: bool = False,
        pages: PageCheckpoints | None = None,
        resume: bool = True,
    ) -> tuple[pd.DataFrame, int, int, Edges]:
        return fetch_shard(
            self.page,
            self.spec,
            shard,
            per_page=self.per_page,
            capped_engine=self.capped_engine,
            combine=self.combine,
            partial=partial,
            pages=pages,
            resume=resume,
        )

    def _replan(self, shard: Shard, started: float) -> ShardEntry:
        # The shard grew past the cap since it was planned: split it again and fetch the parts.
        counter = ShardCounter(self.page, self.spec)
        counter.capped_engine = self.capped_engine
        probe = counter(shard)
        leaves, stuck = plan(
            counter,
            root=shard,
            root_count=probe,
            cap=probe.retrievable,
            spec=self.spec,
            bounds=counter.bounds,
        )
        parts, fetched_total, requests = [], 0, counter.requests
        for leaf, _ in leaves + stuck:
            frame, leaf_total, leaf_requests, _ = self._fetch(leaf, partial=True)
            parts.append(frame)
            fetched_total += leaf_total
            requests += leaf_requests
        return self._written(
            shard.id,
            join(parts, self.combine),
            started,
            total=fetched_total,
            requests=requests,
            replanned=len(leaves),
            stuck=[s.id for s, _ in stuck],
        )


def _updated_last(frame: pd.DataFrame) -> str | None:
    """The latest ``updated_on`` of a shard's rows, if any has one (see ``ShardEntry``)."""
    stamps = frame.get("updated_on")
    if stamps is None or not pd.api.types.is_datetime64_any_dtype(stamps) or stamps.isna().all():
        return None
    return pd.Timestamp(stamps.max()).isoformat()


def _worker() -> str:
    """Which process fetched a shard: shown in the plan when shards run on a cluster."""
    return f"{socket.gethostname()}:{os.getpid()}"
