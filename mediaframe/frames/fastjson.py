"""The raw bytes of a v1 search answer to the records frame, parsed natively by pyarrow.

:func:`records_json` gives exactly ``records(orjson.loads(body)["response"]["results"]["records"])``
without building a Python object per value. pyarrow reads the records array in C++ against the
declared schema; the one thing it cannot read, ``technical_informations`` values that are numbers
in one entry and text in another, is first rewritten byte-wise so that each technical name becomes
a key of its own (``{"name":"ISO","value":200}`` → ``{"ISO":200}``, text values under
``"<name>\\u0000"``). Any answer outside the shape this path proves it understands (unknown
members, older spellings, placeholder dates, other member orders, pretty-printed JSON) falls back
to :func:`~mediaframe.frames.records` on the decoded answer, so the result never differs.

Why the byte rewrites are safe: inside a JSON string every ``"`` is escaped as ``\\"``, so a
pattern holding an unescaped ``"`` next to ``{``, ``,`` or ``:`` only ever matches structure, never
text. Each rewrite changes the length by a fixed amount per match, which counts the matches for
free; the counts are then checked against what pyarrow parsed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from mediaframe.exceptions import InvalidParameterError, ResponseFormatError
from mediaframe.frames.arrays import TIMESTAMP, infer_array
from mediaframe.frames.flatten import assemble
from mediaframe.frames.records import records
from mediaframe.frames.schema import RECORDS
from mediaframe.frames.technical import column_name

__all__ = ["records_json"]

_RECORDS_KEY = b'"records":['
#: Where one record ends and the next begins, when records start with ``databox_id`` as the
#: contract lists their members (only used to find the last record, hence the array's end).
_NEXT_RECORD = b'},{"databox_id":'
#: Stands in for the records array when the rest of the answer is decoded by orjson; no answer
#: holds it there, so finding it proves the array cut out was ``response.results.records``.
_PLACEHOLDER = "\x00mediaframe-records"

_TECHNICAL = "technical_informations"
#: Marks a technical name whose value was a string (``\u0000`` cannot end a name mediaframe
#: accepts on this path: names holding it fall back).
_TEXT_MARK = "\x00"

# (pattern, replacement): string values first, so that the number rewrite sees only non-strings.
_STRING_VALUE = (b'","value":"', b'\\u0000":"')
_OTHER_VALUE = (b'","value":', b'":')
_FIRST_NAME = (b'[{"name":"', b'[{"')
_NEXT_NAME = (b'},{"name":"', b'},{"')

_ARROW_TYPES = {
    "Int64": pa.int64(),
    "Float64": pa.float64(),
    "string": pa.string(),
    "category": pa.string(),
    "boolean": pa.bool_(),
    TIMESTAMP: pa.timestamp("us", "UTC"),
}
_PANDAS_TYPES = {
    pa.int64(): pd.Int64Dtype(),
    pa.float64(): pd.Float64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
}


def records_json(body: bytes) -> tuple[dict[str, Any], pd.DataFrame]:
    """Read a v1 search answer from its raw JSON bytes into the records frame.

    The frame is identical, dtypes included, to :func:`~mediaframe.frames.records` of the
    decoded ``response.results.records``, at a fraction of the time and memory: the common
    answer is parsed natively, anything unusual takes the decoded route.

    Parameters
    ----------
    body : the HTTP body of ``/api/v1/search/`` (the whole JSON envelope), as bytes.

    Returns
    -------
    tuple
        The members of ``response`` other than ``results`` (``offset_start``, ``per_page``,
        ``available_results``, ``total_results``, ``query_time``, …) as plain Python values, and
        the records frame.

    Raises
    ------
    ResponseFormatError
        The body is not JSON, or not a search envelope with a ``response.results.records``
        list; ``snippet`` shows how it begins.
    MalformedItemError
        A record does not follow the contract (as :func:`~mediaframe.frames.records` says).

    Examples
    --------
    >>> body = (b'{"meta": {}, "response": {"total_results": 1, "results": {"records": '
    ...         b'[{"databox_id": 1, "record_id": 7}], "stories": []}}}')
    >>> info, frame = records_json(body)
    >>> info["total_results"], frame[["databox_id", "record_id"]].to_numpy().tolist()
    (1, [[1, 7]])
    """
    if isinstance(body, bytearray | memoryview):
        body = bytes(body)
    if not isinstance(body, bytes):
        raise InvalidParameterError(
            f"records_json() takes the answer's raw bytes, got {type(body).__name__}; pass "
            "response.content"
        )
    located = _locate(body)
    if located is not None:
        info, array = located
        frame = _native(array)
        if frame is not None:
            return info, frame
    return _decoded(body)


def _decoded(body: bytes) -> tuple[dict[str, Any], pd.DataFrame]:
    """The reference route: decode everything with orjson, flatten with :func:`records`."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise _not_an_answer(body, f"is not JSON ({error})") from error
    parts = _search_parts(document)
    if parts is None or not isinstance(parts[1], list):
        raise _not_an_answer(body, "is not a search envelope with a response.results.records list")
    return parts[0], records(parts[1])


