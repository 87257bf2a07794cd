"""Paging that proves its pages meet: a record leaving a multi-page shard early in its paging
order while another enters it later leaves every total as it was and repeats no key, yet shifts
the later offsets by one. Each page after a shard's first (and each offset window after the
search's first) is asked from one hit before, and must begin with the hit the previous ended on.
"""

from __future__ import annotations

import math
import threading

import pandas as pd
import pytest
from rewriting import Rewriting

import mediaframe as mf
from mediaframe.cache import HarvestStore
from mediaframe.cache.shards import ShardFiles
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.exceptions import IncompleteResultError, IncompleteResultWarning
from mediaframe.harvest.windows import windows

from .fake import FakeService
from .test_engine import Crash, keys, run

STATUS = {4: {"on": [1]}}


def connect(emu: Emulator, front: Rewriting, tmp_path, **settings) -> mf.Client:
    chosen = Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False, **settings
    )
    return mf.connect(emu.inprocess_url, token=emu.token, settings=chosen, session=front.session())


def paging_order(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows in the server's paging order: created_on ascending, ties by record id."""
    return frame.sort_values(["created_on", "databox_id", "record_id"]).reset_index(drop=True)


def entering(emu: Emulator, after: pd.Timestamp) -> pd.Series:
    """A record of base 1 with status bit 4 off, created after ``after``: its bit set, it
    enters the search late in the paging order."""
    truth = emu.ground_truth()
    bit = (truth.status.astype("int64").to_numpy() >> 4) & 1
    off = truth[(truth.base_id == 1).to_numpy() & (bit == 0)]
    return off[off.created_on > after].iloc[0]


def churn_after_first_page(emu: Emulator, front: Rewriting, order: pd.DataFrame, route: str):
    """Once the first page of ``route`` (100 hits from offset 0) is served, delete the 11th hit
    of the paging order and let a record created after the 151st enter the search."""
    victim, enters = order.iloc[10], entering(emu, order.created_on.iloc[150])
    done = []

    def hook(path: str, envelope) -> None:
        params = dict(front.seen[-1][1])
        first_page = int(params.get("per_page", 0)) >= 100 and params.get("offset_start") == "0"
        if path.startswith(route) and first_page and not done:
            done.append(path)
            emu.delete_record(int(victim.databox_id), int(victim.record_id))
            status = int(enters.status) | 1 << 4
            emu.update_record(int(enters.databox_id), int(enters.record_id), status=status)

    front.answer = hook
    return victim, order.iloc[100], done


def test_a_deletion_and_an_addition_between_two_pages_lose_no_live_record(tmp_path):
    # contract server, cap 1000: one shard of 495 hits paged 100 at a time (review 15, finding 1)
    emu = Emulator(records=3000, seed=2, flavour="contract")
    front = Rewriting(emu)
    client = connect(emu, front, tmp_path, per_page=100)
    before = client.records(status=STATUS, bases=[1], refresh=True)
    assert len(before) > 300, "a shard of several pages"
    victim, lost, done = churn_after_first_page(emu, front, paging_order(before), "/api/v1/")
    frame = client.records(status=STATUS, bases=[1], refresh=True)
    front.answer = None
    assert done, "the catalogue changed between two pages"
    truth = client.records(status=STATUS, bases=[1], refresh=True)
    assert mf.HarvestReport.from_frame(frame).complete
    assert (int(lost.databox_id), int(lost.record_id)) in keys(frame), "a live record was lost"
    assert (int(victim.databox_id), int(victim.record_id)) not in keys(frame)
    assert keys(frame) == keys(truth)


def test_a_sync_whose_keys_pass_sees_that_churn_drops_no_live_cached_record(tmp_path):
    # review 15, finding 2: the keys pass (v2 references, paged by offset) skipped a live key
    emu = Emulator(records=3000, seed=2, flavour="contract")
    front = Rewriting(emu)
    client = connect(emu, front, tmp_path, per_page=100)
    cached = client.records(status=STATUS, bases=[1])
    victim, lost, done = churn_after_first_page(emu, front, paging_order(cached), "/api/v2/")
    synced = client.records(status=STATUS, bases=[1], ttl=0)
    front.answer = None
    assert done, "the catalogue changed between two pages of the keys pass"
    report = mf.HarvestReport.from_frame(synced)
    assert report.synced and report.complete
    assert (int(lost.databox_id), int(lost.record_id)) in keys(synced), "a live record dropped"
    assert (int(victim.databox_id), int(victim.record_id)) not in keys(synced)
    truth = client.records(status=STATUS, bases=[1], refresh=True)
    assert keys(synced) == keys(truth)


def churning(service: FakeService) -> list[dict]:
    """After every page but a shard's first (a search of more than two hits past offset 0),
    delete the earliest record and add one created last: the totals never move."""
    made: list[dict] = []

    def change(params):
        if params.get("per_page", 0) > 2 and params.get("offset_start", 0) > 0:
            first = min(service.records, key=lambda r: (r["created_on"], r["record_id"]))
            service.records.remove(first)
            added = {**first, "record_id": 50_000 + len(made), "created_on": "2030-01-01"}
            service.records.append(added)
            made.append(added)

    service.after_search = change
    return made


def test_pages_that_keep_churning_are_refused_never_complete(tmp_path):
    # uncapped, one shard of 300 hits paged 40 at a time; the catalogue moves after every page
    service = FakeService.build(300, cap=1000, bases=(1,))
    made = churning(service)
    with pytest.raises(IncompleteResultError, match="pages disagree") as raised:
        run(service, tmp_path, concurrency=1)
    assert made and not raised.value.report.complete


def test_a_churn_between_two_offset_windows_is_caught(tmp_path):
    # a server with no cap pages the search in offset windows, here two, paged at once: the
    # second window's first page waits until the first window is read, then the catalogue moves
    service = FakeService.build(2000, cap=10**6, newer_engine=True, bases=(1,))
    boundary = windows(2000, 100, 2, 10_000)[0].window[1]
    read, honest = threading.Event(), service.search
    made: list[dict] = []

    def search(**params):
        offset, per_page = params.get("offset_start", 0), params.get("per_page", 10)
        if per_page > 2 and offset >= boundary - 1 and not made:
            assert read.wait(10), "the first window was never read"
        answer = honest(**params)
        if per_page > 2 and offset < boundary <= offset + per_page and not made:
            first = min(service.records, key=lambda r: (r["created_on"], r["record_id"]))
            service.records.remove(first)
            late = {**first, "record_id": 60_000, "created_on": "2030-01-01"}
            service.records.append(late)
            made.append(late)
            read.set()
        return answer

    service.search = search
    try:
        frame, report = run(service, tmp_path, per_page=100, concurrency=2)
    except IncompleteResultError as err:
        assert not err.report.complete  # refused is fine; complete with a key missing is not
        return
    assert made, "the catalogue moved between the windows"
    assert report.complete and keys(frame) == service.truth(), "a live record was lost"


def test_a_capped_server_whose_cap_is_the_page_size_costs_no_more(tmp_path):
    # every shard is one page: no page of it overlaps another (figures of the paging before)
    frame, report = run(FakeService.build(2000, cap=100), tmp_path / "a", per_page=100)
    assert report.complete and len(frame) == 2000
    assert all(shard["requests"] <= 1 for shard in report.shards)


@pytest.mark.parametrize(("total", "per_page"), [(20_000, 1000), (1957, 100), (450, 100)])
def test_offset_windows_take_the_fewest_pages_that_overlap(total, per_page):
    found = windows(total, per_page, 4, 10_000)
    starts = [shard.window[0] for shard in found]
    assert starts[0] == 0 and [s.window[1] for s in found][:-1] == starts[1:]
    assert found[-1].window[1] == total and all(s.window[1] - s.window[0] <= 10_000 for s in found)
    # each window after the first is paged from one hit before its start
    pages = sum(
        math.ceil((s.window[1] - s.window[0] + (s.window[0] > 0) - 1) / (per_page - 1))
        for s in found
    )
    assert pages == math.ceil((total - 1) / (per_page - 1))


def test_an_uncapped_harvest_pages_its_windows_in_the_fewest_requests(tmp_path):
    service = FakeService.build(2000, cap=10**6, newer_engine=True, bases=(1,))
    frame, report = run(service, tmp_path, per_page=100, concurrency=4)
    assert report.complete and keys(frame) == service.truth()
    # two counts (one hit, then two: the meaning of available_results), the pages, and one hit
    # past the total
    assert report.requests == 2 + math.ceil(1999 / 99) + 1


def test_a_page_whose_first_hit_has_no_key_proves_nothing_and_is_refused(tmp_path):
    # the hit two pages would meet on carries no record id: which hit it is cannot be told
    service = FakeService.build(300, cap=1000, bases=(1,))
    order = sorted(service.records, key=lambda r: (r["created_on"], r["record_id"]))
    order[39]["record_id"] = None  # the last of the first page (40 a page)
    with pytest.raises(IncompleteResultError, match="no key to tell it by"):
        run(service, tmp_path)


def test_pages_kept_by_a_killed_run_that_no_longer_meet_are_paged_again(tmp_path):
    # uncapped, one window of 1000 hits paged 40 at a time on one thread, killed mid-way
    service = FakeService.build(1000, newer_engine=True)
    calls = {"n": 0}

    def flaky(**params):
        calls["n"] += 1
        if calls["n"] == 15:
            raise Crash
        return service(**params)

    with pytest.raises(Crash):
        run(flaky, tmp_path, concurrency=1, per_page=40)
    assert HarvestStore(str(tmp_path / "h")).pages("o0-1000-of1000").restore(), "pages kept"
    # while it was down: the earliest record deleted, one added last in the paging order (an
    # old version of it: nothing looks updated since), the total as it was
    first = min(service.records, key=lambda r: (r["created_on"], r["record_id"]))
    service.records.remove(first)
    service.records.append({**first, "record_id": 70_000, "created_on": "2030-01-01"})
    frame, report = run(service, tmp_path, concurrency=1, per_page=40)
    assert report.complete and keys(frame) == service.truth(), "a live record was lost"


def short_once(records: int, cap: int) -> tuple[FakeService, list[dict]]:
    """A service of one base whose first page after a shard's first holds only the hit it
    overlaps, once; and the list the parameters of that page go into."""
    service = FakeService.build(records, cap=cap, bases=(1,))
    honest, short = service.search, []

    def search(**params):
        answer = honest(**params)
        if params.get("offset_start", 0) > 0 and params.get("per_page", 0) > 2 and not short:
            short.append(params)
            answer["results"]["records"] = answer["results"]["records"][:1]
        return answer

    service.search = search
    return service, short


@pytest.mark.parametrize(("records", "cap"), [(2000, 100), (300, 1000)], ids=["split", "whole"])
def test_a_page_short_to_its_overlap_once_is_refused_saying_what_was_seen_not_the_cap(
    tmp_path, records, cap
):
    # pages of 40: shards of several pages, under a cap the search is split for or one it fits.
    # One page after a shard's first comes back holding only the hit it overlaps, once (a
    # server answering short for a moment): the shard ends there, short. Nothing showed a cap
    # there, so the refusal blames none.
    service, short = short_once(records, cap)
    with pytest.raises(IncompleteResultError) as raised:
        run(service, tmp_path)
    report = raised.value.report
    (cut,) = [s for s in report.shards if s["fetched"] < s["total"]]
    said = str(raised.value)
    assert short and not report.complete and cut["fetched"] == 40
    assert f"stopped at {cut['fetched']} of the {cut['total']} hits it counted" in said
    assert "a page that held only the hit it overlapped" in said and cut["id"] in said
    assert "run the same call again: the shards that stopped short are paged again" in said
    assert "allow_incomplete=True" in said
    assert f"cap of {cap}" not in said and "above the server's cap" not in said
    assert "announced no cap" not in said
    # the advice holds: run afresh, the server answering whole, the result is complete
    frame, again = run(service, tmp_path, resume=False)
    assert again.complete and keys(frame) == service.truth()


@pytest.mark.parametrize(("records", "cap"), [(2000, 100), (300, 1000)], ids=["split", "whole"])
def test_a_plain_rerun_pages_again_the_shard_that_stopped_short_and_only_it(tmp_path, records, cap):
    # The refusal above, then the same call again without refresh=True, the server answering
    # whole now: the shard that stopped short is paged again (a resume keeps finished shards,
    # not one short of its count), the others are kept, and the result is complete.
    service, _ = short_once(records, cap)
    with pytest.raises(IncompleteResultError) as raised:
        run(service, tmp_path)
    (cut,) = [s for s in raised.value.report.shards if s["fetched"] < s["total"]]
    before = service.requests
    frame, again = run(service, tmp_path)
    assert again.complete and keys(frame) == service.truth()
    # the short shard's pages (each after the first brings 39 new hits) and a few counts
    spent = service.requests - before
    assert spent <= 1 + math.ceil((cut["total"] - 40) / 39) + 3
    fresh = FakeService.build(records, cap=cap, bases=(1,))
    run(fresh, tmp_path / "fresh")
    assert spent < fresh.requests or len(again.shards) == 1, "the kept shards were paged again"


def test_resumes_on_a_server_that_never_serves_more_converge_on_the_refusal(tmp_path):
    # A server that announces 100 hits retrievable but serves 55 of any search: every shard of
    # more stops short, every time. A token revoked every 30 requests ends each run early. The
    # resumes must keep what finished, short shards too, until a run reaches the judgment and
    # its refusal; only that refusal sends the short shards to be paged again (by the rerun it
    # asks for), which stops short and is refused again.
    service = FakeService.build(2000, cap=100, untold_cap=55)
    honest, spent = service.search, []

    def search(**params):
        answer = honest(**params)
        answer["available_results"] = min(answer["total_results"], 100)
        return answer

    def revoked_every_30(**params):
        if len(spent) == 30:
            raise Crash
        spent.append(params)
        return service(**params)

    service.search = search
    for _ in range(1, 40):
        spent.clear()
        try:
            run(revoked_every_30, tmp_path, concurrency=1)
        except Crash:
            continue
        except IncompleteResultError as err:
            refused, said = err.report, str(err)
            break
    else:
        pytest.fail("no run of the resumes ever reached the judgment")
    short = {s["id"] for s in refused.shards if s["fetched"] < s["total"]}
    assert short and "stopped short" in said
    marked = HarvestStore(str(tmp_path / "h")).finished_shards()
    assert {i for i, entry in marked.items() if entry.fault} == short
    with pytest.raises(IncompleteResultError) as again:
        run(service, tmp_path)  # the rerun asked for: the short shards paged again, the rest kept
    assert again.value.report.resumed_shards == len(refused.shards) - len(short)


def test_a_partial_result_accepted_is_told_to_harvest_again_with_refresh(tmp_path):
    # allow_incomplete=True: the partial result is published and its shards cleared, so only
    # refresh=True pages the short shard again; the warning says so, not "run it again".
    service, _ = short_once(2000, 100)
    with pytest.warns(IncompleteResultWarning) as warned:
        _, report = run(service, tmp_path, allow_incomplete=True)
    said = str(warned[0].message)
    assert not report.complete and "run the same call with refresh=True to harvest it" in said
    assert "are paged again" not in said and "allow_incomplete=True" not in said


def test_a_refusal_keeps_a_faulty_shards_own_reason(tmp_path):
    # a server that ignores offset_start: the shard's pages repeat keys, a paging fault that
    # says why; the refusal's mark of short shards leaves that reason as it was
    service = FakeService.build(300, cap=1000, bases=(1,), ignore_offset=True)
    with pytest.raises(IncompleteResultError):
        run(service, tmp_path)
    stored = HarvestStore(str(tmp_path / "h")).finished_shards()
    assert stored and all("twice" in (entry.fault or "") for entry in stored.values())


def test_a_store_that_cannot_be_listed_does_not_hide_the_refusal(tmp_path, monkeypatch):
    # marking the short shards is best effort: a listing refused (a remote store's access
    # denied) leaves the user the refusal, which says what happened and what to do
    service, _ = short_once(2000, 100)
    mark = ShardFiles.mark_faulty

    def refused_listing(self, ids, fault):
        def glob(*args, **kwargs):
            raise PermissionError(13, "Access Denied")

        monkeypatch.setattr(self.fs, "glob", glob)
        return mark(self, ids, fault)

    monkeypatch.setattr(ShardFiles, "mark_faulty", refused_listing)
    with pytest.raises(IncompleteResultError, match="stopped short"):
        run(service, tmp_path)
