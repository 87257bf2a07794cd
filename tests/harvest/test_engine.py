"""The harvest engine retrieves every hit under a cap, proves it, and resumes after a crash."""

import functools

import orjson
import pytest

from mediaframe.cache import HarvestStore
from mediaframe.exceptions import CacheWarning, IncompleteResultError, IncompleteResultWarning
from mediaframe.frames import concat_records, records_json
from mediaframe.harvest import HarvestReport, Spec, harvest

from .fake import FakeService, combine

STATUSES = {1: (1, range(4, 8)), 2: (1, range(4, 8)), 3: (2, range(4, 8))}


def run(service, tmp_path, spec=None, **options):
    options.setdefault("bases", (1, 2, 3))
    options.setdefault("statuses", STATUSES)
    options.setdefault("per_page", 40)
    options.setdefault("combine", combine)
    return harvest(service, spec or Spec("records"), HarvestStore(str(tmp_path / "h")), **options)


def keys(frame):
    return set(zip(frame.databox_id, frame.record_id, strict=True))


def test_small_result_is_paged_without_planning(tmp_path):
    service = FakeService.build(90, cap=100)
    frame, report = run(service, tmp_path)
    assert keys(frame) == service.truth()
    assert report.complete and report.cap is None and len(report.shards) == 1
    assert report.requests == 1 + 3  # one count, three pages of 40


def test_capped_result_is_split_and_proved_complete(tmp_path):
    service = FakeService.build(2000, cap=100)
    frame, report = run(service, tmp_path)
    assert keys(frame) == service.truth()
    assert report.complete and report.cap == 100 and report.duplicates == 0
    assert all(s["expected"] <= 100 for s in report.shards)
    assert sum(s["fetched"] for s in report.shards) == 2000
    assert list(frame.columns[:2]) == ["databox_id", "record_id"]
    order = ["databox_id", "collection_id", "record_id"]
    assert frame.equals(frame.sort_values(order).reset_index(drop=True)), "rows in partition order"
    assert set(report.plan.columns) >= {"shard", "bases", "date_min", "expected", "fetched"}


def test_a_count_that_brings_every_hit_is_not_fetched_again(tmp_path):
    service = FakeService.build(2000, cap=100)
    frame, report = run(service, tmp_path, per_page=100)
    assert keys(frame) == service.truth() and report.complete
    probed = [s for s in report.shards if s["requests"] == 0]
    assert probed, "leaves expected under a page are counted with their page"
    assert service.requests == report.requests
    _, paged = run(FakeService.build(2000, cap=100), tmp_path / "small", per_page=40)
    assert report.requests < paged.requests


def test_a_crowded_day_is_split_by_type_then_status(tmp_path):
    service = FakeService.build(900, cap=60, same_day=500, bases=(1,))
    frame, report = run(service, tmp_path)
    assert keys(frame) == service.truth()
    assert report.complete
    assert any(s["shard"]["record_type"] for s in report.shards)
    assert any(s["shard"]["status"] for s in report.shards)


def test_undated_records_are_not_lost_when_dates_cannot_split(tmp_path):
    service = FakeService.build(400, cap=100, undated=30, bases=(1,))
    frame, report = run(service, tmp_path)
    assert keys(frame) == service.truth() and report.complete


def test_unsplittable_shard_raises_unless_allowed(tmp_path):
    # 300 hits on one day, one base, one type, no status bits: nothing can split them under 100
    service = FakeService.build(300, cap=100, same_day=300, bases=(1,))
    for record in service.records:
        record["media_type"], record["status"] = "image", 0
    with pytest.raises(IncompleteResultError, match="allow_incomplete=True") as caught:
        run(service, tmp_path, statuses={})
    assert caught.value.shards
    with pytest.warns(IncompleteResultWarning):
        frame, report = run(service, tmp_path / "again", statuses={}, allow_incomplete=True)
    assert not report.complete and report.incomplete
    assert len(frame) == 100, "what the cap lets through is kept"


def test_status_bits_split_a_single_base_the_user_named(tmp_path):
    service = FakeService.build(900, cap=60, same_day=500, bases=(1, 2))
    for record in service.records:
        record["media_type"] = "image"  # nothing but status bits can split the crowded day
    frame, report = run(service, tmp_path, Spec("records", filters={"bases": [1]}))
    expected = {(r["databox_id"], r["record_id"]) for r in service.records if r["base_id"] == 1}
    assert keys(frame) == expected and report.complete
    assert any(s["shard"]["status"] for s in report.shards)


