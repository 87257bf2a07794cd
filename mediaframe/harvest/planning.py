"""The plan of a harvest: an interrupted run's where it still holds, else made (again), saved
as it is proven (see :class:`Planning`)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

import pandas as pd

from mediaframe.cache import HarvestStore
from mediaframe.cache.manifest import DayBounds, PlanFile, PlannedShard, ProvenSplit, ShardEntry
from mediaframe.cache.pages import is_plain_name
from mediaframe.exceptions import CacheError, CacheWarning, IncompleteResultError
from mediaframe.harvest.counter import Count, ShardCounter, padded
from mediaframe.harvest.kept import (
    CLOCK_SLACK,
    KeptFrames,
    changed_after,
    changed_since,
    intact_shards,
    kept_shards,
    needs_rows,
    still_valid,
    unchanged,
)
from mediaframe.harvest.plan import plan
from mediaframe.harvest.progress import Progress
from mediaframe.harvest.shards import EarlyShards
from mediaframe.harvest.spec import Shard, Spec, Statuses
from mediaframe.harvest.windows import paged_whole, windows

__all__ = ["Planning", "stuck_moved"]

# With no cap (or everything retrievable) a big result is still cut into shards of this size, so
# that its pages are fetched several at once.
_UNCAPPED_SHARD = 10_000
# Planning's request budget: a count per expected leaf many times over, a few per collection, and
# a constant, never more than the most. A server whose counts do not add up (a total its shards
# never reach) would otherwise have the planner cut and count without end.
_BUDGET_PER_LEAF = 10
_BUDGET_PER_BASE = 4
_BUDGET_BASE = 1000
_BUDGET_MOST = 100_000
# Seconds between two checkpoints of the plan while it is being made (and at every failure):
# a kill loses at most this much planning.
_CHECKPOINT_EVERY = 0.5


class Planning:
    """The plan of a harvest: an interrupted run's where it still holds, else made (again).

    Made, it is saved as soon as the root is counted and again as splits are proven, so that a
    run killed while planning is replayed rather than planned again.
    """

    def __init__(
        self,
        counter: ShardCounter,
        spec: Spec,
        store: HarvestStore,
        early: EarlyShards,
        pool: Executor,
        bases: Sequence[int],
        statuses: Statuses | None,
        provenance: Mapping[str, Any] | None,
        shown: Progress,
        windows: int = 0,
        kept_frames: KeptFrames | None = None,
        lag: dt.timedelta = CLOCK_SLACK,
    ) -> None:
        self.counter, self.spec, self.store, self.early = counter, spec, store, early
        #: Reads the frames of the finished shards a resume keeps (threads only: Dask workers
        #: leave every frame in the store).
        self.kept_frames = kept_frames
        #: How long before the interrupted run began an update still counts as a change
        #: (the user's sync lag: one setting for how far back a resume and a sync look).
        self.lag = lag
        #: With no cap, page by offset windows, a multiple of this many (0: plan filter shards).
        self.windows = windows
        #: A cap the server did not tell of, seen when windows came back short: shards are
        #: planned under it.
        self.learned_cap: int | None = None
        self.shown = shown
        self.pool, self.bases, self.statuses = pool, bases, statuses
        self.provenance = dict(provenance or {})
        #: The dataset published when this run began (its plan is saved over it).
        self.over: str | None = None
        self._saved_at = 0.0
        self._lock = threading.Lock()
        #: When this run began (ISO 8601, UTC): what its plan keeps is as of then.
        self.began: str | None = None

    def run(self, resume: bool) -> tuple[PlanFile, dict[str, ShardEntry]]:
        """The plan, and the shards already finished that it keeps, by id."""
        self.over = self.store.published()
        found = self.store.load_plan() if resume else None
        saved = _resumable(found, self.spec, self.over, self.store.url)
        if not resume or (found is not None and saved is None):
            self.store.clear_plan()  # with the shards it made: they are not to be kept either
        # What is kept below is as of this run's start, checked or made by it.
        self.began = dt.datetime.now(dt.UTC).isoformat()
        # One count says whether the catalogue kept its size since the saved plan was made.
        root = self.counter(Shard())
        self.shown.planning(root.total)
        unmoved = saved is not None and saved.total == root.total
        if saved is not None and saved.stuck and stuck_moved(self.counter, saved, root.total):
            # shards stuck while the catalogue changed were stuck by the change, not the cap
            unmoved, saved = False, None
        if (
            unmoved
            and saved is not None
            and changed_since(self.counter, changed_after(saved, self.lag))
        ):
            # the same total, yet records added or edited since (a deletion beside an
            # addition): what was kept is checked, as when the total moved
            unmoved = False
        if found is not None and not unmoved:
            self.store.clear_pages()  # pages kept within a shard may have shifted since
        checked: dict[str, ShardEntry] | None = None  # finished shards found unchanged now
        if saved is not None and saved.planned:
            self.counter.capped_engine = saved.capped_engine
            if unmoved:
                return self._resumed(saved), self._read_ahead(kept_shards(self.store, saved))
            if not any(Shard.from_dict(leaf.shard).window for leaf in saved.leaves):
                valid, covered = still_valid(
                    self.store, saved, self.counter, self.pool, root.total, self.lag
                )
                if covered:
                    return self._resumed(saved), self._read_ahead(valid)
                # a record past every shard's bounds (added since, created today): plan again,
                # keeping those just found unchanged where the new plan finds them
                checked = valid
            # windows of a search that changed no longer hold what they held: plan again
        if checked is not None:
            self.early.keep(self._read_ahead(checked), trusted=True)
        elif resume:
            # Shards finished by a run killed while planning: trusted if nothing changed since,
            # else each is checked with one request where the plan finds it again.
            cut = changed_after(saved, self.lag) if saved is not None else None
            self.early.keep(
                self._read_ahead(intact_shards(self.store)),
                trusted=unmoved,
                check=functools.partial(self._unchanged, cut=cut),
            )
        else:
            self.store.clear_shards()
        trusted = saved if saved is not None and unmoved else None
        made = self._plan(root, trusted)
        self.early.forget_all_but({leaf.id for leaf in made.leaves})
        return made, dict(self.early.reused)

    def _resumed(self, saved: PlanFile) -> PlanFile:
        """``saved``, as of this run's start: saved so, for what it keeps is checked as of now."""
        resumed = dataclasses.replace(saved, started=self.began)
        self._save(resumed)
        return resumed

    def _unchanged(self, shard: Shard, entry: ShardEntry, *, cut: pd.Timestamp | None) -> bool:
        """Whether a shard finished by the interrupted run is unchanged (one request)."""
        try:
            rows = self.store.read_shard(entry) if needs_rows(entry, cut) else None
        except CacheError:
            rows = None
        return unchanged(self.counter, shard, entry, rows, cut)[0]

    def _read_ahead(self, kept: dict[str, ShardEntry]) -> dict[str, ShardEntry]:
        """``kept``, whose frames start being read back while the rest is planned and paged."""
        if self.kept_frames is not None:
            self.kept_frames.read(kept)
        return kept

    def _plan(self, root: Count, saved: PlanFile | None) -> PlanFile:
        """Count and split the root, starting on each leaf as soon as it is proven; the splits
        and counts of ``saved`` (an interrupted run's) are taken as they are."""
        counter = self.counter
        cap = root.retrievable if root.over_cap else None
        if cap is None and self.windows and not counter.capped_engine:
            return self._windowed(root)
        if cap is None and self.learned_cap is not None and self.learned_cap < root.total:
            cap = max(1, self.learned_cap)
        # pages after a shard's first overlap by a hit: shards of whole pages all the same
        most = paged_whole(_UNCAPPED_SHARD, counter.page_size)
        limit = cap if cap is not None else min(max(root.total, 1), most)
        counter.page_size = min(counter.page_size, limit)  # a probe must fit in one answer
        checkpoint = PlanFile(
            spec=self.spec.identity(),
            provenance=self.provenance,
            total=root.total,
            cap=cap,
            capped_engine=counter.capped_engine,
            splits=dict(saved.splits) if saved else {},
            counts=dict(saved.counts) if saved else {},
            days=dict(saved.days) if saved else {},
            over=self.over,
            started=self.began,
        )
        self._save(checkpoint)
        known = dict(checkpoint.counts)
        known_days = dict(checkpoint.days)
        counting = self.early.counting(counter, limit)
        budget = self._budget(root.total, limit)
        spent_before = counter.requests

        def spend() -> None:
            spent = counter.requests - spent_before
            if spent >= budget:
                raise IncompleteResultError(
                    f"the server's counts do not add up: planning this {self.spec.kind} search "
                    f"of {root.total} hits under a cap of {limit} sent {spent} requests, past "
                    f"its budget of {budget}, without finding shards whose counts add up to "
                    "the whole. The server may report totals its searches never return: try "
                    "again later, narrow the query, or tell the service's administrators."
                )

        def bounds(shard: Shard) -> tuple[dt.date, dt.date]:
            days = known_days.get(shard.id)  # found by the interrupted run
            if days is None:
                spend()
                first, last = counter.days(shard)
                days = DayBounds(_iso(first), _iso(last))
                with self._lock:
                    checkpoint.days[shard.id] = days
            return padded(_day(days.first), _day(days.last))

        def count(shard: Shard, expected: float | None = None) -> Count:
            if shard.id in known:  # counted by the interrupted run
                return Count(known[shard.id], known[shard.id])
            spend()
            counted = counting(shard, expected)
            with self._lock:
                checkpoint.counts[shard.id] = counted.total
            return counted

        def proven(shard: Shard, level: int, total: int, kids: list[tuple[Shard, int]]) -> None:
            children = [_planned(kid, kid_total) for kid, kid_total in kids]
            with self._lock:
                checkpoint.splits[shard.id] = ProvenSplit(level, total, children)
            if time.monotonic() - self._saved_at >= _CHECKPOINT_EVERY:
                self._save(checkpoint)

        def disagreed(shard: Shard) -> None:
            with self._lock:
                checkpoint.disagreed.append(shard.id)

        try:
            leaves, stuck = self._split(
                root, limit, count, bounds, checkpoint.splits, proven, disagreed
            )
        except BaseException:
            # a revoked token, a dropped network: what was proven is kept for the next run (best
            # effort: a full disk is no reason to tell another error than the planning's)
            with contextlib.suppress(CacheError):
                self._save(checkpoint)
            raise
        # a root counted again (the catalogue moved while it was split): its proven split says
        # how many hits the leaves partition
        split_root = checkpoint.splits.get(Shard().id)
        made = dataclasses.replace(
            checkpoint,
            total=checkpoint.total if split_root is None else split_root.total,
            capped_engine=counter.capped_engine,
            leaves=[_planned(s, n) for s, n in leaves]
            + [_planned(s, n, stuck=True) for s, n in stuck],
            planned=True,
        )
        self._save(made)
        return made

    def _budget(self, total: int, limit: int) -> int:
        """How many requests planning may send: past them, the counts do not add up."""
        leaves = -(-total // max(1, limit))
        found = _BUDGET_BASE + _BUDGET_PER_BASE * len(self.bases) + _BUDGET_PER_LEAF * leaves
        return min(found, _BUDGET_MOST)

    def _windowed(self, root: Count) -> PlanFile:
        """The plan of a search on a server with no cap: offset windows of the whole."""
        found = windows(root.total, self.counter.page_size, self.windows, _UNCAPPED_SHARD)
        made = PlanFile(
            spec=self.spec.identity(),
            provenance=self.provenance,
            total=root.total,
            cap=None,
            capped_engine=False,
            leaves=[_planned(shard, shard.size(root.total)) for shard in found],
            planned=True,
            over=self.over,
            started=self.began,
        )
        self._save(made)
        return made

    def _save(self, checkpoint: PlanFile) -> None:
        with self._lock:  # counts come in on the pool's threads
            self.store.save_plan(checkpoint)
        self._saved_at = time.monotonic()

    def _split(
        self,
        root: Count,
        limit: int,
        count: Callable[..., Count],
        bounds: Callable[[Shard], tuple[dt.date, dt.date]],
        splits: Mapping[str, ProvenSplit],
        proven: Callable[[Shard, int, int, list[tuple[Shard, int]]], None],
        disagreed: Callable[[Shard], None],
    ) -> tuple[list[tuple[Shard, int]], list[tuple[Shard, int]]]:
        return plan(
            count,
            root=Shard(),
            root_count=root,
            cap=limit,
            spec=self.spec,
            bases=self.bases,
            statuses=self.statuses,
            bounds=bounds,
            pool=self.pool,
            on_leaf=_shown_when_found(self.shown, self.early.start),
            proven={
                shard_id: (split.level, split.total, [_shard(c) for c in split.children])
                for shard_id, split in dict(splits).items()
            },
            on_split=proven,
            on_disagreed=disagreed,
        )


# Stuck shards counted again to tell a changing catalogue from a cap (the rest are like them).
_STUCK_RECOUNTED = 5


def stuck_moved(counter: ShardCounter, the_plan: PlanFile, total: int | None = None) -> bool:
    """Whether the catalogue moved since ``the_plan`` was made with stuck shards: the search's
    total (``total``, counted now, else counted here) or a stuck shard's count is not what the
    plan found. Its shards were then stuck by the change (their children's counts did not add
    up), not by the server's cap: planning again may well get under it."""
    if total is None:
        total = counter(Shard()).total
    if total != the_plan.total:
        return True
    for leaf in the_plan.stuck[:_STUCK_RECOUNTED]:
        if leaf.id != Shard().id and counter(Shard.from_dict(leaf.shard)).total != leaf.expected:
            return True
    return False


def _iso(day: dt.date | None) -> str | None:
    return None if day is None else day.isoformat()


def _day(text: str | None) -> dt.date | None:
    """The day a plan file holds; one it holds in another shape is not known (the wide
    default then: bisection finds the days at the cost of a few counts)."""
    try:
        return None if text is None else dt.date.fromisoformat(text)
    except ValueError:
        return None


def _planned(shard: Shard, total: int, *, stuck: bool = False) -> PlannedShard:
    return PlannedShard(id=shard.id, shard=shard.to_dict(), expected=total, stuck=stuck)


def _shard(planned: PlannedShard) -> tuple[Shard, int]:
    return Shard.from_dict(planned.shard), planned.expected


def _shown_when_found(shown: Progress, start: Callable[..., None]) -> Callable[..., None]:
    def found(shard: Shard, *rest: Any) -> None:
        shown.found(shard.id)
        start(shard, *rest)

    return found


def _resumable(saved: PlanFile | None, spec: Spec, over: str | None, where: str) -> PlanFile | None:
    """``saved`` if it is the plan of an unfinished harvest of ``spec``, else ``None``.

    A plan made under another published dataset than ``over`` (the one published now) is that
    of a harvest that was published and killed before it cleared its plan: resumed, it would
    republish its old rows as fresh without a request. A plan with a shard whose bounds cannot
    be read, or whose id is not the one its bounds make, is damage: dropped with a warning,
    for a shard's id names its files (``shards/<id>.pages``) and must never name another path.
    """
    if saved is None or saved.spec != spec.identity() or saved.over != over:
        return None
    flaw = _malformed(saved)
    if flaw is not None:
        warnings.warn(
            f"the plan of the harvest in progress at {where} is damaged ({flaw}): planning again",
            CacheWarning,
            stacklevel=2,
        )
        return None
    return saved


def _malformed(saved: PlanFile) -> str | None:
    """What is wrong with a shard of ``saved`` (its leaves, its splits' children), if anything."""
    for shards in [saved.leaves, *(split.children for split in saved.splits.values())]:
        for planned in shards:
            try:
                shard = Shard.from_dict(planned.shard)
                canonical = shard.to_dict()
            except (ValueError, TypeError) as err:
                return f"shard {planned.id!r:.80} has bounds that cannot be read: {err!s:.120}"
            if planned.id != shard.id or not is_plain_name(shard.id):
                return f"shard {planned.id!r:.80} is not named for its bounds"
            if canonical != planned.shard or not all(type(b) is int for b in shard.bases):
                return f"shard {planned.id!r:.80} has bounds of the wrong types"
    return None
