"""Records parsed by pyarrow to the typed columns of the records frame, as records() types them.

Every function either gives exactly what :func:`~mediaframe.frames.records` gives for the same
answer, or raises :class:`Unreadable`: the caller then takes the decoded route.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mediaframe.frames.arrays import TIMESTAMP
from mediaframe.frames.captions import Structure, typed_caption
from mediaframe.frames.records import EXTENDED_MEMBERS
from mediaframe.frames.schema import RECORDS, Column
from mediaframe.frames.technical import column_name

__all__ = [
    "KNOWN",
    "KNOWN_EXTENDED",
    "Entries",
    "Unreadable",
    "convert",
    "convert_all",
    "dynamic",
    "entries",
    "extended",
    "extended_texts",
    "holds",
    "members",
    "scan",
    "technical",
]

_TECHNICAL = "technical_informations"
_UTC_MICROSECONDS = pa.timestamp("us", "UTC")
_UTC_DTYPE = pd.DatetimeTZDtype("us", "UTC")
_PANDAS_TYPES = {
    pa.int64(): pd.Int64Dtype(),
    pa.float64(): pd.Float64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
}
#: Member paths a records piece is declared with (the rest is unknown).
KNOWN = frozenset({column.path for column in RECORDS.columns} | set(RECORDS.aliases) | {_TECHNICAL})
#: ... and of extended records, whose extended members become columns of their own or are left.
KNOWN_EXTENDED = KNOWN | set(EXTENDED_MEMBERS)


class Unreadable(Exception):
    """The native route cannot read this answer: ``kind`` groups the reasons, ``detail`` says."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


_NESTED = dict(RECORDS.nested)
_DECLARED = frozenset(RECORDS.names)


def members(
    struct: pa.ChunkedArray, known: frozenset[str] = KNOWN
) -> tuple[dict[str, pa.ChunkedArray], dict[str, pa.ChunkedArray]]:
    """Every declared member by dotted path, and every unknown one by its dynamic column name
    (prefixed as records() names it, e.g. ``thumbnail_cdn``); a null parent makes its children
    null. An unknown member that makes the name of another's column (a record's ``thumbnail_cdn``
    and its thumbnail's ``cdn``, a record's own ``thumbnail_name``) is :class:`Unreadable`."""
    found: dict[str, pa.ChunkedArray] = {}
    unknown: dict[str, pa.ChunkedArray] = {}

    def walk(kind: pa.StructType, children: list[pa.ChunkedArray], path: str) -> None:
        for field, child in zip(kind, children, strict=True):
            where = f"{path}.{field.name}" if path else field.name
            if "." in field.name and (where in _NESTED or where in known):
                # a member named "thumbnail.name" is not thumbnail's name: records() says
                raise Unreadable("unknown member", f"{field.name!r} is named as a path")
            if where in _NESTED:
                walk(field.type, child.flatten(), where)
            elif where in known:
                found[where] = child
            else:
                name = _NESTED.get(path, "") + field.name
                if name in unknown or name in _DECLARED:
                    # "thumbnail_x" beside thumbnail's "x", a record's own "thumbnail_name":
                    # records() names one of them otherwise
                    raise Unreadable("unknown member", f"two members make the column {name!r}")
                unknown[name] = child

    walk(struct.type, struct.flatten(), "")
    return found, unknown


class Scan(NamedTuple):
    """What one walk through parsed records finds (:func:`scan`)."""

    #: every number pyarrow read as a float is finite (JSON has no NaN or Infinity)
    finite: bool
    #: how many members named ``text`` hold something: the text values the reader renamed are
    #: all there, wherever they were renamed
    texts: int