def test_a_cap_of_one_is_not_mistaken_for_a_newer_engine(tmp_path):
    service = FakeService.build(30, cap=1, same_day=30, bases=(1,))
    for record in service.records:
        record["media_type"], record["status"] = "image", 0
    with pytest.raises(IncompleteResultError, match="cap of 1 hits"):
        run(service, tmp_path, statuses={})


def test_a_cap_of_zero_is_an_incomplete_result_not_a_division_by_zero(tmp_path):
    service = FakeService.build(300, cap=0, bases=(1, 2))
    with pytest.raises(IncompleteResultError, match="cap of 0 hits"):
        run(service, tmp_path)


def test_newer_engine_without_cap_is_detected(tmp_path):
    service = FakeService.build(700, cap=100, newer_engine=True)
    frame, report = run(service, tmp_path)
    assert keys(frame) == service.truth()
    assert report.complete and report.capped_engine is False
    # paged by offset windows of the whole: two counts of the whole, then 18 pages of 40, and
    # one hit asked past the total (an engine may count only so far)
    assert all(shard["shard"]["window"] for shard in report.shards) and len(report.shards) > 1
    assert report.requests == 2 + 18 + 1


def test_a_server_that_says_it_has_no_cap_but_caps_is_sharded_under_the_cap_it_shows(tmp_path):
    service = FakeService.build(1000, newer_engine=True, untold_cap=300)
    frame, report = run(service, tmp_path)
    assert keys(frame) == service.truth() and report.complete
    # the offset windows came back short from offset 300 on: filter shards under that cap
    assert report.cap == 300 and len(report.shards) > 1
    assert not any(shard["shard"].get("window") for shard in report.shards)


def test_a_search_that_moves_while_paged_by_windows_is_sharded_instead(tmp_path):
    service = FakeService.build(1000, newer_engine=True)
    gone = service.records[500]
    seen = []

    def moved(params):
        seen.append(params)
        if len(seen) == 6:  # amid the windows' pages: every offset after it shifts by one
            service.records = [r for r in service.records if r is not gone]

    service.after_search = moved
    frame, report = run(service, tmp_path)
    assert keys(frame) == service.truth() and report.complete and len(frame) == 999
    assert not any(shard["shard"].get("window") for shard in report.shards)


def test_filters_narrow_the_harvest(tmp_path):
    service = FakeService.build(1000, cap=100)
    frame, _ = run(service, tmp_path, Spec("records", filters={"record_type": "video"}))
    expected = {
        (r["databox_id"], r["record_id"]) for r in service.records if r["media_type"] == "video"
    }
    assert keys(frame) == expected


class Crash(Exception):
    pass


def test_resume_fetches_only_unfinished_shards(tmp_path):
    service = FakeService.build(1500, cap=100)
    calls = {"n": 0}

    def flaky(**params):
        if params.get("per_page") == 40:
            calls["n"] += 1
            if calls["n"] == 25:
                raise Crash
        return service(**params)

    with pytest.raises(Crash):
        run(flaky, tmp_path, concurrency=1)
    saved = HarvestStore(str(tmp_path / "h")).load_plan()
    finished = len(HarvestStore(str(tmp_path / "h")).finished_shards())
    # shards are paged while the plan is made: one that fails then stops the planning too (the
    # resume goes on from the splits it proved)
    assert saved is not None and finished > 0
    assert not saved.planned or finished < len(saved.plan)
    before = service.requests
    frame, report = run(service, tmp_path)
    assert keys(frame) == service.truth() and report.complete
    assert report.resumed_shards == finished
    assert service.requests - before == report.requests
    _, fresh = run(service, tmp_path / "fresh")
    assert report.requests < fresh.requests, "finished shards were fetched again"


def crash_midway(service, tmp_path, after=25, per_page=40):
    """Die at the ``after``-th search asking for ``per_page`` hits; the shards finished by then."""
    calls = {"n": 0}

    def flaky(**params):
        if params.get("per_page") == per_page:
            calls["n"] += 1
            if calls["n"] == after:
                raise Crash
        return service(**params)

    with pytest.raises(Crash):
        run(flaky, tmp_path, concurrency=1, per_page=per_page)
    return HarvestStore(str(tmp_path / "h")).finished_shards()


