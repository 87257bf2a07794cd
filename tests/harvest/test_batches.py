"""Finished shards are kept in batches, a file each: by count, by age, when a harvest fails."""

from __future__ import annotations

import dataclasses
import threading
import time

import pandas as pd
import pytest

from mediaframe.cache import HarvestStore
from mediaframe.cache.manifest import ShardEntry
from mediaframe.exceptions import CacheCorruptError, CacheError, CacheWarning
from mediaframe.harvest.joiner import _BATCH as BATCH
from mediaframe.harvest.joiner import Joiner

from .fake import FakeService, combine, flatten
from .test_engine import Crash, run


def _shard(index: int, rows: int = 3) -> tuple[ShardEntry, pd.DataFrame]:
    start = index * 100
    items = [
        {
            "databox_id": 1,
            "record_id": start + n,
            "collection_id": 1 + index % 2,
            "title": f"shard {index} row {n}",
            "updated_on": "2021-01-01T00:00:00+00:00",
        }
        for n in range(rows)
    ]
    return ShardEntry(id=f"s{index:02d}", rows=rows, total=rows), flatten(items)


def _files(store: HarvestStore) -> set[str]:
    return {entry.file for entry in store.finished_shards().values()}


def test_shards_are_kept_a_batch_a_file_and_read_back_as_they_came(tmp_path):
    store = HarvestStore(str(tmp_path / "h"))
    delivered = [_shard(index, rows=1 + index % 4) for index in range(BATCH + 4)]
    with Joiner(combine, store, every=60) as joiner:
        for entry, frame in delivered:
            joiner.add(entry, frame)
        joined = joiner.parts()
        joiner.keep_rest()
    assert sum(map(len, joined)) == sum(entry.rows for entry, _ in delivered)
    finished = store.finished_shards()
    assert set(finished) == {entry.id for entry, _ in delivered}
    assert len(_files(store)) == 2, "a full batch, then the rest"
    read = store.read_shards(finished.values())
    for entry, frame in delivered:
        assert finished[entry.id].rows == entry.rows
        pd.testing.assert_frame_equal(read[entry.id], frame)


def test_a_finished_shard_waits_at_most_a_moment_to_be_kept(tmp_path):
    store = HarvestStore(str(tmp_path / "h"))
    with Joiner(combine, store, every=0.05) as joiner:
        for index in range(3):
            joiner.add(*_shard(index))
        deadline = time.monotonic() + 10
        while len(store.finished_shards()) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(store.finished_shards()) == 3, "kept before paging ends"
        assert len(_files(store)) == 1
        joiner.parts()
        joiner.keep_rest()
    assert len(_files(store)) == 1, "nothing kept twice"


def test_the_rest_is_kept_only_when_asked(tmp_path):
    """A harvest that publishes clears its shards at once: the last ones are kept only for a
    harvest that fails after paging."""
    store = HarvestStore(str(tmp_path / "h"))
    with Joiner(combine, store, every=60) as joiner:
        for index in range(3):
            joiner.add(*_shard(index))
        assert sum(map(len, joiner.parts())) == 9
    assert store.finished_shards() == {}
    with Joiner(combine, store, every=60) as joiner:
        joiner.add(*_shard(0))
        joiner.parts()
        joiner.keep_rest()
        joiner.keep_rest()  # once
    assert list(store.finished_shards()) == ["s00"] and len(_files(store)) == 1


def test_a_failing_harvest_keeps_the_shards_still_waiting(tmp_path):
    store = HarvestStore(str(tmp_path / "h"))
    with pytest.raises(KeyboardInterrupt), Joiner(combine, store, every=60) as joiner:
        for index in range(3):
            joiner.add(*_shard(index))
        raise KeyboardInterrupt
    assert sorted(store.finished_shards()) == ["s00", "s01", "s02"]


def test_shards_read_back_are_joined_not_kept_again(tmp_path):
    store = HarvestStore(str(tmp_path / "h"))
    entry, frame = _shard(0)
    kept = store.write_shard(entry.id, frame, total=entry.total)
    with Joiner(combine, store, every=0.01) as joiner:
        joiner.add(kept, store.read_shard(kept))
        time.sleep(0.1)
        assert [len(part) for part in joiner.parts()] == [3]
        joiner.keep_rest()
    assert _files(store) == {kept.file}


def test_a_batch_that_cannot_be_kept_stops_the_harvest(tmp_path, monkeypatch):
    store = HarvestStore(str(tmp_path / "h"))

    def full(*args, **kwargs):
        raise CacheError("could not write the cache (No space left on device): free some space")

    monkeypatch.setattr(HarvestStore, "write_shards", full)
    with Joiner(combine, store, every=0.01) as joiner:
        joiner.add(*_shard(0))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                joiner.add(*_shard(1))
            except CacheError as err:
                assert "free some space" in str(err)
                break
            time.sleep(0.02)
        else:
            pytest.fail("the failed batch was never told")


