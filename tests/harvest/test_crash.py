"""The cache under crashes and concurrency: a kill at any step of publication leaves it
readable, leftovers are swept by the next writer, and writer and reader processes side by side
never see a half-swapped dataset."""

import errno
import fcntl
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pandas as pd
import pyarrow.parquet as pq
import pytest

import mediaframe as mf
from mediaframe.cache import HarvestStore
from mediaframe.config import Settings
from mediaframe.exceptions import CacheCorruptError, CacheError, CacheWarning

KEY = ["databox_id", "record_id"]
STEPS = ["data-written", "data-synced", "manifest-staged", "manifest-replaced", "swept"]

# A frame per version: ``rows`` records whose titles all name the version, so that a reader can
# tell a whole version from a mix of two.
FRAME = textwrap.dedent(
    """
    import pandas as pd

    def version(rows, name):
        return pd.DataFrame({
            "databox_id": pd.array([1 + i % 2 for i in range(rows)], dtype="Int64"),
            "collection_id": pd.array([1 + i % 3 for i in range(rows)], dtype="Int64"),
            "record_id": pd.array(range(rows), dtype="Int64"),
            "title": pd.array([name] * rows, dtype="string"),
        }).sort_values(["databox_id", "collection_id", "record_id"], ignore_index=True)
    """
)
namespace: dict = {}
exec(FRAME, namespace)
version = namespace["version"]

KILLED_PUBLISHER = FRAME + textwrap.dedent(
    """
    import os, signal, sys
    from mediaframe.cache import HarvestStore
    from mediaframe.cache import store as store_module

    root, step = sys.argv[1:3]

    def reached(name):
        if name == step:
            os.kill(os.getpid(), signal.SIGKILL)

    store_module.reached = reached
    HarvestStore(root).publish(
        version(50, "new"), {"server": "s"}, spec={"kind": "records"},
        sort_by=["databox_id", "collection_id", "record_id"],
    )
    """
)


def publish(store, frame):
    return store.publish(
        frame, {"server": "s"}, spec={"kind": "records"}, sort_by=list(frame.columns[:3])
    )


def visible(folder):
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


@pytest.mark.parametrize("step", STEPS)
def test_a_kill_at_any_step_of_publication_leaves_a_readable_cache(tmp_path, step):
    root = tmp_path / "h"
    store = HarvestStore(str(root))
    publish(store, version(30, "old"))
    child = subprocess.run(
        [sys.executable, "-c", KILLED_PUBLISHER, str(root), step], timeout=120, check=False
    )
    assert child.returncode == -9, "the publisher was killed where asked"
    frame, _ = store.read_data()
    replaced = STEPS.index(step) >= STEPS.index("manifest-replaced")
    expected = version(50, "new") if replaced else version(30, "old")
    pd.testing.assert_frame_equal(frame, expected)
    with store.writing():  # the next writer sweeps what the kill left
        pass
    assert visible(root) == [store.manifest().data, "manifest.json"]
    pd.testing.assert_frame_equal(store.read_data()[0], expected)


def test_a_dataset_deleted_by_hand_is_refetched_or_told(fresh_emulator, tmp_path):
    emu = fresh_emulator(records=300, seed=1)
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False
    )
    client = mf.connect(emu.base_url, token=emu.token, settings=settings)
    first = client.records()
    store = HarvestStore(client.cache_path("records"))
    import shutil

    shutil.rmtree(store.data_url())
    with pytest.raises(CacheCorruptError, match="missing"):
        client.records(offline=True)
    with pytest.warns(CacheWarning, match="fetching it again"):
        again = client.records()
    pd.testing.assert_frame_equal(first, again)
    pd.testing.assert_frame_equal(first, client.records(offline=True))


def test_refresh_keeps_the_old_dataset_readable_while_it_runs_and_after_it_fails(
    fresh_emulator, tmp_path
):
    emu = fresh_emulator(records=600, seed=2, cap=100)
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False, per_page=50, concurrency=1
    )
    client = mf.connect(emu.base_url, token=emu.token, settings=settings)
    first = client.records()
    reader = mf.connect(emu.base_url, token=emu.token, settings=settings)
    honest = client.api.search_records_frame
    seen = []

    def failing(**params):
        seen.append(reader.records(offline=True))  # a notebook beside the refresh
        if len(seen) == 5:
            raise ConnectionError("the network went away")
        return honest(**params)

    client.api.search_records_frame = failing
    with pytest.raises(ConnectionError):
        client.records(refresh=True)
    assert len(seen) >= 5
    for frame in seen:
        pd.testing.assert_frame_equal(frame, first)
    pd.testing.assert_frame_equal(reader.records(offline=True), first)


