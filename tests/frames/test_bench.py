"""The flattening benchmark runs end to end on a small N (timings are not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench" / "flatten.py"


def test_bench_runs_and_prints_the_ratios():
    done = subprocess.run(
        [sys.executable, str(BENCH), "--n", "2000", "--repeat", "1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert "N = 2,000 records" in done.stdout
    for ratio in ("(b)/(a) =", "(c)/(b) =", "memory: mediaframe"):
        assert ratio in done.stdout
