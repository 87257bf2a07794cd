"""Benchmark of what a harvest shows while it runs: how soon, how often, and that it ends whole.

Usage: ``python bench/progress.py [--records 300000] [--cap 1000] [--flavour contract]``
       ``python bench/progress.py --quick``  (20,000 records, cap 500: a smoke test)

The emulator runs in its own process (``mediaframe emulator serve``). One complete harvest,
``client.records(refresh=True)``, is run with a progress callback that stamps every snapshot it
receives. The benchmark prints:

- the delay from the call to the first snapshot (target: within 1 s), and to the first snapshot
  that knows the search's total;
- the longest gap between two snapshots while the harvest ran (target: at most 1 s), and the
  phase it fell in;
- when the first rows were shown, against the end of planning: rows are shown while planning;
- the snapshots drawn while the result was written, and how far the rows written moved;
- the last snapshot: every record of the total, ``done``.

It exits 1 if the harvest is not complete or the progress did not reach its total.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from timing import Stamps, catalogue, client_for, options, parsed, served, timed

import mediaframe as mf
from mediaframe.harvest import Snapshot


def measure(args: argparse.Namespace) -> bool:
    with (
        served(
            args.records, cap=args.cap, seed=args.seed, flavour=args.flavour, delay_ms=args.delay_ms
        ) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        # who the user is is asked here, as by any first call: the display starts before it
        # in a real call, and this measures the harvest itself
        client = client_for(server, Path(tmp), per_page=args.per_page)
        stamps: Stamps[Snapshot] = Stamps()
        took, frame = timed(lambda: client.records(refresh=True, progress=stamps))
    report = mf.HarvestReport.from_frame(frame)
    first = stamps[0][0]
    knows_total = next(t for t, s in stamps if s.total is not None)
    gaps = [
        (later - earlier, before.phase)
        for (earlier, before), (later, _) in itertools.pairwise(stamps)
    ]
    widest, phase = max(gaps, default=(0.0, "none"))
    planning_end = next((t for t, s in stamps if s.phase not in ("planning",)), took)
    first_rows = next((t for t, s in stamps if s.done > 0), None)
    writing = [s for _, s in stamps if s.phase == "writing"]
    last = stamps[-1][1]
    print(f"harvest: {report.summary()}")
    print(f"snapshots: {len(stamps)} over {took:.2f} s")
    print(f"progress first shown = {first:.3f} s after the call   target <= 1 s")
    print(f"total known after {knows_total:.3f} s (the first count's answer)")
    print(f"longest gap between two drawings = {widest:.3f} s ({phase})   target <= 1 s")
    rows = "never" if first_rows is None else f"{first_rows:.2f} s"
    print(f"first rows shown at {rows}; planning ended at {planning_end:.2f} s")
    moved = sorted({s.written for s in writing})
    print(f"writing: {len(writing)} snapshots, rows written moved through {len(moved)} values")
    print(f"last: {last.phase}, {last.done:,} of {last.total:,} {last.unit}, {last.shards} shards")
    return report.complete and last.done == last.total == len(frame) and last.phase == "done"


def main() -> None:
    args = parsed(options(__doc__, records=300_000, quick={"records": 20_000, "cap": 500}))
    print(f"progress of a harvest: {catalogue(args)}")
    sys.exit(0 if measure(args) else 1)


if __name__ == "__main__":
    main()