def test_a_later_batch_holding_a_shard_again_wins(tmp_path):
    store = HarvestStore(str(tmp_path / "h"))
    _, frame = _shard(0)
    store.write_shard("s", frame, total=3)
    again = store.write_shard("s", frame.iloc[:2].reset_index(drop=True), total=2)
    assert store.finished_shards()["s"] == again
    assert len(store.read_shard(again)) == 2


def test_entries_that_point_outside_their_batch_are_damage(tmp_path):
    store = HarvestStore(str(tmp_path / "h"))
    entry, frame = _shard(0)
    written = store.write_shard(entry.id, frame, total=3)
    batch = tmp_path / "h" / written.file.replace(".arrow", ".json")
    for file in ("shards/other.arrow", "../../etc/passwd", "shards/../manifest.json"):
        batch.write_text(batch.read_text().replace(written.file, file))
        with pytest.warns(CacheWarning, match="entries pointing elsewhere"):
            assert store.finished_shards() == {}
        batch.write_text(batch.read_text().replace(file, written.file))
    with pytest.warns(CacheWarning, match="passwd is not in the folder"):
        assert not store.has_shard(ShardEntry(id="x", rows=1, total=1, file="../../etc/passwd"))
    with pytest.raises(ValueError, match="add up"):
        store.write_shards(frame, [ShardEntry(id="x", rows=2, total=2)])


def test_a_harvest_keeps_its_shards_in_a_few_files(tmp_path, monkeypatch):
    """The harvest itself: 30 shards and more, kept in a few files (every one of them: the
    last ones too, as the harvest fails before it publishes)."""
    service = FakeService.build(3000, cap=100)
    store = HarvestStore(str(tmp_path / "h"))

    def crash(*args, **kwargs):
        raise Crash

    monkeypatch.setattr(HarvestStore, "publish", crash)
    with pytest.raises(Crash):
        run(service, tmp_path, per_page=100)
    finished = store.finished_shards()
    assert len(finished) == len(store.load_plan().plan) >= 30
    assert len(_files(store)) <= len(finished) // BATCH + 2


def test_an_incomplete_result_keeps_every_shard_for_its_rerun(tmp_path, monkeypatch):
    """Told that a harvest is incomplete, a user reruns it with allow_incomplete=True: that
    rerun pages nothing already fetched, the last shards included."""
    from mediaframe.exceptions import IncompleteResultError
    from mediaframe.harvest import engine

    service = FakeService.build(3000, cap=100)
    judged = engine.judge

    def incomplete(report, *args, **kwargs):
        raise IncompleteResultError("only some", shards=[], report=report)

    monkeypatch.setattr(engine, "judge", incomplete)
    with pytest.raises(IncompleteResultError):
        run(service, tmp_path, per_page=100)
    store = HarvestStore(str(tmp_path / "h"))
    assert set(store.finished_shards()) == {leaf.id for leaf in store.load_plan().plan}
    monkeypatch.setattr(engine, "judge", judged)
    _, report = run(service, tmp_path, per_page=100)
    assert report.complete and report.resumed_shards == len(report.shards)


def _with_column(entry_frame: tuple[ShardEntry, pd.DataFrame], name: str):
    entry, frame = entry_frame
    return entry, frame.assign(**{name: pd.array(["x"] * len(frame), dtype="string")})


def test_a_shard_read_alone_from_its_batch_has_its_own_rows_and_columns(tmp_path):
    """Read one by one (as a Dask resume reads them, or a resume keeping part of a batch), a
    shard gives its own rows, not its batch's, and its own columns, not the batch's union."""
    store = HarvestStore(str(tmp_path / "h"))
    delivered = [_shard(0, rows=2), _with_column(_shard(1, rows=3), "Country"), _shard(2)]
    with Joiner(combine, store, every=60) as joiner:
        for entry, frame in delivered:
            joiner.add(entry, frame)
        joiner.parts()
        joiner.keep_rest()
    finished = store.finished_shards()
    assert len(_files(store)) == 1
    for entry, frame in delivered:
        assert store.has_shard(finished[entry.id])
        pd.testing.assert_frame_equal(store.read_shard(finished[entry.id]), frame)


