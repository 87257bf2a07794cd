"""What the harvest benchmarks share: the emulator in a child process, their options, fresh
clients, the timing of a call, and how a ratio is printed against its target.

``bench/harvest.py``, ``bench/resume.py`` and ``bench/progress.py`` import it from beside them
(scripts run as ``python bench/<name>.py``, so their own folder is on ``sys.path``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.emulator.flavours import FLAVOURS

T = TypeVar("T")


# --------------------------------------------------------------------------- the server


def mediaframe_command() -> str:
    """The ``mediaframe`` script of the running interpreter's environment."""
    beside = Path(sys.executable).with_name("mediaframe")
    found = str(beside) if beside.exists() else shutil.which("mediaframe")
    if found is None:
        raise SystemExit("the mediaframe command is not installed: pip install -e .")
    return found


@contextlib.contextmanager
def served(
    records: int, *, cap: int, seed: int, flavour: str = "contract", delay_ms: str | None = None
) -> Iterator[dict[str, Any]]:
    """The emulator serving in a child process; yields its JSON line (base_url, token, ...).

    ``delay_ms`` (``"MIN-MAX"``) makes it wait that long before each answer, as a server across
    a network does: the wait leaves the CPU to the client, where the emulator's own work does not.
    """
    command = [mediaframe_command(), "emulator", "serve", "--flavour", flavour]
    command += ["--records", str(records), "--cap", str(cap), "--seed", str(seed)]
    if delay_ms:
        command += ["--delay-ms", delay_ms]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise SystemExit(f"the emulator did not start: {' '.join(command)}")
        yield json.loads(line)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


# --------------------------------------------------------------------------- options


def options(
    doc: str | None, *, records: int, quick: dict[str, Any], per_page: bool = True
) -> argparse.ArgumentParser:
    """The options every harvest benchmark takes: the catalogue, its server and the paging.

    ``quick`` is what ``--quick`` sets (a smoke test); add a benchmark's own options to the
    parser returned, then read them with :func:`parsed`.
    """
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=records, help="catalogue size")
    parser.add_argument("--cap", type=int, default=1000, help="the emulator's retrieval cap")
    parser.add_argument("--seed", type=int, default=0, help="seed of the catalogue")
    if per_page:
        parser.add_argument("--per-page", type=int, default=1000, help="page size")
    parser.add_argument(
        "--flavour", default="contract", choices=FLAVOURS, help="the server generation spoken"
    )
    described = ", ".join(f"{name.replace('_', '-')} {value}" for name, value in quick.items())
    parser.add_argument(
        "--delay-ms",
        default=None,
        metavar="MIN-MAX",
        help="the emulator waits this long before each answer (a server across a network)",
    )
    parser.add_argument("--quick", action="store_true", help=f"a smoke test: {described}")
    parser.set_defaults(quick_values=quick)
    return parser


def parsed(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The options given, with ``--quick``'s values applied."""
    args = parser.parse_args()
    if args.quick:
        for name, value in args.quick_values.items():
            setattr(args, name, value)
    return args


def catalogue(args: argparse.Namespace) -> str:
    """One line naming what a run measured against."""
    paging = f", per_page {args.per_page}" if hasattr(args, "per_page") else ""
    delay = f", delay {args.delay_ms} ms an answer" if args.delay_ms else ""
    return (
        f"records {args.records:,}, cap {args.cap}{paging}, seed {args.seed}, "
        f"flavour {args.flavour}{delay}"
    )


# --------------------------------------------------------------------------- clients and timing


def client_for(server: dict[str, Any], folder: Path, **settings: Any) -> mf.Client:
    """A client of the emulator with its own fresh cache in ``folder`` (progress off unless
    ``settings`` say otherwise), that has already asked who its user is: any first call asks
    that once, and it is no part of what a benchmark times."""
    chosen = Settings(config_dir=folder / "config", cache_dir=folder / "cache", progress=False)
    client = mf.connect(
        server["base_url"], token=server["token"], settings=chosen.replace(**settings)
    )
    client.me_raw()
    return client


def timed(work: Callable[[], T]) -> tuple[float, T]:
    """Wall seconds of ``work()``, and what it returned."""
    started = time.perf_counter()
    result = work()
    return time.perf_counter() - started, result


class Stamps(list[tuple[float, T]], Generic[T]):
    """What it is called with, each stamped with the seconds since it was made (a progress
    callback's record: make it just before the call)."""

    def __init__(self) -> None:
        super().__init__()
        self.started = time.perf_counter()

    def __call__(self, item: T) -> None:
        self.append((time.perf_counter() - self.started, item))


def best_of(runs: int, *works: Callable[[], object]) -> list[float]:
    """The best wall seconds of each of ``works`` over ``runs`` rounds, interleaved so that all
    share the machine's mood (on a shared 2-core machine one run swings by a third)."""
    best = [float("inf")] * len(works)
    for _ in range(runs):
        for index, work in enumerate(works):
            best[index] = min(best[index], timed(work)[0])
    return best


def ratio(name: str, value: float, sense: str, target: float) -> str:
    """``name = value   target <= 1.3   met``: a ratio against its target."""
    met = value <= target if sense == "<=" else value >= target
    return f"{name} = {value:.2f}   target {sense} {target}   {'met' if met else 'NOT met'}"
