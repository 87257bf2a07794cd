"""Measure the candidate readers of a search answer's records, before choosing one.

Usage: ``python bench/readers.py [--n 20000] [--pages 20] [--repeat 5]``
(``msgspec`` and ``polars`` rows are shown where those are installed; neither is a dependency)

On the emulator's records written as each server generation writes them, best of ``--repeat``
interleaved rounds, each candidate's time against ``orjson.loads`` of the same bytes (the
floor), on two workloads: one answer of ``--n`` records, and ``--pages`` answers of 1,000
records (each page read alone; the times are summed). Every parser below stops at the parse:
what it gives is not yet the typed frame. The last rows are mediaframe's whole reader.

* ``pyarrow lines``: the records one a line (a rewrite that needs records in a known order and
  compact JSON: the reader before it read every generation), ``unexpected_field_behavior=error``;
* ``pyarrow object``: the array wrapped as one JSON object, any order and layout, unknown
  members inferred (the parse ``records_json`` does);
* ``duckdb``: DuckDB's ``read_json`` of the array (from a file: it reads no Python buffer);
* ``msgspec``: ``msgspec.json.decode`` into typed ``Struct`` records holding five of the
  record's members (still Python objects, to be gathered into columns);
* ``polars``: ``polars.read_json`` of the array, with the schema of the first answer;
* ``records_json``: mediaframe's reader, bytes to the final typed frame;
* ``pages joined``: (pages only) the pages' records joined into one answer read by
  ``records_json``, parsed in pieces on both cores — what reading a harvest's pages in batches
  would at best cost.
"""

import argparse
import gc
import io
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.json as pj
from flatten import PAGE, workloads  # bench/ is the script's own folder

from mediaframe.emulator.catalogue import Catalogue
from mediaframe.emulator.flavours import FLAVOURS
from mediaframe.frames import fastjson, records_json

try:
    import msgspec as _msgspec

    class _Technical(_msgspec.Struct):
        name: str
        value: int | float | str | None = None

    class _Record(_msgspec.Struct, rename={"updated": "updated_on"}):
        databox_id: int
        record_id: int
        title: str | None = None
        updated: str | None = None
        created_on: str | None = None
        technical_informations: list[_Technical] = []

    _RECORDS: type | None = _Record
except ImportError:  # msgspec is not a dependency: its row is shown where it is installed
    _RECORDS = None

Work = Callable[[], Any]


def parsers(body: bytes, path: str) -> dict[str, Work]:
    """Each candidate's parse of ``body``'s records (``path``: a file the array is written to)."""
    _, opening, end, layout = fastjson._locate(body)
    array = body[opening:end]
    patterns = fastjson._patterns(layout.colon)
    wrapped = patterns.text_value.sub(
        patterns.text, b"".join((fastjson._OPEN, array[1:-1], fastjson._CLOSE))
    )
    out: dict[str, Work] = {
        "orjson (floor)": lambda: orjson.loads(body),
        "pyarrow object": lambda: fastjson._parse(wrapped, fastjson._SCHEMA),
    }
    if b"\n" not in array and b'"databox_id":' in array[:40]:
        lines = array[1:-1].replace(b'},{"databox_id":', b'}\n{"databox_id":')
        lines = lines.replace(b'","value":"', b'","text":"')
        schema = pa.schema(list(fastjson._SCHEMA.field("records").type.value_type))

        def by_lines() -> Any:
            return pj.read_json(
                pa.BufferReader(lines),
                read_options=pj.ReadOptions(block_size=1 << 22),
                parse_options=pj.ParseOptions(explicit_schema=schema),
            )

        out["pyarrow lines"] = by_lines
    try:
        import duckdb

        with open(path, "wb") as file:
            file.write(array)
        connection = duckdb.connect()
        query = f"SELECT * FROM read_json({path!r}, format='array', maximum_object_size=1e9)"
        out["duckdb"] = lambda: connection.sql(query).to_arrow_table()
    except ImportError:
        pass
    if _RECORDS is not None:
        decoder = _msgspec.json.Decoder(list[_RECORDS])  # type: ignore[valid-type]
        out["msgspec"] = lambda: decoder.decode(array)
    try:
        import polars

        # text values renamed as the reader does: polars reads a value that is a number in one
        # entry and text in another as text, numbers included
        renamed = patterns.text_value.sub(patterns.text, array)
        schema = polars.read_json(io.BytesIO(renamed)).schema
        out["polars"] = lambda: polars.read_json(io.BytesIO(renamed), schema=schema)
    except ImportError:
        pass
    out["records_json"] = lambda: records_json(body)
    return out


def joined(bodies: list[bytes]) -> bytes:
    """One answer holding the records of every page."""
    arrays = []
    for body in bodies:
        _, opening, end, _ = fastjson._locate(body)
        arrays.append(body[opening + 1 : end - 1])
    return b'{"response":{"results":{"records":[' + b",".join(arrays) + b"]}}}"


def workload(bodies: list[bytes], folder: str) -> dict[str, list[Work]]:
    """Each candidate's work on every body; for several pages, the pages joined as well."""
    each = [parsers(body, os.path.join(folder, f"{i}.json")) for i, body in enumerate(bodies)]
    work = {name: [candidate[name] for candidate in each] for name in each[0]}
    if len(bodies) > 1:
        together = joined(bodies)
        work["pages joined"] = [lambda: records_json(together)]
    return work


def best_times(work: dict[str, list[Work]], repeat: int) -> dict[str, float]:
    """Best seconds of each candidate (its calls summed), candidates interleaved per round."""
    best = dict.fromkeys(work, float("inf"))
    for _ in range(repeat):
        for name, calls in work.items():
            gc.collect()
            gc.disable()
            seconds = 0.0
            for call in calls:
                start = time.perf_counter()
                call()
                seconds += time.perf_counter() - start
            best[name] = min(best[name], seconds)
            gc.enable()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="records in one answer")
    parser.add_argument("--pages", type=int, default=20, help="answers of 1,000 records")
    parser.add_argument("--repeat", type=int, default=5, help="rounds, best kept")
    args = parser.parse_args()
    catalogue = Catalogue(records=max(args.n, args.pages * PAGE), seed=0)
    with tempfile.TemporaryDirectory() as folder:
        for flavour in FLAVOURS:
            for name, bodies in workloads(catalogue, flavour, args.n, args.pages).items():
                best = best_times(workload(bodies, folder), args.repeat)
                floor = best["orjson (floor)"]
                shown = ", ".join(f"{n} {seconds / floor:.2f}" for n, seconds in best.items())
                size = sum(map(len, bodies)) / 1e6
                print(f"{flavour:9} {name}: {size:.1f} MB, orjson {floor:.3f} s; x floor: {shown}")


if __name__ == "__main__":
    main()
