"""Benchmark of a resume: a harvest killed half way, then resumed, against a fresh run.

Usage: ``python bench/resume.py [--records 100000] [--cap 1000] [--per-page 1000] [--at 0.5]``
       ``python bench/resume.py --quick``  (10,000 records, cap 500: a smoke test)

The emulator runs in its own process (``mediaframe emulator serve``). One run:

1. harvests ``--records`` records into a fresh cache in a child process: the fresh run's
   requests (its report's) and seconds (around ``client.records()``, imports excluded);
2. harvests again into another fresh cache in a child process, and SIGKILLs it once ``--at``
   of the fresh run's shards are checkpointed (pages as big as the cap: most shards are written
   while the plan is being made, so the kill lands in planning; smaller pages: in paging);
3. resumes in a new child process: its requests and seconds, and checks it complete.

It prints resume/fresh for requests and for seconds (target: each ≤ 0.6) and exits 1 if the
resumed harvest is not complete.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from timing import catalogue, options, parsed, ratio, served

CHILD = """
import json, sys
import mediaframe as mf

base_url, token, cache, per_page, bench = sys.argv[1:6]
sys.path.insert(0, bench)
from pathlib import Path
from timing import client_for, timed

folder = Path(cache)
client = client_for(  # who the user is: asked by any first call, not part of the harvest
    {"base_url": base_url, "token": token}, folder, per_page=int(per_page)
)
seconds, frame = timed(client.records)
report = mf.HarvestReport.from_frame(frame)
print(json.dumps({
    "seconds": seconds, "requests": report.requests, "complete": report.complete,
    "rows": len(frame), "total": report.total_results, "shards": len(report.shards),
    "resumed": report.resumed_shards,
}))
"""


def child(server: dict[str, Any], cache: Path, per_page: int) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", CHILD, server["base_url"], server["token"], str(cache)]
    command += [str(per_page), str(Path(__file__).parent)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def finished(child: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = child.communicate(timeout=3600)
    if child.returncode != 0:
        raise SystemExit(f"the harvest failed ({child.returncode})")
    result: dict[str, Any] = json.loads(out)
    return result


def checkpointed(cache: Path) -> int:
    """Shards finished so far in ``cache`` (their entries are written last)."""
    # shards are kept in batches: a file of entries each
    batches = cache.glob("cache/records/*/shards/*.json")
    return sum(len(json.loads(path.read_text())["shards"]) for path in batches)


def kill_at(server: dict[str, Any], cache: Path, per_page: int, shards: int) -> int:
    """Start a harvest and SIGKILL it once ``shards`` shards are checkpointed."""
    process = child(server, cache, per_page)
    try:
        while process.poll() is None and checkpointed(cache) < shards:
            time.sleep(0.01)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    if not list(cache.glob("cache/records/*/shards")):
        raise SystemExit("the harvest finished before the kill: use more records")
    return checkpointed(cache)


def main() -> None:
    parser = options(__doc__, records=100_000, quick={"records": 10_000, "cap": 500})
    parser.add_argument("--at", type=float, default=0.5, help="share of shards before the kill")
    args = parsed(parser)
    with (
        tempfile.TemporaryDirectory(prefix="mediaframe-bench-") as folder,
        served(
            args.records, cap=args.cap, seed=args.seed, flavour=args.flavour, delay_ms=args.delay_ms
        ) as server,
    ):
        fresh = finished(child(server, Path(folder) / "fresh", args.per_page))
        cache = Path(folder) / "killed"
        kept = kill_at(server, cache, args.per_page, round(fresh["shards"] * args.at))
        resumed = finished(child(server, cache, args.per_page))
    print(f"{catalogue(args)}, killed at {args.at:.0%} of {fresh['shards']} shards")
    print(f"fresh     {fresh['seconds']:8.2f} s   {fresh['requests']} requests, "
          f"{fresh['rows']:,} of {fresh['total']:,}, complete={fresh['complete']}")  # fmt: skip
    print(f"resume    {resumed['seconds']:8.2f} s   {resumed['requests']} requests, "
          f"{resumed['rows']:,} of {resumed['total']:,}, complete={resumed['complete']}, "
          f"{resumed['resumed']} shards kept of {kept} checkpointed")  # fmt: skip
    print(ratio("resume/fresh requests", resumed["requests"] / fresh["requests"], "<=", 0.6))
    print(ratio("resume/fresh seconds", resumed["seconds"] / fresh["seconds"], "<=", 0.6))
    if not (resumed["complete"] and resumed["rows"] == fresh["rows"]):
        print("the resumed harvest is NOT complete", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
