"""Running a harvest: plan (or resume), page the shards, assemble, prove, publish.

Each finished shard is written to the cache with a checksum, and the plan is saved as it is
proven, so a harvest killed at any point resumes with only what it lacks. Shard tasks are
picklable and write their own files, so a Dask cluster (``client.get_executor()``) can run them
against shared storage. One writer at a time works in a harvest folder (its lock is held from
the first request to publication); readers keep reading the published dataset meanwhile.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any

import pandas as pd

from mediaframe.cache import HarvestStore
from mediaframe.cache.manifest import DayBounds, PlanFile, PlannedShard, ProvenSplit, ShardEntry
from mediaframe.exceptions import IncompleteResultError, IncompleteResultWarning
from mediaframe.harvest.assemble import assemble
from mediaframe.harvest.kept import KeptFrames, intact_shards, kept_shards, still_valid
from mediaframe.harvest.plan import (
    Count,
    CountRoute,
    Page,
    Shard,
    ShardCounter,
    Spec,
    Statuses,
    padded,
    plan,
    to_plain,
    windows,
    windows_failed,
)
from mediaframe.harvest.progress import Bars, Progress, shown_while
from mediaframe.harvest.reads import PageReads
from mediaframe.harvest.report import HarvestReport
from mediaframe.harvest.shards import (
    Combine,
    Deliver,
    EarlyShards,
    Joiner,
    ShardTask,
)

# With no cap (or everything retrievable) a big result is still cut into shards of this size, so
# that its pages are fetched several at once.
_UNCAPPED_SHARD = 10_000
# Seconds between two checkpoints of the plan while it is being made (and at every failure):
# a kill loses at most this much planning.
_CHECKPOINT_EVERY = 0.5


@dataclasses.dataclass(frozen=True)
class EngineOptions:
    """How a harvest runs, beside what it searches and where it keeps it (see :func:`harvest`)."""

    combine: Combine
    #: Reads counts as decoded JSON (:class:`~mediaframe.harvest.plan.ShardCounter`); through
    #: the page route, as frames, when ``None``.
    count: CountRoute | None = None
    bases: Sequence[int] = ()
    statuses: Statuses | None = None
    per_page: int = 1000
    concurrency: int = 4
    executor: Executor | None = None
    allow_incomplete: bool = False
    #: The displays of the call (tqdm bars or a callback), one per harvest it runs.
    progress: Bars | None = None
    provenance: Mapping[str, Any] | None = None

    def harvest(
        self,
        page: Page,
        spec: Spec,
        store: HarvestStore,
        *,
        resume: bool = True,
        doing: str = "harvesting",
    ) -> tuple[pd.DataFrame, HarvestReport]:
        """:func:`harvest` with these options, shown as ``doing`` from its first request."""
        with shown_while(self.progress, doing) as shown:
            return harvest(
                page,
                spec,
                store,
                combine=self.combine,
                count=self.count,
                bases=self.bases,
                statuses=self.statuses,
                per_page=self.per_page,
                concurrency=self.concurrency,
                executor=self.executor,
                allow_incomplete=self.allow_incomplete,
                progress=shown,
                provenance=self.provenance,
                resume=resume,
            )


def harvest(
    page: Page,
    spec: Spec,
    store: HarvestStore,
    *,
    combine: Combine,
    count: CountRoute | None = None,
    bases: Sequence[int] = (),
    statuses: Statuses | None = None,
    per_page: int = 1000,
    concurrency: int = 4,
    executor: Executor | None = None,
    allow_incomplete: bool = False,
    progress: Progress | None = None,
    provenance: Mapping[str, Any] | None = None,
    resume: bool = True,
) -> tuple[pd.DataFrame, HarvestReport]:
    """Retrieve every hit of ``spec``, resuming from ``store`` when a plan is there.

    Parameters
    ----------
    page : reads one page of the search route: ``page(**params) -> (response, frame)``.
    combine : joins page and shard frames into one (dtypes decided over the whole).
    count : reads a one-hit search as decoded JSON, for counts; ``page`` reads them otherwise.
    bases, statuses : the user's searchable base ids, and ``{base_id: (databox_id, bits)}``.
    executor : runs shard tasks (a Dask ``client.get_executor()`` for a cluster); threads
        otherwise. Tasks write their shard to ``store``, so it must be shared storage.
    progress : the display of this harvest, told of counts, shards and rows as they come (the
        caller enters and leaves it, so that it shows before the first request).
    resume : go on from an interrupted harvest of the same search in ``store``: the splits it
        proved are replayed and its finished shards kept, without a request each, when the
        search's total has not moved since (else each kept shard is checked by a count).

    Returns
    -------
    The deduplicated frame sorted by key, and the report proving (or not) completeness.

    Raises
    ------
    IncompleteResultError
        Some hits could not be retrieved and ``allow_incomplete`` is false.
    """
    started = time.monotonic()
    shown = progress if progress is not None else Progress(spec.kind, spec.kind, [])
    # How pages were read (natively or decoded): counted in this process for its threads, and
    # by each shard task on a Dask worker, into the shard's entry (added below).
    reads = PageReads()
    counted = reads.counting(page)
    counter = ShardCounter(
        shown.counting(counted),
        spec,
        page_size=per_page,
        count=shown.counting(count) if count is not None else None,
    )
    if executor is None:
        page = counted
    report = HarvestReport(kind=spec.kind, query=spec.query, filters=to_plain(spec.filters))
    # The joiner outlives the pool: shards still running when something fails deliver to it.
    with (
        store.writing(),
        Joiner(combine, store if executor is None else None) as joiner,
        KeptFrames(store) as kept_frames,
        ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="mediaframe") as pool,
    ):
        runner = executor or pool
        # Threads hand their frames to the joiner; Dask workers leave theirs in the store, and
        # so the kept shards are read back from it at the end, not ahead.
        deliver = joiner.add if executor is None else None
        reading = kept_frames if executor is None else None

        def new_task(deliver: Deliver | None = deliver) -> ShardTask:
            # a shard's rows are shown once written, even before the planner proves it a leaf
            if deliver is not None:
                deliver = _shown_on_delivery(shown, deliver)
            task = ShardTask(page, spec, store, per_page, counter.capped_engine, combine, deliver)
            return dataclasses.replace(task, count_reads=executor is not None, resume=resume)

        # With no cap the search is paged by offset windows, with no planning counts; windows
        # that do not come back whole (a cap after all, a search that moved) are given up for
        # filter shards, planned from scratch.
        learned: int | None = None  # the cap a server that claimed none showed
        for windowing in (concurrency, 0):  # windows in multiples of the threads, then none
            early = EarlyShards(new_task, runner, pool, deliver)
            planning = _Planning(
                counter, spec, store, early, pool, bases, statuses, provenance, shown, windowing,
                reading,
            )  # fmt: skip
            planning.learned_cap = learned
            try:
                the_plan, outcomes = planning.run(resume)
            except BaseException:
                # shards counted whole while planning, their split not proven yet, are kept
                # for the next run: once the counts still running are in
                pool.shutdown(wait=True, cancel_futures=True)
                joiner.hold(early.unproven())
                raise
            _refuse_stuck(the_plan, spec, allow_incomplete, early, report)
            report.total_results, report.cap = the_plan.total, the_plan.cap
            report.capped_engine = the_plan.capped_engine
            report.resumed_shards = len(outcomes)
            shown.paging(the_plan.total, shards=[leaf.id for leaf in the_plan.leaves])
            for shard_id, outcome in outcomes.items():
                shown.fetched(shard_id, outcome.rows)
            todo = [leaf for leaf in the_plan.leaves if leaf.id not in outcomes]
            paging = _start(todo, early, runner, new_task())
            # kept shards read back meanwhile are joined while the rest is paged
            read_back = _deliver_kept(outcomes, reading, deliver)
            outcomes.update(_finished(todo, paging, shown))
            report.requests += sum(outcomes[leaf.id].requests for leaf in todo)
            for leaf in todo:
                reads.merge(outcomes[leaf.id].page_reads)
            joined = joiner.parts()
            failed, learned = windows_failed(the_plan.total, the_plan.leaves, outcomes)
            if not failed:
                break
            joiner.restart()  # its writes done before planning again clears the shards
            joined = []
            for shard_id in outcomes:
                shown.fetched(shard_id, 0)  # their rows are not the result's
            resume = False
    # still the only writer: the batches being written and the last shards are this harvest's
    with store.writing():
        try:
            shown.writing()
            report.requests += counter.requests
            report.page_reads = reads.summary()
            held = set() if executor is not None else {leaf.id for leaf in todo} | read_back
            frame = assemble(store, spec, the_plan, outcomes, joined, held, combine, report)
            report.seconds = round(time.monotonic() - started, 3)
            _judge(report, the_plan, outcomes, counter, spec, allow_incomplete)
            joiner.settle()  # the batches still being written, before publication clears them
            _publish(store, the_plan, frame, report, spec, shown)
        except BaseException:
            # the last shards, for a rerun (of an incomplete result, say), while their plan is
            # there: a published harvest has cleared it, and its shards with it
            if store.load_plan() is not None:
                joiner.keep_rest()
            raise
    return frame, report


class _Planning:
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
    ) -> None:
        self.counter, self.spec, self.store, self.early = counter, spec, store, early
        #: Reads the frames of the finished shards a resume keeps (threads only: Dask workers
        #: leave every frame in the store).
        self.kept_frames = kept_frames
        #: With no cap, page by offset windows, a multiple of this many (0: plan filter shards).
        self.windows = windows
        #: A cap the server did not tell of, seen when windows came back short: shards are
        #: planned under it.
        self.learned_cap: int | None = None
        self.shown = shown
        self.pool, self.bases, self.statuses = pool, bases, statuses
        self.provenance = dict(provenance or {})
        self._saved_at = 0.0
        self._lock = threading.Lock()

    def run(self, resume: bool) -> tuple[PlanFile, dict[str, ShardEntry]]:
        """The plan, and the shards already finished that it keeps, by id."""
        saved = _resumable(self.store.load_plan(), self.spec) if resume else None
        if not resume:
            self.store.clear_plan()
        # One count says whether the catalogue kept its size since the saved plan was made.
        root = self.counter(Shard())
        self.shown.planning(root.total)
        unmoved = saved is not None and saved.total == root.total
        if saved is not None and saved.planned:
            self.counter.capped_engine = saved.capped_engine
            if unmoved:
                return saved, self._read_ahead(kept_shards(self.store, saved))
            if not any(Shard.from_dict(leaf.shard).window for leaf in saved.leaves):
                valid = still_valid(self.store, saved, self.counter, self.pool)
                return saved, self._read_ahead(valid)
            # windows of a search that moved no longer hold what they held: plan again
        if resume:
            # Shards finished by a run killed while planning: their counts are trusted if the
            # whole did not move, else each is checked by a one-hit count.
            self.early.keep(self._read_ahead(intact_shards(self.store)), trusted=unmoved)
        else:
            self.store.clear_shards()
        trusted = saved if saved is not None and unmoved else None
        made = self._plan(root, trusted)
        self.early.forget_all_but({leaf.id for leaf in made.leaves})
        return made, dict(self.early.reused)

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
        limit = cap if cap is not None else min(max(root.total, 1), _UNCAPPED_SHARD)
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
        )
        self._save(checkpoint)
        known = dict(checkpoint.counts)
        known_days = dict(checkpoint.days)
        counting = self.early.counting(counter, limit)

        def bounds(shard: Shard) -> tuple[dt.date, dt.date]:
            days = known_days.get(shard.id)  # found by the interrupted run
            if days is None:
                first, last = counter.days(shard)
                days = DayBounds(_iso(first), _iso(last))
                with self._lock:
                    checkpoint.days[shard.id] = days
            return padded(_day(days.first), _day(days.last))

        def count(shard: Shard, expected: float | None = None) -> Count:
            if shard.id in known:  # counted by the interrupted run
                return Count(known[shard.id], known[shard.id])
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

        try:
            leaves, stuck = self._split(root, limit, count, bounds, checkpoint.splits, proven)
        except BaseException:
            # a revoked token, a dropped network: what was proven is kept for the next run
            self._save(checkpoint)
            raise
        made = dataclasses.replace(
            checkpoint,
            capped_engine=counter.capped_engine,
            leaves=[_planned(s, n) for s, n in leaves]
            + [_planned(s, n, stuck=True) for s, n in stuck],
            planned=True,
        )
        self._save(made)
        return made

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
        )


def _iso(day: dt.date | None) -> str | None:
    return None if day is None else day.isoformat()


def _day(text: str | None) -> dt.date | None:
    """The day a plan file holds; one it holds in another shape is not known (the wide
    default then: bisection finds the days at the cost of a few counts)."""
    try:
        return None if text is None else dt.date.fromisoformat(text)
    except ValueError:
        return None


def _deliver_kept(
    kept: Mapping[str, ShardEntry], frames: KeptFrames | None, deliver: Deliver | None
) -> set[str]:
    """Hand the frames of the ``kept`` shards read back to ``deliver``; their ids."""
    if frames is None or deliver is None:
        return set()
    taken = frames.taken(kept)
    for shard_id, frame in taken.items():
        deliver(kept[shard_id], frame)
    return set(taken)


def _planned(shard: Shard, total: int, *, stuck: bool = False) -> PlannedShard:
    return PlannedShard(id=shard.id, shard=shard.to_dict(), expected=total, stuck=stuck)


def _shard(planned: PlannedShard) -> tuple[Shard, int]:
    return Shard.from_dict(planned.shard), planned.expected


def _refuse_stuck(
    the_plan: PlanFile,
    spec: Spec,
    allow_incomplete: bool,
    early: EarlyShards,
    report: HarvestReport,
) -> None:
    """Stop before paging when some shards cannot be retrieved whole and that is not allowed."""
    if not the_plan.stuck or allow_incomplete:
        return
    for future in early.futures.values():
        future.cancel()
    raise IncompleteResultError(
        _stuck_message(the_plan, spec),
        shards=[dataclasses.asdict(leaf) for leaf in the_plan.stuck],
        report=report,
    )


def _start(
    todo: list[PlannedShard], early: EarlyShards, runner: Executor, task: ShardTask
) -> list[Future[ShardEntry]]:
    """Start paging every unfinished shard (those started while planning go on)."""
    return [
        early.futures.pop(leaf.id) if leaf.id in early.futures else runner.submit(task, leaf)
        for leaf in todo
    ]


def _finished(
    todo: list[PlannedShard], futures: list[Future[ShardEntry]], shown: Progress
) -> dict[str, ShardEntry]:
    """The outcomes of the shards :func:`_start` started, as they finish."""
    outcomes = {}
    for leaf, future in zip(todo, futures, strict=True):
        outcome = outcomes[leaf.id] = future.result()
        shown.fetched(leaf.id, outcome.rows)  # Dask's: threads' are shown already
    return outcomes


def _shown_on_delivery(shown: Progress, deliver: Deliver) -> Deliver:
    def delivered(entry: ShardEntry, frame: pd.DataFrame) -> None:
        shown.fetched(entry.id, len(frame))
        deliver(entry, frame)

    return delivered


def _shown_when_found(shown: Progress, start: Callable[..., None]) -> Callable[..., None]:
    def found(shard: Shard, *rest: Any) -> None:
        shown.found(shard.id)
        start(shard, *rest)

    return found


def _publish(
    store: HarvestStore,
    the_plan: PlanFile,
    frame: pd.DataFrame,
    report: HarvestReport,
    spec: Spec,
    shown: Progress,
) -> None:
    """Publish the dataset in one step; the plan and shards it was built from go after."""
    provenance = {
        **the_plan.provenance,
        "fetched_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "complete": report.complete,
        "report": report.to_dict(),
    }
    store.publish(
        frame,
        provenance,
        spec=spec.identity(),
        sort_by=spec.row_order,
        high_water=_high_water(frame),
        on_written=shown.written,
    )


def _high_water(frame: pd.DataFrame) -> str | None:
    """The latest ``updated_on`` fetched: the next incremental sync starts from it."""
    if "updated_on" not in frame.columns or frame["updated_on"].isna().all():
        return None
    return pd.Timestamp(frame["updated_on"].max()).isoformat()


def _stuck_message(the_plan: PlanFile, spec: Spec) -> str:
    stuck = the_plan.stuck
    cap = the_plan.cap or 0
    missing = sum(leaf.expected for leaf in stuck) - cap * len(stuck)
    return (
        f"{len(stuck)} shard(s) of this {spec.kind} search cannot be split under the server's "
        f"cap of {the_plan.cap} hits ({_ids([leaf.id for leaf in stuck])}), so about {missing} "
        f"of {the_plan.total} hits cannot be retrieved. Narrow the query, ask the server's "
        "administrator to raise the cap, or pass allow_incomplete=True to accept a partial result."
    )


def _ids(ids: Sequence[str]) -> str:
    names = [str(name) for name in ids[:5]]
    return ", ".join(names) + (", ..." if len(ids) > 5 else "") if names else "none"


def _resumable(saved: PlanFile | None, spec: Spec) -> PlanFile | None:
    return saved if saved is not None and saved.spec == spec.identity() else None


def _judge(
    report: HarvestReport,
    the_plan: PlanFile,
    outcomes: Mapping[str, ShardEntry],
    counter: ShardCounter,
    spec: Spec,
    allow_incomplete: bool,
) -> None:
    """Prove completeness: every shard whole, and the shard totals add up to the global total."""
    short = [s for s in report.shards if s["fetched"] < (s["total"] or 0)]
    report.incomplete = [dataclasses.asdict(leaf) for leaf in the_plan.stuck]
    stuck_extra = [{"id": sid, "stuck": o.stuck} for sid, o in outcomes.items() if o.stuck]
    faults = [{"id": sid, "fault": o.fault} for sid, o in outcomes.items() if o.fault]
    shard_sum = sum(s["total"] or 0 for s in report.shards)
    total = report.total_results
    if shard_sum != total and not report.incomplete:
        # The catalogue may have changed while we paged: compare with a fresh count.
        total = report.total_results = counter(Shard()).total
        report.requests += 1
    report.complete = not (report.incomplete or short or stuck_extra or faults) and (
        # distinct keys are the coverage: a key served twice proves nothing about another
        report.fetched == total and report.fetched + report.duplicates == shard_sum
    )
    stuck_ids = {s["id"] for s in report.incomplete} | {f["id"] for f in faults}
    report.incomplete += [
        {"id": s["id"], "missing": s["total"] - s["fetched"]}
        for s in short
        if s["id"] not in stuck_ids
    ]
    report.incomplete += stuck_extra + faults
    if report.complete:
        return
    if faults:
        message = (
            f"only {report.fetched} of {total} {spec.kind} could be retrieved: the server's "
            f"pages disagree ({faults[0]['fault']}; {len(faults)} shard(s) in all) even when "
            "paged again. A proxy or cache between you and the server may be ignoring "
            "offset_start, or the catalogue is changing fast: try again later, or pass "
            "allow_incomplete=True to accept a partial result."
        )
    else:
        message = (
            f"only {report.fetched} of {total} {spec.kind} could be retrieved: "
            f"{len(report.incomplete)} shard(s) stayed above the server's cap of {report.cap} "
            f"or came back short ({_ids([entry['id'] for entry in report.incomplete])}). "
            "Narrow the query, ask the server's administrator to raise the cap, or pass "
            "allow_incomplete=True to accept a partial result."
        )
    if not allow_incomplete:
        raise IncompleteResultError(message, shards=report.incomplete, report=report)
    warnings.warn(message, IncompleteResultWarning, stacklevel=3)
