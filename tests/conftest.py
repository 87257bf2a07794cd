"""Shared fixtures: the emulator, served on loopback or in-process."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from mediaframe.emulator import Emulator


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