def scan(values: pa.ChunkedArray | pa.Array) -> Scan:
    """Whether every float in ``values`` is finite, and how many ``text`` members hold
    something, at any depth: one walk, into the members that hold either."""
    kind = values.type
    if pa.types.is_floating(kind):
        return Scan(bool(pc.all(pc.is_finite(values)).as_py() is not False), 0)
    if pa.types.is_list(kind):
        return scan(pc.list_flatten(values)) if _scanned(kind) else Scan(True, 0)
    if not pa.types.is_struct(kind):
        return Scan(True, 0)
    found = 0
    for field, child in zip(kind, values.flatten(), strict=True):
        if field.name == "text":
            found += len(child) - child.null_count
        if _scanned(field.type):
            inner = scan(child)
            if not inner.finite:  # the answer falls back: the count no longer matters
                return inner
            found += inner.texts
    return Scan(True, found)


def _scanned(kind: pa.DataType) -> bool:
    return holds(kind, pa.types.is_floating, member="text")


@functools.lru_cache(maxsize=256)
def holds(
    kind: pa.DataType, leaf: Callable[[pa.DataType], bool], *, member: str | None = None
) -> bool:
    """Whether ``kind`` is, or holds at any depth, a type ``leaf`` is true of (or, with
    ``member``, a member of that name). Cached: a page's types repeat from page to page."""
    if pa.types.is_list(kind):
        return holds(kind.value_type, leaf, member=member)
    if pa.types.is_struct(kind):
        return any(field.name == member or holds(field.type, leaf, member=member) for field in kind)
    return leaf(kind)


def dynamic(values: pa.ChunkedArray, name: str) -> Any:
    """An unknown member's column, typed by the schema's rule as pyarrow inferred it."""
    kind = values.type
    if pa.types.is_null(kind):
        return np.full(len(values), None, dtype=object)
    if kind == pa.string():
        return pd.arrays.ArrowStringArray(values.cast(pa.large_string()))
    if kind == pa.float64() and (pc.max(pc.abs(values)).as_py() or 0) >= 2**63:
        # perhaps an integer beyond 64 bits, which pyarrow reads as a float and records()
        # keeps as text (orjson decodes integers up to 2**64)
        raise Unreadable("unknown member", f"{name!r} holds a number at or beyond 2**63")
    if kind in _PANDAS_TYPES:
        return _PANDAS_TYPES[kind].__from_arrow__(values)
    raise Unreadable("unknown member", f"{name!r} holds {kind} (records() keeps those raw)")


def convert_all(members: dict[str, pa.ChunkedArray], columns: Iterable[Column]) -> dict[str, Any]:
    """Every declared column by name, as :func:`convert` gives it, with the same checks; the
    columns of one plain type are converted together, and the dates of all columns read in one
    cast (a page pays each call's fixed cost once, not once per column). The dates are checked
    last, so a page with both a missing key and an unreadable date falls back for its key
    (the frame, the decoded route's, is the same either way)."""
    columns = list(columns)
    converted: dict[str, Any] = {}
    dates: list[Column] = []
    plain: dict[tuple[str, pa.DataType], list[Column]] = {}
    for column in columns:
        values = members[column.path]
        if column.dtype == TIMESTAMP and not column.required:
            dates.append(column)
        elif column.dtype in _PLAIN and not column.joined:
            if column.required and values.null_count:
                raise Unreadable("key", f"a record lacks {column.path!r}")  # as convert()
            plain.setdefault((column.dtype, values.type), []).append(column)
        else:
            converted[column.name] = convert(values, column)
    for (dtype, kind), group in plain.items():
        together = _together([members[column.path] for column in group], kind)
        if dtype == "string":
            whole: Any = together.cast(pa.large_string())
            for column, (start, n) in zip(group, _spans(group, members), strict=True):
                converted[column.name] = pd.arrays.ArrowStringArray(whole.slice(start, n))
        else:
            whole = _PANDAS_TYPES[kind].__from_arrow__(together)
            for column, (start, n) in zip(group, _spans(group, members), strict=True):
                converted[column.name] = whole[start : start + n]
    if dates:
        try:
            stamps = _stamps(_together([members[c.path] for c in dates], pa.string()), "a date")
        except Unreadable:  # one column at a time, to name the member
            for column in dates:
                converted[column.name] = convert(members[column.path], column)
        else:
            for column, (start, n) in zip(dates, _spans(dates, members), strict=True):
                converted[column.name] = _UTC_DTYPE.__from_arrow__(stamps.slice(start, n))
    return {column.name: converted[column.name] for column in columns}


