"""client.records() and friends against the emulator: complete, cached, synced, offline."""

import datetime as dt
import json
import logging
import math
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from twins import make_twins, search_of

import mediaframe as mf
import mediaframe.http.transport as transport
import mediaframe.routes
from mediaframe.config import Settings
from mediaframe.exceptions import (
    CacheCorruptError,
    CacheMissError,
    CacheWarning,
    IncompleteResultError,
    IncompleteResultWarning,
    InvalidParameterError,
)


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False, backoff=0.01
    )


@pytest.fixture(scope="module")
def capped(flavour):
    from mediaframe.emulator import Emulator

    with Emulator(records=3000, seed=11, cap=200, flavour=flavour) as emu:
        yield emu


def keys(frame, key="record_id"):
    return set(zip(frame["databox_id"].astype(int), frame[key].astype(int), strict=True))


def connect(emu, settings):
    return mf.connect(emu.base_url, token=emu.token, settings=settings)


def test_records_are_complete_under_a_low_cap(capped, settings):
    frame = connect(capped, settings).records()
    truth = capped.ground_truth()
    assert keys(frame) == keys(truth) and len(frame) == len(truth)
    report = mf.HarvestReport.from_frame(frame)
    assert report.complete and report.total_results == len(truth)
    # every generation's pages are read natively, none decoded
    assert report.page_reads["decoded"] == 0 and report.page_reads["native"] >= len(report.shards)
    assert "read natively, 0 decoded" in repr(report)
    if capped.flavour.name == "current":  # counts per page, no cap: nothing to split
        assert report.cap is None and not report.capped_engine
        # paged by offset windows of the whole: the root's two counts, its pages, and one hit
        # asked past the total (an engine may count only so far), no more
        assert all(shard["shard"]["window"] for shard in report.shards)
        assert report.requests == 2 + math.ceil(len(truth) / 1000) + 1
    else:
        assert report.cap == 200 and report.capped_engine and len(report.shards) > 1


def test_filters_and_sort_narrow_and_order(capped, settings):
    client = connect(capped, settings)
    frame = client.records(record_type="video", sort="created_on", ord="desc")
    truth = capped.ground_truth()
    assert keys(frame) == keys(truth[truth.media_type == "video"])
    assert frame["created_on"].is_monotonic_decreasing
    with pytest.raises(InvalidParameterError, match="complete result"):
        client.records(sort="relevance")
    with pytest.raises(InvalidParameterError):
        client.records(date_min="21/03/2024", date_field="created_on")


def test_stories_are_complete(capped, settings):
    frame = connect(capped, settings).stories()
    truth = capped.ground_truth("stories")
    assert keys(frame, "story_id") == keys(truth, "story_id")


def test_cache_hit_then_offline_then_refresh(capped, settings):
    client = connect(capped, settings)
    first = client.records("", record_type="image")
    again = client.records("", record_type="image")
    pd.testing.assert_frame_equal(first, again)
    assert mf.HarvestReport.from_frame(again).from_cache
    offline = client.records("", record_type="image", offline=True)
    pd.testing.assert_frame_equal(first, offline)
    with pytest.raises(CacheMissError, match="run it once online"):
        client.records("never asked", offline=True)
    fresh = client.records("", record_type="image", refresh=True)
    assert not mf.HarvestReport.from_frame(fresh).from_cache
    pd.testing.assert_frame_equal(first, fresh)
    relation = mf.to_duckdb(client.cache_path("records", record_type="image"))
    assert relation.aggregate("count(*) AS n").df().n.iloc[0] == len(first)


def test_damaged_cache_is_refetched_never_used(capped, settings):
    client = connect(capped, settings)
    first = client.records(record_type="audio")
    folder = __import__("pathlib").Path(client.cache_path("records", record_type="audio"))
    victim = next(folder.glob("data-*/**/*.parquet"))
    victim.write_bytes(victim.read_bytes()[:-100] + b"x" * 100)
    with pytest.raises(CacheCorruptError):
        client.records(record_type="audio", offline=True)
    with pytest.warns(CacheWarning, match="fetching it again"):
        again = client.records(record_type="audio")
    pd.testing.assert_frame_equal(first, again)
    assert not mf.HarvestReport.from_frame(again).from_cache


@pytest.mark.parametrize(
    ("member", "damage"),
    [
        ("data_files", lambda files: dict.fromkeys(files, "garbage")),
        ("high_water", lambda _: "garbage"),  # else a bare DateParseError from every sync
        ("published_at", lambda _: "2020-01-01T00:00:00"),  # naive: not comparable to a clock
    ],
)
def test_a_manifest_of_the_right_types_and_wrong_values_is_damage(capped, settings, member, damage):
    client = connect(capped, settings)
    first = client.records(record_type="video")
    manifest = Path(client.cache_path("records", record_type="video")) / "manifest.json"
    document = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**document, member: damage(document[member])}))
    with pytest.raises(CacheCorruptError, match=member):
        client.records(record_type="video", offline=True)
    with pytest.warns(CacheWarning, match="fetching it again"):
        again = client.records(record_type="video", ttl=0)
    pd.testing.assert_frame_equal(first, again)
    assert not mf.HarvestReport.from_frame(again).from_cache


