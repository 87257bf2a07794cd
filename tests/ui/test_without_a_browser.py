"""Without Chromium the browser tests are skipped, saying how to get it, except under CI.

Each case runs one browser test in a pytest of its own, its browser path pointing nowhere; the
browser fixture decides before Voilà is started, so this needs neither Chromium nor Voilà.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ONE_TEST = "tests/ui/test_facet_filter.py::test_values_are_listed_with_the_servers_counts"


def _run_without_a_browser(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    environ.update(PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH=str(tmp_path / "no-chromium"), **env)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", ONE_TEST]
    return subprocess.run(
        command, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120
    )


def test_skipped_and_told_how_to_get_chromium(tmp_path: Path) -> None:
    run = _run_without_a_browser(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 skipped" in run.stdout and "apt-get install -y chromium" in run.stdout


@pytest.mark.parametrize("ci", ["true", "1"])
def test_under_ci_a_missing_browser_fails(tmp_path: Path, ci: str) -> None:
    run = _run_without_a_browser(tmp_path, CI=ci)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 error" in run.stdout and ".ci/run installs it" in run.stdout
