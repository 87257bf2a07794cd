"""Shared fixtures: the emulator, served on loopback or in-process."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, settings

from mediaframe.emulator import Emulator

# secret_sweep: after the whole suite, no secret in any log, error, repr, file or notebook output
pytest_plugins = ["secret_sweep", "pytester"]

# Fuzz budgets (tests/safety/test_fuzz_*.py take theirs from the loaded profile): "dev", a smoke
# run for every local suite, "ci" (at least 2,000 examples per target, selected by .ci/run or
# CI=true), "deep" for a long campaign.
# Tests that set max_examples themselves keep their own.
_FUZZ = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("dev", max_examples=50, **_FUZZ)
settings.register_profile("ci", max_examples=2000, **_FUZZ)
settings.register_profile("deep", max_examples=20_000, **_FUZZ)
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(_PROFILE)


@pytest.fixture(scope="session")
def emulator() -> Iterator[Emulator]:
    """An emulator with 2,000 records (seed 7) served on 127.0.0.1 for the whole session."""
    with Emulator(records=2000, seed=7) as emu:
        yield emu


@pytest.fixture
def fresh_emulator() -> Iterator[Callable[..., Emulator]]:
    """Factory of started emulators for tests that change data or inject faults."""
    started: list[Emulator] = []

    def make(**knobs: object) -> Emulator:
        knobs.setdefault("records", 300)
        emu = Emulator(**knobs).start()  # type: ignore[arg-type]
        started.append(emu)
        return emu

    yield make
    for emu in started:
        emu.stop()


@pytest.fixture(scope="session")
def inprocess_emulator() -> Emulator:
    """An emulator with 2,000 records (seed 7), not served: use .requests_session() or .app."""
    return Emulator(records=2000, seed=7)
