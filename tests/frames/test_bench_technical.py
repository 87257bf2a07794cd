"""The wide-records benchmark runs end to end on a few names (timings are not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench" / "technical.py"


def test_bench_times_every_step_against_the_baseline_and_its_growth():
    done = subprocess.run(
        [sys.executable, str(BENCH), "--names", "300", "--repeat", "1", "--parts", "40"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    out = done.stdout
    assert "each with 300 (then 60) technical names" in out
    for step in ("records(items)", "records_json(body)", "concat_records(pages)", "in_row_order"):
        assert step in out
    assert "write_frame (cache)" in out and "read_frame (cache)" in out
    assert "linear: about 5" in out
    assert "40 parts of 10 records, 800 names (then 10 parts, 200 names)" in out
    assert "concat_records(parts)" in out and "records(all items)" in out
    assert "parts x names: about 16" in out
