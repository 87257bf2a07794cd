"""Benchmark of records with many distinct technical names, through every step of a harvest.

Usage: ``python bench/technical.py [--names 10000] [--records 2] [--repeat 3] [--parts 400]``
       ``python bench/technical.py --names 500 --repeat 1 --parts 40``  (a smoke test)

Each record carries ``--names`` distinct technical names (``tech0``, ``tech1``, …): a third of
them numbers, a third text, a third numbers in one record and text in another. Each step a
harvest takes with such records is timed (best of ``--repeat``), and compared with a baseline
measured in the same run: building a plain DataFrame of the same shape from ready typed arrays,
``pd.DataFrame({name: pd.array(values, dtype)})``, which is what pandas itself needs for that
many columns. Every step must stay a small multiple of it; a step that is quadratic in the
number of names (as the harvest's final sort was: 1,200 names took 23 s, 2,000 took 75 s) is
hundreds of times the baseline at 10,000 names. Each step is also timed at a fifth of the names:
the growth factor says how the cost scales (about 5 when linear, 25 when quadratic).

Steps: ``records(items)`` (the decoded route), ``records_json(body)`` (the fast reader),
``concat_records`` (pages joined), ``in_row_order`` (the harvest's final sort), ``write_frame``
and ``read_frame`` (the parquet cache). The frames from both readers are checked identical.

Then the join of names spread over shards, as a harvest meets them (each camera model's tags in
a few date windows): ``--parts`` frames of 10 records, each record with 2 names of its own (400
parts: 4,000 records, 8,000 names), joined by ``concat_records``, against building the same
records as one frame (``records(items)``) in the same run, and again at a quarter of the parts
(4 x the parts and names: about 4 x the time when linear, 16 x when it costs parts x names).
The joined frame is checked identical to the one frame.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections.abc import Callable
from typing import Any

import orjson
import pandas as pd

from mediaframe import frames
from mediaframe.cache.datasets import read_frame, write_frame
from mediaframe.harvest.assemble import in_row_order

ROW_ORDER = ["databox_id", "collection_id", "record_id"]


def items(names: int, records: int) -> list[dict[str, Any]]:
    """``records`` records, each with ``names`` technical names of every kind of value."""

    def value(name: int, record: int) -> Any:
        kind = name % 3
        if kind == 0 or (kind == 2 and record % 2 == 0):
            return name * 10 + record
        return f"text {name}.{record}"

    return [
        {
            "databox_id": 1,
            "record_id": records - record,  # in reverse, so that the sort moves every row
            "collection_id": 1,
            "technical_informations": [
                {"name": f"tech{name}", "value": value(name, record)} for name in range(names)
            ],
        }
        for record in range(records)
    ]


def baseline(frame: pd.DataFrame) -> Callable[[], Any]:
    """Building a frame of the same columns and dtypes from ready arrays: pandas' own cost."""
    arrays = {name: frame[name].array.copy() for name in frame.columns}
    return lambda: pd.DataFrame(dict(arrays), copy=False)


def best(work: Callable[..., Any], repeat: int, setup: Callable[[], Any] | None = None) -> float:
    """The best time of ``repeat`` runs of ``work(setup())`` (the setup is not timed)."""
    times = []
    for _ in range(repeat):
        given = () if setup is None else (setup(),)
        gc.collect()
        started = time.perf_counter()
        work(*given)
        times.append(time.perf_counter() - started)
    return min(times)


