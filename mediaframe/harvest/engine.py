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
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, as_completed
from typing import Any

import pandas as pd

from mediaframe.cache import HarvestStore
from mediaframe.cache.manifest import PlanFile, PlannedShard, ShardEntry
from mediaframe.exceptions import CacheError, IncompleteResultError, IncompleteResultWarning
from mediaframe.harvest.assemble import assemble
from mediaframe.harvest.counter import CountRoute, ShardCounter
from mediaframe.harvest.joiner import Joiner
from mediaframe.harvest.kept import CLOCK_SLACK, KeptFrames
from mediaframe.harvest.paging import PAST_TOTAL, Combine
from mediaframe.harvest.planning import Planning, stuck_moved
from mediaframe.harvest.progress import Bars, Progress, shown_while
from mediaframe.harvest.reads import PageReads
from mediaframe.harvest.report import HarvestReport
from mediaframe.harvest.shards import Deliver, EarlyShards, ShardTask
from mediaframe.harvest.spec import Page, Shard, Spec, Statuses, to_plain
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
            _judge(report, the_plan, outcomes, counter, spec, allow_incomplete, changed_pass)
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
                        store.mark_faulty(_stopped_short(report, outcomes), _REFUSED_SHORT)
            raise
        return frame, report


# The fault set on a shard whose run was refused because it stopped short of its count (a
# server answering short for a moment): a resume pages it again rather than keep it. Only a
# refusal marks it: a run killed before judging keeps it, so that resumes converge on a server
# that never serves more there.
_REFUSED_SHORT = "stopped short of its count in a run refused for it"


def _stopped_short(report: HarvestReport, outcomes: Mapping[str, ShardEntry]) -> list[str]:
    """The shards of a judged run short of their counts, but for those a split over the cap
    left partial on purpose and those already faulty (never reused: their fault says why)."""
    return [
        s["id"]
        for s in report.shards
        if s["fetched"] < (s["total"] or 0)
        and not outcomes[s["id"]].stuck
        and outcomes[s["id"]].fault is None
    ]


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
        _changing_message(the_plan, spec)
        if stuck_moved(counter, the_plan)
        else _stuck_message(the_plan, spec),
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


def _stuck_message(the_plan: PlanFile, spec: Spec) -> str:
    stuck = the_plan.stuck
    cap = the_plan.cap or 0
    if {leaf.id for leaf in stuck} & set(the_plan.disagreed):
        return _disagreeing_message(the_plan, spec)
    missing = sum(leaf.expected for leaf in stuck) - cap * len(stuck)
    return (
        f"{len(stuck)} shard(s) of this {spec.kind} search cannot be split under the server's "
        f"cap of {the_plan.cap} hits ({_ids([leaf.id for leaf in stuck])}), so about {missing} "
        f"of {the_plan.total} hits cannot be retrieved. Narrow the query, ask the server's "
        "administrator to raise the cap, or pass allow_incomplete=True to accept a partial result."
        + (_CAP_OF_ONE if the_plan.cap == 1 else "")
    )


def _disagreeing_message(the_plan: PlanFile, spec: Spec) -> str:
    """Shards stuck because their parts' counts never added up to theirs: not the cap's doing."""
    stuck = [leaf for leaf in the_plan.stuck if leaf.id in set(the_plan.disagreed)]
    return (
        f"the server's counts disagree: {len(stuck)} shard(s) of this {spec.kind} search "
        f"({_ids([leaf.id for leaf in stuck])}) were cut into parts whose counts never add up "
        f"to the shard's own, whatever they were cut by, so no plan under the server's cap of "
        f"{the_plan.cap} hits can be proven to hold its {the_plan.total} hits. The server (or a "
        "proxy before it) reports totals its searches do not hold, or some hits lack what they "
        "are cut by (dates): try again later, tell the service's administrators, or pass "
        "allow_incomplete=True to accept a partial result."
    )


