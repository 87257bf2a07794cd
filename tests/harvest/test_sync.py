"""A sync fetches only what changed, drops what left, and ends equal to a fresh harvest."""

import datetime as dt
import importlib

import pandas as pd
import pytest
from rewriting import Envelope, Rewriting

import mediaframe as mf
from mediaframe.cache import HarvestStore
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.harvest import EngineOptions, Spec, harvest
from mediaframe.harvest.sync import can_sync, sync

from .fake import FakeService, combine, flatten

NOW = dt.datetime(2021, 6, 1, tzinfo=dt.UTC)


def first_harvest(service, path):
    return harvest(
        service,
        Spec("records"),
        HarvestStore(str(path)),
        combine=combine,
        bases=(1, 2, 3),
        per_page=50,
    )


def run_sync(service, path, spec=None, keys=None):
    """Sync the harvest at ``path``; ``keys`` pages the keys pass (the service's v2 route)."""
    return sync(
        service,
        keys or service.v2,
        service.item,
        spec or Spec("records"),
        HarvestStore(str(path)),
        flatten=flatten,
        lag=dt.timedelta(minutes=5),
        options=EngineOptions(combine=combine, bases=(1, 2, 3), per_page=50),
    )


def keys(frame):
    return set(zip(frame.databox_id, frame.record_id, strict=True))


def test_sync_merges_changes_deletions_and_newly_visible_records(tmp_path):
    service = FakeService.build(1200, cap=100, days=300)
    first_harvest(service, tmp_path / "h")
    service.touch(5, NOW)  # updated
    touched = (service.records[5]["databox_id"], service.records[5]["record_id"])
    del service.records[10]  # deleted (or left the user's rights)
    newly_visible = dict(service.records[0], record_id=99_999)  # old dates, new to us
    service.records.append(newly_visible)
    before = service.requests
    frame, report = run_sync(service, tmp_path / "h")
    assert service.requests - before == report.requests
    assert keys(frame) == service.truth()
    assert report.complete and report.synced["removed"] == 1
    assert report.synced["added_by_key"] == 1
    assert 1 <= report.synced["changed"] < 50, "only recently updated records are refetched"
    updated = frame.set_index(["databox_id", "record_id"]).loc[touched, "updated_on"]
    assert updated == pd.Timestamp(NOW)
    fresh, _ = first_harvest(service, tmp_path / "fresh")
    pd.testing.assert_frame_equal(frame, fresh)
    cached, _ = HarvestStore(str(tmp_path / "h")).read_data()
    pd.testing.assert_frame_equal(cached, frame)
    assert not (tmp_path / "h" / "sync").exists() or not any((tmp_path / "h" / "sync").iterdir())


def test_sync_declines_when_a_full_harvest_is_needed(tmp_path):
    service = FakeService.build(200, cap=100)
    assert run_sync(service, tmp_path / "none") is None, "nothing cached yet"
    first_harvest(service, tmp_path / "h")
    manifest = HarvestStore(str(tmp_path / "h")).manifest()
    assert can_sync(Spec("records"), manifest)
    dated = Spec("records", filters={"date_field": "created_on", "date_min": "2020/01/01"})
    assert not can_sync(dated, manifest)
    assert not can_sync(Spec("records", "other query"), manifest)


def test_the_keys_pass_counts_through_the_route_it_pages(tmp_path):
    """The keys pass pages v2 references: its counts go through v2 too, not through the v1
    count route the changed pass uses (a server's v1 and v2 may cap differently)."""
    service = FakeService.build(600, cap=100, days=300)
    first_harvest(service, tmp_path / "h")
    service.touch(5, NOW)
    counted = []

    def count(**params):
        counted.append(params.get("date_field"))
        return service.search(**params)

    frame, report = sync(
        service,
        service.v2,
        service.item,
        Spec("records"),
        HarvestStore(str(tmp_path / "h")),
        flatten=flatten,
        lag=dt.timedelta(minutes=5),
        options=EngineOptions(combine=combine, count=count, bases=(1, 2, 3), per_page=50),
    )
    assert keys(frame) == service.truth() and report.complete
    assert counted, "the changed pass counts through the count route"
    assert all(field == "updated_on" for field in counted), "the keys pass does not"


class Dropped(ConnectionError):
    """The network dropped during a pass."""


def test_a_sync_that_fails_or_declines_leaves_no_scratch(tmp_path):
    service = FakeService.build(600, cap=100, days=300)
    first_harvest(service, tmp_path / "h")
    service.touch(5, NOW)

    def dropped(**params):
        raise Dropped

    with pytest.raises(Dropped):  # after the changed pass published its own dataset
        run_sync(service, tmp_path / "h", keys=dropped)
    assert not (tmp_path / "h" / "sync").exists()
    for record in service.records[:3]:  # newly visible: more stragglers than a sync fetches
        service.records.append(dict(record, record_id=record["record_id"] + 90_000))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(importlib.import_module("mediaframe.harvest.sync"), "MAX_STRAGGLERS", 2)
        assert run_sync(service, tmp_path / "h") is None
    assert not (tmp_path / "h" / "sync").exists()