#: The dtypes :func:`convert` gives by one call per column that can as well be one per page.
_PLAIN = frozenset({"Int64", "Float64", "boolean", "string"})


def _together(arrays: list[pa.ChunkedArray], kind: pa.DataType) -> pa.ChunkedArray:
    """Columns of one type end to end, to be converted in one call and sliced apart."""
    return pa.chunked_array([chunk for values in arrays for chunk in values.chunks], kind)


def _spans(group: list[Column], members: dict[str, pa.ChunkedArray]) -> Iterator[tuple[int, int]]:
    """Where each column of ``group`` lies in :func:`_together` of them: ``(start, length)``."""
    start = 0
    for column in group:
        n = len(members[column.path])
        yield start, n
        start += n


def convert(values: pa.ChunkedArray, column: Column) -> Any:
    """A declared column from its pyarrow array; :class:`Unreadable` where records() may differ."""
    if column.required and values.null_count:
        raise Unreadable("key", f"a record lacks {column.path!r}")  # records() names the item
    if pa.types.is_list(values.type):  # an array of strings joined with ","
        if pc.list_flatten(values).null_count:
            raise Unreadable("unexpected type or shape", f"{column.path!r} holds a null")
        values = pc.binary_join(values, ",")
    if column.dtype == "string":
        return pd.arrays.ArrowStringArray(values.cast(pa.large_string()))
    if column.dtype == "category":
        return _categorical(values)
    if column.dtype == TIMESTAMP:
        return _timestamps(values, column.path)
    return _PANDAS_TYPES[values.type].__from_arrow__(values)  # no Series on the way


def _timestamps(values: pa.ChunkedArray, member: str) -> Any:
    """ISO 8601 text to UTC timestamps, placeholders (a negative year, or year 0) as missing.

    pyarrow refuses anything but a full date-time with an offset, which then falls back.
    """
    return _UTC_DTYPE.__from_arrow__(_stamps(values, member))  # a quarter of to_pandas()'s cost


def _stamps(values: pa.ChunkedArray, member: str) -> pa.ChunkedArray:
    placeholder = pc.or_(pc.starts_with(values, "-"), pc.starts_with(values, "0000"))
    if pc.any(placeholder).as_py():
        values = pc.if_else(placeholder, pa.scalar(None, pa.string()), values)
    try:
        return values.cast(_UTC_MICROSECONDS)
    except pa.ArrowInvalid as error:
        raise Unreadable("dates", f"{member!r}: {str(error)[:120]}") from None


def _categorical(values: pa.ChunkedArray) -> pd.Categorical:
    """Sorted categories, as :func:`arrays.categorical` gives (``""`` alone when empty)."""
    encoded = values.combine_chunks().dictionary_encode()
    order = pc.array_sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64)
    codes = np.where(codes < 0, -1, rank[np.maximum(codes, 0)] if len(rank) else -1)
    categories = encoded.dictionary.take(pa.array(order)).to_pylist() or [""]
    # the codes are in range by construction: pandas need not check them again
    return pd.Categorical.from_codes(
        codes, dtype=_category_dtype(tuple(categories)), validate=False
    )


@functools.lru_cache(maxsize=1024)
def _category_dtype(categories: tuple[str, ...]) -> pd.CategoricalDtype:
    """The dtype of sorted ``str`` categories, built once: pages mostly share their categories,
    and validating them again cost more than the rest of the column."""
    return pd.CategoricalDtype(pd.Index(list(categories), dtype="str"))


