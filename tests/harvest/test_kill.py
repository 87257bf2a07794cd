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

import mediaframe as mf
from mediaframe.config import Settings

CHILD = textwrap.dedent(
    """
    import sys
    import mediaframe as mf
    from mediaframe.config import Settings
    base_url, token, cache = sys.argv[1:4]
    settings = Settings.from_env().replace(cache_dir=cache, progress=False, concurrency=1)
    mf.connect(base_url, token=token, settings=settings).records()
    """
)


def wait_for_shards(cache: Path, at_least: int, timeout: float = 60.0) -> tuple[dict, int]:
    """The plan and the number of finished shards, once at least ``at_least`` are finished."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for manifest in cache.glob("records/*/manifest.json"):
            finished = len(list(manifest.parent.glob("shards/*.json")))
            if finished >= at_least:
                return json.loads(manifest.read_text()), finished
        time.sleep(0.05)
    raise AssertionError("the child made no progress")


def test_sigkill_then_resume(fresh_emulator, tmp_path):
    emu = fresh_emulator(records=2000, seed=9, cap=100, delay_ms=(20, 20))
    cache = tmp_path / "cache"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, emu.base_url, emu.token, str(cache)],
        env={**os.environ, "HOME": str(tmp_path)},
    )
    try:
        plan, finished = wait_for_shards(cache, at_least=3)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert finished < len(plan["plan"]), "killed before the end"

    emu.set_faults(delay_ms=(0, 0))
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(cache_dir=cache, progress=False)
    frame = mf.connect(emu.base_url, token=emu.token, settings=settings).records()
    report = mf.HarvestReport.from_frame(frame)
    assert report.complete and report.resumed_shards >= 3
    truth = emu.ground_truth()
    assert len(frame) == len(truth)
    assert set(zip(frame.databox_id, frame.record_id, strict=True)) == set(
        zip(truth.databox_id, truth.record_id, strict=True)
    )
    fresh = mf.connect(emu.base_url, token=emu.token, settings=settings).records(refresh=True)
    pd.testing.assert_frame_equal(frame, fresh)