def _not_an_answer(body: bytes, problem: str) -> ResponseFormatError:
    snippet = body[:120].decode("utf-8", errors="replace")
    return ResponseFormatError(
        f"the search answer {problem}; it begins {snippet!r}. Pass the body of a "
        "/api/v1/search/ answer (a proxy page or a truncated download cannot be read)",
        snippet=snippet,
    )


def _search_parts(document: Any) -> tuple[dict[str, Any], Any] | None:
    """``response`` without ``results``, and ``results.records``; ``None`` without them."""
    response = document.get("response") if isinstance(document, dict) else None
    if not isinstance(response, dict) or not isinstance(response.get("results"), dict):
        return None
    info = {name: value for name, value in response.items() if name != "results"}
    return info, response["results"].get("records")


def _locate(body: bytes) -> tuple[dict[str, Any], bytes] | None:
    """Cut the records array out of the answer, decoding the rest; ``None`` if unsure where."""
    start = body.find(_RECORDS_KEY)
    if start < 0:
        return None
    opening = start + len(_RECORDS_KEY) - 1
    end = _array_end(body, opening)
    if end is None:
        return None
    rest = b"".join((body[:opening], orjson.dumps(_PLACEHOLDER), body[end:]))
    try:
        skeleton = orjson.loads(rest)
    except orjson.JSONDecodeError:
        return None
    parts = _search_parts(skeleton)
    if parts is None or parts[1] != _PLACEHOLDER:
        return None
    return parts[0], body[opening:end]


def _array_end(body: bytes, opening: int) -> int | None:
    """Where the array opened at ``opening`` ends (past its ``]``), read from its last record.

    Only the last record is decoded: it starts after the last record separator (or right
    after ``[``). If a guess is wrong, the skeleton left around the cut is not valid JSON, which
    :func:`_locate` checks.
    """
    if body[opening + 1 : opening + 2] == b"]":
        return opening + 2
    separator = body.rfind(_NEXT_RECORD, opening)
    first = opening + 1 if separator < 0 else separator + 2
    try:
        tail = body[first:].decode("utf-8")
        _, length = json.JSONDecoder().raw_decode(tail)
    except ValueError:  # UnicodeDecodeError and JSONDecodeError alike
        return None
    end = first + len(tail[:length].encode("utf-8"))
    return end + 1 if body[end : end + 1] == b"]" else None