def technical(
    lists: pa.ListArray,
    n: int,
    texts: int,
    whole_floats: Callable[[], set[str]],
    *,
    taken: set[str],
) -> dict[str, Any]:
    """One typed column per technical name, keyed by its records column name (prefixed
    ``technical_`` when a declared column or an unknown member in ``taken`` has the name).

    Every entry must be ``{"name": <string>, "value": <number or string>}``: a name, and a
    number or a text but not both, with as many texts as the rewrite renamed. ``whole_floats``
    gives the names holding a float written whole; it is asked only when a name's type depends
    on it (numbers only, all whole, not one of the contract's stable names).
    """
    entries = pc.list_flatten(lists)
    if entries.type.num_fields != 3:  # an entry with a member besides its name and value
        raise Unreadable("technical values", "an entry has members besides name and value")
    names, numbers, all_texts = entries.flatten()
    is_number = numbers.is_valid().to_numpy(zero_copy_only=False)
    is_text = all_texts.is_valid().to_numpy(zero_copy_only=False)
    if entries.null_count or names.null_count or np.any(is_number == is_text):
        raise Unreadable("technical values", "an entry is not a name with one number or text")
    if texts != is_text.sum():
        raise Unreadable("technical values", "an entry holds a text member of its own")
    parents = pc.list_parent_indices(lists).to_numpy()
    values = numbers.to_numpy(zero_copy_only=False)
    encoded = names.dictionary_encode()
    dictionary = encoded.dictionary.to_pylist()
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    traits = _traits(codes, len(dictionary), values, is_text)
    columns: dict[str, Any] = {}
    groups = _each_group(dictionary, codes, parents, "technical values", "")
    for code, (name, rows, positions) in enumerate(groups):
        named = column_name(name)  # prefixed once, as records() does, if a column has the name
        named = f"technical_{name}" if named == name and name in taken else named
        if named in columns:  # two names share a column: records() says which
            raise Unreadable("technical values", f"{name!r} repeated in a record")
        if named in taken:  # an unknown member has the prefixed name too: records() says which
            raise Unreadable("technical values", f"{name!r} makes an unknown member's column")
        floats = False  # with text among the values, numbers are rendered as text anyway
        if not traits.text[code]:
            stable = _STABLE.get(named)
            if stable in ("Int64", "Float64") and not traits.beyond[code]:
                # directly in the dtype assemble() would cast it to: Float64, or Int64 unless
                # a number is fractional (numbers beyond 2**53 are left to the general rule)
                floats = stable == "Float64" or bool(traits.fractional[code])
                columns[named] = _placed_numbers(n, rows, values[positions], floats=floats)
                continue
            floats = bool(traits.fractional[code]) or name in whole_floats()
        if not floats and traits.beyond_whole[code]:
            # the float pyarrow read may have rounded an integer's digits away (records() too
            # makes every number of a name holding a fraction or a float a float)
            raise Unreadable("technical values", "an integer at or beyond 2**53")
        if traits.text[code]:
            texts_of = is_text[positions]
            column = _text_column(n, rows, values[positions], all_texts, positions, texts_of)
        else:
            column = _placed_numbers(n, rows, values[positions], floats=floats)
        columns[named] = column
    return columns


#: The technical columns always in one dtype (assemble() casts the others to it).
_STABLE = dict(RECORDS.stable)


@dataclasses.dataclass(frozen=True)
class _Traits:
    """What each technical name's values hold, by the name's code: found in one pass over all
    entries, rather than a handful of numpy calls for every name of every page.

    ``text``: a text value; ``fractional``: a number not whole; ``beyond``: a number at or beyond
    2**53; ``beyond_whole``: such a number that is whole (its digits may have been rounded).
    """

    text: np.ndarray
    fractional: np.ndarray
    beyond: np.ndarray
    beyond_whole: np.ndarray


def _traits(codes: np.ndarray, size: int, values: np.ndarray, is_text: np.ndarray) -> _Traits:
    """The :class:`_Traits` of ``size`` names from their entries' codes, numbers (NaN for a
    text) and text flags."""

    def some(flags: np.ndarray) -> np.ndarray:
        found = np.zeros(size, dtype=bool)
        found[codes[flags]] = True
        return found

    whole = values == np.floor(values)  # NaN is not
    beyond = np.abs(values) >= 2**53
    fractional = ~whole & ~np.isnan(values)
    return _Traits(some(is_text), some(fractional), some(beyond), some(beyond & whole))


