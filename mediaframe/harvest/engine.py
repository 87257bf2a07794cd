"""Running a harvest: page the planned shards, checkpoint each, assemble and prove the whole.

Each finished shard is written to the cache with a checksum recorded in a manifest, so a harvest
killed at any point resumes with the shards it lacks. Shard tasks are picklable and write their
own files, so a Dask cluster (``client.get_executor()``) can run them against shared storage.
"""

from __future__ import annotations

import datetime as dt
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from mediaframe.cache import HarvestStore
from mediaframe.exceptions import IncompleteResultError, IncompleteResultWarning
from mediaframe.harvest.plan import (
    Page,
    Shard,
    ShardCounter,
    Spec,
    Statuses,
    plan,
    to_plain,
)
from mediaframe.harvest.progress import Progress
from mediaframe.harvest.report import HarvestReport
from mediaframe.harvest.shards import (
    Combine,
    Deliver,
    EarlyShards,
    Joiner,
    ShardTask,
    give_back_memory,
)

# With no cap (or everything retrievable) a big result is still cut into shards of this size, so
# that its pages are fetched several at once.
_UNCAPPED_SHARD = 10_000


def harvest(
    page: Page,
    spec: Spec,
    store: HarvestStore,
    *,
    combine: Combine,
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
    """Retrieve every hit of ``spec``, resuming from ``store`` when a manifest is there.

    Parameters
    ----------
    page : reads one page of the search route: ``page(**params) -> (response, frame)``.
    combine : joins page and shard frames into one (dtypes decided over the whole).
    bases, statuses : the user's searchable base ids, and ``{base_id: (databox_id, bits)}``.
    executor : runs shard tasks (a Dask ``client.get_executor()`` for a cluster); threads
        otherwise. Tasks write their shard to ``store``, so it must be shared storage.
    progress : the display of this harvest, told of counts, shards and rows as they come (the
        caller enters and leaves it, so that it shows before the first request).
    resume : go on from an interrupted harvest of the same search in ``store``; its finished
        shards are kept if they are intact and their counts have not changed since.

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
    counter = ShardCounter(shown.counting(page), spec, page_size=per_page)
    report = HarvestReport(kind=spec.kind, query=spec.query, filters=to_plain(spec.filters))
    manifest = _resumable(store.load_manifest(), spec) if resume else None
    # The joiner outlives the pool: shards still running when something fails deliver to it.
    with (
        Joiner(combine) as joiner,
        ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="mediaframe") as pool,
    ):
        runner = executor or pool
        # Threads hand their frames to the joiner; Dask workers leave theirs in the store.
        deliver = joiner.add if executor is None else None

        def new_task(deliver: Deliver | None = deliver) -> ShardTask:
            # a shard's rows are shown once written, even before the planner proves it a leaf
            if deliver is not None:
                deliver = _shown_on_delivery(shown, deliver)
            return ShardTask(page, spec, store, per_page, counter.capped_engine, combine, deliver)

        manifest_is_new = manifest is None
        early = EarlyShards(new_task, runner, pool, deliver)
        if manifest is None:
            # Shards a run killed while planning finished (it saved no plan) are kept if their
            # counts did not move; what else another run left would mislead a later resume.
            if resume:
                early.keep(_intact_shards(store))
            else:
                store.clear_shards()
            manifest = _new_manifest(counter, spec, bases, statuses, pool, provenance, early, shown)
            store.save_manifest(manifest)
            early.forget_all_but({entry["id"] for entry in _entries(manifest)})
        counter.capped_engine = manifest["capped_engine"]
        if manifest["stuck"] and not allow_incomplete:
            for future in early.futures.values():
                future.cancel()
            raise IncompleteResultError(
                _stuck_message(manifest, spec), shards=manifest["stuck"], report=report
            )
        report.total_results, report.cap = manifest["total"], manifest["cap"]
        report.capped_engine = manifest["capped_engine"]
        shown.paging(manifest["total"], shards=[entry["id"] for entry in _entries(manifest)])
        # An earlier run's shards: checked while planning if this run made the plan, else now.
        if manifest_is_new:
            outcomes = dict(early.reused)
        else:
            outcomes = _still_valid(store, manifest, counter, pool)
        report.resumed_shards = len(outcomes)
        for shard_id, outcome in outcomes.items():
            shown.fetched(shard_id, outcome["rows"])
        todo = [entry for entry in _entries(manifest) if entry["id"] not in outcomes]
        task = new_task()
        futures = [
            early.futures.pop(e["id"]) if e["id"] in early.futures else runner.submit(task, e)
            for e in todo
        ]
        for entry, future in zip(todo, futures, strict=True):
            outcome = outcomes[entry["id"]] = future.result()
            report.requests += outcome["requests"]
            shown.fetched(entry["id"], outcome["rows"])  # Dask's: threads' are shown already
        joined = joiner.parts()
    report.requests += counter.requests
    held = set() if executor is not None else {entry["id"] for entry in todo}
    frame = _assemble(store, spec, manifest, outcomes, joined, held, combine, report)
    report.seconds = round(time.monotonic() - started, 3)
    _judge(report, manifest, outcomes, counter, spec, allow_incomplete)
    _finish(store, manifest, frame, report, spec)
    return frame, report


def _finish(
    store: HarvestStore,
    manifest: dict[str, Any],
    frame: pd.DataFrame,
    report: HarvestReport,
    spec: Spec,
) -> None:
    # Order matters for crash safety: the dataset first, then the manifest that declares it
    # finished, and only then the shard files it was built from.
    provenance = {
        **manifest["provenance"],
        "fetched_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "complete": report.complete,
        "report": report.to_dict(),
    }
    manifest["data_files"] = store.write_data(frame, provenance, sort_by=spec.row_order)
    manifest["complete"] = True
    manifest["high_water"] = _high_water(frame)
    store.save_manifest(manifest)
    store.clear_shards()


def _high_water(frame: pd.DataFrame) -> str | None:
    """The latest ``updated_on`` fetched: the next incremental sync starts from it."""
    if "updated_on" not in frame.columns or frame["updated_on"].isna().all():
        return None
    return pd.Timestamp(frame["updated_on"].max()).isoformat()


def _new_manifest(
    counter: ShardCounter,
    spec: Spec,
    bases: Sequence[int],
    statuses: Statuses | None,
    pool: Executor,
    provenance: Mapping[str, Any] | None,
    early: EarlyShards,
    shown: Progress,
) -> dict[str, Any]:
    """Count the root and plan its shards, starting on each leaf as soon as it is proven."""
    root_count = counter(Shard())
    shown.planning(root_count.total)
    cap = root_count.retrievable if root_count.over_cap else None
    limit = cap if cap is not None else min(max(root_count.total, 1), _UNCAPPED_SHARD)
    counter.page_size = min(counter.page_size, limit)  # a probe must fit in one answer
    count = early.counting(counter, limit)
    leaves, stuck = plan(
        count,
        root=Shard(),
        root_count=root_count,
        cap=limit,
        spec=spec,
        bases=bases,
        statuses=statuses,
        bounds=counter.bounds,
        pool=pool,
        on_leaf=_shown_when_found(shown, early.start),
    )
    return {
        "spec": spec.identity(),
        "provenance": dict(provenance or {}),
        "total": root_count.total,
        "cap": cap,
        "capped_engine": counter.capped_engine,
        "plan": [{"id": s.id, "shard": s.to_dict(), "expected": n} for s, n in leaves],
        "stuck": [{"id": s.id, "shard": s.to_dict(), "expected": n} for s, n in stuck],
        "complete": False,
    }


def _shown_on_delivery(shown: Progress, deliver: Deliver) -> Deliver:
    def delivered(shard_id: str, frame: pd.DataFrame) -> None:
        shown.fetched(shard_id, len(frame))
        deliver(shard_id, frame)

    return delivered


def _shown_when_found(shown: Progress, start: Callable[..., None]) -> Callable[..., None]:
    def found(*leaf: Any) -> None:
        shown.found()
        start(*leaf)

    return found


def _intact_shards(store: HarvestStore) -> dict[str, dict[str, Any]]:
    """The finished shards in ``store`` whose files match their checksums, by id."""
    return {
        shard_id: entry
        for shard_id, entry in store.finished_shards().items()
        if not entry.get("fault") and store.has_shard(entry)
    }


def _entries(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every shard to fetch: the planned ones, then the stuck ones (fetched partially)."""
    return [*manifest["plan"], *({**entry, "stuck": True} for entry in manifest["stuck"])]


def _stuck_message(manifest: Mapping[str, Any], spec: Spec) -> str:
    stuck = manifest["stuck"]
    missing = sum(entry["expected"] for entry in stuck) - manifest["cap"] * len(stuck)
    return (
        f"{len(stuck)} shard(s) of this {spec.kind} search cannot be split under the server's "
        f"cap of {manifest['cap']} hits ({_ids(stuck)}), so about {missing} of "
        f"{manifest['total']} hits cannot be retrieved. Narrow the query, ask the server's "
        "administrator to raise the cap, or pass allow_incomplete=True to accept a partial result."
    )


def _ids(entries: Sequence[Mapping[str, Any]]) -> str:
    names = [str(entry["id"]) for entry in entries[:5]]
    return ", ".join(names) + (", ..." if len(entries) > 5 else "") if names else "none"


def _resumable(manifest: Mapping[str, Any] | None, spec: Spec) -> dict[str, Any] | None:
    if manifest is None or manifest.get("spec") != spec.identity() or manifest.get("complete"):
        return None
    return dict(manifest)


def _still_valid(
    store: HarvestStore, manifest: Mapping[str, Any], counter: ShardCounter, pool: Executor
) -> dict[str, dict[str, Any]]:
    """Finished shards of an interrupted run that can be kept: intact and not changed since.

    A damaged file is fetched again, and so is a shard whose count moved (records added,
    deleted or re-filed while the harvest was down): one count each is far cheaper than paging.
    """
    planned = {entry["id"]: entry for entry in _entries(manifest)}
    found = [outcome for shard_id, outcome in _intact_shards(store).items() if shard_id in planned]
    shards = [Shard.from_dict(planned[outcome["id"]]["shard"]) for outcome in found]
    totals = list(pool.map(lambda shard: counter(shard).total, shards))
    return {
        outcome["id"]: outcome
        for outcome, total in zip(found, totals, strict=True)
        if total == outcome["total"]
    }


def _assemble(
    store: HarvestStore,
    spec: Spec,
    manifest: Mapping[str, Any],
    outcomes: Mapping[str, Mapping[str, Any]],
    joined: list[pd.DataFrame],
    held: set[str],
    combine: Combine,
    report: HarvestReport,
) -> pd.DataFrame:
    """The final frame: the frames held in memory (``held`` shards, already partly joined)
    and the shards read back from the store (fetched by an earlier run, or by other machines).
    """
    parts, shards = joined, []
    for entry in _entries(manifest):
        outcome = outcomes[entry["id"]]
        if entry["id"] not in held:
            parts.append(store.read_shard(outcome))
        shards.append(
            {
                "id": entry["id"],
                "shard": entry["shard"],
                "expected": entry["expected"],
                "total": outcome.get("total"),
                "fetched": outcome["rows"],
                "requests": outcome.get("requests"),
                "seconds": round(outcome.get("seconds", 0.0), 3),
                "worker": outcome.get("worker"),
            }
        )
    joined = [combine(parts)]  # held by the list alone, for in_row_order to take
    parts.clear()
    give_back_memory()
    key = list(spec.key_columns)
    duplicated = joined[0].duplicated(key)
    report.duplicates = int(duplicated.sum())
    if report.duplicates:
        joined[0] = joined[0][~duplicated]
    frame = in_row_order(joined, list(spec.row_order))
    report.fetched = len(frame)
    report.shards = shards
    return frame


def concat_frames(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Join frames whose columns are all declared (stories, v2 references): dtypes agree."""
    return pd.concat(parts, ignore_index=True)


def in_row_order(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """The one frame of ``frames`` sorted by ``columns`` (missing values first).

    The frame is taken out of the list (left empty) and each of its columns is let go once
    moved, so that two copies never coexist when nothing else holds the frame. Its columns
    are taken all at once: taking them one by one out of the frame (``pop``) rebuilt every
    remaining pandas block each time, O(N²) and worse for N columns — a record with 2,000
    technical names took minutes.
    """
    (frame,) = frames
    frames.clear()
    order = np.lexsort([frame[name].to_numpy("int64", na_value=-1) for name in reversed(columns)])
    arrays = {name: frame[name].array for name in frame.columns}
    del frame  # the arrays are now held here alone
    return pd.DataFrame({name: arrays.pop(name).take(order) for name in list(arrays)}, copy=False)


def _judge(
    report: HarvestReport,
    manifest: Mapping[str, Any],
    outcomes: Mapping[str, Mapping[str, Any]],
    counter: ShardCounter,
    spec: Spec,
    allow_incomplete: bool,
) -> None:
    """Prove completeness: every shard whole, and the shard totals add up to the global total."""
    short = [s for s in report.shards if s["fetched"] < (s["total"] or 0)]
    report.incomplete = [dict(s) for s in manifest["stuck"]]
    stuck_extra = [
        {"id": sid, "stuck": o["stuck"]} for sid, o in outcomes.items() if o.get("stuck")
    ]
    faults = [{"id": sid, "fault": o["fault"]} for sid, o in outcomes.items() if o.get("fault")]
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
            f"or came back short ({_ids(report.incomplete)}). "
            "Narrow the query, ask the server's administrator to raise the cap, or pass "
            "allow_incomplete=True to accept a partial result."
        )
    if not allow_incomplete:
        raise IncompleteResultError(message, shards=report.incomplete, report=report)
    warnings.warn(message, IncompleteResultWarning, stacklevel=3)
