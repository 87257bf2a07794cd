"""The raw bytes of a v1 search answer to the records frame, parsed natively by pyarrow."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from mediaframe.exceptions import InvalidParameterError, ResponseFormatError
from mediaframe.frames.arrays import TIMESTAMP
from mediaframe.frames.flatten import assemble
from mediaframe.frames.records import records
from mediaframe.frames.schema import RECORDS
from mediaframe.frames.technical import column_name
from mediaframe.futures import run_on

__all__ = ["records_json"]

_RECORDS_KEY = b'"records":['
#: Where one record ends and the next begins, when records start with ``databox_id`` as the
#: contract lists their members (only used to find the last record, hence the array's end).
_NEXT_RECORD = b'},{"databox_id":'
#: Stands in for the records array when the rest of the answer is decoded by orjson; no answer
#: holds it there, so finding it proves the array cut out was ``response.results.records``.
_PLACEHOLDER = "\x00mediaframe-records"

_TECHNICAL = "technical_informations"
#: Records go one a line: pyarrow reads lines in blocks faster than one line holding the array.
_NEXT_LINE = b'}\n{"databox_id":'
_BLOCK = 1 << 22
#: Records are rewritten and parsed in pieces of about this many bytes (see _read_pieces).
_PIECE = 1 << 24
#: Text values are renamed ``text``, so that ``value`` holds only numbers; once renamed, every
#: ``value`` right after a string is a number after its name, and those are counted.
_TEXT_VALUE = b'","value":"'
_TEXT = b'","text":"'
_NUMBER = b'","value":'
#: A number written as a float (a point or an exponent) whose value may be whole: zeros after
#: the point, an exponent, or 16 digits and more around a point (beyond a double's precision,
#: so a fraction may round away). Integers never match. Only such
#: a number can make a name whose values pyarrow read all whole ``Float64`` rather than
#: ``Int64`` in records(); a fraction that is not whole shows in the value itself.
_WHOLE_FLOAT = re.compile(
    rb'","value":-?(?:[0-9]+(?:\.[0-9]*)?[eE]|[0-9]+\.0+[,}]|(?=[0-9]*\.)[0-9.]{17})'
)
_NAME_KEY = b'"name":"'
_TECHNICAL_ENTRY = pa.struct(
    [("name", pa.string()), ("value", pa.float64()), ("text", pa.string())]
)

_ARROW_TYPES = {
    "Int64": pa.int64(),
    "Float64": pa.float64(),
    "string": pa.string(),
    "category": pa.string(),
    "boolean": pa.bool_(),
    TIMESTAMP: pa.string(),  # parsed after reading: pyarrow's reader takes 1.5x longer with them
}
_UTC_MICROSECONDS = pa.timestamp("us", "UTC")
_UTC_DTYPE = pd.DatetimeTZDtype("us", "UTC")
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

    Notes
    -----
    The frame is exactly ``records()`` of the decoded records, without building a Python object
    per value. pyarrow reads the records array in C++ against the declared schema, one record a
    line. The one thing it cannot read, a ``technical_informations`` ``value`` that is a number
    in one entry and text in another, is renamed byte-wise first: text values become ``text``,
    numbers keep ``value``. pyarrow reads every number as a float; a name whose numbers are all
    whole is ``Int64`` in records() unless one was written as a float (``5.0``, ``1e3``), which
    a regular-expression scan finds while pyarrow parses. Any answer outside the shape this path
    proves it understands (unknown members, older spellings, placeholder dates, another member
    order, pretty-printed JSON, a name repeated in a record, integers beyond 2**53, invalid
    UTF-8) falls back to :func:`~mediaframe.frames.records` on the decoded answer, so the frame
    never differs.

    Why the byte rewrites are safe: inside a JSON string every ``"`` is escaped as ``\\"``, so a
    pattern holding an unescaped ``"`` next to ``{``, ``,`` or ``:`` only ever matches
    structure, never text. The renamed text values are counted from the length change, the
    numbers by a count; both are checked against what pyarrow parsed.

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
        info, opening, end = located
        frame = _native(body, opening, end)
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


def _locate(body: bytes) -> tuple[dict[str, Any], int, int] | None:
    """Find the records array (from ``[`` to past ``]``), decoding the rest; ``None`` if unsure."""
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
    return parts[0], opening, end


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


def _native(body: bytes, opening: int, end: int) -> pd.DataFrame | None:
    """The records frame from the array at ``body[opening:end]``, or ``None`` if unsure."""
    if end - opening == 2:  # "[]"
        return records([])
    read = _read_pieces(body, opening, end)
    if read is None:
        return None
    tables, names, counts = read
    table = pa.concat_tables(tables)
    # Columns stay in pyarrow's blocks (chunks): pandas keeps chunked strings as they are, and
    # combining every column first would copy the whole table once more.
    members = _members(zip(table.schema, table.columns, strict=True), "")
    columns = {}
    for column in RECORDS.columns:
        converted = _convert(members[column.path], column.dtype, required=column.required)
        if converted is None:
            return None
        columns[column.name] = converted
    lists = members[_TECHNICAL].combine_chunks()
    technical = _technical(lists, table.num_rows, counts, names)
    if technical is None:
        return None
    return assemble(RECORDS, columns, technical)


def _read_pieces(
    body: bytes, opening: int, end: int
) -> tuple[list[pa.Table], set[str], dict[bytes, int]] | None:
    """Rewrite, parse and scan the records; ``None`` for anything but the declared shape.

    Returns pyarrow's tables, the technical names holding a float written whole, and the counts
    of numbers and texts. A big answer is cut at record boundaries into pieces of about
    ``_PIECE`` bytes: pyarrow parses one piece (without the GIL, on the other core) while the
    next is rewritten and scanned, rather than every parse waiting for the whole rewrite.
    """
    names: set[str | None] = set()
    counts = {_NUMBER: 0, _TEXT: 0}
    parsing: list[Future] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        for first, last in _pieces(body, opening, end):
            data, texts = _rewrite(body[first:last])
            lines = pa.py_buffer(data)
            # a page is parsed inline: a thread would cost more than it saves
            parsing.append(run_on(pool if end - opening >= _PIECE else None, _parse, lines))
            whole = [match.start() for match in _WHOLE_FLOAT.finditer(data)]
            names.update(_name_before(data, at) for at in whole)
            counts[_NUMBER] += data.count(_NUMBER)
            counts[_TEXT] += texts
        tables = [future.result() for future in parsing]
    if None in names:
        return None  # a name key spelled with escapes: the scan cannot name the entry
    if any(table is None for table in tables):
        return None
    return tables, {str(name) for name in names}, counts


def _pieces(body: bytes, opening: int, end: int) -> Iterator[tuple[int, int]]:
    """``(first, last)`` spans of whole records between ``[`` and ``]``, about ``_PIECE`` long.

    A piece ends after a record's ``}`` and the next begins at its ``{"databox_id":``; a record
    that starts otherwise stays inside its piece, where pyarrow then refuses it.
    """
    first, stop = opening + 1, end - 1
    while True:
        cut = body.find(_NEXT_RECORD, first + _PIECE, stop)
        if cut < 0:
            yield first, stop
            return
        yield first, cut + 1
        first = cut + 2


def _parse(data: pa.Buffer) -> pa.Table | None:
    """pyarrow's reading of the records, one a line; ``None`` for anything but the declared shape.

    pyarrow's own threads parse blocks of lines while the main thread scans the same bytes.
    The parse allocates from the C library's allocator rather than pyarrow's default
    (mimalloc), which hands freed pages back to the system within milliseconds: every parse
    then faulted its pages in afresh, 0.2-0.4 s of CPU for 200,000 records.
    """
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(block_size=_BLOCK),
            parse_options=pj.ParseOptions(
                explicit_schema=_SCHEMA, unexpected_field_behavior="error"
            ),
            memory_pool=pa.system_memory_pool(),
        )
        table.validate(full=True)  # the parser lets invalid UTF-8 through; orjson refuses it
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return table


def _name_before(data: bytes, at: int) -> str | None:
    """The technical name written right before the ``","value":`` at ``at``, if it reads so.

    Every counted number follows its name's string, and a string cannot hold ``"name":"``
    unescaped, so the last one before ``at`` opens it, unless the key was spelled with escapes:
    then the bytes between hold an unescaped ``"`` and do not decode as one string (``None``).
    """
    raw = data[data.rfind(_NAME_KEY, 0, at) + len(_NAME_KEY) : at]
    try:
        return json.loads(b'"' + raw + b'"')
    except ValueError:
        return None


def _rewrite(records: bytes) -> tuple[bytes, int]:
    """Records one a line, text values renamed ``text``; and how many texts were renamed."""
    renamed = records.replace(_NEXT_RECORD, _NEXT_LINE).replace(_TEXT_VALUE, _TEXT)
    return renamed, (len(records) - len(renamed)) // (len(_TEXT_VALUE) - len(_TEXT))


def _declared_schema() -> pa.Schema:
    """The records array as pyarrow must find it: every declared member with its type."""
    tree: dict[str, Any] = {}
    for column in RECORDS.columns:
        *parents, member = column.path.split(".")
        node = tree
        for parent in parents:
            node = node.setdefault(parent, {})
        node[member] = pa.list_(pa.string()) if column.joined else _ARROW_TYPES[column.dtype]
    tree[_TECHNICAL] = pa.list_(_TECHNICAL_ENTRY)

    def struct(node: dict[str, Any]) -> pa.StructType:
        return pa.struct(
            [
                (name, struct(value) if isinstance(value, dict) else value)
                for name, value in node.items()
            ]
        )

    return pa.schema(list(struct(tree)))


_SCHEMA = _declared_schema()


def _members(
    columns: Iterable[tuple[pa.Field, pa.ChunkedArray]], prefix: str
) -> dict[str, pa.ChunkedArray]:
    """Every leaf column by dotted path; a null parent makes its children null."""
    found = {}
    for field, child in columns:
        path = prefix + field.name
        if pa.types.is_struct(field.type):
            found.update(_members(zip(field.type, child.flatten(), strict=True), path + "."))
        else:
            found[path] = child
    return found


def _convert(values: pa.ChunkedArray, dtype: str, *, required: bool) -> Any:
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
        return _timestamps(values)
    return _PANDAS_TYPES[values.type].__from_arrow__(values)  # no Series on the way


def _timestamps(values: pa.ChunkedArray) -> Any:
    """ISO 8601 text to UTC timestamps; ``None`` for what pyarrow and records() may read apart.

    pyarrow refuses negative years (placeholders) and anything but a full date-time with an
    offset, which then falls back; it accepts the year 0, which records() reads as missing.
    """
    if pc.any(pc.starts_with(values, "0000")).as_py():
        return None
    try:
        stamps = values.cast(_UTC_MICROSECONDS)
    except pa.ArrowInvalid:
        return None
    return _UTC_DTYPE.__from_arrow__(stamps)  # a quarter of what to_pandas() costs


def _categorical(values: pa.ChunkedArray) -> pd.Categorical:
    """Sorted categories, as :func:`arrays.categorical` gives (``""`` alone when empty)."""
    encoded = values.combine_chunks().dictionary_encode()
    order = pc.array_sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64)
    codes = np.where(codes < 0, -1, rank[np.maximum(codes, 0)] if len(rank) else -1)
    categories = encoded.dictionary.take(pa.array(order)).to_pylist() or [""]
    return pd.Categorical.from_codes(codes, dtype=_category_dtype(tuple(categories)))


@functools.lru_cache(maxsize=1024)
def _category_dtype(categories: tuple[str, ...]) -> pd.CategoricalDtype:
    """The dtype of sorted ``str`` categories, built once: pages mostly share their categories,
    and validating them again cost more than the rest of the column."""
    return pd.CategoricalDtype(pd.Index(list(categories), dtype="str"))


def _technical(
    lists: pa.ListArray, n: int, counts: dict[bytes, int], whole_floats: set[str]
) -> dict[str, Any] | None:
    """One typed column per technical name, keyed by its records column name.

    Every entry must be ``{"name": <string>, "value": <number or string>}``: a name, and a
    number or a text but not both, as many of each as the rewrites counted.
    """
    entries = pc.list_flatten(lists)
    names, numbers, texts = entries.flatten()
    is_number = numbers.is_valid().to_numpy(zero_copy_only=False)
    is_text = texts.is_valid().to_numpy(zero_copy_only=False)
    if (
        entries.null_count
        or names.null_count
        or np.any(is_number == is_text)
        or counts[_NUMBER] != is_number.sum()
        or counts[_TEXT] != is_text.sum()
    ):
        return None
    parents = pc.list_parent_indices(lists).to_numpy()
    encoded = names.dictionary_encode()
    dictionary = encoded.dictionary.to_pylist()
    order, bounds = _grouped(encoded.indices.to_numpy(), len(dictionary))
    values = numbers.to_numpy(zero_copy_only=False)
    columns: dict[str, Any] = {}
    for code, name in enumerate(dictionary):
        positions = order[bounds[code] : bounds[code + 1]]
        rows = parents[positions]
        if np.any(rows[1:] == rows[:-1]) or column_name(name) in columns:
            return None  # a record repeats the name, or two names share a column: records() says
        column = _technical_column(
            n,
            rows,
            values[positions],
            texts,
            positions,
            is_text[positions],
            name in whole_floats or _fractional(values[positions]),
        )
        if column is None:
            return None
        columns[column_name(name)] = column
    return columns


def _grouped(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Every code's positions, in order, as ``order[bounds[code]:bounds[code + 1]]``.

    One stable sort of the codes rather than one pass over them per name; codes that fit a
    byte are sorted as bytes, which numpy does by radix.
    """
    if size <= 256:
        codes = codes.astype(np.uint8)
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(codes, minlength=size))))
    return order, bounds


