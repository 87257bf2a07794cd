"""Figures of a harvest that fails: how many requests, and how long, until the error is told.

Run: ``.venv/bin/python bench/stop.py [--after 60] [--revoke 20 60] [--concurrency 4]``

With the default retries (5) and backoff (0.5 s), against the emulator in process (6,000
records under a cap of 200, pages of 100), prints:

- an outage (503 to every request after the ``--after``-th): the seconds until the harvest
  raised and the requests sent into the outage, then the same for one call alone;
- a token revoked after each ``--revoke`` requests: how many times the server refused it.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import requests

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.emulator.server import InProcessAdapter

_DOWN = json.dumps(
    {"meta": {"http_code": 503, "error_type": "Unavailable", "error_message": "down"}}
).encode()


class Front:
    """``emu.app`` that keeps every answer's status, answering 503 after ``down_after``."""

    def __init__(self, emu: Emulator, down_after: int | None = None) -> None:
        self.emu, self.down_after = emu, down_after
        self.statuses: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        with self._lock:
            down = self.down_after is not None and len(self.statuses) >= self.down_after

        def kept(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            with self._lock:
                self.statuses.append(int(status.split()[0]))
            return start_response(status, headers)

        if down:
            kept("503 Service Unavailable", [("Content-Type", "application/json")])
            return [_DOWN]
        return self.emu.app(environ, kept)

    def session(self) -> requests.Session:
        session = requests.Session()
        session.mount(self.emu.inprocess_url, InProcessAdapter(self))
        return session


def harvest(emu: Emulator, front: Front, concurrency: int) -> tuple[str, float]:
    """The error a harvest raised (its class name) and the seconds it took."""
    cache = tempfile.mkdtemp(prefix="mediaframe-stop-")
    settings = Settings.from_env({"HOME": cache}).replace(
        cache_dir=cache, progress=False, per_page=100, concurrency=concurrency
    )
    client = mf.connect(
        emu.inprocess_url, token=emu.token, settings=settings, session=front.session()
    )
    started = time.monotonic()
    try:
        client.records()
    except mf.MediaframeError as err:
        return type(err).__name__, time.monotonic() - started
    return "no error", time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--after", type=int, default=60)
    parser.add_argument("--revoke", type=int, nargs="*", default=[20, 60])
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    emu = Emulator(records=6000, seed=3, cap=200)
    for label, front, threads in (
        (
            f"outage after {args.after}, concurrency {args.concurrency}",
            Front(emu, args.after),
            args.concurrency,
        ),
        ("one call alone", Front(emu, 0), 1),
    ):
        error, seconds = harvest(emu, front, threads)
        print(f"{label}: {error} after {seconds:.1f} s, {front.statuses.count(503)} requests")
    for after in args.revoke:
        revoked = Emulator(records=6000, seed=3, cap=200, revoke_after=after)
        front = Front(revoked)
        error, _ = harvest(revoked, front, args.concurrency)
        print(f"token revoked after {after}: {error}, refused {front.statuses.count(401)} time(s)")


if __name__ == "__main__":
    main()
