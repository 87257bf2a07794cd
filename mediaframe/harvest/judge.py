"""The judgment of a harvest: whether its result is complete, and what a refusal says.

A result is complete when every shard was paged to its own count (distinct keys: a key served
twice proves nothing of another), nothing is stuck under the cap or faulty, and the shards'
counts add up to the search's. Otherwise :func:`judge` raises ``IncompleteResultError`` (or
warns, where an incomplete result is allowed) in words that say what was seen and what to do;
the shards that stopped short in a refused run are marked so that the rerun pages them again
(:func:`stopped_short`, :data:`REFUSED_SHORT`).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from mediaframe.cache.manifest import PlanFile, ShardEntry
from mediaframe.exceptions import IncompleteResultError, IncompleteResultWarning
from mediaframe.harvest.counter import ShardCounter
from mediaframe.harvest.paging import PAST_TOTAL
from mediaframe.harvest.report import HarvestReport
from mediaframe.harvest.spec import Shard, Spec

__all__ = ["REFUSED_SHORT", "changing_message", "judge", "stopped_short", "stuck_message"]


# The fault set on a shard whose run was refused because it stopped short of its count (a
# server answering short for a moment): a resume pages it again rather than keep it. Only a
# refusal marks it: a run killed before judging keeps it, so that resumes converge on a server
# that never serves more there.
REFUSED_SHORT = "stopped short of its count in a run refused for it"


def stopped_short(report: HarvestReport, outcomes: Mapping[str, ShardEntry]) -> list[str]:
    """The shards of a judged run short of their counts, but for those a split over the cap
    left partial on purpose and those already faulty (never reused: their fault says why)."""
    return [
        s["id"]
        for s in report.shards
        if s["fetched"] < (s["total"] or 0)
        and not outcomes[s["id"]].stuck
        and outcomes[s["id"]].fault is None
    ]


def stuck_message(the_plan: PlanFile, spec: Spec) -> str:
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


def changing_message(the_plan: PlanFile, spec: Spec) -> str:
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


def judge(
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
