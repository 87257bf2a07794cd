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

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from harvest import ratio, served

CHILD = """
import json, sys, time
import mediaframe as mf
from mediaframe.config import Settings

base_url, token, cache, per_page = sys.argv[1:5]
settings = Settings.from_env().replace(
    cache_dir=cache, config_dir=cache + "-config", progress=False, per_page=int(per_page)
)
client = mf.connect(base_url, token=token, settings=settings)
client.me_raw()  # who the user is: asked by any first call, not part of the harvest
started = time.perf_counter()
frame = client.records()
seconds = time.perf_counter() - started
report = mf.HarvestReport.from_frame(frame)
print(json.dumps({
    "seconds": seconds, "requests": report.requests, "complete": report.complete,
    "rows": len(frame), "total": report.total_results, "shards": len(report.shards),
    "resumed": report.resumed_shards,
}))
"""


def child(server: dict[str, Any], cache: Path, per_page: int) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", CHILD, server["base_url"], server["token"], str(cache)]
    return subprocess.Popen([*command, str(per_page)], stdout=subprocess.PIPE, text=True)


def finished(child: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = child.communicate(timeout=3600)
    if child.returncode != 0:
        raise SystemExit(f"the harvest failed ({child.returncode})")
    result: dict[str, Any] = json.loads(out)
    return result


def checkpointed(cache: Path) -> int:
    """Shards finished so far in ``cache`` (their entries are written last)."""
    return sum(1 for _ in cache.glob("records/*/shards/*.json"))


def kill_at(server: dict[str, Any], cache: Path, per_page: int, shards: int) -> int:
    """Start a harvest and SIGKILL it once ``shards`` shards are checkpointed."""
    process = child(server, cache, per_page)
    try:
        while process.poll() is None and checkpointed(cache) < shards:
            time.sleep(0.01)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    if not list(cache.glob("records/*/shards")):
        raise SystemExit("the harvest finished before the kill: use more records")
    return checkpointed(cache)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="catalogue size")
    parser.add_argument("--cap", type=int, default=1000, help="the emulator's retrieval cap")
    parser.add_argument("--per-page", type=int, default=1000, help="page size")
    parser.add_argument("--seed", type=int, default=0, help="seed of the catalogue")
    parser.add_argument("--at", type=float, default=0.5, help="share of shards before the kill")
    parser.add_argument("--quick", action="store_true", help="10,000 records, cap 500")
    args = parser.parse_args()
    if args.quick:
        args.records, args.cap = 10_000, 500
    with (
        tempfile.TemporaryDirectory(prefix="mediaframe-bench-") as folder,
        served(args.records, cap=args.cap, seed=args.seed) as server,
    ):
        fresh = finished(child(server, Path(folder) / "fresh", args.per_page))
        cache = Path(folder) / "killed"
        kept = kill_at(server, cache, args.per_page, round(fresh["shards"] * args.at))
        resumed = finished(child(server, cache, args.per_page))
    print(f"records {args.records:,}, cap {args.cap}, per_page {args.per_page}, "
          f"seed {args.seed}, killed at {args.at:.0%} of {fresh['shards']} shards")  # fmt: skip
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
