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
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from typing import Any

import numpy as np
import pandas as pd

from mediaframe.cache.manifest import PlannedShard, ShardEntry
from mediaframe.exceptions import MalformedItemError, ResponseFormatError
from mediaframe.frames.arrays import timestamps
from mediaframe.harvest.spec import (
    Page,
    Shard,
    Spec,
    Statuses,
    earlier_day,
    later_day,
)

__all__ = [
    "NOT_STORIES",
    "RECORD_TYPES",
    "Count",
    "CountRoute",
    "ShardCounter",
    "int_member",
    "optional_int_member",
    "paged_whole",
    "plan",
    "repeated_keys",
    "windows",
    "windows_failed",
]

#: Why a story search found no story while its answers held records.
NOT_STORIES = (
    "the answers to this story search held records, not stories: the server may ignore "
    "search_type. Search records instead (client.records), or ask the service's administrators."
)
#: Values of ``record_type``; a split by type is kept only if these cover every hit.
RECORD_TYPES = ("image", "video", "audio", "document", "flash", "unknown")
# Aim below the cap when cutting date windows, so one cut usually suffices.
_FILL = 0.7
# A child expected below this share of a page is counted by fetching its page outright.
_PROBE_FILL = 0.8


@dataclasses.dataclass(frozen=True)
class Count:
    """How many hits a shard has; ``frame`` holds them all when the count was a whole page."""

    total: int
    retrievable: int
    frame: pd.DataFrame | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def over_cap(self) -> bool:
        return self.retrievable < self.total


#: One hit of a search, read as decoded JSON: ``count(**params) -> response``, the v1 answer
#: (``total_results``, ``available_results``, and ``results`` with its one record or story).
CountRoute = Callable[..., Mapping[str, Any]]