def _changing_message(the_plan: PlanFile, spec: Spec) -> str:
    stuck = the_plan.stuck
    return (
        f"this {spec.kind} search could not be planned: the catalogue is changing (records "
        f"added or deleted while it was counted), so the counts of {len(stuck)} shard(s) "
        f"({_ids([leaf.id for leaf in stuck])}) never added up to those of the shards they "
        f"were split from (the search counted {the_plan.total} hits when planned, another "
        "number since). Run the same call again once the changes settle (it plans "
        "again), or with refresh=True to start afresh, or pass allow_incomplete=True to accept "
        "a partial result."
    )


# A cap of one hit is rarely meant: it is what two generations behind one address look like.
_CAP_OF_ONE = (
    " A cap of 1 is rare: the server's answers may come from nodes of two generations (a rolling"
    " upgrade behind a load balancer), some counting in available_results the hits of one page."
    " Try again once the upgrade is done."
)


def _ids(ids: Sequence[str]) -> str:
    names = [str(name) for name in ids[:5]]
    return ", ".join(names) + (", ..." if len(ids) > 5 else "") if names else "none"


def _changed_after_reading(
    report: HarvestReport, spec: Spec, planned: int, changed_pass: bool
) -> bool:
    """Whether a harvest whose every shard was paged whole is complete though its fresh count
    differs from the rows read, and if so say why in its notes.

    Fewer hits now than rows read: records deleted (or changed out of the search) after they
    were read. The result holds every hit as each shard was paged: complete as of its paging.
    More hits now in a sync's changed pass (a window on ``updated_on`` open at its end): the
    records edited since entered the window at that end; the sync's keys pass compares every
    version and fetches them, so they are no row this pass could have read. A user's own such
    search has no keys pass after it: its growth stays an incomplete result.
    """
    total = report.total_results
    if report.fetched > total:
        report.notes.append(
            f"{report.fetched - total} of the {report.fetched} {spec.kind} read were deleted "
            f"(or changed out of the search) after they were read: the search counted "
            f"{planned} hits when planned and {total} when judged. The result is complete as "
            "each shard was read; run again with refresh=True for the catalogue as it is now."
        )
        return True
    filters = spec.filters
    open_window = (
        changed_pass
        and filters.get("date_field") == "updated_on"
        and filters.get("date_min") is not None
        and filters.get("date_max") is None
    )
    if open_window:
        report.notes.append(
            f"{total - report.fetched} {spec.kind} entered the updated_on window after their "
            "shards were read (edited or added meanwhile): a sync's keys pass fetches them."
        )
    return open_window


