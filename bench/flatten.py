"""Benchmark: JSON bytes of search answers to the typed records frame, for every server generation.

Usage: ``python bench/flatten.py [--n 200000] [--pages 50] [--repeat 3] [--flavours ...]``

For each flavour of the emulator (the contract's shape, a current server, a legacy one), on the
same catalogue written as that generation writes it, two workloads:

* ``one answer``: ``--n`` records in one search answer;
* ``pages``: ``--pages`` answers of 1,000 records each (what a harvest reads).

Measured in one run, best of ``--repeat``, the measures interleaved so that a change in the
machine's load touches them alike:

(a)  floor       ``orjson.loads(bytes)``
(b)  mediaframe  ``mediaframe.frames.records_json(bytes)`` → the final typed frame
(b′) reference   ``orjson.loads`` + ``mediaframe.frames.records`` (decoded dicts → the same frame)
(c)  by hand     ``json.loads``, ``pd.json_normalize``, explode ``technical_informations``,
                 pivot it, join it back (the notebook way)

and the targets: (b)/(a) ≤ 1.5, (c)/(b) ≥ 5, memory of (b)'s frame ≤ 0.6 × (c)'s, (b)'s frame
identical to (b′)'s, every answer read natively. Pages are timed page by page (their sum);
their memory is that of the pages joined (``concat_records`` / ``pd.concat``).

Every measure is timed the same way: a full collection first, then the garbage collector paused
during the run (as ``timeit`` does). ``--gc`` keeps it running instead, for all measures alike.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson
import pandas as pd

from mediaframe.emulator.catalogue import Catalogue
from mediaframe.emulator.envelope import to_json
from mediaframe.emulator.flavours import FLAVOURS, by_name
from mediaframe.frames import concat_records, read_records, records, records_json

KEY = ["databox_id", "record_id"]
REFERENCE = "b'"
PAGE = 1000
TARGETS = {"b/a": 1.5, "c/b": 5.0, "memory": 0.6}


def answer_bytes(catalogue: Catalogue, rows: range, flavour: str) -> bytes:
    """A v1 search answer holding the records at ``rows``, written as ``flavour`` writes it."""
    shape = by_name(flavour)
    n = len(rows)
    head = shape.search_head(
        {
            "offset_start": rows.start,
            "per_page": n,
            "available_results": n,
            "total_results": catalogue.records.size,
            "error": "",
            "warning": "",
            "query_time": 0.0123,
            "search_indexes": "emulator",
        },
        page_count=n,
    )
    envelope = {
        "meta": {
            "api_version": shape.api_version,
            "request": "POST /api/v1/search/",
            "response_time": "2026-01-01T00:00:00+00:00",
            "http_code": 200,
            "error_type": None,
            "error_message": None,
            "error_details": None,
            "charset": "UTF-8",
        },
        "response": {
            **head,
            "suggestions": [],
            "facets": [],
            "query": "",
            "results": {"records": shape.records(catalogue.record_dicts(rows)), "stories": []},
        },
    }
    return to_json(envelope, pretty=shape.pretty)


def workloads(catalogue: Catalogue, flavour: str, n: int, pages: int) -> dict[str, list[bytes]]:
    """The two workloads, by name: one answer of ``n`` records, ``pages`` answers of 1,000."""
    return {
        f"one answer of {n:,}": [answer_bytes(catalogue, range(n), flavour)],
        f"{pages} pages of {PAGE:,}": [
            answer_bytes(catalogue, range(p * PAGE, (p + 1) * PAGE), flavour) for p in range(pages)
        ],
    }


def floor(raw: bytes) -> Any:
    return orjson.loads(raw)


def mediaframe(raw: bytes) -> pd.DataFrame:
    return records_json(raw)[1]


def decoded(raw: bytes) -> pd.DataFrame:
    return records(orjson.loads(raw)["response"]["results"]["records"])


def by_hand(raw: bytes) -> pd.DataFrame:
    """What a data scientist writes without mediaframe."""
    items = json.loads(raw)["response"]["results"]["records"]
    flat = pd.json_normalize(items)
    tech = flat[[*KEY, "technical_informations"]].explode("technical_informations")
    tech = tech.dropna(subset=["technical_informations"]).reset_index(drop=True)
    pairs = pd.json_normalize(tech["technical_informations"].tolist())
    tech = pd.concat([tech[KEY], pairs], axis=1)
    wide = tech.pivot(index=KEY, columns="name", values="value").reset_index()
    return flat.drop(columns="technical_informations").merge(wide, on=KEY, how="left")


MEASURES: dict[str, Callable[[bytes], Any]] = {
    "a": floor,
    "b": mediaframe,
    "b'": decoded,
    "c": by_hand,
}


def timed(
    work: Callable[[bytes], Any], bodies: list[bytes], *, keep_gc: bool
) -> tuple[float, list]:
    """Seconds to run ``work`` on every body (their sum), and the results."""
    gc.collect()
    if not keep_gc:
        gc.disable()
    try:
        results, seconds = [], 0.0
        for body in bodies:
            start = time.perf_counter()
            results.append(work(body))
            seconds += time.perf_counter() - start
    finally:
        gc.enable()
    return seconds, results


def interleaved(
    measures: Mapping[str, Callable[[bytes], Any]],
    bodies: list[bytes],
    repeat: int,
    *,
    keep_gc: bool,
) -> tuple[dict[str, float], dict[str, list]]:
    """Best seconds of each measure over ``repeat`` rounds, the measures interleaved so that a
    change in the machine's load touches them alike; and the results of each but the floor
    ``a`` (the last round's: a round's are let go before the next is timed)."""
    best = dict.fromkeys(measures, float("inf"))
    kept: dict[str, list] = {}
    for _ in range(repeat):
        for name, work in measures.items():
            kept.pop(name, None)
            seconds, results = timed(work, bodies, keep_gc=keep_gc)
            best[name] = min(best[name], seconds)
            if name != "a":
                kept[name] = results
    return best, kept


def measure(bodies: list[bytes], repeat: int, *, keep_gc: bool) -> dict[str, Any]:
    """Best time of each measure over ``repeat`` interleaved rounds, and the frames built."""
    best, kept = interleaved(MEASURES, bodies, repeat, keep_gc=keep_gc)
    ours, reference, hand = (kept[name] for name in ("b", "b'", "c"))
    if len(bodies) == 1:
        ours, reference, hand = ours[0], reference[0], hand[0]
    else:
        ours, reference = concat_records(ours), concat_records(reference)
        hand = pd.concat(hand, ignore_index=True)
    pd.testing.assert_frame_equal(ours, reference, check_exact=True)
    native = sum(read_records(body).native for body in bodies)
    memory = ours.memory_usage(deep=True).sum() / hand.memory_usage(deep=True).sum()
    return {
        **best,
        "b/a": best["b"] / best["a"],
        "c/b": best["c"] / best["b"],
        "memory": memory,
        "native": f"{native}/{len(bodies)}",
        "columns": ours.shape[1],
        "mb": sum(map(len, bodies)) / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="records in one answer")
    parser.add_argument("--pages", type=int, default=50, help="answers of 1,000 records")
    parser.add_argument("--repeat", type=int, default=3, help="rounds, best kept")
    parser.add_argument("--gc", action="store_true", help="keep the garbage collector running")
    parser.add_argument("--flavours", nargs="+", default=list(FLAVOURS), choices=FLAVOURS)
    args = parser.parse_args()

    catalogue = Catalogue(records=max(args.n, args.pages * PAGE), seed=0)
    print(
        f"best of {args.repeat}, garbage collector {'on' if args.gc else 'paused'}; "
        f"targets: (b)/(a) <= {TARGETS['b/a']}, (c)/(b) >= {TARGETS['c/b']}, "
        f"memory (b)/(c) <= {TARGETS['memory']}"
    )
    header = (
        f"{'flavour':9} {'workload':22} {'MB':>7} {'(a) s':>7} {'(b) s':>7} {'(b′) s':>7} "
        f"{'(c) s':>7} {'(b)/(a)':>8} {'(c)/(b)':>8} {'memory':>7} {'native':>8} {'met':>4}"
    )
    print(header)
    print("-" * len(header))
    for flavour in args.flavours:
        for workload, bodies in workloads(catalogue, flavour, args.n, args.pages).items():
            row = measure(bodies, args.repeat, keep_gc=args.gc)
            met = (
                row["b/a"] <= TARGETS["b/a"]
                and row["c/b"] >= TARGETS["c/b"]
                and row["memory"] <= TARGETS["memory"]
                and row["native"].split("/")[0] == row["native"].split("/")[1]
            )
            print(
                f"{flavour:9} {workload:22} {row['mb']:7.1f} {row['a']:7.3f} {row['b']:7.3f} "
                f"{row[REFERENCE]:7.3f} {row['c']:7.3f} {row['b/a']:8.2f} "
                f"{row['c/b']:8.2f} {row['memory']:7.2f} {row['native']:>8} "
                f"{'yes' if met else 'NO':>4}",
                flush=True,
            )
    print("every frame identical to the decoded route's (orjson.loads + records())")


if __name__ == "__main__":
    main()
