"""Benchmark of the harvest's CPU: this checkout against another one, on the same server.

Usage: ``python bench/cpu.py --against DIR [--records 100000] [--flavour current] [--runs 3]``

``DIR`` holds another version of the package (``git archive REV | tar -x -C DIR``). One emulator
serves both; each round runs, in turn, a child process of each version that harvests
``client.records(refresh=True)`` twice in one cache and reports the CPU time
(``time.process_time``: every thread of the client, the server excluded) of each harvest. The
two versions alternate, so that both share the machine's mood: on a loaded machine their wall
times swing, their CPU times much less. It prints the CPU of each version (median and range)
and their ratio.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from timing import catalogue, options, parsed, served

HERE = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, tempfile, time
from pathlib import Path
import mediaframe as mf

base_url, token, per_page, bench = sys.argv[1:5]
sys.path.insert(0, bench)
from timing import client_for

with tempfile.TemporaryDirectory() as folder:
    server = {"base_url": base_url, "token": token}
    client = client_for(server, Path(folder), per_page=int(per_page))
    seconds = []
    for _ in range(2):
        started = time.process_time()
        client.records(refresh=True)
        seconds.append(time.process_time() - started)
print(json.dumps({"package": mf.__file__, "cpu": seconds}))
"""


def harvest_cpu(server: dict, source: Path, per_page: int) -> list[float]:
    """CPU seconds of two harvests in a child process importing the package from ``source``."""
    command = [sys.executable, "-c", CHILD, server["base_url"], server["token"], str(per_page)]
    command.append(str(Path(__file__).parent))
    env = {**os.environ, "PYTHONPATH": str(source)}
    # run from the source tree: ``-c`` puts the working folder first on the path
    done = subprocess.run(command, env=env, cwd=source, capture_output=True, text=True, check=True)
    out = done.stdout
    result = json.loads(out.strip().splitlines()[-1])
    if not str(result["package"]).startswith(str(source)):
        raise SystemExit(f"the child imported {result['package']}, not the one in {source}")
    return [float(seconds) for seconds in result["cpu"]]


def main() -> None:
    parser = options(__doc__, records=100_000, quick={"records": 5000, "cap": 500, "runs": 1})
    parser.add_argument("--against", type=Path, required=True, help="another version's tree")
    parser.add_argument("--runs", type=int, default=3, help="rounds, each version in turn")
    args = parsed(parser)
    versions = {"this": HERE, "other": args.against.resolve()}
    cpu: dict[str, list[float]] = {name: [] for name in versions}
    with served(
        args.records, cap=args.cap, seed=args.seed, flavour=args.flavour, delay_ms=args.delay_ms
    ) as server:
        for _ in range(args.runs):
            for name, source in versions.items():
                cpu[name] += harvest_cpu(server, source, args.per_page)
    print(f"{catalogue(args)}; other = {args.against}")
    for name, seconds in cpu.items():
        print(
            f"{name:6} CPU median {statistics.median(seconds):.2f} s "
            f"(range {min(seconds):.2f}-{max(seconds):.2f}, {len(seconds)} harvests)"
        )
    ratio = statistics.median(cpu["this"]) / statistics.median(cpu["other"])
    print(f"this/other CPU = {ratio:.2f}")


if __name__ == "__main__":
    main()