def test_resume_refetches_a_finished_shard_that_changed_since(tmp_path):
    service = FakeService.build(1500, cap=100)
    finished = crash_midway(service, tmp_path)
    first_file = next(iter(finished.values())).file
    frame = HarvestStore(str(tmp_path / "h")).read_shard(next(iter(finished.values())))
    gone = (int(frame.databox_id.iloc[0]), int(frame.record_id.iloc[0]))
    service.records = [r for r in service.records if (r["databox_id"], r["record_id"]) != gone]
    result, report = run(service, tmp_path)
    assert gone not in keys(result), f"a record deleted from {first_file} must not come back"
    assert keys(result) == service.truth() and report.complete
    assert report.resumed_shards == len(finished) - 1


def crash_while_planning(service, tmp_path):
    """Die in the middle of planning, where pages as big as the cap make counts fetch shards."""
    finished = crash_midway(service, tmp_path, after=100, per_page=100)
    assert not HarvestStore(str(tmp_path / "h")).load_plan().planned, "planning was over"
    return finished


def test_a_crash_while_planning_keeps_the_shards_it_finished(tmp_path):
    service = FakeService.build(2000, cap=100)
    finished = crash_while_planning(service, tmp_path)
    assert finished
    before = service.requests
    frame, report = run(service, tmp_path, per_page=100)
    assert keys(frame) == service.truth() and report.complete
    assert report.resumed_shards == len(finished)
    assert service.requests - before == report.requests
    _, fresh = run(service, tmp_path / "fresh", per_page=100)
    # proven splits are replayed and kept shards cost nothing: only the unproven rest is asked
    assert report.requests < fresh.requests


def test_a_plan_that_cannot_be_kept_does_not_hide_why_planning_stopped(tmp_path, monkeypatch):
    # keeping the proven splits after a failure is best effort: a disk that filled up then
    # raised its CacheError over the failure itself (a revoked token; here a crash)
    from mediaframe.exceptions import CacheError

    service, full, calls = FakeService.build(2000, cap=100), [], []
    real_save = HarvestStore.save_plan

    def save_plan(self, plan):
        if full:
            raise CacheError("could not write the cache: the disk is full")
        real_save(self, plan)

    def flaky(**params):
        calls.append(params)
        if len(calls) == 5:  # still planning: the disk is full by now
            full.append(True)
            raise Crash
        return service(**params)

    monkeypatch.setattr(HarvestStore, "save_plan", save_plan)
    with pytest.raises(Crash):
        run(flaky, tmp_path, concurrency=1, per_page=100)
    assert not HarvestStore(str(tmp_path / "h")).load_plan().planned


def test_a_shard_kept_from_planning_is_fetched_again_if_it_changed(tmp_path):
    service = FakeService.build(2000, cap=100)
    finished = crash_while_planning(service, tmp_path)
    frame = HarvestStore(str(tmp_path / "h")).read_shard(next(iter(finished.values())))
    gone = (int(frame.databox_id.iloc[0]), int(frame.record_id.iloc[0]))
    service.records = [r for r in service.records if (r["databox_id"], r["record_id"]) != gone]
    result, report = run(service, tmp_path, per_page=100)
    assert gone not in keys(result) and keys(result) == service.truth() and report.complete
    assert report.resumed_shards == len(finished) - 1


def test_without_resume_every_shard_is_fetched_again(tmp_path):
    service = FakeService.build(1500, cap=100)
    crash_midway(service, tmp_path)
    frame, report = run(service, tmp_path, resume=False)
    assert report.resumed_shards == 0 and keys(frame) == service.truth()