def test_a_full_disk_says_what_to_do_and_keeps_the_old_dataset(tmp_path, monkeypatch):
    store = HarvestStore(str(tmp_path / "h"))
    publish(store, version(30, "old"))

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full)
    with pytest.raises(CacheError, match=r"disk is full.*MEDIAFRAME_CACHE_DIR"):
        publish(store, version(50, "new"))
    monkeypatch.undo()
    pd.testing.assert_frame_equal(store.read_data()[0], version(30, "old"))


def test_a_full_disk_stops_the_dataset_at_the_first_file_that_fails(tmp_path, monkeypatch):
    # every partition was still written after the first failed, filling the disk further
    from mediaframe.cache import datasets

    failed, calls, lock = threading.Event(), [], threading.Lock()

    def write_file(table, fs, path):
        with lock:
            calls.append(path)
            first = len(calls) == 1
        if first:
            failed.set()
            raise OSError(errno.ENOSPC, "No space left on device")
        failed.wait(10)  # a file begun beside the first may finish; none is begun after it

    monkeypatch.setattr(datasets, "_write_file", write_file)
    frame = pd.DataFrame(
        {
            "databox_id": pd.array([1, 2, 3, 4, 5, 6], dtype="Int64"),
            "record_id": pd.array([1, 2, 3, 4, 5, 6], dtype="Int64"),
        }
    )
    with pytest.raises(CacheError, match="disk is full"):
        datasets.write_frame(frame, str(tmp_path / "ds"), provenance={}, sort_by=["databox_id"])
    assert len(calls) <= 2  # of six partitions
    assert not (tmp_path / "ds").exists() and list(tmp_path.iterdir()) == []


def test_a_read_only_cache_says_what_to_do(tmp_path, monkeypatch):
    store = HarvestStore(str(tmp_path / "h"))
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(CacheError, match=r"not writable.*MEDIAFRAME_CACHE_DIR"):
        store.write_shard("x", version(3, "x"), total=3)


def test_a_lock_the_sweep_cannot_open_says_what_to_do_and_removes_nothing(tmp_path, monkeypatch):
    store = HarvestStore(str(tmp_path / "h"))
    publish(store, version(30, "old"))
    leftover = tmp_path / "h" / "data-leftover"
    leftover.mkdir()
    real_open = os.open

    def refused(path, flags, *args, **kwargs):
        if str(path).endswith(".readers"):
            raise OSError(errno.EACCES, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refused)
    # a writer sweeps on entry, under the readers' lock
    with pytest.raises(CacheError, match=r"not writable.*MEDIAFRAME_CACHE_DIR"), store.writing():
        pass
    monkeypatch.undo()
    assert leftover.is_dir()
    pd.testing.assert_frame_equal(store.read_data()[0], version(30, "old"))
    assert_writer_lock_free(tmp_path / "h")


def test_a_leftover_the_sweep_cannot_remove_says_what_to_do_and_frees_the_lock(
    tmp_path, monkeypatch
):
    # the writer that could not start held its lock on: every later writer waited forever
    store = HarvestStore(str(tmp_path / "h"))
    publish(store, version(30, "old"))
    (tmp_path / "h" / "plan.json.tmp-deadbeef").write_bytes(b"{}")
    real_unlink = os.unlink

    def refused(path, *args, **kwargs):
        if str(path).endswith(".tmp-deadbeef"):
            raise PermissionError(errno.EPERM, "Operation not permitted", str(path))
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", refused)
    with pytest.raises(CacheError, match=r"not writable.*MEDIAFRAME_CACHE_DIR"), store.writing():
        pass
    monkeypatch.undo()
    assert_writer_lock_free(tmp_path / "h")
    with store.writing():  # once the folder is mended, the same store writes again
        pass
    assert not (tmp_path / "h" / "plan.json.tmp-deadbeef").exists()


def assert_writer_lock_free(folder):
    """Another open of the writer lock takes it at once (flock: per open file description)."""
    handle = os.open(folder / ".writer", os.O_RDWR)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(handle)


@pytest.mark.parametrize("blocking", [True, False])
def test_a_filesystem_that_cannot_lock_says_what_to_do_and_keeps_the_data(
    tmp_path, monkeypatch, blocking
):
    import fcntl

    store = HarvestStore(str(tmp_path / "h"))
    publish(store, version(30, "old"))

    def no_locks(handle, mode):
        if blocking == (not mode & fcntl.LOCK_NB):
            raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    # a writer waits for its own lock, then sweeps under the readers' lock without waiting
    with pytest.raises(
        CacheError, match=r"cannot lock|does not support locks.*MEDIAFRAME_CACHE_DIR"
    ):
        publish(store, version(50, "new"))
    monkeypatch.undo()
    # the writer's own lock fails before anything is written; the sweep's after the new
    # version is published: either way one whole version is there
    read = store.read_data()[0]
    expected = version(30, "old") if blocking else version(50, "new")
    pd.testing.assert_frame_equal(read, expected)


