"""A catalogue that changes while it is harvested: records deleted after they were read, a
changed-since window that grows, one record added or deleted while the plan is made. None of
these is the server's cap, and none of them loses a row the harvest could have read."""

import datetime as dt

import pytest

from mediaframe.cache import HarvestStore
from mediaframe.cache.manifest import PlanFile, ShardEntry
from mediaframe.exceptions import IncompleteResultError
from mediaframe.harvest import HarvestReport, Spec, harvest
from mediaframe.harvest.counter import Count
from mediaframe.harvest.judge import judge

from .fake import FakeService, combine

STATUSES = {1: (1, range(4, 8)), 2: (1, range(4, 8)), 3: (2, range(4, 8))}


def judged(spec, shards, fresh, *, cap=150, changed_pass=False):
    """The report ``judge`` leaves for ``shards`` (``(id, fetched, total)`` each, all read in
    one go) when the search now counts ``fresh`` hits; raises as it does."""
    report = HarvestReport(kind="records", query="", filters={}, cap=cap)
    report.shards = [{"id": sid, "fetched": got, "total": total} for sid, got, total in shards]
    report.fetched = sum(got for _, got, _ in shards)
    report.total_results = sum(total for _, _, total in shards) + 3  # as planned, before
    the_plan = PlanFile(spec={}, provenance={}, total=report.total_results, cap=cap,
                        capped_engine=cap is not None)  # fmt: skip
    outcomes = {sid: ShardEntry(sid, got, total) for sid, got, total in shards}
    count = lambda shard: Count(fresh, fresh)  # noqa: E731
    judge(report, the_plan, outcomes, count, spec, False, changed_pass)
    return report


def test_records_deleted_after_they_were_read_leave_the_result_complete():
    # every shard paged whole: 471 rows, though the search counts 469 by the time it is judged
    report = judged(Spec("records"), [("a", 300, 300), ("b", 171, 171)], fresh=469)
    assert report.complete and report.fetched == 471 and not report.incomplete
    assert any("deleted" in note and "refresh=True" in note for note in report.notes)


def test_a_total_that_grew_with_every_shard_whole_names_the_changing_catalogue():
    with pytest.raises(IncompleteResultError) as raised:
        judged(Spec("records"), [("a", 300, 300), ("b", 171, 171)], fresh=473)
    message = str(raised.value)
    assert "changing" in message and "refresh=True" in message
    assert "cap" not in message and "(none)" not in message


def test_a_short_shard_is_still_refused():
    with pytest.raises(IncompleteResultError, match="short"):
        judged(Spec("records"), [("a", 299, 300), ("b", 171, 171)], fresh=469)


def changed_since(day=dt.date(2021, 5, 1)):
    return Spec("records", filters={"date_field": "updated_on", "date_min": day})


def test_a_changed_since_window_that_grew_while_paged_is_not_short_on_a_server_without_a_cap():
    # records edited while the window was read enter it at its open end: the sync's keys pass,
    # which compares versions, decides them, not this pass
    report = judged(changed_since(), [("w0", 43, 43)], fresh=44, cap=None, changed_pass=True)
    assert report.complete and report.fetched == 43
    # a shard that came back short is still missing rows, window or not
    with pytest.raises(IncompleteResultError, match="short"):
        judged(changed_since(), [("w0", 42, 43)], fresh=44, cap=None, changed_pass=True)


def test_a_users_own_changed_since_search_that_grew_is_not_taken_for_a_sync():
    # no keys pass follows a user's search: a record edited into the window after its shard
    # was read is missing from this result
    with pytest.raises(IncompleteResultError, match="changing"):
        judged(changed_since(), [("w0", 43, 43)], fresh=44, cap=None)


def test_a_window_closed_at_the_top_is_not_let_grow():
    spec = Spec(
        "records",
        filters={"date_field": "updated_on", "date_min": dt.date(2021, 5, 1),
                 "date_max": dt.date(2021, 5, 31)},
    )  # fmt: skip
    with pytest.raises(IncompleteResultError):
        judged(spec, [("w0", 43, 43)], fresh=44, cap=None)


def run(service, path, **options):
    return harvest(
        service, Spec("records"), HarvestStore(str(path)), combine=combine, bases=(1, 2, 3),
        statuses=STATUSES, per_page=40, **options,
    )  # fmt: skip


@pytest.mark.parametrize("change", ["delete", "add"])
def test_one_record_changed_right_after_the_root_count_is_planned_around(tmp_path, change):
    service = FakeService.build(1000, cap=100)
    moved = service.records[300]
    if change == "add":
        service.records.remove(moved)
    searches = []

    def after(params):
        searches.append(params)
        if len(searches) == 1:  # the root is counted: the catalogue moves by one
            if change == "add":
                service.records.append(moved)
            else:
                service.records.remove(moved)

    service.after_search = after
    frame, report = run(service, tmp_path / "h")
    assert report.complete and len(frame) == len(service.truth())
    assert set(zip(frame.databox_id, frame.record_id, strict=True)) == service.truth()


def test_a_plan_stuck_by_a_changing_catalogue_says_so_and_the_same_call_plans_again(tmp_path):
    service = FakeService.build(1000, cap=100)
    searches = []

    def after(params):
        searches.append(params)
        if len(searches) <= 40:  # a record deleted at every search of the planning's first
            service.records.pop(len(searches) * 7)

    service.after_search = after
    with pytest.raises(IncompleteResultError) as raised:
        run(service, tmp_path / "h")
    message = str(raised.value)
    assert "changing" in message and "refresh=True" in message and "cap" not in message
    # the catalogue now still: the same call (which resumes) plans again, and gets every hit
    frame, report = run(service, tmp_path / "h")
    assert report.complete
    assert set(zip(frame.databox_id, frame.record_id, strict=True)) == service.truth()


def test_counts_that_never_add_up_are_blamed_on_the_server_not_the_cap(tmp_path):
    """A server whose every count is a few hits short (a v2 keys pass's totals, say): no split
    of the search adds up, and the error says the server's counts disagree, not that the
    shards hold more than its cap."""
    service = FakeService.build(1500, cap=100, days=200)

    def lowered(**params):
        head, frame = service(**params)
        if head["total_results"] > 10:
            head = {**head, "total_results": head["total_results"] - 7}
        return head, frame

    with pytest.raises(IncompleteResultError) as raised:
        harvest(lowered, Spec("records"), HarvestStore(str(tmp_path / "h")), combine=combine,
                bases=(1, 2, 3), per_page=50)  # fmt: skip
    message = str(raised.value)
    assert "counts disagree" in message, message
    assert "raise the cap" not in message and "cannot be split under" not in message, message