def measure(names: int, count: int, repeat: int) -> dict[str, float]:
    """Seconds of the baseline and of each step, for ``count`` records of ``names`` names."""
    records = items(names, count)
    answer = {"total_results": len(records), "results": {"records": records}}
    body = orjson.dumps({"meta": {}, "response": answer})
    decoded = frames.records(records)
    _, fast = frames.records_json(body)
    assert fast.equals(decoded) and list(fast.dtypes) == list(decoded.dtypes), "readers differ"
    sorted_once = in_row_order([frames.records(records)], ROW_ORDER)
    assert sorted_once["record_id"].is_monotonic_increasing
    half = len(records) // 2
    pages = [frames.records(records[:half]), frames.records(records[half:])]
    seconds = {"baseline (plain DataFrame)": best(baseline(decoded), repeat)}
    with tempfile.TemporaryDirectory() as tmp:
        steps: list[tuple[str, Callable[..., Any], Callable[[], Any] | None]] = [
            ("records(items)", lambda: frames.records(records), None),
            ("records_json(body)", lambda: frames.records_json(body), None),
            ("concat_records(pages)", lambda: frames.concat_records(list(pages)), None),
            (
                "in_row_order(frame)",
                lambda held: in_row_order(held, ROW_ORDER),
                lambda: [decoded.copy()],
            ),
            (
                "write_frame (cache)",
                lambda: write_frame(sorted_once, f"{tmp}/data", provenance={}, sort_by=ROW_ORDER),
                None,
            ),
            ("read_frame (cache)", lambda: read_frame(f"{tmp}/data"), None),
        ]
        for name, work, setup in steps:
            seconds[name] = best(work, repeat, setup)
        back, _ = read_frame(f"{tmp}/data")
        assert back.equals(sorted_once), "the cache changed the frame"
    return seconds


def spread(parts: int) -> list[list[dict[str, Any]]]:
    """``parts`` pages of 10 records, each record with 2 technical names no other holds."""
    return [
        [
            {
                "databox_id": 1,
                "record_id": part * 10 + record,
                "technical_informations": [
                    {"name": f"Tag{name:06d}", "value": name}
                    for name in range(part * 20 + record * 2, part * 20 + record * 2 + 2)
                ],
            }
            for record in range(10)
        ]
        for part in range(parts)
    ]


def measure_join(parts: int, repeat: int) -> dict[str, float]:
    """Seconds of joining ``parts`` frames of names spread over them, and of one frame of all."""
    pages = spread(parts)
    everything = [item for page in pages for item in page]
    built = [frames.records(page) for page in pages]
    joined = frames.concat_records(built)
    assert joined.equals(frames.records(everything)), "the join differs from the one frame"
    return {
        "concat_records(parts)": best(lambda: frames.concat_records(built), repeat),
        "records(all items)": best(lambda: frames.records(everything), repeat),
    }


def print_steps(large: dict[str, float], small: dict[str, float], floor: float) -> None:
    """A row a step: its seconds at the large size, against ``floor``, at the small size, and
    the growth from the one to the other."""
    for name, seconds in large.items():
        growth = seconds / small[name] if small[name] else float("nan")
        print(
            f"{name:<28} {seconds:10.3f} s  {seconds / floor:8.1f}  {small[name]:10.3f} s  "
            f"{growth:5.1f}"
        )


def report_join(parts: int, repeat: int) -> None:
    quarter = max(1, parts // 4)
    large, small = measure_join(parts, repeat), measure_join(quarter, repeat)
    floor = large["records(all items)"]
    print(
        f"\nnames spread over shards: {parts} parts of 10 records, {parts * 20:,} names "
        f"(then {quarter} parts, {quarter * 20:,} names)"
    )
    print(f"{'step':<28} {parts:>6} parts  x one frame  {quarter:>6} parts  growth")
    print_steps(large, small, floor)
    print("growth: time for 4 x the parts and names (linear: about 4; parts x names: about 16)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=10_000, help="technical names a record")
    parser.add_argument("--records", type=int, default=2, help="records, each with every name")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each step; the best")
    parser.add_argument(
        "--parts", type=int, default=400, help="shard frames of names spread, to join (0: none)"
    )
    args = parser.parse_args()
    small = max(1, args.names // 5)
    print(f"{args.records} records, each with {args.names:,} (then {small:,}) technical names")
    large = measure(args.names, args.records, args.repeat)
    fifth = measure(small, args.records, args.repeat)
    floor = large["baseline (plain DataFrame)"]
    print(f"{'step':<28} {args.names:>8,} names  x baseline  {small:>6,} names  growth")
    print_steps(large, fifth, floor)
    print("growth: time for 5 x the names (linear: about 5; quadratic: about 25)")
    if args.parts:
        report_join(args.parts, args.repeat)


if __name__ == "__main__":
    main()