def _native(array: bytes) -> pd.DataFrame | None:
    """The records frame from the records array's bytes, or ``None`` where pyarrow cannot say."""
    if array == b"[]":
        return records([])
    data, rewrites = _rewrite(b'{"records":' + array + b"}")
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(block_size=len(data) + 1),
            parse_options=pj.ParseOptions(
                explicit_schema=_SCHEMA, unexpected_field_behavior="infer"
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    items = table.column("records").combine_chunks()
    if table.num_rows != 1 or not _as_declared(items.type.value_type):
        return None
    items = pc.list_flatten(items)
    if items.null_count:
        return None
    members = _members(items, "")
    columns = {}
    for column in RECORDS.columns:
        converted = _convert(members[column.path], column.dtype, required=column.required)
        if converted is None:
            return None
        columns[column.name] = converted
    technical = _technical(members[_TECHNICAL], len(items), rewrites)
    if technical is None:
        return None
    return assemble(RECORDS, columns, {column_name(name): values for name, values in technical})


def _rewrite(data: bytes) -> tuple[bytes, dict[bytes, int]]:
    """Apply the technical rewrites in order; count each one's matches from the length change."""
    counts = {}
    for pattern, replacement in (_STRING_VALUE, _OTHER_VALUE, _FIRST_NAME, _NEXT_NAME):
        rewritten = data.replace(pattern, replacement)
        counts[pattern] = (len(data) - len(rewritten)) // (len(pattern) - len(replacement))
        data = rewritten
    return data, counts


def _declared_schema() -> pa.Schema:
    """The records array as pyarrow should find it: every declared member with its type."""
    tree: dict[str, Any] = {}
    for column in RECORDS.columns:
        *parents, member = column.path.split(".")
        node = tree
        for parent in parents:
            node = node.setdefault(parent, {})
        node[member] = pa.list_(pa.string()) if column.joined else _ARROW_TYPES[column.dtype]
    tree[_TECHNICAL] = pa.list_(pa.struct([]))

    def struct(node: dict[str, Any]) -> pa.StructType:
        return pa.struct(
            [
                (name, struct(value) if isinstance(value, dict) else value)
                for name, value in node.items()
            ]
        )

    return pa.schema([("records", pa.list_(struct(tree)))])


_SCHEMA = _declared_schema()
_RECORD = _SCHEMA.field("records").type.value_type


def _as_declared(parsed: pa.DataType) -> bool:
    """Whether pyarrow found only declared members (it adds the unknown ones it meets)."""
    if not pa.types.is_struct(parsed):
        return False
    names = [field.name for field in parsed]
    if names != [field.name for field in _RECORD]:
        return False
    technical = parsed.field(_TECHNICAL).type
    return (
        all(parsed.field(f.name) == f for f in _RECORD if f.name != _TECHNICAL)
        and pa.types.is_list(technical)
        and pa.types.is_struct(technical.value_type)
    )


def _members(struct: pa.StructArray, prefix: str) -> dict[str, pa.Array]:
    """Every leaf of a struct array by dotted path; a null parent makes its children null."""
    found = {}
    for field, child in zip(struct.type, struct.flatten(), strict=True):
        path = prefix + field.name
        if pa.types.is_struct(field.type) and path != _TECHNICAL:
            found.update(_members(child, path + "."))
        else:
            found[path] = child
    return found


def _convert(values: pa.Array, dtype: str, *, required: bool) -> Any:
    """A declared column from its pyarrow array, or ``None`` where :func:`records` may differ."""
    if required and values.null_count:
        return None  # records() names the item lacking it
    if pa.types.is_list(values.type):  # an array of strings joined with ","
        if pc.list_flatten(values).null_count:
            return None
        values = pc.binary_join(values, ",")
    if dtype == "string":
        return pd.arrays.ArrowStringArray(values.cast(pa.large_string()))
    if dtype == "category":
        return _categorical(values)
    if dtype == TIMESTAMP:
        return pd.DatetimeIndex(values.to_pandas())
    return values.to_pandas(types_mapper=_PANDAS_TYPES.get).array


def _categorical(values: pa.Array) -> pd.Categorical:
    """Sorted categories, as :func:`arrays.categorical` gives (``""`` alone when empty)."""
    encoded = values.dictionary_encode()
    order = pc.array_sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64)
    codes = np.where(codes < 0, -1, rank[np.maximum(codes, 0)] if len(rank) else -1)
    categories = encoded.dictionary.take(pa.array(order)).to_pylist() or [""]
    return pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype="str"))


