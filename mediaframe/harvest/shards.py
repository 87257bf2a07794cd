"""One shard's work, and what the engine runs beside the plan.

A shard task pages its shard (:mod:`mediaframe.harvest.paging`) and hands its frame on, to the
joiner that keeps it with others (:mod:`mediaframe.harvest.joiner`), or on a Dask worker writes
it to the store itself; a shard grown past the cap since it was planned is planned again, and its
parts paged. Shards whose counts brought every hit are taken while the plan is still being made
(:class:`EarlyShards`). Shard tasks are picklable, so a Dask cluster can run them against
shared storage.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future
from typing import Any

import pandas as pd

from mediaframe.cache import HarvestStore
from mediaframe.cache.manifest import PlannedShard, ShardEntry
from mediaframe.cache.pages import PageCheckpoints
from mediaframe.futures import finished
from mediaframe.harvest.counter import Count, ShardCounter
from mediaframe.harvest.paging import Combine, Edges, PagingFault, ShardOverCap, fetch_shard, join
from mediaframe.harvest.plan import plan
from mediaframe.harvest.reads import PageReads
from mediaframe.harvest.spec import Page, Shard, Spec
from mediaframe.harvest.warned import ServerWarnings

__all__ = ["Deliver", "EarlyShards", "ShardTask"]

#: Takes a finished shard's frame with its entry: one kept already (read back from the store,
#: or written by the task) names its file; one held in memory alone names none.
Deliver = Callable[[ShardEntry, pd.DataFrame], None]


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
