"""Running a harvest: plan (or resume), page the shards, assemble, prove, publish.

Finished shards are kept in the cache in batches, with a checksum, and the plan is saved as it
is proven, so a harvest killed at any point resumes with little more than what it lacks. Shard
tasks are picklable, so a Dask cluster (``client.get_executor()``) can run them against shared
storage, each writing its own shard. One writer at a time works in a harvest folder (its lock
is held from the first request to publication); readers keep reading the published dataset
meanwhile.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, as_completed
from typing import Any

import pandas as pd

from mediaframe.cache import HarvestStore
from mediaframe.cache.manifest import PlanFile, PlannedShard, ShardEntry
from mediaframe.exceptions import CacheError, IncompleteResultError
from mediaframe.harvest.assemble import assemble
from mediaframe.harvest.counter import CountRoute, ShardCounter
from mediaframe.harvest.joiner import Joiner
from mediaframe.harvest.judge import (
    REFUSED_SHORT,
    changing_message,
    judge,
    stopped_short,
    stuck_message,
)
from mediaframe.harvest.kept import CLOCK_SLACK, KeptFrames
from mediaframe.harvest.paging import Combine
from mediaframe.harvest.planning import Planning, stuck_moved
from mediaframe.harvest.progress import Bars, Progress, shown_while
from mediaframe.harvest.reads import PageReads
from mediaframe.harvest.report import HarvestReport
from mediaframe.harvest.shards import Deliver, EarlyShards, ShardTask
from mediaframe.harvest.spec import Page, Spec, Statuses, to_plain
from mediaframe.harvest.stop import Stop
from mediaframe.harvest.verify import check_filters
from mediaframe.harvest.warned import ServerWarnings
from mediaframe.harvest.windows import windows_failed
from mediaframe.http import slots

# Threads beyond the ``concurrency`` requests in flight: they read answers into frames while
# the others' requests are out, so that no connection waits for a read (mediaframe.http.slots).
_READERS = 2


@dataclasses.dataclass(frozen=True)
class EngineOptions:
    """How a harvest runs, beside what it searches and where it keeps it (see :func:`harvest`)."""

    combine: Combine
    #: Reads counts as decoded JSON (:class:`~mediaframe.harvest.counter.ShardCounter`); through
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
    #: A sync's changed pass: records edited into its ``updated_on`` window, open at its end,
    #: after their shard was read are the keys pass's to fetch, not rows this pass missed.
    changed_pass: bool = False
    #: How long before an interrupted run began an update still counts as a change, when it
    #: is resumed: the user's sync lag (``Settings.sync_lag``), so that one setting says how
    #: far back a resume and a sync look for the server's clock and slow indexing.
    lag: dt.timedelta = CLOCK_SLACK

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
                changed_pass=self.changed_pass,
                lag=self.lag,
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
    changed_pass: bool = False,
    lag: dt.timedelta = CLOCK_SLACK,
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
        search's total has not moved and none of its hits was updated since that harvest
        began (else each kept shard is checked with one request, and paged again if changed).
    changed_pass : this is a sync's changed pass (see :attr:`EngineOptions.changed_pass`).
    lag : how long before the interrupted run began an update still counts as a change, for
        the server's clock and slow indexing (see :attr:`EngineOptions.lag`).

    Returns
    -------
    The deduplicated frame sorted by key, and the report proving (or not) completeness; its
    ``server_warnings`` and ``notes`` keep what the answers warned of (warning the user is the
    caller's: ``client.records()`` does it once).

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
    # What the answers warned of: heard here, and by each shard task on a Dask worker (below).
    heard = ServerWarnings()
    # The first read that fails fails the harvest: the others send nothing more (Dask
    # workers' reads are not guarded: their tasks still queued are cancelled instead).
    stop = Stop()
    counted = reads.counting(heard.watching(stop.guarding(page)))
    count = heard.watching_counts(stop.guarding(count)) if count is not None else None
    counter = ShardCounter(
        shown.counting(counted),
        spec,
        page_size=per_page,
        count=shown.counting(count) if count is not None else None,
        # on a cluster every shard is the workers' to fetch: a small one counted by its whole
        # page would be fetched here (all of them, where the cap is at most a page)
        whole_pages=executor is None,
    )
    if executor is None:
        page = counted
    # One writer of the folder from the first request to publication: a second harvest of
    # the same search waits, rather than resume or clear this one's plan while its batches land.
    with store.writing():
        report = HarvestReport(kind=spec.kind, query=spec.query, filters=to_plain(spec.filters))
        # The joiner outlives the pool: shards still running when something fails deliver to it.
        with (
            Joiner(combine, store if executor is None else None) as joiner,
            KeptFrames(store) as kept_frames,
            ThreadPoolExecutor(
                max_workers=concurrency + _READERS,
                thread_name_prefix="mediaframe",
                initializer=slots.limit,  # yet never more than concurrency requests out at once
                initargs=(stop.slots(concurrency),),  # and none once the harvest failed
            ) as pool,
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
                task = ShardTask(
                    page, spec, store, per_page, counter.capped_engine, combine, deliver
                )
                return dataclasses.replace(task, count_reads=executor is not None, resume=resume)

            # With no cap the search is paged by offset windows, with no planning counts; windows
            # that do not come back whole (a cap after all, a search that moved) are given up for
            # filter shards, planned from scratch.
            learned: int | None = None  # the cap a server that claimed none showed
            for windowing in (concurrency, 0):  # windows in multiples of the threads, then none
                early = EarlyShards(new_task, runner, pool, deliver)
                planning = Planning(
                    counter, spec, store, early, pool, bases, statuses, provenance, shown,
                    windowing, reading, lag,
                )  # fmt: skip
                planning.learned_cap = learned
                first: BaseException | None = None
                try:
                    the_plan, outcomes = planning.run(resume)
                except BaseException as err:
                    # shards counted whole while planning, their split not proven yet, are kept
                    # for the next run: once the counts still running are in (they stop before
                    # their next request), those queued cancelled, on a cluster too
                    first = stop.fail(err)
                    for future in early.futures.values():
                        future.cancel()
                    pool.shutdown(wait=True, cancel_futures=True)
                    joiner.hold(early.unproven())
                if first is not None:
                    raise first  # the first failure: not a read refused after it
                report.heard(heard.counts())  # told by an IncompleteResultError's report too
                _refuse_stuck(the_plan, spec, allow_incomplete, early, report, counter)
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
                outcomes.update(_finished(todo, paging, shown, stop))
                report.requests += sum(outcomes[leaf.id].requests for leaf in todo)
                for leaf in todo:
                    reads.merge(outcomes[leaf.id].page_reads)
                    heard.merge(outcomes[leaf.id].warned)
                joined = joiner.parts()
                failed, learned = windows_failed(the_plan.total, the_plan.leaves, outcomes)
                if not failed:
                    break
                joiner.restart()  # its writes done before planning again clears the shards
                joined = []
                for shard_id in outcomes:
                    shown.fetched(shard_id, 0)  # their rows are not the result's
                resume = False
        # the batches still being written and the last shards are this harvest's alone
        try:
            shown.writing()
            report.requests += counter.requests
            report.page_reads = reads.summary()
            report.heard(heard.counts())
            held = set() if executor is not None else {leaf.id for leaf in todo} | read_back
            frame = assemble(store, spec, the_plan, outcomes, joined, held, combine, report)
            check_filters(frame, spec)  # a server that ignored one gave other hits: not kept
            report.seconds = round(time.monotonic() - started, 3)
            judge(report, the_plan, outcomes, counter, spec, allow_incomplete, changed_pass)
            joiner.settle()  # the batches still being written, before publication clears them
            _publish(store, the_plan, frame, report, spec, shown)
        except BaseException as err:
            # the last shards, for a rerun (of an incomplete result, say), while their plan is
            # there: a published harvest has cleared it, and its shards with it
            # (a plan that cannot be read is no reason to tell another error than the harvest's)
            with contextlib.suppress(CacheError):
                if store.load_plan() is not None:
                    joiner.keep_rest()
                    if isinstance(err, IncompleteResultError):
                        # refused for them: the rerun the refusal asks for pages them again
                        store.mark_faulty(stopped_short(report, outcomes), REFUSED_SHORT)
            raise
        return frame, report


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


def _refuse_stuck(
    the_plan: PlanFile,
    spec: Spec,
    allow_incomplete: bool,
    early: EarlyShards,
    report: HarvestReport,
    counter: ShardCounter,
) -> None:
    """Stop before paging when some shards cannot be retrieved whole and that is not allowed."""
    if not the_plan.stuck or allow_incomplete:
        return
    for future in early.futures.values():
        future.cancel()
    raise IncompleteResultError(
        changing_message(the_plan, spec)
        if stuck_moved(counter, the_plan)
        else stuck_message(the_plan, spec),
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
    todo: list[PlannedShard], futures: list[Future[ShardEntry]], shown: Progress, stop: Stop
) -> dict[str, ShardEntry]:
    """The outcomes of the shards :func:`_start` started, as they finish.

    At the first that fails the harvest stops: the shards still queued are cancelled (on a
    cluster too), those running stop before their next request, and the first failure is
    raised (that of the first read that failed, when one did), not one that came after it.
    """
    leaves = {future: leaf for leaf, future in zip(todo, futures, strict=True)}
    failed: BaseException | None = None
    try:
        for future in as_completed(leaves):
            shown.fetched(leaves[future].id, future.result().rows)  # threads' are shown already
    except BaseException as err:  # an interrupt too: the shards queued are not begun
        failed = stop.fail(err)
        for future in futures:
            future.cancel()
    if failed is not None:
        raise failed
    return {leaf.id: future.result() for leaf, future in zip(todo, futures, strict=True)}


def _shown_on_delivery(shown: Progress, deliver: Deliver) -> Deliver:
    def delivered(entry: ShardEntry, frame: pd.DataFrame) -> None:
        shown.fetched(entry.id, len(frame))
        deliver(entry, frame)

    return delivered


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
