"""Planning a complete harvest: shards whose hit sets partition a search, each under the cap.

A split is kept only when its children's counts add up to the parent's — the proof that it lost
nothing. Dimensions are tried in order: bases, day windows of a date field (cut in proportion to
the counts, down to one day), record type, then status bits.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from typing import Any

import pandas as pd

from mediaframe.harvest.counter import Count
from mediaframe.harvest.spec import Shard, Spec, Statuses, earlier_day, later_day

__all__ = ["RECORD_TYPES", "plan"]

#: Values of ``record_type``; a split by type is kept only if these cover every hit.
RECORD_TYPES = ("image", "video", "audio", "document", "flash", "unknown")
# Aim below the cap when cutting date windows, so one cut usually suffices.
_FILL = 0.7


def plan(
    count: Callable[[Shard, float], Count],
    *,
    root: Shard,
    root_count: Count,
    cap: int,
    spec: Spec,
    bases: Sequence[int] = (),
    statuses: Statuses | None = None,
    bounds: Callable[[Shard], tuple[dt.date, dt.date]] | None = None,
    pool: Executor | None = None,
    on_leaf: Callable[[Shard, int, pd.DataFrame | None], None] | None = None,
    proven: Mapping[str, tuple[int, int, list[tuple[Shard, int]]]] | None = None,
    on_split: Callable[[Shard, int, int, list[tuple[Shard, int]]], None] | None = None,
    on_disagreed: Callable[[Shard], None] | None = None,
) -> tuple[list[tuple[Shard, int]], list[tuple[Shard, int]]]:
    """Split ``root`` until every shard is retrievable; returns ``(leaves, stuck)``.

    Each leaf is a ``(shard, total)`` whose hits can all be paged; ``stuck`` holds shards that no
    dimension could split below the cap. A split is kept only when its children's totals add up
    to the parent's, so the leaves always partition the root's hit set.

    Parameters
    ----------
    count : counts a shard with one request, given how many hits it is expected to hold (the
        count may then come with the hits themselves).
    bases : base ids the user may search (from ``/me/``), for the first split.
    statuses : status bits defined per base id, for the last split.
    bounds : first and last day of a shard's hits, for the first date split.
    on_leaf : told of each leaf as soon as it is proven, with its hits when its count brought
        them all, so that paging can start while the rest is still being planned.
    proven : splits proven by an earlier run, ``{shard id: (level, total, [(child, total)])}``:
        replayed without a request while the shard's total is the one they were proven for.
    on_split : told of each split as soon as it is proven, ``(shard, level, total, children)``,
        so that a run killed while planning can replay it.
    on_disagreed : told of each shard cut into parts whose counts do not add up to its own, even
        counted again (it is cut by the next dimension), so that one left stuck is told apart
        from one the cap alone stuck.
    """
    if cap < 1:  # the server lets no hit be retrieved: no split gets under that, all is stuck
        return [], [(root, root_count.total)] if root_count.total else []
    dims = _Dimensions(spec, bases, statuses or {}, bounds)
    tasks = _Tasks(pool)
    # Each shard found is known by its path from the root (the index of each cut's child), so
    # that the leaves come out in the same order however their counts raced in.
    leaves: list[tuple[tuple[int, ...], Shard, int]] = []
    stuck: list[tuple[tuple[int, ...], Shard, int]] = []

    def place(path: tuple[int, ...], shard: Shard, counted: Count, level: int) -> None:
        """Tell a leaf at once; split a shard over the cap (by a split proven before, if any)."""
        if counted.total == 0:
            return
        if counted.total <= cap:
            leaves.append((path, shard, counted.total))
            if on_leaf is not None:
                on_leaf(shard, counted.total, counted.frame)
            return
        known = (proven or {}).get(shard.id)
        if known is not None and known[1] == counted.total:  # replayed without a request
            for index, (kid, kid_total) in enumerate(known[2]):
                place((*path, index), kid, Count(kid_total, kid_total), known[0])
            return
        cut(path, shard, counted.total, level)

    def cut(path: tuple[int, ...], shard: Shard, total: int, level: int) -> None:
        """Split ``shard`` (which may cost a request: its days), then count its children."""
        tasks.submit(
            lambda: dims.split(shard, total, level, cap),
            lambda split: count_kids(path, shard, total, split),
        )

    def count_kids(
        path: tuple[int, ...], shard: Shard, total: int, split: tuple[int, list[Shard]] | None
    ) -> None:
        if split is None:
            stuck.append((path, shard, total))
            return
        level, kids = split
        counts: dict[int, Count] = {}

        def arrived(index: int, counted: Count) -> None:
            counts[index] = counted
            if len(counts) == len(kids):  # each parent's children are judged once all are in
                judge(path, shard, total, level, kids, [counts[i] for i in range(len(kids))])

        for index, kid in enumerate(kids):
            tasks.submit(
                functools.partial(count, kid, total / len(kids)),
                functools.partial(arrived, index),
            )

    def judge(
        path: tuple[int, ...],
        shard: Shard,
        total: int,
        level: int,
        kids: list[Shard],
        counts: list[Count],
        *,
        recounted: bool = False,
    ) -> None:
        if sum(counted.total for counted in counts) != total:
            if not recounted:
                # the search may have moved since the shard was counted (paging runs beside
                # planning, a record is added or deleted): counted again, and its children
                # add up to it, the cut stands; the root too, whose new count is the plan's
                tasks.submit(
                    functools.partial(count, shard, float(total)),
                    lambda again: judge(
                        path, shard, again.total, level, kids, counts, recounted=True
                    ),
                )
            else:  # the dimension does not cover every hit (e.g. undated records): the next
                if on_disagreed is not None:
                    on_disagreed(shard)
                cut(path, shard, total, level + 1)
            return
        if on_split is not None:
            found = [(kid, c.total) for kid, c in zip(kids, counts, strict=True)]
            on_split(shard, level, total, found)
        for index, (kid, counted) in enumerate(zip(kids, counts, strict=True)):
            place((*path, index), kid, counted, level)

    place((), root, root_count, 0)
    tasks.run()
    return (
        [(shard, total) for _, shard, total in sorted(leaves, key=_by_path)],
        [(shard, total) for _, shard, total in sorted(stuck, key=_by_path)],
    )


def _by_path(found: tuple[tuple[int, ...], Shard, int]) -> tuple[int, ...]:
    return found[0]


#: A planning task: the work (a request, on the pool), and what to do with its answer.
_Task = tuple[Callable[[], Any], Callable[[Any], None]]


class _Tasks:
    """The planning's requests, each with what to do with its answer.

    Answers are handled on the planning thread, one at a time, as they come in: a shard's
    children are counted as soon as its own cut is known, without waiting for the other shards
    of its level (a server a network away would otherwise idle connections at every level).
    Without a pool, tasks run one by one in the order they were asked for.
    """

    def __init__(self, pool: Executor | None) -> None:
        self._pool = pool
        self._waiting: collections.deque[_Task] = collections.deque()
        self._running: dict[Future[Any], Callable[[Any], None]] = {}

    def submit(self, work: Callable[[], Any], then: Callable[[Any], None]) -> None:
        if self._pool is None:
            self._waiting.append((work, then))
        else:
            self._running[self._pool.submit(work)] = then

    def run(self) -> None:
        """Until every task is done and handled; the first failure is raised once the tasks
        already running are over (what they found is then in the checkpoint saved for a
        resume), and no task not yet begun is begun."""
        try:
            while self._waiting or self._running:
                if self._pool is None:
                    work, then = self._waiting.popleft()
                    then(work())
                    continue
                done, _ = wait(self._running, return_when=FIRST_COMPLETED)
                # in the order they were asked for (a dict keeps it): a repeatable handling
                for future in [future for future in self._running if future in done]:
                    then = self._running.pop(future)
                    then(future.result())
        except BaseException:
            for future in self._running:
                future.cancel()
            wait(self._running)
            raise


class _Dimensions:
    """The ways a shard can be cut, in order: bases, day windows, record type, status bits."""

    def __init__(
        self,
        spec: Spec,
        bases: Sequence[int],
        statuses: Statuses,
        bounds: Callable[[Shard], tuple[dt.date, dt.date]] | None,
    ) -> None:
        self.spec = spec
        self.bases = tuple(bases)
        self.statuses = statuses
        self.bounds = bounds

    def split(
        self, shard: Shard, total: int, level: int, cap: int
    ) -> tuple[int, list[Shard]] | None:
        """The first applicable cut at or after ``level``: ``(level, children)``, or None."""
        cuts = (self._by_base, self._by_date, self._by_type, self._by_status)
        for index in range(level, len(cuts)):
            children = cuts[index](shard, total, cap)
            if children:
                # a date cut may need another date cut, and so on, so stay on this level
                return index, children
        return None

    def _by_base(self, shard: Shard, total: int, cap: int) -> list[Shard]:
        chosen = shard.bases or tuple(self.spec.filters.get("bases") or self.bases)
        if len(chosen) < 2:
            return []
        return [dataclasses.replace(shard, bases=(base,)) for base in chosen]

    def _by_date(self, shard: Shard, total: int, cap: int) -> list[Shard]:
        if shard.date_min is None or shard.date_max is None:
            if self.bounds is None:
                return []
            low, high = self.bounds(shard)
            low = later_day(self.spec.filters.get("date_min"), low) or low
            high = earlier_day(self.spec.filters.get("date_max"), high) or high
            shard = dataclasses.replace(shard, date_min=low, date_max=high)
        days, first = shard.days, shard.date_min
        if days < 2 or first is None:
            return []
        pieces = min(days, max(2, math.ceil(total / (cap * _FILL))))
        edges = [first + dt.timedelta(days=days * i // pieces) for i in range(pieces + 1)]
        return [
            dataclasses.replace(shard, date_min=start, date_max=end - dt.timedelta(days=1))
            for start, end in itertools.pairwise(edges)
            if end > start
        ]

    def _by_type(self, shard: Shard, total: int, cap: int) -> list[Shard]:
        if self.spec.kind != "records" or shard.record_type or self.spec.filters.get("record_type"):
            return []
        return [dataclasses.replace(shard, record_type=kind) for kind in RECORD_TYPES]

    def _by_status(self, shard: Shard, total: int, cap: int) -> list[Shard]:
        bases = shard.bases or tuple(self.spec.filters.get("bases") or ())
        if len(bases) != 1:  # bits are defined per collection: one base, one set of bits
            return []
        databox, bits = self.statuses.get(bases[0], (None, ()))
        used = {bit for bit, _, _ in shard.status}
        free = [bit for bit in bits if bit not in used]
        if databox is None or not free:
            return []
        return [
            dataclasses.replace(shard, status=(*shard.status, (free[0], state, databox)))
            for state in ("on", "off")
        ]
