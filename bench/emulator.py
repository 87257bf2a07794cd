"""Benchmark of the emulator: catalogue build time and memory, record rendering, search pages/s.

Run: ``.venv/bin/python bench/emulator.py [--records 1000000] [--pages 300]``
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np
import requests

from mediaframe.emulator import Catalogue, Emulator


def build(records: int) -> Catalogue:
    tracemalloc.start()
    started = time.perf_counter()
    catalogue = Catalogue(records=records, seed=0)
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"catalogue build, {records:,} records: {elapsed:.2f} s")
    print(f"  peak traced memory {peak / 2**20:,.0f} MiB")
    return catalogue


def render(catalogue: Catalogue, count: int) -> None:
    rows = np.arange(min(count, catalogue.records.size))
    started = time.perf_counter()
    catalogue.record_dicts(rows)
    elapsed = time.perf_counter() - started
    print(f"record_dicts: {len(rows) / elapsed:,.0f} dicts/s ({len(rows):,} in {elapsed:.2f} s)")


def search_pages(records: int, pages: int) -> None:
    with Emulator(records=records, seed=0, cap=pages * 100) as emu, requests.Session() as session:
        url = f"{emu.base_url}/api/v1/search/"
        form = {"oauth_token": emu.token, "per_page": 100, "sort": "created_on", "ord": "asc"}
        first = time.perf_counter()
        session.post(url, data={**form, "offset_start": 0}).raise_for_status()
        cold = time.perf_counter() - first
        started = time.perf_counter()
        for page in range(1, pages):
            session.post(url, data={**form, "offset_start": page * 100}).raise_for_status()
        elapsed = time.perf_counter() - started
    rate = (pages - 1) / elapsed
    print(f"v1 search over loopback, per_page=100, {records:,} records: {rate:,.0f} pages/s")
    print(f"  first page (evaluates and caches the hit set): {cold * 1000:.0f} ms; "
          f"later pages {1000 / rate:.1f} ms each, {cold * rate:.1f}x faster")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000, help="catalogue size to build")
    parser.add_argument(
        "--search-records", type=int, default=100_000, help="catalogue size to search"
    )
    parser.add_argument("--pages", type=int, default=300, help="search pages to fetch")
    args = parser.parse_args()
    catalogue = build(args.records)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  process peak RSS after the build: {rss:,.0f} MiB")
    render(catalogue, 200_000)
    del catalogue
    search_pages(args.search_records, args.pages)


if __name__ == "__main__":
    main()
