"""Smoke test of the extended-answer benchmark: a small run prints a row per flavour and
workload, every answer read natively and identical to the decoded route's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "extended.py"


def test_small_run_prints_a_native_row_per_flavour_and_workload() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCH), "--n", "300", "--pages", "2", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    rows = [line.split() for line in run.stdout.splitlines()]
    rows = [row for row in rows if row[:1] in (["contract"], ["current"], ["legacy"])]
    assert [row[0] for row in rows] == ["contract"] * 2 + ["current"] * 2 + ["legacy"] * 2
    assert [row[-1] for row in rows] == ["1/1", "2/2"] * 3, run.stdout  # read natively
    assert "identical to the decoded route" in run.stdout
