"""The flattening benchmark runs end to end on a small N (timings are not asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench" / "flatten.py"


def test_bench_prints_a_row_per_flavour_and_workload_with_every_answer_native():
    done = subprocess.run(
        [sys.executable, str(BENCH), "--n", "2000", "--pages", "2", "--repeat", "1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    rows = [line.split() for line in done.stdout.splitlines() if line.split()[:1] in (
        ["contract"], ["current"], ["legacy"])]  # fmt: skip
    assert [row[0] for row in rows] == ["contract", "contract", "current", "current", "legacy",
                                        "legacy"]  # fmt: skip
    assert [row[-2] for row in rows] == ["1/1", "2/2"] * 3, done.stdout  # read natively
    assert "identical to the decoded route" in done.stdout
