"""Readers hold the dataset version they read, in any process: it is not swept under them, while
every other old version is, so a cache read without pause does not grow one dataset per
refresh; a lazy reader (DuckDB, Dask) holds its version until it is dropped."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd

from mediaframe.cache import HarvestStore, locks

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
