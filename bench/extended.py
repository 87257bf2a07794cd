"""Benchmark: extended search pages (captions, status bits) to the typed records frame.

Usage: ``python bench/extended.py [--n 20000] [--repeat 3]``

Measures in one run, best of ``--repeat``, on the same ``n`` records of the emulator's catalogue:

(a)  floor      ``orjson.loads`` of the extended page
(b)  extended   ``orjson.loads`` + ``frames.records(items, structure)``: what an extended harvest
                does per page (the decoded route), ``caption_*``/``status_*`` columns included
(c)  plain      ``frames.records_json`` of the plain page (the native reader), for comparison

and prints (b)/(a) and (b)/(c). Extended pages are about four times the bytes of plain ones (one
``metadata`` entry per value, with its labels), so (b)/(c) mixes the bigger answer and the
decoded route; the native reader does not read extended answers yet.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import orjson

from mediaframe.emulator import Emulator
from mediaframe.emulator.descriptive import EXTENDED_TYPE
from mediaframe.frames import Structure, records, records_json


def pages(n: int) -> tuple[bytes, bytes, Structure]:
    """The plain and extended v1 search answers holding ``n`` records, and their structure."""
    emu = Emulator(records=n * 2, seed=0, cap=n * 2)
    session = emu.requests_session()
    url = f"{emu.inprocess_url}/api/v1/search/"
    data = {"oauth_token": emu.token, "per_page": str(n)}
    plain = session.post(url, data=data).content
    extended = session.post(url, data=data, headers={"Accept": f"{EXTENDED_TYPE}+json"}).content
    structures = session.get(
        f"{emu.inprocess_url}/api/v1/me/structures/", params={"oauth_token": emu.token}
    ).json()["response"]["meta_fields"]
    fields = {f["name"]: f["type"] for f in structures}
    return plain, extended, Structure(fields, (4, 5, 6, 7))


def best(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        finally:
            gc.enable()
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    plain, extended, structure = pages(args.n)

    def decoded() -> Any:
        items = orjson.loads(extended)["response"]["results"]["records"]
        return records(items, structure)

    frame = decoded()
    rows = len(frame)
    floor = best(lambda: orjson.loads(extended), args.repeat)
    ours = best(decoded, args.repeat)
    native = best(lambda: records_json(plain), args.repeat)
    print(f"{rows:,} records; plain page {len(plain):,} B, extended page {len(extended):,} B")
    print(f"(a) floor    {floor:.3f} s")
    captions = sum(name.startswith("caption_") for name in frame.columns)
    print(f"(b) extended {ours:.3f} s  ({captions} caption columns)")
    print(f"(c) plain    {native:.3f} s  (native reader)")
    print(f"extended/floor = {ours / floor:.2f}")
    print(f"extended/plain = {ours / native:.2f}")


if __name__ == "__main__":
    main()