def _judge(
    report: HarvestReport,
    the_plan: PlanFile,
    outcomes: Mapping[str, ShardEntry],
    counter: ShardCounter,
    spec: Spec,
    allow_incomplete: bool,
    changed_pass: bool = False,
) -> None:
    """Prove completeness: every shard whole, and the shard totals add up to the global total."""
    short = [s for s in report.shards if s["fetched"] < (s["total"] or 0)]
    report.incomplete = [dataclasses.asdict(leaf) for leaf in the_plan.stuck]
    stuck_extra = [{"id": sid, "stuck": o.stuck} for sid, o in outcomes.items() if o.stuck]
    faults = [{"id": sid, "fault": o.fault} for sid, o in outcomes.items() if o.fault]
    shard_sum = sum(s["total"] or 0 for s in report.shards)
    total = planned = report.total_results
    if shard_sum != total and not report.incomplete:
        # The catalogue may have changed while we paged: compare with a fresh count.
        total = report.total_results = counter(Shard()).total
        report.requests += 1
    # every shard paged to its own total (distinct keys are the coverage: a key served twice
    # proves nothing about another), nothing stuck, no page that could not be trusted
    whole = not (report.incomplete or short or stuck_extra or faults) and (
        report.fetched + report.duplicates == shard_sum
    )
    report.complete = whole and report.fetched == total
    if whole and not report.complete:
        report.complete = _changed_after_reading(report, spec, planned, changed_pass)
    stuck_ids = {s["id"] for s in report.incomplete} | {f["id"] for f in faults}
    report.incomplete += [
        {"id": s["id"], "missing": s["total"] - s["fetched"]}
        for s in short
        if s["id"] not in stuck_ids
    ]
    report.incomplete += stuck_extra + faults
    if report.complete:
        return
    past = [fault for fault in faults if PAST_TOTAL in fault["fault"]]
    if past:
        message = (
            f"only {report.fetched} of the hits of this {spec.kind} search could be retrieved: "
            f"{past[0]['fault']}. Its engine counts only so far (total_results {total}), so "
            "the result would be cut short. Narrow the query until its total is below that "
            "count, ask the service's administrators to have the engine count every hit, or "
            "pass allow_incomplete=True to accept a partial result."
        )
    elif faults:
        message = (
            f"only {report.fetched} of {total} {spec.kind} could be retrieved: the server's "
            f"pages disagree ({faults[0]['fault']}; {len(faults)} shard(s) in all) even when "
            "paged again. A proxy or cache between you and the server may be ignoring "
            "offset_start, or the catalogue is changing fast: try again later, or pass "
            "allow_incomplete=True to accept a partial result."
        )
    elif report.duplicates and not report.incomplete:
        message = (
            f"only {report.fetched} of {total} {spec.kind} could be retrieved: the pages "
            f"repeated keys ({report.duplicates} row(s) served twice across shards). A proxy or "
            "cache between you and the server may be ignoring offset_start, or the catalogue "
            "is changing fast: try again later, or pass allow_incomplete=True to accept a "
            "partial result."
        )
    elif not report.incomplete:
        # every shard whole, yet the search counts more now: records added (or moved between
        # shards) while it was paged; the rows read are not the search's hits of any moment
        message = (
            f"only {report.fetched} of {total} {spec.kind} could be retrieved: every shard was "
            f"read whole, but the catalogue is changing: the search counted {planned} hits when "
            f"it was planned, {shard_sum} while it was paged and {total} now. Run the same call "
            "again once the changes settle (it pages again only what moved), or with "
            "refresh=True to start afresh, or pass allow_incomplete=True to accept this result."
        )
    elif not (the_plan.stuck or stuck_extra):
        # none stuck under a cap, no page in disagreement: shards whose paging stopped short
        message = _short_message(report, spec, total, short, allow_incomplete)
    elif report.cap is None:
        message = (
            f"only {report.fetched} of {total} {spec.kind} could be retrieved: "
            f"{len(report.incomplete)} shard(s) came back short of their totals "
            f"({_ids([entry['id'] for entry in report.incomplete])}), though the server "
            "announced no cap. Try again later (the catalogue may be changing), or pass "
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


def _short_message(
    report: HarvestReport,
    spec: Spec,
    total: int,
    short: Sequence[Mapping[str, Any]],
    allow_incomplete: bool,
) -> str:
    """Shards that stopped short of their counts, none stuck under a cap: said as seen.

    Paging a shard ends at a page with no new hit; every page after its first overlaps the hit
    the one before ended on, and one that came back empty would not have met it (a fault,
    paged again). So a shard short of its count, with rows, stopped at a page holding that hit
    alone: a server answering short for a moment, or one that lets no more hits be retrieved
    there. One harvest cannot tell which; the same count again would.
    """
    first = short[0]
    where = (
        "at a page that held only the hit it overlapped (the one the page before ended on)"
        if first["fetched"]
        else "at its first page, which came back empty"
    )
    more = (
        f"; {len(short)} shard(s) stopped short in all ({_ids([s['id'] for s in short])})"
        if len(short) > 1
        else ""
    )
    # an accepted partial result is published and its shards cleared: only refresh=True
    # pages them again; a refusal marked them, so the same call again does
    again = (
        "run the same call with refresh=True to harvest it again (this partial result is what "
        "the cache holds until then)"
        if allow_incomplete
        else "run the same call again: the shards that stopped short are paged again"
    )
    otherwise = (
        "" if allow_incomplete else ", or pass allow_incomplete=True to accept a partial result"
    )
    return (
        f"only {report.fetched} of {total} {spec.kind} could be retrieved: the rows of shard "
        f"{first['id']} stopped at {first['fetched']} of the {first['total']} hits it counted, "
        f"{where}{more}. A server answering short for a moment does this: {again}. If it "
        "stops at the same count again, the server may not let more hits be retrieved there: "
        f"narrow the query or ask the service's administrators{otherwise}."
    )