WRITER = FRAME + textwrap.dedent(
    """
    import sys
    from mediaframe.cache import HarvestStore

    root, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = HarvestStore(root)
    for i in range(rounds):
        store.publish(
            version(20 + len(name) * 10 + i, f"{name}{i}"), {"server": "s"},
            spec={"kind": "records"}, sort_by=["databox_id", "collection_id", "record_id"],
        )
    """
)

READER = textwrap.dedent(
    """
    import sys, time
    from mediaframe.cache import HarvestStore

    root, seconds = sys.argv[1], float(sys.argv[2])
    store = HarvestStore(root)
    reads, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        frame, _ = store.read_data()
        titles = set(frame["title"])
        assert len(titles) == 1, f"a mix of versions: {titles}"
        reads += 1
    print(reads)
    """
)


def test_writer_and_reader_processes_side_by_side(tmp_path):
    root = tmp_path / "h"
    store = HarvestStore(str(root))
    publish(store, version(10, "first"))
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", READER, str(root), "6"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), name, "4"], stderr=subprocess.PIPE, text=True
        )
        for name in ("a", "bb", "ccc")
    ]
    outputs = []
    for process in writers + readers:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
        outputs.append(out)
    assert all(int(out) > 0 for out in outputs[len(writers) :]), "every reader read"
    frame, _ = store.read_data()
    assert frame["title"].iloc[0] in {f"{name}3" for name in ("a", "bb", "ccc")}
    with store.writing():
        pass
    assert visible(root) == [store.manifest().data, "manifest.json"]


HARVESTER = textwrap.dedent(
    """
    import json, sys
    import mediaframe as mf
    from mediaframe.config import Settings

    base_url, token, cache = sys.argv[1:4]
    settings = Settings.from_env().replace(cache_dir=cache, progress=False, per_page=50)
    frame = mf.connect(base_url, token=token, settings=settings).records()
    report = mf.HarvestReport.from_frame(frame)
    print(json.dumps({"rows": len(frame), "from_cache": report.from_cache}))
    """
)


def test_two_processes_harvesting_one_search_fetch_it_once(fresh_emulator, tmp_path):
    emu = fresh_emulator(records=900, seed=6, cap=100, delay_ms=(5, 5))
    cache = tmp_path / "cache"
    env = {**os.environ, "HOME": str(tmp_path)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", HARVESTER, emu.base_url, emu.token, str(cache)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    started = time.monotonic()
    results = []
    for child in children:
        out, err = child.communicate(timeout=240)
        assert child.returncode == 0, err
        results.append(json.loads(out))
    assert time.monotonic() - started < 240
    truth = len(emu.ground_truth())
    assert [r["rows"] for r in results] == [truth, truth]
    assert sorted(r["from_cache"] for r in results) == [False, True], "one harvest, one reuse"
    (folder,) = (cache / "records").iterdir()
    assert len([p for p in folder.iterdir() if p.name.startswith("data-")]) == 1


@pytest.mark.parametrize(
    "damage, told",
    [
        ("[1, 2]", "should be an object"),
        ('{"schema_version": 2, "spec": 3}', "spec"),
        ("{ cut", "not valid JSON"),
        # a cache written by another mediaframe is no "nothing cached", nor dropped unsaid
        ('{"schema_version": 99, "spec": {}}', "written by another version of mediaframe"),
    ],
)
def test_a_manifest_of_the_wrong_shape_is_refetched_or_told(fresh_emulator, tmp_path, damage, told):
    emu = fresh_emulator(records=200, seed=4)
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False
    )
    client = mf.connect(emu.base_url, token=emu.token, settings=settings)
    first = client.records()
    store = HarvestStore(client.cache_path("records"))
    (tmp_path / "cache" / "records" / os.path.basename(store.url) / "manifest.json").write_text(
        damage
    )
    with pytest.raises(CacheCorruptError, match=told):
        client.records(offline=True)
    with pytest.warns(CacheWarning, match=f"{told}.*fetching it again"):
        again = client.records()
    pd.testing.assert_frame_equal(first, again)
    pd.testing.assert_frame_equal(first, client.records(offline=True))