def _fractional(numbers: np.ndarray) -> bool:
    """Whether some number is not whole (text entries, NaN here, do not count)."""
    written = numbers[~np.isnan(numbers)]
    return bool(np.any(written != np.floor(written)))


def _technical_column(
    n: int,
    rows: np.ndarray,
    numbers: np.ndarray,
    all_texts: pa.Array,
    positions: np.ndarray,
    is_text: np.ndarray,
    floats: bool,
) -> Any:
    """One name's values placed at their rows, typed as :func:`records` types them.

    ``numbers`` and ``is_text`` are the name's own; its texts are ``all_texts`` at
    ``positions``, taken only for a name that has text (the take is most of the cost).
    """
    written = numbers[~is_text]
    exact = floats and not is_text.any()  # records() too makes every number of the name a float
    if not exact and np.any((np.abs(written) >= 2**53) & (written == np.floor(written))):
        return None  # the float pyarrow read may have rounded an integer's digits away
    if not is_text.any():
        data = np.zeros(n, dtype=np.float64 if floats else np.int64)
        mask = np.ones(n, dtype=bool)
        data[rows] = numbers
        mask[rows] = False
        kind = pd.arrays.FloatingArray if floats else pd.arrays.IntegerArray
        return kind(data, mask)
    texts = all_texts.take(positions)
    if not is_text.all():
        # Text beside numbers: the numbers become text too, written as arrays.render_text does.
        texts = pc.coalesce(texts, _rendered(numbers, ~is_text))
    index = np.full(n, -1, dtype=np.int64)
    index[rows] = np.arange(len(rows))
    placed = texts.take(pa.array(index, mask=index < 0))
    return pd.arrays.ArrowStringArray(placed.cast(pa.large_string()))


def _rendered(numbers: np.ndarray, present: np.ndarray) -> pa.Array:
    """Numbers as :func:`arrays.render_text` writes floats, null where ``present`` is false.

    Whole numbers below 1e16 lose their ``.0``, the others take ``repr``; integers below 2**53
    (all that reach here) read the same as the floats pyarrow made of them.
    """
    whole = present & (numbers == np.floor(numbers)) & (np.abs(numbers) < 1e16)
    other = present & ~whole
    out = np.full(len(numbers), None, dtype=object)
    out[whole] = list(map(str, numbers[whole].astype(np.int64).tolist()))
    out[other] = list(map(repr, numbers[other].tolist()))
    return pa.array(out, type=pa.string())
