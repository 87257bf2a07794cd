"""Readers hold the dataset version they read, in any process: it is not swept under them, while
every other old version is, so a cache read without pause does not grow one dataset per
refresh; a lazy reader (DuckDB, Dask) holds its version until it is dropped."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

from mediaframe import cache
from mediaframe.cache import HarvestStore, locks
from mediaframe.exceptions import CacheError

SORT = ["databox_id", "collection_id", "record_id"]

# Another process reading the harvest folder: it holds the version published when it starts
# (its name on the first line), then, a line on its stdin at a time, reads that version (its
# titles), or reads the version published now under a hold of its own, until stdin closes.
READER = """
import sys
from mediaframe.cache import HarvestStore

store = HarvestStore(sys.argv[1])
with store.reading() as held:
    manifest = held or store.manifest()  # (an older reading() yielded nothing)
    print(manifest.data, flush=True)
    for line in sys.stdin:
        if line.strip() == "again":
            with store.reading():
                print(store.published(), flush=True)
        else:
            frame, _ = store.read_data(manifest)
            print(",".join(sorted(set(frame["title"]))), flush=True)
"""


def version(rows: int, name: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "databox_id": pd.array([1 + i % 2 for i in range(rows)], dtype="Int64"),
            "collection_id": pd.array([1 + i % 3 for i in range(rows)], dtype="Int64"),
            "record_id": pd.array(range(rows), dtype="Int64"),
            "title": pd.array([name] * rows, dtype="string"),
        }
    ).sort_values(SORT, ignore_index=True)


def publish(store: HarvestStore, name: str, rows: int = 6) -> str:
    return store.publish(version(rows, name), {"server": "s"}, spec={}, sort_by=SORT).data


def versions(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("data-"))


def version_locks(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(locks.VERSION_READERS))


class Reader:
    """A reader in another process, holding the version published when it started."""

    def __init__(self, root: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", READER, str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.version = self.ask(None)

    def ask(self, line: str | None) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        if line is not None:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def release(self) -> None:
        try:
            self.process.communicate("", timeout=60)
        finally:
            if self.process.poll() is None:  # stuck: never left behind
                self.kill()
        assert self.process.returncode == 0

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.communicate(timeout=60)


def test_a_reader_of_one_version_does_not_stop_the_sweep_of_another(tmp_path):
    root = tmp_path / "h"
    store = HarvestStore(str(root))
    first = publish(store, "first")
    reader = Reader(root)
    try:
        assert reader.version == first
        second = publish(store, "second")
        third = publish(store, "third")
        # the reader's version stays, whole; the one nobody read or names is gone
        assert versions(root) == sorted([first, third]) and second not in versions(root)
        assert reader.ask("read") == "first"
    finally:
        reader.release()
    with store.writing():  # the next writer sweeps what the reader held
        pass
    assert versions(root) == [third]
    assert version_locks(root) == [locks.version_lock(third)]
    assert set(store.read_data()[0]["title"]) == {"third"}


def test_a_killed_reader_holds_nothing(tmp_path):
    root = tmp_path / "h"
    store = HarvestStore(str(root))
    first = publish(store, "first")
    reader = Reader(root)
    second = publish(store, "second")
    assert first in versions(root)
    reader.kill()
    with store.writing():
        pass
    assert versions(root) == [second] and version_locks(root) == []


def test_a_version_lock_left_by_a_killed_sweep_is_swept(tmp_path):
    root = tmp_path / "h"
    store = HarvestStore(str(root))
    publish(store, "first")
    orphan = root / locks.version_lock("data-20200101T000000-deadbeef")
    orphan.touch()
    (root / f"{locks.VERSION_READERS}..").touch()  # no version's: never a path to remove
    with store.writing():
        pass
    assert not orphan.exists() and (root / f"{locks.VERSION_READERS}..").exists()


def test_a_clear_waits_for_the_reader_of_an_old_version_without_blocking_it(tmp_path, monkeypatch):
    # `cache clear --wait` waits for a reader's version to be let go; were it to wait holding
    # the readers' gate, that reader opening the cache again would wait on the clear: deadlock
    root = tmp_path / "h"
    store = HarvestStore(str(root))
    publish(store, "first")
    reader = Reader(root)
    publish(store, "second")
    assert store.remove_unused() is False, "a version being read was removed"
    waiting = threading.Event()
    real = locks.LockFiles.take

    def take(self, name, mode, **kwargs):
        if name.startswith(locks.VERSION_READERS) and not mode & locks.fcntl.LOCK_NB:
            waiting.set()
        return real(self, name, mode, **kwargs)

    monkeypatch.setattr(locks.LockFiles, "take", take)
    removed: list[bool] = []
    clearing = threading.Thread(target=lambda: removed.append(store.remove_unused(wait=True)))
    clearing.start()
    try:
        assert waiting.wait(60), "the clear did not wait for the reader"
        assert root.exists()
        answers: list[str] = []
        again = threading.Thread(target=lambda: answers.append(reader.ask("again")), daemon=True)
        again.start()
        again.join(60)  # not a speed target: a deadlocked reader never answers
        assert answers and answers[0].startswith("data-"), "the reader waits on the clear"
    finally:
        reader.release()
        clearing.join(60)
    assert removed == [True] and not root.exists()


LAZY = {
    # engine: (open, derive a narrower reader, the titles a reader reads, the rows one counts)
    "duckdb": (
        cache.to_duckdb,
        lambda rel: rel.filter("databox_id = 2").aggregate("count(*) AS n"),
        lambda rel: set(rel.df()["title"]),
        lambda rel: rel.fetchall()[0][0],
    ),
    "dask": (
        cache.to_dask,
        lambda ddf: ddf[ddf.databox_id == 2],
        lambda ddf: set(ddf.compute()["title"]),
        lambda ddf: len(ddf.compute()),
    ),
}


# dask itself still calls reset_index(inplace=True), which pandas 3 flags; not ours to fix
@pytest.mark.filterwarnings("ignore:The inplace keyword:pandas.errors.Pandas4Warning")
@pytest.mark.parametrize("engine", list(LAZY))
def test_a_lazy_reader_keeps_reading_the_version_it_opened(tmp_path, engine):
    # before, the sweep of a refresh removed it: DuckDB's "IO Error: No files found that match
    # the pattern", Dask's FileNotFoundError, on the next query
    pytest.importorskip("duckdb" if engine == "duckdb" else "dask.dataframe")
    open_lazily, derive, titles, count = LAZY[engine]
    root = tmp_path / "h"
    store = HarvestStore(str(root))
    first = publish(store, "first", rows=30)
    reader = open_lazily(str(root))
    derived = derive(reader)
    second = publish(store, "second")
    third = publish(store, "third")
    # what the reader reads stays, and nothing else that is old
    assert versions(root) == sorted([first, third]) and second not in versions(root)
    assert titles(reader) == {"first"} and count(derived) == 15
    del reader
    gc.collect()
    with store.writing():  # a reader derived from it still holds the version
        pass
    assert first in versions(root) and count(derived) == 15
    del derived
    gc.collect()
    with store.writing():  # once they are all dropped, the version goes with the next sweep
        pass
    assert versions(root) == [third]
    assert locks.version_lock(first) not in os.listdir(root)


def test_sql_on_a_connection_of_ones_own_reads_the_version_while_the_connection_lives(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    root = tmp_path / "h"
    store = HarvestStore(str(root))
    first = publish(store, "first")
    connection = duckdb.connect()
    cache.to_duckdb(str(root), connection=connection).create_view("records")
    gc.collect()  # the relation is gone; the view on the connection still reads its files
    publish(store, "second")
    assert first in versions(root)
    assert connection.sql("SELECT DISTINCT title FROM records").fetchall() == [("first",)]
    connection.close()
    del connection
    gc.collect()
    with store.writing():
        pass
    assert first not in versions(root)


class Unwatchable:
    """A connection-like object that takes no weak references (a wrapper with __slots__)."""

    __slots__ = ("connection",)

    def __init__(self, connection) -> None:
        self.connection = connection

    def read_parquet(self, *args, **kwargs):
        return self.connection.read_parquet(*args, **kwargs)


def test_a_connection_that_cannot_be_watched_leaves_the_hold_to_the_relation(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    root = tmp_path / "h"
    store = HarvestStore(str(root))
    first = publish(store, "first")
    relation = cache.to_duckdb(str(root), connection=Unwatchable(duckdb.connect()))
    publish(store, "second")
    assert set(relation.df()["title"]) == {"first"}
    del relation
    gc.collect()
    with store.writing():  # no hold outlives it
        pass
    assert first not in versions(root)


def test_a_removal_that_fails_lets_every_version_lock_go(tmp_path, monkeypatch):
    root = tmp_path / "h"
    store = HarvestStore(str(root))
    publish(store, "current")
    old = ["data-20200101T000000-aaaaaaaa", "data-20200101T000000-bbbbbbbb"]
    for name in old:
        (root / name).mkdir()
        (root / locks.version_lock(name)).touch()
    real = HarvestStore._remove

    def failing(self, name):
        if name in old:
            raise PermissionError(13, "Permission denied", name)
        real(self, name)

    monkeypatch.setattr(HarvestStore, "_remove", failing)
    with pytest.raises(CacheError, match="not writable"), store.writing():
        pass
    for name in old:  # another open takes each at once: none is left held by this process
        handle = os.open(root / locks.version_lock(name), os.O_RDWR)
        try:
            locks.fcntl.flock(handle, locks.fcntl.LOCK_EX | locks.fcntl.LOCK_NB)
        finally:
            os.close(handle)
