"""Resume that saves work: proven splits and finished shards are checkpointed as planning goes,
so a resume costs the unfinished part plus a small constant, and a harvest whose token is
revoked every few requests converges."""

import dataclasses
import json
import re
import threading

import pandas as pd
import pytest

import mediaframe as mf
from mediaframe.cache import HarvestStore
from mediaframe.config import Settings
from mediaframe.exceptions import CacheCorruptError, CacheWarning, TokenRejectedError
from mediaframe.harvest.kept import KeptFrames

from .fake import FakeService
from .test_engine import Crash, keys, run

# An engine without a cap pages the whole search by offset windows; run on one thread, as
# crash_after runs it, the 1000 records are one window (a resume keeps the saved plan).
WHOLE = "o0-1000-of1000"


def page_at(index, per_page=40):
    """The offset of the first new hit of a shard's page ``index``: every page after the
    first is asked from the hit the one before ended on, and brings ``per_page - 1`` new."""
    return index and per_page + (per_page - 1) * (index - 1)


def crash_after(service, tmp_path, requests, per_page):
    """Run a harvest that dies at its ``requests``-th search; how many searches it made."""
    calls = {"n": 0}

    def flaky(**params):
        calls["n"] += 1
        if calls["n"] == requests:
            raise Crash
        return service(**params)

    with pytest.raises(Crash):
        run(flaky, tmp_path, concurrency=1, per_page=per_page)
    return calls["n"]


