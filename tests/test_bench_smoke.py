"""Smoke test of the harvest benchmark: its quick run completes, checks itself and prints ratios."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "harvest.py"


def quick(*options: str) -> str:
    """What ``bench/harvest.py --quick`` prints, having checked that it succeeded."""
    run = subprocess.run(
        [sys.executable, str(BENCH), "--quick", *options],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_quick_run_prints_its_ratios_and_proves_the_harvest_exact() -> None:
    out = quick()
    assert re.search(r"^harvest/floor = \d+\.\d\d   target <= 1\.3", out, re.M), out
    assert re.search(
        r"^cache speedup \(harvest/cache read\) = \d+\.\d\d   target >= 100", out, re.M
    )
    assert re.search(r"^naive loop got 500 of [\d,]+ records", out, re.M), out  # the cap of --quick
    assert "keys equal" in out and "identical=True" in out, out
    assert re.search(r"^floor .* the same \d+ pages raw", out, re.M), out  # the harvest's pages
    assert "memory peak/frame" not in out  # --quick skips the large run


@pytest.mark.parametrize("flavour", ["current", "legacy"])
def test_quick_run_on_every_server_shape_prints_its_ratios(flavour: str) -> None:
    out = quick("--flavour", flavour)
    assert f"flavour {flavour}" in out and "keys equal" in out, out
    assert re.search(r"^harvest/floor = \d+\.\d\d   target <= 1\.3", out, re.M), out
    if flavour == "current":  # served by that shape: no cap, so the naive loop gets them all
        assert re.search(r"^naive loop got ([\d,]+) of \1 records \(100\.0%\)", out, re.M), out


def test_the_reader_candidates_bench_runs_on_pages_and_one_answer() -> None:
    """``bench/readers.py`` is where the page target's evidence comes from: it must run."""
    small = ["--n", "300", "--pages", "2", "--repeat", "1"]
    run = subprocess.run(
        [sys.executable, str(BENCH.with_name("readers.py")), *small],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=BENCH.parent,
    )
    assert run.returncode == 0, run.stderr
    for flavour in ("contract", "current", "legacy"):
        one = re.search(
            rf"^{flavour} +one answer of 300: .* records_json \d+\.\d\d$", run.stdout, re.M
        )
        pages = re.search(
            rf"^{flavour} +2 pages of 1,000: .* pages joined \d+\.\d\d$", run.stdout, re.M
        )
        assert one and pages, run.stdout
    assert "Warning" not in run.stderr, run.stderr


def test_the_redaction_bench_runs_and_hides_the_cut_token() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCH.with_name("redact.py")), "--megabytes", "0.05"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=BENCH.parent,
    )
    assert run.returncode == 0, run.stderr
    assert re.search(
        r"^twice the text: [\d.]+ ms \([\d.]+ x; linear is about 2\)$", run.stdout, re.M
    )