def _placed_numbers(n: int, rows: np.ndarray, numbers: np.ndarray, *, floats: bool) -> Any:
    """``numbers`` at ``rows`` of a ``Float64`` (else ``Int64``) column of ``n``; NA elsewhere."""
    data = np.zeros(n, dtype=np.float64 if floats else np.int64)
    mask = np.ones(n, dtype=bool)
    data[rows] = numbers
    mask[rows] = False
    kind = pd.arrays.FloatingArray if floats else pd.arrays.IntegerArray
    return kind(data, mask)


def _groups(
    keys: pa.Array, rows: np.ndarray, kind: str, prefix: str
) -> Iterator[tuple[Any, np.ndarray, np.ndarray]]:
    """Each distinct key of the entries, in order of first sight, with its entries' records
    (``rows`` at them) and positions; :class:`Unreadable` (``kind``, the key after ``prefix``)
    if a record repeats it (see :func:`_each_group`)."""
    encoded = keys.dictionary_encode()
    dictionary = encoded.dictionary.to_pylist()
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    return _each_group(dictionary, codes, rows, kind, prefix)


def _each_group(
    dictionary: list[Any], codes: np.ndarray, rows: np.ndarray, kind: str, prefix: str
) -> Iterator[tuple[Any, np.ndarray, np.ndarray]]:
    """:func:`_groups` of keys already encoded as ``dictionary`` and ``codes``.

    A generator, so that a caller checking or building each key in turn meets a repeated key
    when it reaches it, not before (technical() then refuses a page for the same reason as
    ever when it has more than one fault).
    """
    order, bounds = _grouped(codes, len(dictionary))
    for code, key in enumerate(dictionary):
        positions = order[bounds[code] : bounds[code + 1]]
        where = rows[positions]
        if np.any(where[1:] == where[:-1]):
            raise Unreadable(kind, f"{prefix}{key!r} repeated in a record")
        yield key, where, positions


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


def _text_column(
    n: int,
    rows: np.ndarray,
    numbers: np.ndarray,
    all_texts: pa.Array,
    positions: np.ndarray,
    is_text: np.ndarray,
) -> Any:
    """One name's values, some of them text, placed at their rows as a ``string`` column.

    ``numbers`` and ``is_text`` are the name's own; its texts are ``all_texts`` at
    ``positions`` (the takes are most of the cost: one for a name of texts only).
    """
    index = np.full(n, -1, dtype=np.int64)
    if is_text.all():  # taken from all texts at once
        index[rows] = positions
        texts = all_texts
    else:
        # Text beside numbers: the numbers become text too, written as arrays.render_text does.
        texts = pc.coalesce(all_texts.take(positions), _rendered(numbers, ~is_text))
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


# ------------------------------------------------------------------- extended records


@dataclasses.dataclass(frozen=True)
class Entries:
    """The entries of a list-of-objects member (``caption``, ``status``) of a page's records,
    flattened: each field's values, each entry's record (``rows``), how many entries are null."""

    fields: dict[str, pa.Array]
    rows: np.ndarray
    nulls: int


def entries(values: pa.ChunkedArray) -> Entries:
    """The entries of a list-of-objects member, flattened once for whoever needs them."""
    lists = values.combine_chunks()
    flat = pc.list_flatten(lists)
    return Entries(_fields_of(flat), pc.list_parent_indices(lists).to_numpy(), flat.null_count)