def test_the_scratch_of_a_killed_sync_goes_with_the_next_writers_sweep(tmp_path):
    service = FakeService.build(200, cap=100)
    first_harvest(service, tmp_path / "h")
    left = tmp_path / "h" / "sync" / "changed" / "data-20240101T000000-deadbeef"
    left.mkdir(parents=True)
    (left / "part-0.parquet").write_bytes(b"a whole changed pass")
    (left.parent / "plan.json").write_text("{}")
    store = HarvestStore(str(tmp_path / "h"))
    with store.writing():
        pass
    assert not (tmp_path / "h" / "sync").exists()
    assert store.read_data()[0].shape[0] == 200


def test_a_record_deleted_between_the_changed_and_the_keys_pass_is_not_kept(tmp_path):
    """The keys pass decides membership: a row the changed pass read whose key the keys pass
    did not list was deleted (or left the search) since, and the report's total is the
    server's count, not the merged frame's own length."""
    service = FakeService.build(600, cap=100, days=300)
    first_harvest(service, tmp_path / "h")
    service.touch(7, NOW)  # the changed pass reads it
    doomed = (service.records[7]["databox_id"], service.records[7]["record_id"])
    listed = []

    def keys_after_a_deletion(**params):
        if not listed:  # deleted once the changed pass is done, before the keys pass pages
            del service.records[7]
        listed.append(params)
        return service.v2(**params)

    frame, report = run_sync(service, tmp_path / "h", keys=keys_after_a_deletion)
    assert doomed not in keys(frame)
    assert keys(frame) == service.truth()
    assert report.total_results == len(service.truth()) == report.fetched == len(frame)
    assert report.complete and report.synced["removed"] == 1
    cached, _ = HarvestStore(str(tmp_path / "h")).read_data()
    assert doomed not in keys(cached)


def test_a_record_deleted_between_the_passes_leaves_the_synced_frame_and_its_count(tmp_path):
    """The same through the client against the emulator: the report counts the server's hits."""
    emu = Emulator(records=900, seed=2)
    front = Rewriting(emu)
    settings = Settings.from_env().replace(
        config_dir=tmp_path, cache_dir=tmp_path / "cache", progress=False, per_page=300
    )
    with mf.connect(
        emu.inprocess_url, token=emu.token, settings=settings, session=front.session()
    ) as client:
        first = client.records()
        doomed = (int(first.databox_id.iloc[7]), int(first.record_id.iloc[7]))
        emu.update_record(*doomed, title="edited, then deleted")  # the changed pass reads it

        def delete_before_the_keys_pass(path: str, envelope: Envelope) -> None:
            if path.startswith("/api/v2/") and front.answer is not None:
                front.answer = None
                emu.delete_record(*doomed)

        front.answer = delete_before_the_keys_pass
        synced = client.records(ttl=0)
    report = mf.HarvestReport.from_frame(synced)
    assert report.synced is not None and report.synced["removed"] == 1
    assert doomed not in keys(synced)
    assert report.complete and report.fetched == report.total_results == len(first) - 1


def test_a_straggler_deleted_before_it_is_fetched_by_key_has_left_the_result(tmp_path):
    """A record enters the search after the changed pass (its status bit set), the keys pass
    lists it, and it is deleted before it is fetched by key: the 404 is a deletion, not an
    error of the call (review 15b)."""
    emu = Emulator(records=600, seed=7, flavour="contract")
    front = Rewriting(emu)
    settings = Settings.from_env().replace(
        config_dir=tmp_path, cache_dir=tmp_path / "cache", progress=False, per_page=100
    )
    status = {4: {"on": [1]}}
    with mf.connect(
        emu.inprocess_url, token=emu.token, settings=settings, session=front.session()
    ) as client:
        first = client.records(status=status, bases=[1])
        truth = emu.ground_truth()
        bit = (truth.status.astype("int64").to_numpy() >> 4) & 1
        outside = truth[(truth.base_id == 1).to_numpy() & (bit == 0)].iloc[0]
        entering = (int(outside.databox_id), int(outside.record_id))

        def enter_once_the_changed_pass_is_over(path: str, envelope: Envelope) -> None:
            if path.startswith("/api/v2/") and front.answer is not None:
                front.answer = None
                emu.update_record(*entering, status=int(outside.status) | 1 << 4)

        front.answer = enter_once_the_changed_pass_is_over
        fetch = client.api.record

        def deleted_first(databox_id, record_id, **options):
            if (databox_id, record_id) == entering:
                emu.delete_record(databox_id, record_id)
            return fetch(databox_id, record_id, **options)

        client.api.record = deleted_first
        synced = client.records(status=status, bases=[1], ttl=0)
    report = mf.HarvestReport.from_frame(synced)
    assert entering not in keys(synced) and keys(first) <= keys(synced)
    assert report.complete and report.fetched == report.total_results == len(synced)
