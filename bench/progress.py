"""Benchmark of what a harvest shows while it runs: how soon, how often, and that it ends whole.

Usage: ``python bench/progress.py [--records 300000] [--cap 1000]``
       ``python bench/progress.py --quick``  (20,000 records, cap 500: a smoke test)

The emulator runs in its own process (``mediaframe emulator serve``). One complete harvest,
``client.records(refresh=True)``, is run with a progress callback that stamps every snapshot it
receives. The benchmark prints:

- the delay from the call to the first snapshot (target: within 1 s), and to the first snapshot
  that knows the search's total;
- the longest gap between two snapshots while the harvest ran (target: at most 1 s);
- when the first rows were shown, against the end of planning: rows are shown while planning;
- the last snapshot: every record of the total, ``done``.

It exits 1 if the harvest is not complete or the progress did not reach its total.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from pathlib import Path

from harvest import served  # bench/harvest.py, beside this script

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.harvest import Snapshot


def measure(args: argparse.Namespace) -> bool:
    with (
        served(args.records, cap=args.cap, seed=args.seed) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        settings = Settings(config_dir=Path(tmp) / "config", cache_dir=Path(tmp) / "cache")
        client = mf.connect(server["base_url"], token=server["token"], settings=settings)
        stamps: list[tuple[float, Snapshot]] = []
        started = time.perf_counter()

        def stamp(snapshot: Snapshot) -> None:
            stamps.append((time.perf_counter() - started, snapshot))

        frame = client.records(refresh=True, progress=stamp)
        took = time.perf_counter() - started
    report = mf.HarvestReport.from_frame(frame)
    first = stamps[0][0]
    knows_total = next(t for t, s in stamps if s.total is not None)
    gaps = [later - earlier for (earlier, _), (later, _) in itertools.pairwise(stamps)]
    planning_end = next((t for t, s in stamps if s.phase != "planning"), took)
    first_rows = next((t for t, s in stamps if s.done > 0), None)
    last = stamps[-1][1]
    print(f"harvest: {report.summary()}")
    print(f"snapshots: {len(stamps)} over {took:.2f} s")
    print(f"progress first shown = {first:.3f} s after the call   target <= 1 s")
    print(f"total known after {knows_total:.3f} s (the first count's answer)")
    print(f"longest gap between two drawings = {max(gaps, default=0):.3f} s   target <= 1 s")
    rows = "never" if first_rows is None else f"{first_rows:.2f} s"
    print(f"first rows shown at {rows}; planning ended at {planning_end:.2f} s")
    print(f"last: {last.phase}, {last.done:,} of {last.total:,} {last.unit}, {last.shards} shards")
    return report.complete and last.done == last.total == len(frame) and last.phase == "done"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000, help="catalogue size")
    parser.add_argument("--cap", type=int, default=1000, help="the emulator's retrieval cap")
    parser.add_argument("--seed", type=int, default=0, help="seed of the catalogue")
    parser.add_argument("--quick", action="store_true", help="20,000 records, cap 500")
    args = parser.parse_args()
    if args.quick:
        args.records, args.cap = 20_000, 500
    print(f"progress of a harvest of {args.records:,} records under a cap of {args.cap}")
    sys.exit(0 if measure(args) else 1)


if __name__ == "__main__":
    main()