def test_damaged_shard_file_is_fetched_again(tmp_path, monkeypatch):
    """Shards are kept in batches, a file each: the shards of a damaged file are fetched
    again, and only they."""
    from mediaframe.harvest import joiner

    monkeypatch.setattr(joiner, "_BATCH", 2)
    service = FakeService.build(500, cap=100)
    store = HarvestStore(str(tmp_path / "h"))

    def crash(*args, **kwargs):
        raise Crash

    with monkeypatch.context() as patch:  # die after every shard is in, before the dataset
        patch.setattr(HarvestStore, "publish", crash)
        with pytest.raises(Crash):
            run(service, tmp_path)
    saved = store.load_plan()
    finished = store.finished_shards()
    assert len({entry.file for entry in finished.values()}) > 1
    assert set(finished) == {leaf.id for leaf in saved.plan}, "every shard kept before the end"
    victim = next(iter(finished.values()))
    lost = [entry for entry in finished.values() if entry.file == victim.file]
    (tmp_path / "h" / victim.file).write_bytes(b"garbage")
    with pytest.warns(CacheWarning, match=f"{victim.file} does not hold .* fetched again"):
        frame, report = run(service, tmp_path)
    assert keys(frame) == service.truth()
    assert report.resumed_shards == len(saved.plan) - len(lost)


def test_shard_that_grew_past_the_cap_is_split_again(tmp_path):
    service = FakeService.build(800, cap=100, days=100)
    # plan against the current catalogue, then double one day's records before paging
    grown = False

    def growing(**params):
        nonlocal grown
        if params.get("per_page") == 40 and not grown:
            grown = True
            service.grow(150, seed=5, same_day=150, bases=(1,))
        return service(**params)

    frame, report = run(growing, tmp_path)
    assert keys(frame) == service.truth()
    assert report.complete and report.total_results == report.fetched == len(frame)


def test_finished_harvest_leaves_only_the_dataset_and_manifest(tmp_path):
    service = FakeService.build(500, cap=100)
    frame, _ = run(service, tmp_path)
    store = HarvestStore(str(tmp_path / "h"))
    with store.writing():  # a later writer sweeps what the first was still removing
        pass
    names = sorted(p.name for p in (tmp_path / "h").iterdir() if not p.name.startswith("."))
    assert names == [store.manifest().data, "manifest.json"]
    cached, provenance = store.read_data()
    assert cached.equals(frame)
    assert provenance["complete"] is True and provenance["report"]["fetched"] == 500
    assert store.manifest().complete is True


def test_the_writer_lock_is_held_once_from_the_first_request_to_publication(tmp_path, monkeypatch):
    # it was let go between paging and publication: a second writer of the folder got in
    # while the plan and the last batches were still this harvest's
    from mediaframe.cache import locks

    taken, real_take = [], locks.LockFiles.take

    def take(self, name, mode, **kwargs):
        handle = real_take(self, name, mode, **kwargs)
        if name == locks.WRITER:
            taken.append(handle)
        return handle

    monkeypatch.setattr(locks.LockFiles, "take", take)
    service = FakeService.build(2000, cap=100)
    frame, report = run(service, tmp_path)
    assert report.complete and keys(frame) == service.truth()
    assert len(taken) == 1


def test_a_member_that_is_an_object_in_one_record_and_text_in_another_is_harvested(tmp_path):
    # Arrow refused such a column: the shards could not be kept, the dataset not written, and
    # the harvest raised (a bare pyarrow error, over its own) instead of giving the frame
    service = FakeService.build(300, cap=100)
    service.records[0]["rating"] = {"stars": 4}
    for record in service.records[1:]:
        record["rating"] = "good"

    def page(**params):  # the answers read as the client reads them
        return records_json(orjson.dumps({"meta": {}, "response": service.search(**params)}))

    frame, report = run(page, tmp_path, combine=functools.partial(concat_records, consume=True))
    assert report.complete and keys(frame) == service.truth()
    by_key = dict(
        zip(zip(frame.databox_id, frame.record_id, strict=True), frame.rating, strict=True)
    )
    first = service.records[0]
    assert by_key[(first["databox_id"], first["record_id"])] == {"stars": 4}
    assert sorted(map(str, by_key.values())).count("good") == 299
    cached, _ = HarvestStore(str(tmp_path / "h")).read_data()
    assert cached["rating"].tolist() == frame["rating"].tolist()


def test_report_travels_with_the_frame(tmp_path):
    service = FakeService.build(300, cap=100)
    frame, report = run(service, tmp_path)
    frame.attrs["harvest"] = report.to_dict()
    again = HarvestReport.from_frame(frame)
    assert again.summary() == report.summary()
    assert "300 records of 300 (complete)" in report.summary()
