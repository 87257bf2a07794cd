"""Shared fixtures: the emulator, served on loopback or in-process, in every server generation.

End-to-end fixtures (``emulator``, ``fresh_emulator``, ``flavoured_emulator``) run each test once
per flavour: the contract's shape, a current and a legacy server. ``inprocess_emulator`` stays
the contract's (the emulator's own tests check that shape member by member).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

from mediaframe.emulator import Emulator
from mediaframe.emulator.flavours import FLAVOURS


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-screenshots",
        action="store_true",
        help="let the browser tests (tests/ui) rewrite the screenshots of docs/img/",
    )


@pytest.fixture(scope="session", params=FLAVOURS)
def flavour(request: pytest.FixtureRequest) -> str:
    """The server generation the end-to-end fixtures speak (every test runs on each)."""
    return str(request.param)


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
def emulator(flavour: str) -> Iterator[Emulator]:
    """An emulator with 2,000 records (seed 7) served on 127.0.0.1 for the whole session."""
    with Emulator(records=2000, seed=7, flavour=flavour) as emu:
        yield emu


@pytest.fixture(scope="session")
def flavoured_emulator(flavour: str) -> Emulator:
    """An emulator with 2,000 records (seed 7) of each flavour, not served (in-process)."""
    return Emulator(records=2000, seed=7, flavour=flavour)


@pytest.fixture
def fresh_emulator(flavour: str) -> Iterator[Callable[..., Emulator]]:
    """Factory of started emulators for tests that change data or inject faults."""
    started: list[Emulator] = []

    def make(**knobs: object) -> Emulator:
        knobs.setdefault("records", 300)
        knobs.setdefault("flavour", flavour)
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


#: What glibc's resolver says for each failure a test makes it raise.
_RESOLVER_SAYS = {
    socket.EAI_NONAME: "Name or service not known",
    socket.EAI_AGAIN: "Temporary failure in name resolution",
}


class Resolver:
    """The system's resolver for names under ``.invalid``: each lookup is counted and fails with
    ``errno`` (``EAI_NONAME`` until told otherwise); other names resolve as usual (loopback)."""

    def __init__(self) -> None:
        self.errno = socket.EAI_NONAME
        self.lookups: list[str] = []


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Resolver:
    """No name is ever looked up on the network: names under ``.invalid`` fail as told."""
    fake = Resolver()
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if str(host).endswith(".invalid"):
            fake.lookups.append(str(host))
            said = _RESOLVER_SAYS.get(fake.errno, f"resolver error {fake.errno}")
            raise socket.gaierror(fake.errno, said)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return fake


@pytest.fixture
def pyplot() -> Iterator[ModuleType]:
    """matplotlib's pyplot drawing off-screen (Agg); every figure the test opened is closed after.

    Plot and accessor tests take it with ``pytestmark = pytest.mark.usefixtures("pyplot")``.
    matplotlib is imported here, not at collection, so ``import mediaframe`` stays light elsewhere.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")