def test_a_batch_whose_entries_disagree_with_its_file_is_damage(tmp_path):
    import json

    store = HarvestStore(str(tmp_path / "h"))
    frame = pd.concat([_shard(0)[1], _shard(1)[1]], ignore_index=True)
    a, b = store.write_shards(
        frame, [ShardEntry(id="a", rows=3, total=3), ShardEntry(id="b", rows=3, total=3)]
    )
    batch = tmp_path / "h" / a.file.replace(".arrow", ".json")
    good = json.loads(batch.read_text())
    for listed in (
        [{**good["shards"][0], "rows": 4}, {**good["shards"][1], "start": 4, "rows": 2}],
        [good["shards"][0], {**good["shards"][1], "start": 2}],  # overlapping
        [good["shards"][0], {**good["shards"][0]}],  # one shard twice
    ):
        batch.write_text(json.dumps({**good, "shards": listed}))
        with pytest.warns(CacheWarning, match="fetched again"):
            kept = store.finished_shards()
            assert not all(store.has_shard(entry) for entry in kept.values()) or not kept
    batch.write_text(json.dumps(good))
    assert store.finished_shards() == {"a": a, "b": b}
    moved = ShardEntry(id="b", rows=2, total=3, file=b.file, start=4, crc32=b.crc32)
    with pytest.warns(CacheWarning, match="does not hold its entries' shards"):
        assert not store.has_shard(moved)
    with pytest.raises(CacheCorruptError, match="as listed"):
        store.read_shard(moved)


def test_page_checkpoints_go_only_once_their_shard_is_kept(tmp_path):
    store = HarvestStore(str(tmp_path / "h"))
    entry, frame = _shard(0)
    entry = dataclasses.replace(entry, paged=True)  # its pages were kept while it was paged
    store.pages(entry.id).save(0, frame.iloc[:2].reset_index(drop=True), 3)
    pages = tmp_path / "h" / "shards" / f"{entry.id}.pages"
    assert pages.exists()
    with Joiner(combine, store, every=60) as joiner:
        joiner.add(entry, frame)
        assert pages.exists(), "not kept yet: the pages are still the shard's checkpoint"
        joiner.parts()
        joiner.keep_rest()
    assert not pages.exists() and list(store.finished_shards()) == [entry.id]


def test_a_harvest_failing_while_planning_keeps_the_shards_counted_whole(tmp_path):
    """A count under the cap brings its shard's whole page: such shards are kept when the
    harvest dies while planning, proven leaves or not, as a resume may take them."""
    service = FakeService.build(3000, cap=100)
    whole = []

    def crashing(**params):
        if service.requests >= 16:
            raise Crash
        response, frame = service(**params)
        if params.get("per_page") == 100 and 0 < len(frame) == response["total_results"]:
            whole.append(len(frame))
        return response, frame

    def count(**params):
        if service.requests >= 16:
            raise Crash
        return service.search(**params)

    with pytest.raises(Crash):
        run(crashing, tmp_path, concurrency=1, per_page=100, count=count)
    finished = HarvestStore(str(tmp_path / "h")).finished_shards()
    assert whole and len(finished) == len(whole)


def test_the_end_of_paging_does_not_wait_for_a_batch_being_written(tmp_path, monkeypatch):
    """The frame is assembled while the last batches are written; publication waits for them
    (settle), as it clears them."""
    store = HarvestStore(str(tmp_path / "h"))
    started, release = threading.Event(), threading.Event()
    real = HarvestStore.write_shards

    def slow(self, *args, **kwargs):
        started.set()
        release.wait(10)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(HarvestStore, "write_shards", slow)
    with Joiner(combine, store, every=60) as joiner:
        for index in range(BATCH):
            joiner.add(*_shard(index))
        assert started.wait(10)
        assert sum(map(len, joiner.parts())) == 3 * BATCH
        assert store.finished_shards() == {}, "parts() did not wait for the write"
        release.set()
        joiner.settle()
    assert len(store.finished_shards()) == BATCH


@pytest.mark.parametrize(
    "listed",
    [
        [["a", 3, [1, 2]], ["b", 3, []]],  # column names that are not text
        [["a", 6, []], ["b", -3, []]],  # rows that add up, one of them negative
        [["a", True, []], ["b", 5, []]],  # a boolean for a number
        [["a", 3, "databox_id"], ["b", 3, []]],  # columns that are not a list
    ],
)
def test_a_batch_file_listing_hostile_rows_or_columns_is_damage(tmp_path, monkeypatch, listed):
    from mediaframe.cache import shards as shards_module

    store = HarvestStore(str(tmp_path / "h"))
    frame = pd.concat([_shard(0)[1], _shard(1)[1]], ignore_index=True)
    real = shards_module.to_ipc
    monkeypatch.setattr(shards_module, "to_ipc", lambda df, _: real(df, {"shards": listed}))
    a, b = store.write_shards(
        frame, [ShardEntry(id="a", rows=3, total=3), ShardEntry(id="b", rows=3, total=3)]
    )
    with pytest.warns(CacheWarning, match="does not hold its entries' shards"):
        assert not store.has_shard(a) and not store.has_shard(b)
    with pytest.raises(CacheCorruptError):
        store.read_shards([a, b])