@pytest.mark.parametrize("per_page", [100, 40])  # killed while planning; while paging
def test_a_resume_costs_only_what_is_unfinished(tmp_path, per_page):
    _, fresh = run(FakeService.build(3000, cap=100), tmp_path / "fresh", per_page=per_page)
    service = FakeService.build(3000, cap=100)
    spent = crash_after(service, tmp_path, fresh.requests // 2, per_page)
    saved = HarvestStore(str(tmp_path / "h")).load_plan()
    assert saved is not None and saved.splits, "the proven splits were checkpointed"
    before = service.requests
    frame, report = run(service, tmp_path, per_page=per_page)
    assert keys(frame) == service.truth() and report.complete
    assert service.requests - before == report.requests
    # the unfinished part, plus a few requests (a count of the whole, a bounds probe or two)
    assert report.requests <= fresh.requests - spent + 5, (report.requests, fresh.requests, spent)


def test_a_resume_with_a_moved_total_checks_what_it_keeps(tmp_path):
    service = FakeService.build(3000, cap=100)
    crash_after(service, tmp_path, 120, 100)
    finished = HarvestStore(str(tmp_path / "h")).finished_shards()
    victim = HarvestStore(str(tmp_path / "h")).read_shard(next(iter(finished.values())))
    gone = (int(victim.databox_id.iloc[0]), int(victim.record_id.iloc[0]))
    service.records = [r for r in service.records if (r["databox_id"], r["record_id"]) != gone]
    frame, report = run(service, tmp_path, per_page=100)
    assert gone not in keys(frame) and keys(frame) == service.truth() and report.complete


def test_a_harvest_whose_token_is_revoked_every_few_requests_converges(
    fresh_emulator, tmp_path, flavour
):
    emu = fresh_emulator(records=2000, seed=9, cap=100)
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False, per_page=40, concurrency=2, backoff=0.01
    )
    fresh = mf.connect(emu.base_url, token=emu.token, settings=settings).records(
        cache_dir=str(tmp_path / "fresh")
    )
    needed = mf.HarvestReport.from_frame(fresh).requests
    # An uncapped server (``current``) keeps the whole search in one shard: only the pages
    # kept within it let a resume go on where the last try stopped.
    every = max(needed // 6, 12)
    emu.set_faults(revoke_after=every)
    attempt = 0
    for attempt in range(1, 30):  # noqa: B007  (counted)
        client = mf.connect(emu.base_url, token=emu.token_for("demo"), settings=settings)
        try:
            frame = client.records()
        except TokenRejectedError:
            continue
        break
    else:
        pytest.fail("the harvest never converged")
    assert mf.HarvestReport.from_frame(frame).complete
    assert keys(frame) == keys(emu.ground_truth())
    # each attempt costs a constant (who the user is, a count of the whole — two on an engine
    # without a cap) and loses at most the pages in flight (two threads, under three pages each)
    assert attempt <= needed // (every - 8) + 2, f"{attempt} attempts of {every} requests"


def test_a_resume_goes_on_from_the_pages_kept_within_a_shard(tmp_path):
    # An engine without a cap, paged on one thread: the whole search is one window of 26 pages
    # (40 hits, then 39 new ones a page: each page after the first overlaps the one before).
    service = FakeService.build(1000, newer_engine=True)
    spent = crash_after(service, tmp_path, 15, 40)
    kept = HarvestStore(str(tmp_path / "h")).pages(WHOLE).restore()
    assert [entry.offset for entry, _ in kept] == [page_at(i) for i in range(len(kept))] and kept
    before = service.requests
    frame, report = run(service, tmp_path, per_page=40)
    assert keys(frame) == service.truth() and report.complete
    assert service.requests - before == report.requests
    # two counts of the whole (which meaning of available_results), its hit updated last (was
    # anything added or edited since the kill?), then the pages not kept, and one hit asked
    # past the total (an engine may count only so far)
    assert report.requests == 2 + 1 + 26 - len(kept) + 1, (report.requests, spent, len(kept))
    assert not HarvestStore(str(tmp_path / "h")).pages(WHOLE).restore(), "pages dropped"


def test_a_fresh_harvest_looks_for_no_kept_page(tmp_path, monkeypatch):
    # A fresh harvest cleared every page kept: it looked for them anyway, two files a shard.
    service = FakeService.build(1000, newer_engine=True)
    crash_after(service, tmp_path, 15, 40)
    assert HarvestStore(str(tmp_path / "h")).pages(WHOLE).restore(), "pages were kept"
    looked: list[str] = []
    real = HarvestStore.read_checkpoint

    def spied(self, name):
        looked.append(name)
        return real(self, name)

    monkeypatch.setattr(HarvestStore, "read_checkpoint", spied)
    frame, report = run(service, tmp_path, per_page=40, resume=False)
    assert keys(frame) == service.truth() and report.complete
    assert looked == []
    run(service, tmp_path, per_page=40, concurrency=1)  # published: a resume starts afresh...
    assert looked, "...yet looks, as a resume must"


def test_pages_kept_before_the_shard_moved_are_not_resumed_from(tmp_path):
    service = FakeService.build(1000, newer_engine=True)
    crash_after(service, tmp_path, 15, 40)
    kept = HarvestStore(str(tmp_path / "h")).pages(WHOLE).restore()
    first = kept[0][1]
    gone = (int(first.databox_id.iloc[0]), int(first.record_id.iloc[0]))
    service.records = [r for r in service.records if (r["databox_id"], r["record_id"]) != gone]
    offsets = []
    service.after_search = lambda params: offsets.append(params["offset_start"])
    frame, report = run(service, tmp_path, per_page=40)
    assert gone not in keys(frame) and keys(frame) == service.truth() and report.complete
    pages = [offset for offset in offsets if offset]
    # the windows of a search that moved are planned again: every page is asked once (from one
    # hit before the next new one), none of the kept ones taken as they were; then one hit past
    # the total (999 hits now)
    assert sorted(pages) == [*(39 * i for i in range(1, 26)), 999], pages


def test_a_damaged_page_is_fetched_again_with_those_after_it(tmp_path):
    service = FakeService.build(1000, newer_engine=True)
    crash_after(service, tmp_path, 15, 40)
    folder = tmp_path / "h" / "shards" / f"{WHOLE}.pages"
    kept = len(list(folder.glob("*.json")))
    (folder / f"{page_at(3):010d}.arrow").write_bytes(b"not arrow")
    with pytest.warns(CacheWarning, match="damaged"):
        frame, report = run(service, tmp_path, per_page=40)
    assert keys(frame) == service.truth() and report.complete
    # + the hit updated last, and a hit past the total
    assert report.requests == 2 + 1 + 26 - 3 + 1, (report.requests, kept)


@pytest.mark.parametrize("keep_every", [0.0, 3600.0])
def test_pages_are_kept_while_paging_only_every_few_seconds(tmp_path, monkeypatch, keep_every):
    """A kill (no exception to catch) loses at most a few seconds of a shard's pages; a shard
    paged faster than that writes no page checkpoint at all."""
    from mediaframe.harvest import paging

    monkeypatch.setattr(paging, "_KEEP_EVERY", keep_every)
    service = FakeService.build(1000, newer_engine=True)
    on_disk = []

    def watched(**params):
        on_disk.append(len(HarvestStore(str(tmp_path / "h")).pages(WHOLE).restore()))
        return service(**params)

    frame, report = run(watched, tmp_path, per_page=40, concurrency=1)
    assert keys(frame) == service.truth() and report.complete
    if keep_every:
        assert max(on_disk) == 0, "a fast shard keeps no page"
    else:
        assert on_disk[-1] == 25, on_disk  # when the last page is asked: all 25 before it


def test_a_resume_reads_its_kept_shards_back_while_the_rest_is_paged(tmp_path, monkeypatch):
    """Read at the end, the kept shards were most of a resume's tail."""
    service = FakeService.build(3000, cap=100)
    crash_after(service, tmp_path, 120, 100)
    kept = HarvestStore(str(tmp_path / "h")).finished_shards()
    assert kept, "the crash left finished shards"
    readers: list[tuple[str, list[str]]] = []
    real = HarvestStore.read_shards

    def spied(self, entries):
        entries = list(entries)
        readers.append((threading.current_thread().name, [entry.file for entry in entries]))
        return real(self, entries)

    monkeypatch.setattr(HarvestStore, "read_shards", spied)
    frame, report = run(service, tmp_path, per_page=100)
    assert keys(frame) == service.truth() and report.complete
    assert report.resumed_shards == len(kept)
    assert sum(len(files) for _, files in readers) == len(kept)
    assert all(name.startswith("mediaframe-kept") for name, _ in readers), readers
    # shards are kept in batches: each file is read once, for all its shards
    assert all(len(set(files)) == 1 for _, files in readers)
    assert len(readers) == len({entry.file for entry in kept.values()})


def test_kept_frames_are_taken_only_for_the_entry_read_and_only_when_readable(tmp_path):
    store = HarvestStore(str(tmp_path / "h"))
    frame = pd.DataFrame({"databox_id": pd.array([1, 1], dtype="Int64"), "n": [1, 2]})
    good = store.write_shard("good", frame, total=2)
    bad = store.write_shard("bad", frame, total=2)
    (tmp_path / "h" / bad.file).write_bytes(b"damaged")
    with KeptFrames(store) as kept:
        kept.read({"good": good, "bad": bad})
        other = dataclasses.replace(good, rows=3)
        assert kept.take("good", other) is None  # read for another entry
        kept.read({"good": good})
        pd.testing.assert_frame_equal(kept.take("good", good), frame)
        assert kept.take("good", good) is None  # taken once
        assert kept.take("bad", bad) is None  # left for the store, which says why
        assert kept.take("never", good) is None
    with pytest.raises(CacheCorruptError):
        store.read_shard(bad)


def test_kept_frames_let_go_of_the_shards_the_plan_did_not_keep(tmp_path):
    store = HarvestStore(str(tmp_path / "h"))
    frame = pd.DataFrame({"databox_id": pd.array([1, 1], dtype="Int64"), "n": [1, 2]})
    kept, dropped = (store.write_shard(name, frame, total=2) for name in ("kept", "dropped"))
    with KeptFrames(store) as frames:
        frames.read({"kept": kept, "dropped": dropped})
        taken = frames.taken({"kept": kept})
        assert list(taken) == ["kept"]
        pd.testing.assert_frame_equal(taken["kept"], frame)
        assert frames.take("dropped", dropped) is None  # not held to the end


def test_a_resume_sorts_no_shard_by_date_again(tmp_path):
    """The first and last days a shard is split over are checkpointed with the counts: a run
    killed after they were found resumes without sorting any shard by date again (a harvest
    whose token is revoked every few requests spent most of each try on them)."""
    asked: list[dict] = []

    def recording(service):
        def page(**params):
            asked.append(params)
            return service(**params)

        return page

    run(recording(FakeService.build(3000, cap=100)), tmp_path / "fresh", per_page=100)
    dated = [i for i, params in enumerate(asked) if params.get("ord") == "desc"]
    assert len(dated) == 3, "one last-day sort per base (the count brought the first day)"
    earliest = [p for p in asked if p.get("ord") == "asc" and p.get("per_page") == 1]
    assert len(earliest) == 4, "the counts of the whole and of each base, each earliest first"
    service = FakeService.build(3000, cap=100)
    answered = {"last days": 0}

    def dies_after_the_last_days(**params):
        # dies at the first search after the last of the last-day sorts was answered
        if answered["last days"] == len(dated):
            raise Crash
        page = service(**params)
        answered["last days"] += params.get("ord") == "desc"
        return page

    with pytest.raises(Crash):
        run(dies_after_the_last_days, tmp_path, concurrency=1, per_page=100)
    saved = HarvestStore(str(tmp_path / "h")).load_plan()
    assert saved is not None and len(saved.days) == 3, saved
    asked.clear()
    frame, report = run(recording(service), tmp_path, per_page=100)
    assert keys(frame) == service.truth() and report.complete
    # (but for the one hit updated last: was anything added or edited since the kill?)
    dated = [p for p in asked if p.get("ord") == "desc" and p.get("sort") != "updated_on"]
    assert not dated, asked


def test_a_day_saved_in_another_shape_is_found_again(tmp_path):
    service = FakeService.build(3000, cap=100)
    _, fresh = run(FakeService.build(3000, cap=100), tmp_path / "fresh", per_page=100)
    crash_after(service, tmp_path, fresh.requests // 2, 100)
    store = HarvestStore(str(tmp_path / "h"))
    saved = store.load_plan()
    assert saved is not None and saved.days
    damaged = {
        key: dataclasses.replace(days, first="2021-13-45") for key, days in saved.days.items()
    }
    store.save_plan(dataclasses.replace(saved, days=damaged, splits={}))
    frame, report = run(service, tmp_path, per_page=100)
    assert keys(frame) == service.truth() and report.complete


def unfinished(saved, done, **damage):
    """The leaves of ``saved``, the first not ``done`` damaged: a resume pages that one."""
    at = next(i for i, leaf in enumerate(saved.leaves) if leaf.id not in done)
    leaf = saved.leaves[at]
    damaged = dataclasses.replace(leaf, **{k: f(leaf) for k, f in damage.items()})
    return [*saved.leaves[:at], damaged, *saved.leaves[at + 1 :]]


@pytest.mark.parametrize(
    "damage",
    [
        # the whole search as one leaf, whose pages folder (shards/<id>.pages) is a folder of
        # the user's outside the cache: paged short of its total, its pages would go
        lambda saved, done: [
            dataclasses.replace(saved.leaves[0], id="../../precious", shard={}, expected=3000)
        ],
        lambda saved, done: unfinished(
            saved, done, shard=lambda leaf: {**leaf.shard, "date_min": "garbage"}
        ),
        lambda saved, done: unfinished(
            saved, done, shard=lambda leaf: {**leaf.shard, "bases": ["1", "2"], "status": 1}
        ),
        lambda saved, done: unfinished(
            saved, done, shard=lambda leaf: {**leaf.shard, "bases": ["1"]}
        ),
        # an id that names other bounds than its own
        lambda saved, done: unfinished(saved, done, id=lambda leaf: leaf.id + "_s1on1"),
    ],
    ids=[
        "id-outside-the-cache",
        "unreadable-date",
        "unreadable-status",
        "bases-as-text",
        "id-not-its-own",
    ],
)
def test_a_plan_whose_shards_are_malformed_is_dropped_with_a_warning(tmp_path, damage):
    victim = tmp_path / "precious.pages"
    victim.mkdir()
    (victim / "0000000000.json").write_text("{}")
    (victim / "thesis.tex").write_text("years of work")
    service = FakeService.build(3000, cap=100)
    _, fresh = run(FakeService.build(3000, cap=100), tmp_path / "fresh", per_page=40)
    crash_after(service, tmp_path, fresh.requests - 3, 40)
    store = HarvestStore(str(tmp_path / "h"))
    saved = store.load_plan()
    assert saved is not None and saved.planned, "killed while paging"
    leaves = damage(saved, store.finished_shards())
    store.save_plan(dataclasses.replace(saved, leaves=leaves))
    with pytest.warns(CacheWarning, match="plan .* is damaged"):
        frame, report = run(service, tmp_path, per_page=40)
    assert keys(frame) == service.truth() and report.complete
    assert (victim / "thesis.tex").read_text() == "years of work"


@pytest.mark.parametrize(
    "damage, told",
    [
        ("[]", "plan .* is damaged"),
        ('{"schema_version": 2, "spec": {}, "total": "zz"}', "plan .* is damaged"),
        ('{"schema_version": 99, "spec": {}}', "plan .* another version of mediaframe"),
    ],
    ids=["a-list", "a-count-of-the-wrong-type", "another-version"],
)
def test_a_plan_that_cannot_be_read_is_dropped_with_its_shards_and_told(tmp_path, damage, told):
    """A plan damaged as a whole goes with the shards it made: kept without it, each would be
    counted again one by one, and the resume would cost more than a fresh harvest."""
    _, fresh = run(FakeService.build(3000, cap=100), tmp_path / "fresh", per_page=40)
    service = FakeService.build(3000, cap=100)
    crash_after(service, tmp_path, fresh.requests - 3, 40)
    store = HarvestStore(str(tmp_path / "h"))
    assert store.finished_shards(), "killed with shards kept"
    (tmp_path / "h" / "plan.json").write_text(damage)
    with pytest.warns(CacheWarning, match=told + ".* dropped with its shards"):
        frame, report = run(service, tmp_path, per_page=40)
    assert keys(frame) == service.truth() and report.complete
    assert report.resumed_shards == 0
    assert report.requests <= fresh.requests, (report.requests, fresh.requests)


@pytest.mark.parametrize("damage", ["entries", "file"])
def test_damaged_shards_kept_for_resume_are_told_and_fetched_again(tmp_path, damage):
    service = FakeService.build(3000, cap=100)
    _, fresh = run(FakeService.build(3000, cap=100), tmp_path / "fresh", per_page=40)
    crash_after(service, tmp_path, fresh.requests - 3, 40)
    batch = sorted((tmp_path / "h" / "shards").glob("*.json"))[0]
    if damage == "entries":
        batch.write_text("[]")
        told = f"shards/{batch.name}"
    else:
        batch.with_suffix(".arrow").write_bytes(b"cut")
        told = f"shards/{batch.stem}.arrow"
    with pytest.warns(CacheWarning, match=f"{told}.* fetched again"):
        frame, report = run(service, tmp_path, per_page=40)
    assert keys(frame) == service.truth() and report.complete


@pytest.mark.parametrize("damage", ["truncated", "crc", "shape", "offset"])
def test_damaged_pages_kept_for_resume_are_told_once_and_fetched_again(tmp_path, damage):
    """Damaged pages of a shard still being paged are told as damaged shards are, once a look
    (not once a page): paging them again costs the requests a resume was meant to save."""
    service = FakeService.build(1000, newer_engine=True)
    crash_after(service, tmp_path, 15, 40)
    folder = tmp_path / "h" / "shards" / f"{WHOLE}.pages"
    assert len(list(folder.glob("*.json"))) > 4, "killed mid-shard with pages kept"
    name = f"{page_at(3):010d}"
    page, entry = folder / f"{name}.arrow", folder / f"{name}.json"
    if damage == "truncated":
        page.write_bytes(page.read_bytes()[:-40])
        told = f"{name}.arrow does not match its CRC-32"
    elif damage == "crc":
        entry.write_text(json.dumps({**json.loads(entry.read_text()), "crc32": "0" * 8}))
        told = f"{name}.arrow does not match its CRC-32"
    elif damage == "shape":
        entry.write_text("[]")
        told = f"{name}.json"
    else:
        entry.write_text(json.dumps({**json.loads(entry.read_text()), "offset": 7}))
        told = f"{name}.json is the entry of another page"
    with pytest.warns(CacheWarning) as caught:
        frame, report = run(service, tmp_path, per_page=40)
    assert keys(frame) == service.truth() and report.complete
    told_pages = [str(w.message) for w in caught if "pages of shard" in str(w.message)]
    assert len(told_pages) == 1, told_pages
    assert re.search(f"{WHOLE}.* damaged .*{told}.*fetched again", told_pages[0]), told_pages
    assert report.requests == 2 + 1 + 26 - 3 + 1, report.requests  # as a damaged page costs
