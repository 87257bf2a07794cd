"""A resume after churn that leaves the search's total as it was: a record of a finished shard
deleted and another added (to the same shard, to another, or past every shard's dates) while
the harvest was down. Totals alone cannot see it; a resume must, and still keep for free what
did not change."""

import dataclasses
import datetime as dt
import threading

import pytest

import mediaframe as mf
from mediaframe.cache import HarvestStore
from mediaframe.config import Settings
from mediaframe.exceptions import TokenRejectedError
from mediaframe.harvest import Spec
from mediaframe.harvest.spec import Shard

from .fake import FakeService
from .test_engine import Crash, keys, run
from .test_resume import WHOLE, crash_after

# Killed while planning (the shards its counts brought whole are kept), and while paging.
KILLS = pytest.mark.parametrize(
    ("per_page", "dies_at"), [(100, 120), (40, 200)], ids=["planning", "paging"]
)


def now():
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def a_finished_record(tmp_path, nth=0):
    """A record (its key) of the ``nth`` finished shard of the harvest killed in ``tmp_path``."""
    store = HarvestStore(str(tmp_path / "h"))
    entries = sorted(store.finished_shards().values(), key=lambda entry: entry.id)
    frame = store.read_shard(entries[nth])
    return int(frame.databox_id.iloc[0]), int(frame.record_id.iloc[0])


def replace_by_a_twin(service, gone, twin_of, **changes):
    """Delete ``gone`` and add a new record like ``twin_of`` (same base, dates, type and status:
    the same shard), just added: its ``updated_on`` is now."""
    model = next(r for r in service.records if (r["databox_id"], r["record_id"]) == twin_of)
    service.records = [r for r in service.records if (r["databox_id"], r["record_id"]) != gone]
    twin = {**model, "record_id": 90_000 + len(service.records), "title": "new"}
    service.records.append({**twin, "updated_on": now().isoformat(), **changes})
    return twin["databox_id"], twin["record_id"]


def dies(service, tmp_path, at, per_page=100):
    total = len(service.records)
    crash_after(service, tmp_path, at, per_page)
    saved = HarvestStore(str(tmp_path / "h")).load_plan()
    assert saved is not None and HarvestStore(str(tmp_path / "h")).finished_shards()
    assert len(service.records) == total
    return saved


@KILLS
def test_a_record_deleted_and_another_added_in_one_finished_shard(tmp_path, per_page, dies_at):
    service = FakeService.build(3000, cap=100)
    dies(service, tmp_path, dies_at, per_page)
    gone = a_finished_record(tmp_path)
    added = replace_by_a_twin(service, gone, twin_of=gone)
    frame, report = run(service, tmp_path, per_page=per_page)
    assert gone not in keys(frame) and added in keys(frame)
    assert keys(frame) == service.truth() and report.complete


@KILLS
def test_a_deletion_in_one_finished_shard_and_an_addition_in_another(tmp_path, per_page, dies_at):
    service = FakeService.build(3000, cap=100)
    dies(service, tmp_path, dies_at, per_page)
    gone = a_finished_record(tmp_path, 0)
    added = replace_by_a_twin(service, gone, twin_of=a_finished_record(tmp_path, 1))
    frame, report = run(service, tmp_path, per_page=per_page)
    assert gone not in keys(frame) and added in keys(frame)
    assert keys(frame) == service.truth() and report.complete


@KILLS
def test_an_addition_past_every_shards_dates_is_planned_around(tmp_path, per_page, dies_at):
    """A record created now falls past the last day the interrupted run's plan split over:
    in no shard of it. The plan no longer covers the search, and is made again."""
    service = FakeService.build(3000, cap=100)
    dies(service, tmp_path, dies_at, per_page)
    gone = a_finished_record(tmp_path)
    added = replace_by_a_twin(service, gone, twin_of=gone, created_on=now().isoformat())
    frame, report = run(service, tmp_path, per_page=per_page)
    assert gone not in keys(frame) and added in keys(frame)
    assert keys(frame) == service.truth() and report.complete
    assert report.resumed_shards, "shards found unchanged are kept where the new plan has them"


