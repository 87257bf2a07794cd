"""Measure the candidate readers of a search answer's records, before choosing one.

Usage: ``python bench/readers.py [--n 20000] [--repeat 5]`` (needs ``msgspec`` for its row)

On the emulator's records written as each server generation writes them, best of ``--repeat``
interleaved rounds, each candidate's time against ``orjson.loads`` of the same bytes (the
floor). Only the parse is timed (what each gives is not yet the typed frame):

* ``pyarrow lines``: the records one a line (a rewrite that needs records in a known order and
  compact JSON: the reader before it read every generation), ``unexpected_field_behavior=error``;
* ``pyarrow object``: the array wrapped as one JSON object, any order and layout, unknown
  members inferred (what ``records_json`` does);
* ``duckdb``: DuckDB's ``read_json`` of the array (from a file: it reads no Python buffer);
* ``msgspec``: ``msgspec.json.decode`` into typed ``Struct`` records (still Python objects).
"""

import argparse
import gc
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.json as pj
from flatten import answer_bytes  # bench/ is the script's own folder

from mediaframe.emulator.catalogue import Catalogue
from mediaframe.emulator.flavours import FLAVOURS
from mediaframe.frames import fastjson

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


def candidates(body: bytes, folder: str) -> dict[str, Callable[[], Any]]:
    _, opening, end, layout = fastjson._locate(body)
    array = body[opening:end]
    patterns = fastjson._patterns(layout.colon)
    wrapped = b"".join((fastjson._OPEN, array[1:-1], fastjson._CLOSE)).replace(
        patterns.text_value, patterns.text
    )
    out: dict[str, Callable[[], Any]] = {
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

        path = os.path.join(folder, "records.json")
        with open(path, "wb") as file:
            file.write(array)
        connection = duckdb.connect()
        out["duckdb"] = lambda: connection.execute(
            "SELECT * FROM read_json(?, format='array', maximum_object_size=1000000000)", [path]
        ).to_arrow_table()
    except ImportError:
        pass
    if _RECORDS is not None:
        decoder = _msgspec.json.Decoder(list[_RECORDS])  # type: ignore[valid-type]
        out["msgspec"] = lambda: decoder.decode(array)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    catalogue = Catalogue(records=args.n, seed=0)
    with tempfile.TemporaryDirectory() as folder:
        for flavour in FLAVOURS:
            body = answer_bytes(catalogue, range(args.n), flavour)
            work = candidates(body, folder)
            best = dict.fromkeys(work, float("inf"))
            for _ in range(args.repeat):
                for name, run in work.items():
                    gc.collect()
                    gc.disable()
                    start = time.perf_counter()
                    run()
                    best[name] = min(best[name], time.perf_counter() - start)
                    gc.enable()
            floor = best["orjson (floor)"]
            shown = ", ".join(f"{name} {seconds / floor:.2f}" for name, seconds in best.items())
            print(f"{flavour:9} {len(body) / 1e6:6.1f} MB, orjson {floor:.3f} s; x floor: {shown}")


if __name__ == "__main__":
    main()
