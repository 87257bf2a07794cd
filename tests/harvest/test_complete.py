"""Complete means complete: coverage is judged on distinct keys, and pages that disagree are
paged again, then reported, never counted as a whole."""

import pytest

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.exceptions import IncompleteResultError, IncompleteResultWarning

from .fake import FakeService
from .test_engine import keys, run


def test_a_server_ignoring_offset_start_never_yields_complete(tmp_path):
    # 300 hits under the cap, served as the same first page three times
    service = FakeService.build(300, cap=1000, ignore_offset=True, bases=(1,))
    with pytest.raises(IncompleteResultError, match="offset_start") as caught:
        run(service, tmp_path, per_page=100)
    report = caught.value.report
    assert not report.complete and report.fetched == 100
    assert any("fault" in entry for entry in report.incomplete)


def test_ignored_offsets_under_a_cap_are_caught_in_every_shard(tmp_path):
    service = FakeService.build(2000, cap=100, ignore_offset=True)
    with pytest.warns(IncompleteResultWarning):
        frame, report = run(service, tmp_path, allow_incomplete=True)
    assert not report.complete and len(frame) < 2000
    assert len(frame) == len(keys(frame)) == report.fetched
    assert any("fault" in entry for entry in report.incomplete)


def test_a_shard_whose_pages_repeat_a_key_is_paged_again(tmp_path):
    service = FakeService.build(300, cap=1000, bases=(1,))
    lies = {"left": 1}
    honest = service.search

    def repeating(**params):
        answer = honest(**params)
        if params.get("offset_start") == 40 and lies["left"]:
            lies["left"] -= 1  # one bad page: the proxy served page 1 again
            answer = honest(**{**params, "offset_start": 0})
        return answer

    service.search = repeating
    frame, report = run(service, tmp_path)
    assert keys(frame) == service.truth() and report.complete and report.duplicates == 0


def test_a_deletion_while_a_shard_is_paged_loses_no_live_record(tmp_path):
    # uncapped: one shard of 300 hits paged 40 at a time; a record of page 1 is deleted once
    # page 1 has been read, which shifts every later offset by one
    service = FakeService.build(300, cap=1000, bases=(1,))
    paged = sorted(service.records, key=lambda r: (r["created_on"], r["record_id"]))
    victim = paged[5]

    def delete_after_first_page(params):
        if (
            params.get("per_page") == 40
            and params.get("offset_start") == 0
            and victim in (service.records)
        ):
            service.records = [r for r in service.records if r is not victim]

    service.after_search = delete_after_first_page
    frame, report = run(service, tmp_path)
    assert keys(frame) == service.truth(), "a live record fell between two pages"
    assert report.complete and report.fetched == 299


def test_a_record_deleted_between_pages_on_the_emulator_costs_no_live_record(
    fresh_emulator, tmp_path
):
    emu = fresh_emulator(records=800, seed=3, cap=5000)  # uncapped: one shard, many pages
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False, per_page=100, concurrency=1
    )
    client = mf.connect(emu.base_url, token=emu.token, settings=settings)
    honest = client.api.search_records_frame
    deleted = []

    def deleting(**params):
        response, frame = honest(**params)
        if params.get("per_page") == 100 and params.get("offset_start") == 0 and not deleted:
            deleted.append((int(frame.databox_id.iloc[3]), int(frame.record_id.iloc[3])))
            emu.delete_record(*deleted[0])
        return response, frame

    client.api.search_records_frame = deleting
    frame = client.records()
    truth = emu.ground_truth()
    assert deleted and deleted[0] not in keys(truth)
    assert keys(frame) == keys(truth), "a live record fell between two pages"
    assert mf.HarvestReport.from_frame(frame).complete