def test_a_record_re_filed_from_one_finished_shard_to_another(tmp_path):
    """A record moved to another collection leaves its shard for another; its ``updated_on``
    moves with it (the total stays)."""
    service = FakeService.build(3000, cap=100)
    dies(service, tmp_path, 120)
    store = HarvestStore(str(tmp_path / "h"))
    frames = [store.read_shard(entry) for entry in store.finished_shards().values()]
    frame = next(f for f in frames if (f.collection_id < 3).any())
    row = frame[frame.collection_id < 3].iloc[0]
    moved = (int(row.databox_id), int(row.record_id))
    for index, record in enumerate(service.records):
        if (record["databox_id"], record["record_id"]) == moved:
            base = 3 - record["base_id"]  # 1 <-> 2, both of databox 1
            service.records[index] = {
                **record,
                "base_id": base,
                "collection_id": base,
                "title": "re-filed",
                "updated_on": now().isoformat(),
            }
    result, report = run(service, tmp_path, per_page=100)
    assert keys(result) == service.truth() and report.complete
    row = result[(result.databox_id == moved[0]) & (result.record_id == moved[1])]
    assert list(row.title) == ["re-filed"]
    was = int(frame[frame.record_id == moved[1]].collection_id.iloc[0])
    assert list(row.collection_id) == [3 - was]


@KILLS
def test_nothing_changed_keeps_every_finished_shard_for_a_request_more(tmp_path, per_page, dies_at):
    service = FakeService.build(3000, cap=100)
    saved = dies(service, tmp_path, dies_at, per_page)
    kept = HarvestStore(str(tmp_path / "h")).finished_shards()
    leaves = {leaf.id: leaf for leaf in saved.leaves}
    if not leaves:  # killed while planning: the leaves found so far are the splits' children
        leaves = {kid.id: kid for split in saved.splits.values() for kid in split.children}
    asked: list[dict] = []

    def recording(**params):
        asked.append(params)
        return service(**params)

    frame, report = run(recording, tmp_path, per_page=per_page)
    assert keys(frame) == service.truth() and report.complete
    assert report.resumed_shards == len(kept)
    checks = [p for p in asked if p.get("sort") == "updated_on"]
    assert len(checks) == 1 and checks[0]["per_page"] == 1, checks
    assert report.requests == len(asked)
    # nothing updated since the kill: no shard it finished is asked of again
    spec = Spec("records")
    saved = HarvestStore(str(tmp_path / "h")).load_plan()
    for shard_id in set(kept) & set(leaves):
        bounds = spec.params(Shard.from_dict(leaves[shard_id].shard))
        again = [p for p in asked if all(p.get(k) == v for k, v in bounds.items())]
        assert not again, (shard_id, again)
    assert saved is None, "published"


def test_pages_kept_within_a_shard_are_not_resumed_from_after_churn(tmp_path):
    """An engine without a cap: the whole search is one window, paged on one thread. A record
    of the pages kept is deleted and one added at the end: the total is the same, the kept
    pages' offsets have shifted by one."""
    service = FakeService.build(1000, newer_engine=True)
    crash_after(service, tmp_path, 15, 40)
    kept = HarvestStore(str(tmp_path / "h")).pages(WHOLE).restore()
    assert kept
    first = kept[0][1]
    gone = (int(first.databox_id.iloc[0]), int(first.record_id.iloc[0]))
    latest = max(service.records, key=lambda r: r["created_on"])
    added = replace_by_a_twin(service, gone, twin_of=(latest["databox_id"], latest["record_id"]))
    frame, report = run(service, tmp_path, per_page=40)
    assert gone not in keys(frame) and added in keys(frame)
    assert keys(frame) == service.truth() and report.complete


