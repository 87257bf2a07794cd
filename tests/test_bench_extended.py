"""Smoke test of the extended-page benchmark: a small run completes and prints its ratios."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "extended.py"


def test_small_run_prints_its_ratios() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCH), "--n", "200", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert re.search(r"^extended/floor = \d+\.\d\d$", run.stdout, re.M), run.stdout
    assert re.search(r"^extended/plain = \d+\.\d\d$", run.stdout, re.M), run.stdout
    assert "(14 caption columns)" in run.stdout, run.stdout