def extended(
    members: dict[str, pa.ChunkedArray],
    n: int,
    structure: Structure,
    captions: Entries,
    *,
    taken: set[str],
) -> dict[str, Any]:
    """The ``caption_*`` and ``status_*`` columns of extended records, as
    :func:`~mediaframe.frames.captions.extended_columns` gives them, named as records() names
    them beside the columns ``taken`` already (prefixed ``technical_`` where one has the name);
    ``captions`` are the entries of ``members["caption"]`` (flattened once, for
    :func:`extended_texts` too).

    A caption value that is a number or an array, an entry without its name (or bit), a name or
    bit repeated in a record, a column whose prefixed name is taken too: :class:`Unreadable`,
    and records() says what it makes of them. Every check comes before the first caption is
    typed, so that a page that falls back has not warned already.
    """
    caption = _whole(captions, "caption").fields
    if caption["name"].null_count or caption["value"].null_count != len(caption["value"]):
        raise Unreadable("captions", "a caption entry has no name, or a value that is not text")
    names = _by_key(caption["name"], captions.rows, "caption")
    status = _whole(entries(members["status"]), "status")
    if status.fields["bit"].null_count:
        raise Unreadable("captions", "a status entry has no bit")
    bits = _by_key(status.fields["bit"], status.rows, "status")
    fields = [*structure.fields, *(name for name in names if name not in structure.fields)]
    named = [f"caption_{name}" for name in fields]
    named += [f"status_{bit}" for bit in dict.fromkeys([*bits, *structure.bits])]
    if any(f"technical_{name}" in taken for name in named if name in taken):
        raise Unreadable("captions", "a caption or status column makes another's name twice")
    columns: dict[str, Any] = {}
    states = status.fields["state"]
    for bit, (rows, positions) in bits.items():
        data = np.zeros(n, dtype=bool)
        mask = np.ones(n, dtype=bool)
        held = states.take(pa.array(positions))
        data[rows] = pc.fill_null(held, False).to_numpy(zero_copy_only=False)
        mask[rows] = held.is_null().to_numpy(zero_copy_only=False)
        columns[f"status_{bit}"] = pd.arrays.BooleanArray(data, mask)
    for bit in structure.bits:
        if f"status_{bit}" not in columns:
            columns[f"status_{bit}"] = pd.array([None] * n, dtype="boolean")
    # the structure's fields first, then the others as records first hold them: the order
    # records() types them in, hence of their warnings
    for name in fields:
        kind = structure.fields.get(name, "string")
        if name in names:
            rows, positions = names[name]
            column = _caption(name, kind, n, rows, caption["text"], positions)
        else:  # a field no record of the page holds
            column = _caption(name, kind, n, np.empty(0, np.int64), None, None)
        columns[f"caption_{name}"] = column
    return {f"technical_{name}" if name in taken else name: v for name, v in columns.items()}


def extended_texts(members: dict[str, pa.ChunkedArray], captions: Entries) -> int:
    """How many text values the captions (``captions``, their entries) and metadata of extended
    records hold (the rewrite renamed them with the technical ones)."""
    metadata = _fields_of(pc.list_flatten(members["metadata"].combine_chunks()))
    texts = 0
    for fields in (captions.fields, metadata):
        texts += fields["text"].is_valid().to_numpy(zero_copy_only=False).sum()
    return int(texts)


def _whole(found: Entries, member: str) -> Entries:
    """``found``, unless an entry of ``member`` is null: :class:`Unreadable`."""
    if found.nulls:
        raise Unreadable("captions", f"a {member!r} entry is null")
    return found


def _fields_of(entries: pa.StructArray) -> dict[str, pa.Array]:
    return dict(zip([field.name for field in entries.type], entries.flatten(), strict=True))


def _by_key(
    keys: pa.Array, rows: np.ndarray, member: str
) -> dict[Any, tuple[np.ndarray, np.ndarray]]:
    """Each key's rows and entry positions; :class:`Unreadable` if a record repeats a key."""
    return {
        key: (where, positions)
        for key, where, positions in _groups(keys, rows, "captions", f"{member} ")
    }


def _caption(
    name: str,
    kind: str,
    n: int,
    rows: np.ndarray,
    texts: pa.Array | None,
    positions: np.ndarray | None,
) -> Any:
    """One caption column: texts placed at their rows, typed as the structure says."""
    index = np.full(n, -1, dtype=np.int64)
    if texts is not None and positions is not None:
        index[rows] = positions
        placed = texts.take(pa.array(index, mask=index < 0))
    else:
        placed = pa.nulls(n, pa.string())
    if kind == "string":
        return pd.arrays.ArrowStringArray(placed.cast(pa.large_string()))
    return typed_caption(name, placed.to_pylist(), kind)