def test_stale_cache_is_synced(fresh_emulator, settings):
    emu = fresh_emulator(records=1500, seed=5, cap=150)
    client = connect(emu, settings)
    before = client.records()
    row = before.iloc[3]
    gone = before.iloc[7]
    emu.update_record(int(row.databox_id), int(row.record_id), title="renamed")
    emu.delete_record(int(gone.databox_id), int(gone.record_id))
    after = client.records(ttl=0)
    report = mf.HarvestReport.from_frame(after)
    assert report.synced and report.synced["removed"] == 1 and report.synced["changed"] >= 1
    assert keys(after) == keys(emu.ground_truth())
    renamed = after[(after.databox_id == row.databox_id) & (after.record_id == row.record_id)]
    assert renamed.title.iloc[0] == "renamed"
    fresh = client.records(refresh=True)
    pd.testing.assert_frame_equal(after, fresh)


def unsplittable(fresh_emulator):
    """An emulator under a cap of 1 where one base, day and type hold twins no status bit tells
    apart, with the search of them: its records, and the search itself."""
    emu = fresh_emulator(records=400, seed=2, cap=1)
    same, first = make_twins(emu)
    return emu, same, search_of(first)


def test_unsplittable_search_says_what_to_do(fresh_emulator, settings):
    emu, same, search = unsplittable(fresh_emulator)
    if emu.flavour.name == "current":  # no cap: the same search is simply complete
        frame = connect(emu, settings).records(**search)
        assert keys(same) <= keys(frame) and mf.HarvestReport.from_frame(frame).complete
        return
    with pytest.raises(IncompleteResultError, match="cap of 1 hits") as caught:
        connect(emu, settings).records(**search)
    assert "allow_incomplete=True" in str(caught.value)


def test_a_cached_incomplete_result_is_served_only_to_a_call_that_allows_one(
    fresh_emulator, settings
):
    emu, _, search = unsplittable(fresh_emulator)
    if emu.flavour.name == "current":
        pytest.skip("no cap: nothing is incomplete")
    client = connect(emu, settings)
    with pytest.warns(IncompleteResultWarning):
        partial = client.records(**search, allow_incomplete=True)
    with pytest.raises(IncompleteResultError, match="pass allow_incomplete=True to read") as err:
        client.records(**search, offline=True)
    assert err.value.shards and not err.value.report.complete
    # online, the partial result is a miss: harvested again, and refused again
    with pytest.raises(IncompleteResultError, match="cap of 1 hits"):
        client.records(**search)
    again = client.records(**search, allow_incomplete=True, offline=True)
    assert mf.HarvestReport.from_frame(again).from_cache
    pd.testing.assert_frame_equal(again, partial)


def test_facets_me_feeds_and_baskets(emulator, settings):
    client = connect(emulator, settings)
    facets = client.facets()
    assert {"facet", "value", "count", "query"} <= set(facets.columns) and len(facets)
    me = client.me()
    assert me.user["login"] == emulator.username
    assert len(me.collections) and "actif" in me.collections.columns
    assert len(me.statuses) and len(me.databoxes)
    entries = client.feed_entries()
    assert len(entries) == client.api.feeds_content(per_page=1)["total_entries"]
    assert len(client.feed_entries(per_page=2)) == 2
    assert len(client.feed_items()) >= 1
    assert len(client.feeds()) >= 1
    assert "name" in client.baskets().columns


def test_pages_that_cannot_be_read_natively_are_counted_with_the_reason(
    capped, settings, monkeypatch, caplog
):
    from mediaframe.frames import fastjson

    def unreadable(body, *args):
        raise fastjson.Unreadable("dates", "'updated_on': not a date pyarrow reads")

    monkeypatch.setattr(fastjson, "_native", unreadable)
    with caplog.at_level(logging.DEBUG, logger="mediaframe.routes"):
        frame = connect(capped, settings).records(record_type="video", refresh=True)
    truth = capped.ground_truth()
    assert keys(frame) == keys(truth[truth.media_type == "video"])
    reads = mf.HarvestReport.from_frame(frame).page_reads
    assert reads["native"] == 0 and reads["decoded"] >= 1
    assert reads["reasons"] == {"dates": "'updated_on': not a date pyarrow reads"}
    lines = [r.getMessage() for r in caplog.records if r.name == "mediaframe.routes"]
    assert len(lines) == reads["decoded"]
    assert all("decoded, not read natively (dates: 'updated_on'" in line for line in lines)


