"""Run the command line as a user would, against the emulator on loopback."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from click.testing import CliRunner, Result

from mediaframe.cli import main
from mediaframe.emulator import Emulator

Run = Callable[..., Result]


def runner_for(emulator: Emulator, tmp_path, **env: str | None) -> Run:
    base = {
        "MEDIAFRAME_BASE_URL": emulator.base_url,
        "MEDIAFRAME_TOKEN": emulator.token,
        "MEDIAFRAME_PROFILE": None,
        "MEDIAFRAME_CONFIG_DIR": str(tmp_path / "config"),
        "MEDIAFRAME_CACHE_DIR": str(tmp_path / "cache"),
        "MEDIAFRAME_PROGRESS": "0",
        "MEDIAFRAME_BACKOFF": "0",
        "COLUMNS": "100",
        **env,
    }

    def run(*args: str, input: str | None = None, **more: str | None) -> Result:
        result = CliRunner().invoke(main, list(args), input=input, env={**base, **more})
        for token in (emulator.token, emulator.password):
            assert token not in result.stdout and token not in result.stderr
        return result

    return run


@pytest.fixture
def run(emulator: Emulator, tmp_path) -> Run:
    """``run("records", "-o", "x.csv")`` with the shared emulator's token in the environment."""
    return runner_for(emulator, tmp_path)
