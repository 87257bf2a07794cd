"""Benchmark: extended search answers (captions, status bits) to the typed records frame.

Usage: ``python bench/extended.py [--n 20000] [--pages 20] [--repeat 3] [--flavours ...]``

For each flavour of the emulator, extended answers as that generation writes them (the vendor
media type ``application/vnd.phraseanet.record-extended+json``), two workloads: ``--n`` records
in one answer, and ``--pages`` answers of 1,000. Measured in one run, best of ``--repeat``, the
measures interleaved:

(a)  floor      ``orjson.loads`` of the extended answer
(b)  mediaframe ``frames.read_records(body, structure)``: the native reader, ``caption_*`` and
                ``status_*`` columns included
(b′) reference  ``orjson.loads`` + ``frames.records(items, structure)`` (the decoded route)

and prints (b)/(a), (b′)/(b), how many answers were read natively, and checks that (b) and (b′)
give the identical frame. Extended answers are about four times the bytes of plain ones (one
``metadata`` entry per value, with its labels), all of which the reader parses.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pandas as pd

from mediaframe.emulator import Emulator
from mediaframe.emulator.descriptive import EXTENDED_TYPE
from mediaframe.emulator.flavours import FLAVOURS
from mediaframe.emulator.structures import STRUCTURES
from mediaframe.frames import Structure, concat_records, read_records, records

sys.path.insert(0, str(Path(__file__).parent))
from flatten import interleaved  # the timing loop of bench/flatten.py, shared

PAGE = 1000


def answers(flavour: str, n: int, pages: int) -> tuple[list[bytes], list[bytes], Structure]:
    """One extended answer of ``n`` records, ``pages`` of 1,000, and the structure."""
    size = max(n, pages * PAGE)
    emu = Emulator(records=size * 2, seed=0, cap=size * 2, flavour=flavour)
    session = emu.requests_session()
    url = f"{emu.inprocess_url}/api/v1/search/"
    headers = {"Accept": f"{EXTENDED_TYPE}+json"}

    def answer(offset: int, count: int) -> bytes:
        data = {"oauth_token": emu.token, "per_page": str(count), "offset_start": str(offset)}
        return session.post(url, data=data, headers=headers).content

    # every field a databox of the emulator declares, with its type (auditors' view)
    fields = {f.name: f.type for d in sorted(STRUCTURES) for f in STRUCTURES[d]}
    structure = Structure(dict(sorted(fields.items())), (4, 5, 6, 7))
    one = [answer(0, n)]
    paged = [answer(p * PAGE, PAGE) for p in range(pages)]
    return one, paged, structure


def measure(bodies: list[bytes], structure: Structure, repeat: int) -> dict[str, Any]:
    measures: dict[str, Callable[[bytes], Any]] = {
        "a": orjson.loads,
        "b": lambda body: read_records(body, structure).frame,
        "b'": lambda body: records(orjson.loads(body)["response"]["results"]["records"], structure),
    }
    best, kept = interleaved(measures, bodies, repeat, keep_gc=False)
    ours = concat_records(kept["b"], structure=structure)
    reference = concat_records(kept["b'"], structure=structure)
    pd.testing.assert_frame_equal(ours, reference, check_exact=True)
    native = sum(read_records(body, structure).native for body in bodies)
    captions = sum(name.startswith("caption_") for name in ours.columns)
    return {
        **best,
        "native": f"{native}/{len(bodies)}",
        "mb": sum(map(len, bodies)) / 1e6,
        "captions": captions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="records in one answer")
    parser.add_argument("--pages", type=int, default=20, help="answers of 1,000 records")
    parser.add_argument("--repeat", type=int, default=3, help="rounds, best kept")
    parser.add_argument("--flavours", nargs="+", default=list(FLAVOURS), choices=FLAVOURS)
    args = parser.parse_args()
    print(f"extended answers, best of {args.repeat}, garbage collector paused")
    header = (
        f"{'flavour':9} {'workload':22} {'MB':>7} {'(a) s':>7} {'(b) s':>7} {'(b′) s':>7} "
        f"{'(b)/(a)':>8} {'(b′)/(b)':>9} {'native':>8}"
    )
    print(header)
    print("-" * len(header))
    for flavour in args.flavours:
        one, paged, structure = answers(flavour, args.n, args.pages)
        workloads = {f"one answer of {args.n:,}": one, f"{args.pages} pages of {PAGE:,}": paged}
        for workload, bodies in workloads.items():
            row = measure(bodies, structure, args.repeat)
            reference = row["b'"]
            print(
                f"{flavour:9} {workload:22} {row['mb']:7.1f} {row['a']:7.3f} {row['b']:7.3f} "
                f"{reference:7.3f} {row['b'] / row['a']:8.2f} {reference / row['b']:9.2f} "
                f"{row['native']:>8}",
                flush=True,
            )
    print("every frame identical to the decoded route's (orjson.loads + records(items, structure))")


if __name__ == "__main__":
    main()
