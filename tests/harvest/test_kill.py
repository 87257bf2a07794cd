"""A harvest killed with SIGKILL mid-way resumes on the next call with only what it lacks."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

import mediaframe as mf
from mediaframe.config import Settings

CHILD = textwrap.dedent(
    """
    import sys
    import mediaframe as mf
    from mediaframe.config import Settings
    base_url, token, cache, per_page = sys.argv[1:5]
    settings = Settings.from_env().replace(
        cache_dir=cache, progress=False, concurrency=1, per_page=int(per_page)
    )
    mf.connect(base_url, token=token, settings=settings).records()
    """
)


@pytest.fixture(scope="session")
def flavour() -> str:
    """The contract's server only: crash safety does not depend on the answers' shape.

    (A current server, without a cap, answers in one shard.)
    """
    return "contract"


def wait_for_shards(
    cache: Path, at_least: int, *, planned: bool, timeout: float = 60.0
) -> tuple[bool, int]:
    """Whether the plan was saved, and how many shards were finished, once ``at_least`` are
    (and, if ``planned``, once the plan is saved too)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for shards in cache.glob("records/*/shards"):
            # shards are kept in batches, a file of entries each
            finished = sum(len(json.loads(p.read_text())["shards"]) for p in shards.glob("*.json"))
            if finished >= at_least:
                plan = json.loads((shards.parent / "plan.json").read_text())
                if plan["planned"] or not planned:
                    return plan["planned"], finished
        time.sleep(0.05)
    raise AssertionError("the child made no progress")


# With pages as big as the cap, planning's counts bring every shard's hits and the shards are
# written while the plan is being made, before it is saved; with small pages, shards are paged
# as they are found, and on once it is saved. A kill in either phase must keep what was finished.
@pytest.mark.parametrize(("per_page", "planned_when_killed"), [(100, False), (20, True)])
def test_sigkill_then_resume(fresh_emulator, tmp_path, per_page, planned_when_killed):
    emu = fresh_emulator(records=2000, seed=9, cap=100, delay_ms=(20, 20))
    cache = tmp_path / "cache"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, emu.base_url, emu.token, str(cache), str(per_page)],
        env={**os.environ, "HOME": str(tmp_path)},
    )
    try:
        planned, finished = wait_for_shards(cache, at_least=3, planned=planned_when_killed)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert planned == planned_when_killed
    assert not list(cache.glob("records/*/data-*")), "killed before the end"

    emu.set_faults(delay_ms=(0, 0))
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=cache, progress=False, per_page=per_page
    )
    frame = mf.connect(emu.base_url, token=emu.token, settings=settings).records()
    report = mf.HarvestReport.from_frame(frame)
    assert report.complete and report.resumed_shards >= finished
    truth = emu.ground_truth()
    assert len(frame) == len(truth)
    assert set(zip(frame.databox_id, frame.record_id, strict=True)) == set(
        zip(truth.databox_id, truth.record_id, strict=True)
    )
    fresh = mf.connect(emu.base_url, token=emu.token, settings=settings).records(refresh=True)
    pd.testing.assert_frame_equal(frame, fresh)
