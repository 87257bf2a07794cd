"""Benchmark of a complete harvest: against the floor, a naive loop, the cache, and its memory.

Usage: ``python bench/harvest.py [--records 100000] [--cap 1000] [--large 1000000 | --no-large]``
       ``python bench/harvest.py --quick``  (5,000 records, cap 500, no large run: a smoke test)

The emulator runs in its own process (``mediaframe emulator serve``), so its CPU and memory do
not mix with the client's. One run measures, against ``--records`` records under ``--cap``:

1. mediaframe's complete harvest, ``client.records(refresh=True)``, checked complete and equal,
   key for key, to the emulator's ground truth (``mediaframe emulator catalogue``);
2. a naive sequential paging loop with requests, until an empty page: the cap truncates it;
3. the floor: the same pages the harvest fetched (rebuilt from its report's plan), fetched raw
   by a thread pool of the same concurrency, bytes read, nothing decoded; and, for the record,
   the same pages fetched and each read into a frame (``read_records``) and nothing else, what
   reading costs a client beside the server on this machine (1 and 3: the best of
   ``--rounds``, 5 by default, interleaved: one run on a shared machine swings by a third);
4. reading the harvest back from the cache, ``client.records()``: as ``timeit`` times a short
   call (enough calls to take 0.2 s, best of five such runs), the target's measure; and, for the
   record, the first read after the harvests and the first read in a fresh process;
5. unless ``--no-large``: the client's peak memory while harvesting ``--large`` records, against
   the final frame's ``memory_usage(deep=True)``.

``--flavour`` picks the server generation the emulator speaks (contract, current, legacy).

It prints the ratios the issue sets as targets (harvest/floor ≤ 1.3, cache speedup ≥ 100,
peak memory/frame ≤ 2.2) and exits 1 if a harvest is not complete and exact.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import multiprocessing
import subprocess
import sys
import tempfile
import threading
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import requests

import mediaframe as mf
from mediaframe.frames import read_records
from mediaframe.harvest import Shard, Spec
from mediaframe.routes import search_params

sys.path.insert(0, str(Path(__file__).parent))
from timing import (
    best_of,
    catalogue,
    client_for,
    mediaframe_command,
    options,
    parsed,
    ratio,
    served,
    timed,
)

KEY = ["databox_id", "record_id"]
T = TypeVar("T")


# --------------------------------------------------------------------------- the truth


def ground_truth(records: int, *, seed: int, folder: Path) -> pd.MultiIndex:
    """Keys of the records the demo user may see, from ``mediaframe emulator catalogue``."""
    path = folder / "truth.parquet"
    command = [mediaframe_command(), "emulator", "catalogue"]
    command += ["--records", str(records), "--seed", str(seed), "-o", str(path)]
    subprocess.run(command, check=True, capture_output=True)
    truth = pd.read_parquet(path, columns=[*KEY, "visible"])
    return keys_of(truth[truth["visible"]])


def keys_of(frame: pd.DataFrame) -> pd.MultiIndex:
    return pd.MultiIndex.from_frame(frame[KEY].astype("int64")).sort_values()


# --------------------------------------------------------------------------- the four fetches


def connect(server: dict[str, Any], folder: Path, args: argparse.Namespace) -> mf.Client:
    """A client with its own fresh cache, progress bars off, the benchmark's paging."""
    return client_for(server, folder, concurrency=args.concurrency, per_page=args.per_page)


def naive_loop(server: dict[str, Any], *, per_page: int) -> list[dict[str, Any]]:
    """What one writes without mediaframe: page the search until a page comes back empty."""
    url = f"{server['base_url']}/api/v1/search/"
    items: list[dict[str, Any]] = []
    with requests.Session() as session:
        session.headers["Authorization"] = f"OAuth {server['token']}"
        while True:
            form = {"per_page": per_page, "offset_start": len(items)}
            response = session.post(url, data=form)
            response.raise_for_status()
            page = response.json()["response"]["results"]["records"]
            if not page:
                return items
            items.extend(page)


def harvested_pages(report: mf.HarvestReport, *, per_page: int) -> list[list[list[tuple]]]:
    """The search forms of every page the harvest fetched, one list per shard.

    The engine pages a shard on a stable sort until it has the shard's total, each page after
    the search's first asked from one hit before where the one before it ended.
    """
    spec = Spec(report.kind, report.query, report.filters)
    sort = spec.paging_sort  # the engine's stable order
    shards = []
    for entry in report.shards:
        shard = Shard.from_dict(entry["shard"])
        params = {**spec.params(shard), "sort": sort, "ord": "asc"}
        start = shard.window[0] if shard.window else 0
        offsets = page_offsets(start, entry["total"] or 0, per_page)
        shards.append(
            [search_params(**params, offset_start=at, per_page=per_page) for at in offsets]
        )
    return shards


