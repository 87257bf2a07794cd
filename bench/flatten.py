"""Benchmark: JSON bytes of a search page to the typed records frame, against the floor and by hand.

Usage: ``python bench/flatten.py [--n 200000] [--repeat 3]``

Measures in one run, best of ``--repeat``:

(a)  floor       ``orjson.loads(bytes)``
(b)  mediaframe  ``mediaframe.frames.records_json(bytes)`` → the final typed frame
(b′) reference   ``orjson.loads`` + ``mediaframe.frames.records`` (decoded dicts → the same frame)
(c)  by hand     ``json.loads``, ``pd.json_normalize``, explode ``technical_informations``,
                 pivot it, join it back

and prints the ratios the issue sets as targets: (b)/(a) ≤ 3, (c)/(b) ≥ 5, and the final
frame's memory no larger than (c)'s.

Every measure is timed the same way: a full collection first, then the garbage collector paused
during the run (as ``timeit`` does) and re-enabled after it, so that no measure pays for a
collection of objects another one left behind. ``--gc`` keeps the collector running instead,
for all measures alike, to see what an ordinary session pays.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from typing import Any

import orjson
import pandas as pd

from mediaframe.frames import records, records_json

KEY = ["databox_id", "record_id"]


def catalogue_bytes(n: int) -> bytes:
    """A v1 search response envelope holding ``n`` records of the emulator's catalogue."""
    try:
        from mediaframe.emulator import Catalogue
    except ImportError:  # the package does not re-export it yet
        from mediaframe.emulator.catalogue import Catalogue
    items = Catalogue(records=n, seed=0).record_dicts(range(n))
    envelope = {
        "meta": {"api_version": "2.0.0", "request": "POST /api/v1/search/", "http_code": 200},
        "response": {
            "offset_start": 0,
            "per_page": n,
            "available_results": n,
            "total_results": n,
            "error": "",
            "warning": "",
            "query_time": 0.0123,
            "search_indexes": "db_1",
            "suggestions": [],
            "facets": [],
            "query": "",
            "results": {"records": items, "stories": []},
        },
    }
    return orjson.dumps(envelope)


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


def best_of(
    repeat: int, work: Callable[[bytes], Any], raw: bytes, *, keep_gc: bool
) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        result = None
        gc.collect()
        if not keep_gc:
            gc.disable()
        try:
            start = time.perf_counter()
            result = work(raw)
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="records (default 200000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure, best kept")
    parser.add_argument("--gc", action="store_true", help="keep the garbage collector running")
    args = parser.parse_args()

    raw = catalogue_bytes(args.n)
    print(
        f"N = {args.n:,} records, {len(raw) / 1e6:.1f} MB of JSON, best of {args.repeat}, "
        f"garbage collector {'on' if args.gc else 'paused'}"
    )
    a, _ = best_of(args.repeat, floor, raw, keep_gc=args.gc)
    b, frame = best_of(args.repeat, mediaframe, raw, keep_gc=args.gc)
    b2, reference = best_of(args.repeat, decoded, raw, keep_gc=args.gc)
    c, hand = best_of(args.repeat, by_hand, raw, keep_gc=args.gc)
    pd.testing.assert_frame_equal(frame, reference, check_exact=True)
    ours = frame.memory_usage(deep=True).sum()
    theirs = hand.memory_usage(deep=True).sum()
    print(f"(a)  floor, orjson.loads           {a:8.3f} s")
    print(f"(b)  mediaframe, records_json      {b:8.3f} s   {frame.shape[1]} columns")
    print(f"(b′) orjson.loads + records()      {b2:8.3f} s   (the same frame)")
    print(f"(c)  by hand, json_normalize+pivot {c:8.3f} s   {hand.shape[1]} columns")
    print(f"(b)/(a) = {b / a:5.2f}   target ≤ 3      (b′)/(a) = {b2 / a:5.2f}")
    print(f"(c)/(b) = {c / b:5.2f}   target ≥ 5      (c)/(b′) = {c / b2:5.2f}")
    print(
        f"memory: mediaframe {ours / 1e6:.1f} MB, by hand {theirs / 1e6:.1f} MB, "
        f"ratio {ours / theirs:.2f}   target ≤ 1"
    )


if __name__ == "__main__":
    main()