class ShardCounter:
    """Counts shards, knowing which meaning of ``available_results`` the server uses.

    A count is one hit. With ``count`` (a :data:`CountRoute`) it is read as decoded JSON; else
    through ``page``, as a frame. A frame of one record costs about 3 ms of CPU (its ~54 columns
    are built whatever the rows), the decoded answer a fifth of that, and a harvest's planning
    is a chain of rounds of counts, on threads that share one interpreter lock.
    """

    def __init__(
        self,
        page: Page,
        spec: Spec,
        *,
        page_size: int = 0,
        count: CountRoute | None = None,
        whole_pages: bool = True,
    ) -> None:
        self.page = page
        self.count = count
        self.spec = spec
        self.requests = 0
        self.capped_engine = True
        #: A shard expected to fit well within one page of this size is counted with that whole
        #: page (unless not ``whole_pages``): it answers the count, and is the shard itself when
        #: it holds every hit.
        self.page_size = page_size
        self.whole_pages = whole_pages
        #: The first day of a shard's hits, by shard id, from its count: a count of one hit
        #: asks for the earliest, so that a shard split by date needs only its last day.
        self._first_days: dict[str, dt.date | None] = {}
        self._lock = threading.Lock()

    def __call__(self, shard: Shard, expected: float | None = None) -> Count:
        probe = (
            self.whole_pages and expected is not None and expected <= _PROBE_FILL * self.page_size
        )
        dated = self._sortable_date()
        whole = None
        if probe:
            paging = {"per_page": self.page_size, "sort": self.spec.paging_sort, "ord": "asc"}
            response, frame = self._ask(shard, **paging)
            total = int_member(response, "total_results")
            # a page that repeats a key is no proof of the whole: the shard is paged, and judged
            if len(frame) == total and not repeated_keys(frame, self.spec.key_columns):
                whole = frame
            empty = not len(frame)
        else:
            # the one hit is the earliest: the first day of the shard's bounds
            response, first = self._hit(shard, "asc")
            total = int_member(response, "total_results")
            # kept for the date split, which only a shard of more than a page can need
            if dated is not None and first is not _NO_HIT and total > self.page_size:
                with self._lock:
                    self._first_days[shard.id] = first
            empty = first is _NO_HIT
        # Not all servers send it: missing or null, no cap is known. The search is then paged like
        # one on an engine without a cap, and windows that come back short show the cap.
        available = optional_int_member(response, "available_results")
        if available is None:
            if shard == Shard():
                self.capped_engine = False
            return Count(total, total, whole)
        if empty and total > 0 and available > 0:
            if self.spec.kind == "stories" and _hits(response, "records"):
                raise ResponseFormatError(NOT_STORIES)
            raise ResponseFormatError(
                f"the search answer contradicts itself: total_results {total} and "
                f"available_results {available}, yet its first page holds no hit (shard "
                f"{shard.id}). The server's search engine may be failing: try again later, "
                "and tell the service's administrators if it persists."
            )
        if shard == Shard() and total > 1 and available == 1 and not probe:
            # Newer engines report the hits *in this page* and have no cap; a cap of 1 looks the
            # same at per_page=1, so ask for two: only the page count then says 2.
            if self.count is None:
                again, _ = self._ask(shard, per_page=2)
            else:
                again = self._decoded(shard, per_page=2)
            seen = optional_int_member(again, "available_results")
            self.capped_engine = seen != 2
            if self.capped_engine and seen is not None:
                # the cap as the second answer tells it: nodes of two generations behind one
                # address (a rolling upgrade) may have answered the two, the first per page
                available = seen
        if not self.capped_engine:
            return Count(total, total, whole)
        return Count(total, min(available, total), whole)

    def latest(self, shard: Shard, rows: int) -> tuple[Mapping[str, Any], pd.DataFrame]:
        """The ``rows`` hits of ``shard`` updated last, latest first (one request): its
        ``total_results``, and what changed in it lately (see :mod:`mediaframe.harvest.kept`)."""
        return self._ask(shard, per_page=max(1, rows), sort="updated_on", ord="desc")

    def _sortable_date(self) -> str | None:
        """The date field the shards are split on, if the search can be sorted on it."""
        field = self.spec.date_field
        return field if field in ("created_on", "updated_on") else None

    def _ask(self, shard: Shard, **paging: Any) -> tuple[Mapping[str, Any], pd.DataFrame]:
        with self._lock:
            self.requests += 1
        return self.page(**self.spec.params(shard), offset_start=0, **paging)

    def _hit(self, shard: Shard, order: str) -> tuple[Mapping[str, Any], Any]:
        """The answer to a one-hit search of ``shard``, sorted by its date field in ``order``
        where it can be, and the day of that hit: ``None`` if it has none, :data:`_NO_HIT` if
        the shard has no hit."""
        field = self._sortable_date()
        paging: dict[str, Any] = {"per_page": 1}
        if field is not None:
            paging.update(sort=field, ord=order)
        if self.count is None:
            response, frame = self._ask(shard, **paging)
            return response, _first_day(frame, field) if len(frame) else _NO_HIT
        response = self._decoded(shard, **paging)
        hits = _hits(response, self.spec.kind)
        return response, _item_day(hits[0], field) if hits else _NO_HIT

    def _decoded(self, shard: Shard, **paging: Any) -> Mapping[str, Any]:
        """The decoded answer to a small search of ``shard`` (through :attr:`count`)."""
        assert self.count is not None
        with self._lock:
            self.requests += 1
        response = self.count(**self.spec.params(shard), offset_start=0, **paging)
        if not isinstance(response, Mapping):
            raise ResponseFormatError("the search answer is not a JSON object")
        return response

    def bounds(self, shard: Shard) -> tuple[dt.date, dt.date]:
        """First and last day the shard's hits fall on, padded (:func:`padded`)."""
        return padded(*self.days(shard))

    def days(self, shard: Shard) -> tuple[dt.date | None, dt.date | None]:
        """The days of the shard's first and last hit by date (``None`` where that hit has no
        date, or the date field cannot be sorted on: no request then). The first day comes
        from the shard's own count when it asked for one hit (one request fewer)."""
        field = self._sortable_date()
        if field is None:
            return None, None
        with self._lock:
            counted = shard.id in self._first_days
            first = self._first_days.pop(shard.id, None)
        if not counted:  # a count replayed from an interrupted run, or a probe's
            first = _day_or_none(self._hit(shard, "asc")[1])
        last = _day_or_none(self._hit(shard, "desc")[1])
        if first and last and first > last:  # a server sorting the other way round
            first, last = last, first
        return first, last


def padded(first: dt.date | None, last: dt.date | None) -> tuple[dt.date, dt.date]:
    """The days to split a shard over: its first and last day, padded by a day for time zones.

    Where a day is not known (the date field cannot be sorted on, or the hit has no date), the
    bound is a wide default: bisection prunes empty windows in a few requests.
    """
    low, high = dt.date(1900, 1, 1), dt.date.today() + dt.timedelta(days=2)
    pad = dt.timedelta(days=1)
    return (first - pad if first else low), (last + pad if last else high)


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


def windows(total: int, per_page: int, concurrency: int, most: int) -> list[Shard]:
    """Offset windows covering a search of ``total`` hits on a server with no cap.

    Whole pages each, at most ``most`` hits, and as many windows as a multiple of
    ``concurrency``, so that the last round of windows keeps every thread busy. Every page but
    the search's first is asked from one hit before (it must begin with the hit the page before
    ended on: see :func:`mediaframe.harvest.shards.fetch_shard`), so a page brings
    ``per_page - 1`` new hits, the first page ``per_page``: the windows are cut so, and take
    the fewest pages that can overlap, ``ceil((total - 1) / (per_page - 1))``.
    """
    if not total:
        return []
    step = max(1, per_page - 1)  # new hits a page past the first
    pages = max(1, math.ceil((total - 1) / step))
    count = math.ceil(pages * step / most)
    count = max(1, math.ceil(count / concurrency) * concurrency)
    width = math.ceil(pages / count) * step
    # the first window holds the first page's extra hit
    edges = [0, *range(width + 1, total, width), total]
    return [Shard(window=(start, stop, total)) for start, stop in itertools.pairwise(edges)]