def test_record_pages_are_read_from_bytes_not_decoded(capped, settings, monkeypatch):
    """Pages are read natively from their bytes; only counts (one hit, two at most) are
    decoded, where building a frame of one record would cost more than the request."""
    search, counts = mf.routes.API.search, []

    def decoded(self, *args, per_page=None, **kwargs):
        if per_page is None or per_page > 2:
            raise AssertionError("a records harvest must not decode search pages into dicts")
        counts.append(per_page)
        return search(self, *args, per_page=per_page, **kwargs)

    monkeypatch.setattr(mf.routes.API, "search", decoded)
    frame = connect(capped, settings).records(record_type="document", refresh=True)
    assert len(frame) == (capped.ground_truth().media_type == "document").sum()
    assert counts, "counts are decoded"


def test_shards_of_one_page_give_the_frame_shards_of_many_pages_give(
    fresh_emulator, tmp_path, flavour
):
    """A shard of one page is that page's frame, not joined again: the result is the same."""
    emu = fresh_emulator(records=1500, seed=5, cap=100)
    frames = []
    for per_page in (100, 30):  # one page a shard under the cap; several
        settings = Settings.from_env({"HOME": str(tmp_path)}).replace(
            cache_dir=tmp_path / f"cache{per_page}", progress=False, per_page=per_page
        )
        client = mf.connect(emu.base_url, token=emu.token, settings=settings)
        frames.append(client.records(extended=True))
        assert mf.HarvestReport.from_frame(frames[-1]).complete
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)


def test_pages_are_read_while_as_many_requests_as_allowed_are_out(
    fresh_emulator, flavour, settings, monkeypatch
):
    """``concurrency`` bounds the requests in flight, not the threads: a page is read into its
    frame while ``concurrency`` other requests are out, and never more than that are out."""
    if flavour == "current":
        pytest.skip("no cap: a small search is paged in `concurrency` windows, one a thread")
    lock = threading.Lock()
    out = [0, 0]  # requests out now, most ever
    out_while_reading: list[int] = []
    send, read_body, read_records = (
        transport.send,
        transport.read_body,
        mediaframe.routes.read_records,
    )

    def counted_send(*args, **kwargs):
        with lock:
            out[0] += 1
            out[1] = max(out)
        try:
            return send(*args, **kwargs)
        except BaseException:
            with lock:
                out[0] -= 1
            raise

    def counted_read_body(*args, **kwargs):
        try:
            return read_body(*args, **kwargs)
        finally:
            with lock:
                out[0] -= 1

    def slow_read(*args, **kwargs):
        time.sleep(0.01)  # a page that takes a while to read: the others' requests go out
        with lock:
            out_while_reading.append(out[0])
        return read_records(*args, **kwargs)

    monkeypatch.setattr(transport, "send", counted_send)
    monkeypatch.setattr(transport, "read_body", counted_read_body)
    monkeypatch.setattr(mediaframe.routes, "read_records", slow_read)
    # a server a network away: each answer takes longer than reading it
    emu = fresh_emulator(records=1500, seed=5, cap=150, delay_ms=(30, 30))
    frame = connect(emu, settings).records(refresh=True, concurrency=2, per_page=100)
    assert keys(frame) == keys(emu.ground_truth())
    assert out[1] == 2  # never more out than allowed
    assert max(out_while_reading) == 2  # yet two out while a page was read


@pytest.mark.parametrize("call", [{"refresh": True}, {"ttl": 0}])
def test_a_publication_dated_ahead_of_this_clock_is_not_taken_for_another_writers(
    fresh_emulator, settings, call
):
    """Another machine sharing the cache with its clock ahead (or this clock stepped back):
    only a dataset another writer published while this call waited is taken, whatever its
    date."""
    emu = fresh_emulator(records=300, seed=3, cap=100)
    client = connect(emu, settings)
    first = client.records()
    manifest = __import__("pathlib").Path(client.cache_path("records")) / "manifest.json"
    document = json.loads(manifest.read_text())
    ahead = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=10)
    manifest.write_text(json.dumps({**document, "published_at": ahead.isoformat()}))
    row = first.iloc[0]
    emu.update_record(int(row.databox_id), int(row.record_id), title="renamed")
    frame = client.records(**call)
    assert not mf.HarvestReport.from_frame(frame).from_cache
    mine = frame[(frame.databox_id == row.databox_id) & (frame.record_id == row.record_id)]
    assert mine.title.iloc[0] == "renamed"


def test_a_refused_search_leaves_no_empty_harvest_folder(capped, settings):
    """A search the server refuses (a query it cannot parse) fails before anything is kept: no
    folder holding only lock files stays behind for ``cache ls`` to list."""
    client = connect(capped, settings)
    with pytest.raises(mf.MediaframeError, match="cannot be understood"):
        client.records(query="title:(")
    folder = Path(client.cache_path("records", query="title:("))
    assert not folder.exists(), sorted(p.name for p in folder.iterdir())
    client.records(record_type="image")  # a search that works keeps its folder
    assert Path(client.cache_path("records", record_type="image")).is_dir()