def _technical(
    lists: pa.Array, n: int, rewrites: Mapping[bytes, int]
) -> list[tuple[str, Any]] | None:
    """Pivot the rewritten entries (one key each, the technical name) into typed columns.

    Every entry must be exactly ``{"name": <string>, "value": <scalar>}``: as many entries as
    name rewrites and as value rewrites, each holding one non-null key.
    """
    entries = pc.list_flatten(lists)
    names = rewrites[_FIRST_NAME[0]] + rewrites[_NEXT_NAME[0]]
    values = rewrites[_STRING_VALUE[0]] + rewrites[_OTHER_VALUE[0]]
    if entries.null_count or not len(entries) == names == values:
        return None
    parents = pc.list_parent_indices(lists).to_numpy()
    parts: dict[str, list[tuple[np.ndarray, pa.Array]]] = {}
    present = 0
    for field, child in zip(entries.type, entries.flatten(), strict=True):
        is_text = field.name.endswith(_TEXT_MARK)
        name = field.name[:-1] if is_text else field.name
        kind_ok = pa.types.is_string(field.type) if is_text else field.type in _PANDAS_TYPES
        if _TEXT_MARK in name or not kind_ok:
            return None
        valid = child.is_valid()
        positions = np.flatnonzero(valid.to_numpy(zero_copy_only=False))
        present += len(positions)
        parts.setdefault(name, []).append((positions, child.filter(valid)))
    if present != len(entries):
        return None
    columns = []
    for name, found in parts.items():
        column = _technical_column(found, parents, n)
        if column is None:
            return None
        columns.append((name, column))
    return columns


def _technical_column(parts: list[tuple[np.ndarray, pa.Array]], parents: np.ndarray, n: int) -> Any:
    """One technical name's column; the last value wins where a record repeats the name."""
    if len(parts) == 1:
        positions, values = parts[0]
        if pa.types.is_floating(values.type) and _ambiguous(values, limit=2**63):
            return None  # integers beyond int64 read as floats: records() keeps their digits
        rows, last = _last_per_row(parents[positions])
        index = np.full(n, -1, dtype=np.int64)
        index[rows] = last
        placed = values.take(pa.array(index, mask=index < 0))
        if pa.types.is_string(placed.type):
            return pd.arrays.ArrowStringArray(placed.cast(pa.large_string()))
        return placed.to_pandas(types_mapper=_PANDAS_TYPES.get).array
    # Text and other values under one name: typed by the values that survive, as records() does.
    if any(pa.types.is_floating(v.type) and _ambiguous(v, limit=2**53) for _, v in parts):
        return None  # an integer's digits were rounded away by the float
    positions = np.concatenate([p for p, _ in parts])
    raw = np.concatenate([np.array(v.to_pylist(), dtype=object) for _, v in parts])
    order = np.argsort(positions, kind="stable")
    rows, last = _last_per_row(parents[positions[order]])
    column = np.full(n, None, dtype=object)
    column[rows] = raw[order][last]
    return infer_array(list(column))


def _last_per_row(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows (ascending, maybe repeated) and, for each distinct row, the position of its last."""
    last = np.flatnonzero(np.append(rows[1:] != rows[:-1], True)) if len(rows) else rows
    return rows[last], last


def _ambiguous(values: pa.Array, *, limit: float) -> bool:
    """Whether some float is integral and at least ``limit``: it may have been an integer."""
    numbers = values.to_numpy()
    return bool(np.any((np.abs(numbers) >= limit) & (numbers == np.floor(numbers))))