def page_offsets(start: int, size: int, per_page: int) -> list[int]:
    """Where the pages of ``size`` hits from ``start`` are asked: each overlaps one hit."""
    at = start - 1 if start else 0
    offsets: list[int] = []
    while size and (not offsets or at + 1 < start + size):
        offsets.append(at)
        at += max(1, per_page - 1)
    return offsets


def floor(
    server: dict[str, Any],
    shards: list[list[list[tuple]]],
    *,
    concurrency: int,
    read: Callable[[bytes], object] | None = None,
) -> int:
    """Fetch the pages raw, a shard per task as the engine does; returns the bytes read.

    With ``read``, each page's body is also given to it on the thread that fetched it: the
    floor of a client that reads every page (``read_records``) and does nothing else.
    """
    url = f"{server['base_url']}/api/v1/search/"
    headers = {"Authorization": f"OAuth {server['token']}"}
    local = threading.local()
    sessions: list[requests.Session] = []

    def fetch_shard(pages: list[list[tuple]]) -> int:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            sessions.append(local.session)
        size = 0
        for form in pages:
            response = local.session.post(url, data=form, headers=headers)
            response.raise_for_status()
            size += len(response.content)
            if read is not None:
                read(response.content)
        return size

    with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
        size = sum(pool.map(fetch_shard, shards))
    for session in sessions:
        session.close()
    return size


# --------------------------------------------------------------------------- memory


def harvest_memory(server: dict[str, Any], folder: str, args: argparse.Namespace) -> dict:
    """Run in a fresh process: the growth of its peak RSS over a harvest, and the frame's size.

    Resident memory sees everything the harvest holds — Python objects, numpy buffers, Arrow's
    memory pool, allocator fragmentation — where tracemalloc misses Arrow's allocations and
    slows every allocation down. ``getrusage().ru_maxrss`` cannot be used as it is: Linux hands
    a spawned child its parent's high-water mark, so a child of a big parent would start with
    a peak it never reached. The peak is therefore the kernel's ``VmHWM``, reset to the current
    resident size just before the harvest (``/proc/self/clear_refs``), after the imports and
    the connection.
    """
    client = connect(server, Path(folder), args)
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # peak := current resident size
    baseline = _status_bytes("VmRSS")
    seconds, frame = timed(lambda: client.records(refresh=True))
    peak = _status_bytes("VmHWM")
    report = mf.HarvestReport.from_frame(frame)
    return {
        "baseline": baseline,
        "growth": peak - baseline,
        "frame": int(frame.memory_usage(deep=True).sum()),
        "rows": len(frame),
        "columns": frame.shape[1],
        "seconds": seconds,
        "complete": report.complete,
        "total": report.total_results,
        "summary": report.summary(),
    }


def per_call(work: Callable[[], Any]) -> float:
    """Seconds a call takes as ``python -m timeit`` measures it: the best of five runs of as many
    calls as take 0.2 s. A single call of a few milliseconds swings with any scheduling delay."""
    timer = timeit.Timer(work)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=5, number=number)) / number


