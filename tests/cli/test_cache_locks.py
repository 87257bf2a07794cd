"""`mediaframe cache clear` never removes a cache a harvest is writing or a reader is reading."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

# Another process holding one of the harvest folder's locks, as a running harvest or a reader
# does, until told to let go (a line on its stdin).
HOLDER = """
import sys
from mediaframe.cache import HarvestStore

store = HarvestStore(sys.argv[1])
with (store.writing() if sys.argv[2] == "writer" else store.reading()):
    print("held", flush=True)
    sys.stdin.readline()
"""


def _one_cached_harvest(run, tmp_path) -> Path:
    assert run("records", "sunset", "--limit", "1").exit_code == 0
    out = tmp_path / "cache.csv"
    assert run("cache", "ls", "-o", str(out)).exit_code == 0
    (path,) = pd.read_csv(out)["path"].tolist()
    assert (Path(path) / "manifest.json").is_file()
    return Path(path)


class Holder:
    def __init__(self, path: Path, lock: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path), lock],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "held"

    def release(self) -> None:
        self.process.communicate("\n", timeout=60)  # closes its pipes
        assert self.process.returncode == 0


@pytest.mark.parametrize("lock", ["writer", "reader"])
def test_a_cache_in_use_is_left_in_place_saying_why(run, tmp_path, lock):
    path = _one_cached_harvest(run, tmp_path)
    holder = Holder(path, lock)
    try:
        refused = run("cache", "clear", "--yes")
    finally:
        holder.release()
    assert refused.exit_code == 1
    assert "left in place, in use by a running harvest, sync or read" in refused.stderr
    assert "--wait" in refused.stderr and "Removed 0 cached harvest(s)" in refused.stdout
    assert (path / "manifest.json").is_file()
    # once it is done, the cache goes
    assert run("cache", "clear", "--yes").exit_code == 0
    assert not path.exists()


def test_clear_wait_waits_for_the_harvest_then_removes_its_cache(run, tmp_path):
    path = _one_cached_harvest(run, tmp_path)
    holder = Holder(path, "writer")
    results = []
    clearing = threading.Thread(
        target=lambda: results.append(run("cache", "clear", "--yes", "--wait"))
    )
    clearing.start()
    time.sleep(0.5)  # the clear is waiting on the writer's lock by now (and must be)
    assert path.exists() and clearing.is_alive()
    holder.release()
    clearing.join(60)
    (result,) = results
    assert result.exit_code == 0, result.stderr
    assert "Removed 1 cached harvest(s)" in result.stdout
    assert not path.exists()


def test_a_harvest_that_waited_on_a_clear_writes_into_a_new_folder(tmp_path):
    from mediaframe.cache import HarvestStore

    root = tmp_path / "records" / "k"
    first = HarvestStore(str(root))
    with first.writing():
        (root / "manifest.json").write_text("{}")
    assert first.remove_unused() and not root.exists()
    with first.writing():  # its lock file is the new folder's, not the removed one's
        assert (root / ".writer").is_file()
