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


KILLED_AFTER_PUBLICATION = textwrap.dedent(
    """
    import os, signal, sys
    import mediaframe as mf
    from mediaframe.cache import store as store_module
    from mediaframe.config import Settings
    base_url, token, cache, step = sys.argv[1:5]
    published = False

    def reached(name):
        global published
        published = published or name == "manifest-replaced"
        if name == step:
            os.kill(os.getpid(), signal.SIGKILL)

    clear_shards = store_module.HarvestStore.clear_shards

    def clearing_shards(self):
        if step == "clearing-shards" and published:
            os.kill(os.getpid(), signal.SIGKILL)
        clear_shards(self)

    store_module.reached = reached
    store_module.HarvestStore.clear_shards = clearing_shards
    settings = Settings.from_env().replace(
        cache_dir=cache, progress=False, concurrency=1, per_page=50
    )
    mf.connect(base_url, token=token, settings=settings).records(**{FILTERS})
    """
).replace("{FILTERS}", "dict(date_field='created_on', date_min='1990-01-01')")


# Killed once its dataset is published but before its plan and shards are cleared, a harvest
# has finished: its plan is never resumed, nor its shards kept, as if it had not.
@pytest.mark.parametrize("step", ["manifest-replaced", "clearing-shards"])
def test_a_harvest_killed_after_publication_is_never_resumed(fresh_emulator, tmp_path, step):
    emu = fresh_emulator(records=1500, seed=3, cap=100, delay_ms=(5, 5))
    cache = tmp_path / "cache"
    child = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_PUBLICATION, emu.base_url, emu.token, str(cache), step],
        env={**os.environ, "HOME": str(tmp_path)},
        timeout=300,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, "the harvest was killed where asked"
    assert list(cache.glob("records/*/shards/*.json")), "killed before its shards were cleared"
    emu.set_faults(delay_ms=(0, 0))
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=cache, progress=False, per_page=50
    )
    client = mf.connect(emu.base_url, token=emu.token, settings=settings)
    search = {"date_field": "created_on", "date_min": "1990-01-01"}  # harvested, never synced
    before = client.records(offline=True, **search)
    row = before.iloc[3]
    emu.update_record(int(row.databox_id), int(row.record_id), title="renamed on the server")
    after = client.records(ttl=0, **search)
    report = mf.HarvestReport.from_frame(after)
    assert not report.from_cache and report.resumed_shards == 0
    mine = after[(after.databox_id == row.databox_id) & (after.record_id == row.record_id)]
    assert mine.title.iloc[0] == "renamed on the server"