def in_fresh_process(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` in a newly spawned interpreter: nothing imported, allocated or started."""
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
        return pool.submit(work, *args).result()


def read_once(server: dict[str, Any], folder: str, args: argparse.Namespace) -> float:
    """Seconds of the first ``client.records()`` of a process, from the cache of ``folder``."""
    client = connect(server, Path(folder), args)  # who the user is: asked, not timed
    seconds, frame = timed(client.records)
    if not mf.HarvestReport.from_frame(frame).from_cache:
        raise SystemExit("the fresh process did not read the cache")
    client.close()
    return seconds


def _status_bytes(name: str) -> int:
    """A memory line of ``/proc/self/status`` (``VmRSS``, ``VmHWM``: kB) in bytes; Linux only."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"/proc/self/status has no {name}: the memory run needs Linux")


# --------------------------------------------------------------------------- the run


def measure(args: argparse.Namespace, folder: Path) -> bool:
    """The 100,000-record measures; returns whether the harvest was complete and exact."""
    folder.mkdir(parents=True)
    truth = ground_truth(args.records, seed=args.seed, folder=folder)
    with served(
        args.records, cap=args.cap, seed=args.seed, flavour=args.flavour, delay_ms=args.delay_ms
    ) as server:
        client = connect(server, folder, args)
        # Both sides take the best of --rounds, interleaved (the first harvest gives the pages)
        harvest_s, frame = timed(lambda: client.records(refresh=True))
        report = mf.HarvestReport.from_frame(frame)
        shards = harvested_pages(report, per_page=args.per_page)
        c = args.concurrency
        floor_s, size = timed(lambda: floor(server, shards, concurrency=args.concurrency))
        read_s, _ = timed(lambda: floor(server, shards, concurrency=c, read=read_records))
        again = best_of(
            args.rounds - 1,
            lambda: client.records(refresh=True),
            lambda: floor(server, shards, concurrency=args.concurrency),
            lambda: floor(server, shards, concurrency=c, read=read_records),
        )
        harvest_s, floor_s = min(harvest_s, again[0]), min(floor_s, again[1])
        read_s = min(read_s, again[2])
        naive_s, naive = timed(lambda: naive_loop(server, per_page=args.per_page))
        after_s, cached = timed(client.records)
        cache_s = per_call(client.records)
        client.close()
        fresh_s = min(in_fresh_process(read_once, server, str(folder), args) for _ in range(3))
    pages = sum(map(len, shards))
    exact = report.complete and keys_of(frame).equals(truth)
    print(f"{catalogue(args)}, concurrency {args.concurrency}")
    print(f"harvest   {harvest_s:8.2f} s   best of {args.rounds}; {report.summary()}")
    print(f"          complete={report.complete}, {len(frame):,} rows vs ground truth "
          f"{len(truth):,}: {'keys equal' if exact else 'MISMATCH'}")  # fmt: skip
    # a shard whose every hit came with its count was paged by that one request
    paged = sum(max(entry["requests"] or 0, 1) for entry in report.shards)
    print(f"          {len(report.shards)} shards, {paged} pages + "
          f"{report.requests - paged} planning requests")  # fmt: skip
    same = "the same" if pages == paged else f"NOT the same ({paged} paged):"
    print(f"floor     {floor_s:8.2f} s   {same} {pages} pages raw, {size / 1e6:.1f} MB read")
    print(f"read      {read_s:8.2f} s   the same pages fetched and read into frames "
          f"(read_records), nothing else: {read_s / floor_s:.2f} x the floor")  # fmt: skip
    print(f"naive     {naive_s:8.2f} s   {len(naive):,} records in sequential pages")
    print(f"cache     {cache_s:8.3f} s   a read, timeit's way; from_cache="
          f"{mf.HarvestReport.from_frame(cached).from_cache}, "
          f"identical={cached.equals(frame)}")  # fmt: skip
    print(f"          {after_s:8.3f} s   the first read after the harvests "
          f"({harvest_s / after_s:.0f} x)")  # fmt: skip
    print(f"          {fresh_s:8.3f} s   the first read in a fresh process, best of 3 "
          f"({harvest_s / fresh_s:.0f} x)")  # fmt: skip
    print(ratio("harvest/floor", harvest_s / floor_s, "<=", 1.3))
    print(ratio("cache speedup (harvest/cache read)", harvest_s / cache_s, ">=", 100))
    print(f"naive loop got {len(naive):,} of {len(truth):,} records "
          f"({len(naive) / max(len(truth), 1):.1%})")  # fmt: skip
    return exact


def measure_large(args: argparse.Namespace, folder: Path) -> bool:
    """The memory measure on ``--large`` records; returns whether that harvest was complete."""
    folder.mkdir(parents=True)
    with served(
        args.large, cap=args.cap, seed=args.seed, flavour=args.flavour, delay_ms=args.delay_ms
    ) as server:
        result = in_fresh_process(harvest_memory, server, str(folder), args)
    mib = 2**20
    print(f"large     {result['seconds']:8.2f} s   {result['summary']}")
    print(f"          frame {result['rows']:,} x {result['columns']}, "
          f"{result['frame'] / mib:,.0f} MiB (memory_usage deep); client peak RSS grew "
          f"{result['growth'] / mib:,.0f} MiB over a {result['baseline'] / mib:,.0f} MiB "
          "baseline")  # fmt: skip
    print(ratio("memory peak/frame", result["growth"] / result["frame"], "<=", 2.2))
    return bool(result["complete"] and result["rows"] == result["total"])


def main() -> None:
    parser = options(
        __doc__, records=100_000, quick={"records": 5000, "cap": 500, "no_large": True, "rounds": 2}
    )
    parser.add_argument("--concurrency", type=int, default=4, help="shards paged at once")
    parser.add_argument(
        "--rounds", type=int, default=5, help="harvests and floors timed, interleaved; best kept"
    )
    parser.add_argument("--large", type=int, default=1_000_000, help="records of the memory run")
    parser.add_argument("--no-large", action="store_true", help="skip the memory run")
    args = parsed(parser)
    with tempfile.TemporaryDirectory(prefix="mediaframe-bench-") as folder:
        ok = measure(args, Path(folder) / "main")
        if not args.no_large:
            ok = measure_large(args, Path(folder) / "large") and ok
    if not ok:
        print("a harvest was NOT complete and exact", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