def test_a_server_whose_hits_carry_no_updated_on_has_every_shard_paged_again(tmp_path):
    """Nothing tells what changed: nothing kept is trusted (never a row lost silently)."""
    service = FakeService.build(3000, cap=100)
    for record in service.records:
        record["updated_on"] = None
    dies(service, tmp_path, 120)
    gone = a_finished_record(tmp_path)
    added = replace_by_a_twin(service, gone, twin_of=gone)
    service.records[-1]["updated_on"] = None
    frame, report = run(service, tmp_path, per_page=100)
    assert gone not in keys(frame) and added in keys(frame)
    assert keys(frame) == service.truth() and report.complete
    assert report.resumed_shards == 0


def test_a_plan_that_does_not_say_when_its_run_began_keeps_nothing_unchecked(tmp_path):
    """A plan saved by an older version: the time past which updates are changes is unknown."""
    service = FakeService.build(3000, cap=100)
    saved = dies(service, tmp_path, 120)
    store = HarvestStore(str(tmp_path / "h"))
    store.save_plan(dataclasses.replace(saved, started=None))
    frame, report = run(service, tmp_path, per_page=100)
    assert keys(frame) == service.truth() and report.complete
    assert report.resumed_shards == 0


@pytest.fixture(scope="session")
def flavour() -> str:
    """The contract's server (a current one, without a cap, answers in one shard)."""
    return "contract"


def interrupted(emu, settings) -> mf.Client:
    """A client of ``emu`` after a harvest of every record stopped by its token revoked after 40
    requests (its finished shards kept), with a token that holds."""
    emu.set_faults(revoke_after=40)
    with pytest.raises(TokenRejectedError):
        mf.connect(emu.base_url, token=emu.token_for("demo"), settings=settings).records()
    emu.set_faults(revoke_after=10**9)
    return mf.connect(emu.base_url, token=emu.token_for("demo"), settings=settings)


def test_an_edit_while_the_harvest_was_down_is_in_the_resumed_frame(fresh_emulator, tmp_path):
    """Through the service: an edit moves no count, only the record's ``updated_on``."""
    emu = fresh_emulator(records=1000, seed=9, cap=100)
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False, per_page=40, concurrency=1, backoff=0.01
    )
    client = interrupted(emu, settings)
    store = HarvestStore(str(client.cache_path("records")))
    finished = store.finished_shards()
    assert len(finished) > 1, "the revoked harvest kept finished shards"
    kept = store.read_shard(next(iter(finished.values())))
    databox, record = int(kept.databox_id.iloc[0]), int(kept.record_id.iloc[0])
    emu.update_record(databox, record, title="Edited while the harvest was down")
    result = client.records()
    report = mf.HarvestReport.from_frame(result)
    assert report.complete and keys(result) == keys(emu.ground_truth())
    assert report.resumed_shards == len(finished) - 1, "the other finished shards are kept"
    row = result[(result.databox_id == databox) & (result.record_id == record)]
    assert list(row.title) == ["Edited while the harvest was down"]


@pytest.mark.parametrize("sync_lag", [300.0, 3600.0])
def test_the_sync_lag_setting_is_how_far_back_a_resume_looks(fresh_emulator, tmp_path, sync_lag):
    """Through the client: ``sync_lag`` (MEDIAFRAME_SYNC_LAG) governs the resume's look back
    too. An edit the server stamped ten minutes before the run began is seen within an hour's
    lag, and kept as read with the default five minutes."""
    emu = fresh_emulator(records=1000, seed=9, cap=100)
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False, per_page=40, concurrency=1, backoff=0.01,
        sync_lag=sync_lag,
    )  # fmt: skip
    client = interrupted(emu, settings)
    store = HarvestStore(str(client.cache_path("records")))
    saved = store.load_plan()
    assert saved is not None and saved.started is not None
    kept = store.read_shard(next(iter(store.finished_shards().values())))
    databox, record = int(kept.databox_id.iloc[0]), int(kept.record_id.iloc[0])
    began = dt.datetime.fromisoformat(saved.started).timestamp()
    emu.catalogue.update_record(emu._row(databox, record), now=int(began) - 600, title="late")
    emu.search.invalidate()
    result = client.records()
    row = result[(result.databox_id == databox) & (result.record_id == record)]
    assert (list(row.title) == ["late"]) == (sync_lag > 600), list(row.title)