def paged_whole(most: int, per_page: int) -> int:
    """The largest shard of at most ``most`` hits whose pages, each after the first asked from
    one hit before, are all whole: ``(per_page - 1) * n + 1`` hits in ``n`` pages."""
    if per_page < 2 or per_page >= most:
        return most
    return (per_page - 1) * (most // per_page) + 1


def windows_failed(
    total: int, leaves: Sequence[PlannedShard], outcomes: Mapping[str, ShardEntry]
) -> tuple[bool, int | None]:
    """Whether a plan of offset windows failed to bring its search whole — a window short, its
    pages in disagreement, the windows not adding up to the search — and the cap a short window
    shows (the deepest offset it reached), if any. Filter shards never fail here: the engine
    judges them as they are."""
    windowed = [
        (window, outcomes[leaf.id])
        for leaf in leaves
        if leaf.shard.get("window") and (window := Shard.from_dict(leaf.shard).window)
    ]
    if not windowed:
        return False, None
    windowed.sort(key=lambda found: found[0][0])
    reached = [
        window[0] + entry.rows
        for window, entry in windowed
        if entry.fault is None and entry.rows < entry.total
    ]
    cap = min(reached) if reached else None
    failed = any(entry.fault or entry.rows < entry.total for _, entry in windowed)
    return failed or not _meet(windowed) or sum(e.total for _, e in windowed) != total, cap


def _meet(windowed: list[tuple[tuple[int, int, int], ShardEntry]]) -> bool:
    """Whether each window, in offset order, begins right after the hit the one before ended
    on (its first page, asked from one hit before, began with that hit's key): a record
    deleted before a window's start and another added after leave every total as it was, yet
    shift the later windows by one. A window without the keys to tell cannot be joined."""
    for (earlier, previous), (window, entry) in itertools.pairwise(windowed):
        if earlier[1] != window[0]:
            return False
        if entry.before is None or previous.last is None or entry.before != previous.last:
            return False
    return True


def repeated_keys(frame: pd.DataFrame, key: tuple[str, ...]) -> int:
    """How many rows of ``frame`` repeat the key of an earlier row."""
    if len(frame) < 2 or not all(name in frame.columns for name in key):
        return 0
    columns = [frame[name].to_numpy("int64", na_value=-1) for name in key]
    order = np.lexsort(columns[::-1])
    same = np.ones(len(frame) - 1, dtype=bool)
    for values in columns:  # sorted, a repeated key sits right after its first row
        ordered = values[order]
        same &= ordered[1:] == ordered[:-1]
    return int(same.sum())


def optional_int_member(response: Mapping[str, Any], name: str) -> int | None:
    """:func:`int_member`, or ``None`` where the member is missing or null."""
    return None if response.get(name) is None else int_member(response, name)


def int_member(response: Mapping[str, Any], name: str) -> int:
    value = response.get(name)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ResponseFormatError(f"the search answer has no integer {name} (got {value!r})")
    try:
        return int(value)
    except ValueError:
        raise ResponseFormatError(
            f"the search answer's {name} is not a number: {value!r}"
        ) from None


#: What :meth:`ShardCounter._hit` gives for the day of a shard without hits.
_NO_HIT = object()


def _day_or_none(day: Any) -> dt.date | None:
    return None if day is _NO_HIT else day


def _hits(response: Mapping[str, Any], kind: str) -> list[Any]:
    """The records (or stories) of a decoded v1 answer; none where it holds none."""
    results = response.get("results")
    found = results.get(kind) if isinstance(results, Mapping) else None
    return found if isinstance(found, list) else []


def _item_day(item: Any, field: str | None) -> dt.date | None:
    """The day (UTC) of a decoded hit's date, read as its frame reads it; ``None`` when it has
    none or none that reads as a date (the shard's bounds are then the wide default)."""
    value = item.get(field) if field is not None and isinstance(item, Mapping) else None
    if not isinstance(value, str):
        return None
    try:
        stamp = timestamps([value], member=str(field), label=str)[0]
    except (ValueError, OverflowError, MalformedItemError):
        return None
    return None if pd.isna(stamp) else stamp.date()


def _first_day(frame: pd.DataFrame, field: str | None) -> dt.date | None:
    """The day of the first row's date (UTC; the caller pads a day for the server's zone)."""
    if field is None or field not in frame.columns or not len(frame):
        return None
    if pd.isna(frame[field].iloc[0]):
        return None
    return pd.Timestamp(frame[field].iloc[0]).date()