def test_a_search_with_a_date_filter_of_its_own(tmp_path):
    """The check sorts by ``updated_on`` and filters nothing: a user's own date filter (here
    on ``created_on``, which the shards are cut on too) stays as it is."""
    spec = Spec("records", filters={"date_field": "created_on", "date_min": dt.date(2020, 4, 1)})
    service = FakeService.build(3000, cap=100)
    calls = {"n": 0}

    def flaky(**params):
        calls["n"] += 1
        if calls["n"] == 60:
            raise Crash
        return service(**params)

    with pytest.raises(Crash):
        run(flaky, tmp_path, spec, concurrency=1, per_page=100)
    gone = a_finished_record(tmp_path)
    added = replace_by_a_twin(service, gone, twin_of=gone)
    frame, report = run(service, tmp_path, spec, per_page=100)
    wanted = {
        (r["databox_id"], r["record_id"])
        for r in service.records
        if dt.date.fromisoformat(r["created_on"][:10]) >= dt.date(2020, 4, 1)
    }
    assert gone not in keys(frame) and added in keys(frame)
    assert keys(frame) == wanted and report.complete


@KILLS
def test_the_check_reads_back_only_shards_updated_since_the_run_began(
    tmp_path, monkeypatch, per_page, dies_at
):
    """Each finished shard's entry says when its rows were updated last: a check reads the
    rows back (to compare them) only where that is after the interrupted run's start."""
    service = FakeService.build(3000, cap=100)
    dies(service, tmp_path, dies_at, per_page)
    finished = HarvestStore(str(tmp_path / "h")).finished_shards()
    assert all(entry.updated_last for entry in finished.values())
    gone = a_finished_record(tmp_path)
    replace_by_a_twin(service, gone, twin_of=a_finished_record(tmp_path, 1))
    read: list[tuple[str, list[str]]] = []
    real = HarvestStore.read_shards

    def spied(self, entries):
        entries = list(entries)
        read.append((threading.current_thread().name, [entry.id for entry in entries]))
        return real(self, entries)

    monkeypatch.setattr(HarvestStore, "read_shards", spied)
    frame, report = run(service, tmp_path, per_page=per_page)
    assert keys(frame) == service.truth() and report.complete
    assert report.resumed_shards >= len(finished) - 2, "all but the two changed are kept"
    checking = [ids for name, ids in read if ids and not name.startswith("mediaframe-kept")]
    assert not checking, checking


@pytest.mark.parametrize("lag", [None, dt.timedelta(hours=1)], ids=["default", "an-hour"])
def test_a_larger_lag_has_a_resume_see_an_edit_within_it(tmp_path, lag):
    """The resume looks back as far as a sync does (``sync_lag``): an edit the server stamped
    ten minutes before the run began (its clock behind, or slow to index) is past the default
    five minutes, and so kept as it was read; within a lag of an hour, it is a change."""
    service = FakeService.build(3000, cap=100)
    saved = dies(service, tmp_path, 120)
    assert saved.started is not None
    edited = a_finished_record(tmp_path)
    stamp = dt.datetime.fromisoformat(saved.started).replace(microsecond=0)
    stamp -= dt.timedelta(minutes=10)
    for index, record in enumerate(service.records):
        if (record["databox_id"], record["record_id"]) == edited:
            service.records[index] = {**record, "title": "edited", "updated_on": stamp.isoformat()}
    options = {} if lag is None else {"lag": lag}
    frame, report = run(service, tmp_path, per_page=100, **options)
    assert keys(frame) == service.truth() and report.complete
    row = frame[(frame.databox_id == edited[0]) & (frame.record_id == edited[1])]
    # with the default, the shard is kept as read (the edit is past five minutes before)
    assert (list(row.title) == ["edited"]) == (lag is not None), list(row.title)
