"""The column-wise flattening engine every frame is built with: declared columns, then the rest."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from itertools import chain
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from mediaframe.exceptions import MalformedItemError
from mediaframe.frames.arrays import infer_array, render_text, text, to_array, warn_unreadable
from mediaframe.frames.normalise import labeller, preferred
from mediaframe.frames.schema import Column, Frame

__all__ = [
    "UNKNOWN_PREFIX",
    "assemble",
    "column_names",
    "flatten",
    "known_members",
    "member_columns",
    "nested_rows",
    "stable_array",
]

#: Stands in for a null nested object, so every lookup below it simply finds nothing.
_EMPTY: Mapping[str, Any] = MappingProxyType({})

Label = Callable[[int], str]


def flatten(
    items: list[dict[str, Any]],
    frame: Frame,
    *,
    given: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | Sequence[tuple[str, Any]] = (),
    clash_prefix: str = "extra_",
    label: Label | None = None,
) -> pd.DataFrame:
    """Build ``frame`` from a list of dicts, column by column.

    Parameters
    ----------
    items : the items, already checked to be dicts (see :func:`normalise.as_items`).
    frame : the declaration: each column is read from its member path and converted to its dtype;
        members nobody declared become dynamic columns typed by :func:`arrays.infer_array`.
    given : arrays for the columns the caller computes (declared with an empty member).
    extra : more dynamic columns (e.g. pivoted technical names), as a mapping or as pairs (the
        same name may come twice).
    clash_prefix : what an ``extra`` name already given is prefixed with.
    label : names item ``i`` in errors (default: by position and ``frame.key``).

    Notes
    -----
    Every member's value gets a column of its own, never another's. Names are given in this
    order, in two rounds (:func:`column_names`): each takes its own name if it is still free,
    then the others take their prefix as often as it takes:

    1. the declared columns, their declared names;
    2. unknown members, the item's own first, then those of each nested object in declared
       order: the object's prefix and the member's name (a thumbnail's ``cdn`` is
       ``thumbnail_cdn``), ``unknown_`` before it as often as it is already given (a record's
       own ``thumbnail_name`` beside the declared one is ``unknown_thumbnail_name``). A member's
       name is never read as a path: a record's own ``"thumbnail.name"`` is the column
       ``thumbnail.name``, not the thumbnail's name;
    3. ``extra`` in its order, ``clash_prefix`` before a name as often as it is already given
       (a technical ``title`` is ``technical_title``, and ``technical_technical_title`` when a
       record holds a ``technical_title`` of its own).
    """
    n = len(items)
    label = label or labeller(items, frame.row, frame.key)
    given = given or {}
    sources = {"": member_columns(items)}
    for path in frame.nested:
        parent, _, member = path.rpartition(".")
        rows = nested_rows(sources[parent].get(member, [None] * n), path=path, label=label)
        sources[path] = member_columns(rows)
    aliases = _aliases_by_member(frame)

    columns: dict[str, Any] = {}
    for column in frame.columns:
        if column.name in given:
            columns[column.name] = given[column.name]
            continue
        source, _, member = column.path.rpartition(".")
        values = preferred(sources[source], member, aliases.get(column.path, ()), n)
        columns[column.name] = _declared(values, column, label=label)

    pairs = extra.items() if isinstance(extra, Mapping) else extra
    candidates = [
        *((name, UNKNOWN_PREFIX, infer_array(values)) for name, values in _unknown(frame, sources)),
        *((name, clash_prefix, array) for name, array in pairs),
    ]
    names = column_names([(name, prefix) for name, prefix, _ in candidates], set(columns))
    dynamic = {name: array for name, (_, _, array) in zip(names, candidates, strict=True)}
    return assemble(frame, columns, dynamic)


def column_names(candidates: Sequence[tuple[str, str]], taken: Set[str]) -> list[str]:
    """The column of each ``(name, prefix)`` candidate, in order, none in ``taken`` nor twice.

    Two rounds, so that no name depends on the order members come in: first each candidate
    whose own name is still free takes it, then each of the others takes its name with
    ``prefix`` before it as many times as it takes to be free.
    """
    given = set(taken)
    names: list[str | None] = []
    for name, _ in candidates:
        free = name not in given
        names.append(name if free else None)
        given.add(name)
    for index, (name, prefix) in enumerate(candidates):
        if names[index] is None:
            if not prefix:
                raise ValueError(f"the column {name!r} is given twice and has no prefix")
            while name in given:
                name = prefix + name
            names[index] = name
            given.add(name)
    return [name for name in names if name is not None]


def member_columns(rows: Sequence[Mapping[str, Any]]) -> dict[str, Sequence[Any]]:
    """Every member's values over all rows, ``None`` where a row lacks it.

    Rows are read whole, one key layout at a time (servers send their members in one order):
    touching each dict once is several times faster than one lookup pass per member, because
    the parsed objects lie scattered in memory.
    """
    n = len(rows)
    layouts = list(map(tuple, rows))
    if n and layouts.count(layouts[0]) == n:  # the common case, cheaper than hashing layouts
        return dict(zip(layouts[0], _transpose(rows), strict=True)) if layouts[0] else {}
    distinct = dict.fromkeys(layouts)
    if len(distinct) > _MANY_LAYOUTS:
        names = dict.fromkeys(chain.from_iterable(layouts))
        return {name: [row.get(name) for row in rows] for name in names}
    positions: dict[tuple[str, ...], list[int]] = {}
    for index, layout in enumerate(layouts):
        positions.setdefault(layout, []).append(index)
    columns: dict[str, Any] = {}
    for layout, indices in positions.items():
        if not layout:
            continue
        group = [rows[i] for i in indices]
        for name, values in zip(layout, _transpose(group), strict=True):
            if name not in columns:
                columns[name] = np.full(n, None, dtype=object)
            columns[name][indices] = np.fromiter(values, dtype=object, count=len(values))
    return columns


def _transpose(rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """Rows sharing one key layout, turned into one list per member."""
    return list(map(list, zip(*(row.values() for row in rows), strict=True)))


#: Beyond this many key layouts, reading member by member is cheaper than grouping rows.
_MANY_LAYOUTS = 64


def assemble(frame: Frame, columns: Mapping[str, Any], dynamic: Mapping[str, Any]) -> pd.DataFrame:
    """Put the declared columns first, in declared order, then the dynamic ones sorted by name.

    Sorting makes the layout independent of which page first saw a name, so frames built page by
    page concatenate to the frame of the whole input. The frame's ``stable`` dynamic columns are
    always there, in their dtype (see :func:`stable_array`).
    """
    ordered = {name: columns[name] for name in frame.names}
    if frame.stable:
        n = len(next(iter(ordered.values()))) if ordered else 0
        dynamic = {**dynamic}
        for name, dtype in frame.stable.items():
            dynamic[name] = stable_array(dynamic.get(name), dtype, n)
    ordered.update((name, dynamic[name]) for name in sorted(dynamic))
    return pd.DataFrame(ordered, copy=False)


#: Numbers beyond this magnitude may have lost digits as floats (2**53 itself is exact).
_EXACT = 2**53


def stable_array(values: Any, dtype: str, n: int) -> Any:
    """A column of ``n`` values in ``dtype`` (all missing when ``values`` is None).

    Numbers and numeric text become ``Int64``/``Float64`` (an ``Int64`` column holding a
    fraction stays ``Float64``), anything becomes text for ``string``. A value that does not fit
    (``"1/250"`` for a number) leaves the column as it was, typed by the general rule: the data
    stays whole rather than the dtype (a text column's numeric texts then written as the numbers
    they are, as :func:`_numbers_rendered` says).
    """
    if values is None:
        return text([None] * n) if dtype == "string" else pd.array([None] * n, dtype=dtype)
    if str(getattr(values, "dtype", "")) == dtype:
        return values  # already so (a Series costs more than the check)
    if dtype in ("Int64", "Float64") and isinstance(values, pd.arrays.ArrowStringArray):
        numbers = _text_numbers(values, dtype)
        if numbers is not None:
            return numbers
    series = pd.Series(values, copy=False)
    if str(series.dtype) == dtype:
        return values
    present = series.notna()
    scalars = series[present].tolist()  # Python scalars, as the JSON gave them
    if dtype == "string":
        if not all(type(v) in (int, float, str, bool) for v in scalars):
            return values  # objects or arrays: kept raw
        pairs = zip(series.tolist(), present.tolist(), strict=True)
        return text([render_text(v) if keep else None for v, keep in pairs])
    if any(type(v) is bool for v in scalars):
        return values  # true/false are not numbers here: the column keeps them
    numbers = pd.to_numeric(series, errors="coerce")
    if (numbers.notna() != present).any() or (numbers[present].abs() > _EXACT).any():
        # not numbers, or beyond what a float holds exactly: the rule keeps them
        return _numbers_rendered(values, numbers) if series.dtype == "string" else values
    if dtype == "Int64" and not (numbers[present] == numbers[present].round()).all():
        dtype = "Float64"
    return pd.array(numbers, dtype=dtype)


def _text_numbers(values: pd.arrays.ArrowStringArray, dtype: str) -> Any:
    """:func:`stable_array` of a text column, the same steps on the array itself (a Series, and
    the Python scalars looked for booleans that text never holds, cost twice the parse);
    ``None`` when the parse gives no nullable numbers, left to the general steps."""
    plain = _plain_numbers(values, dtype)
    if plain is not None:
        return plain
    numbers = pd.to_numeric(values, errors="coerce")  # parsed as a Series of them is
    if not isinstance(numbers, pd.arrays.IntegerArray | pd.arrays.FloatingArray):
        return None
    present = ~values.isna()
    written = numbers[present]
    if (numbers.isna() == present).any() or (abs(written) > _EXACT).any():
        return _numbers_rendered(values, numbers)  # not all numbers: the column stays text
    if dtype == "Int64" and not (written == written.round()).all():
        dtype = "Float64"
    return pd.array(numbers, dtype=dtype)


def _numbers_rendered(values: Any, numbers: Any) -> Any:
    """The text column ``values`` of a stable numeric name that holds some text no number:
    each text that is a number (within 2**53, parsed as ``numbers`` says) rendered as that
    number (:func:`~mediaframe.frames.arrays.render_text`), the others as written.

    A page whose texts are all numbers reads them as numbers, which a join with a page of
    other text renders by value (``"00"`` becomes ``"0"``): rendering them so here too makes
    the column the same whether its pages are joined or read at once.
    """
    parsed = pd.Series(numbers, copy=False)
    fits = (parsed.notna() & (parsed.abs() <= _EXACT)).to_numpy(dtype=bool)
    if not fits.any():
        return values
    rendered = pd.Series(values, copy=False).to_numpy(dtype=object, copy=True)
    rendered[fits] = [render_text(number) for number in parsed[fits].tolist()]
    return text([None if pd.isna(value) else value for value in rendered])


def _plain_numbers(values: pd.arrays.ArrowStringArray, dtype: str) -> Any:
    """:func:`_text_numbers` of texts that are all plain numbers, parsed by Arrow's cast (a
    tenth of ``to_numeric``'s time, the same doubles); ``None`` for anything else — a text that
    is no number or has spaces around it, NaN, an infinity, a magnitude of 2**53 or more (an
    integer there keeps its digits in ``to_numeric``), a negative zero (``"-0"`` is an integer
    zero there) — which takes the general steps."""
    try:
        floats = pc.cast(pa.array(values), pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    numbers = floats.to_numpy(zero_copy_only=False)
    absent = np.isnan(numbers)  # nulls, and NaN written as text (refused below)
    written = numbers[~absent]
    if absent.sum() != floats.null_count or not (np.abs(written) < _EXACT).all():
        return None
    if np.signbit(written[written == 0]).any():
        return None
    numbers = np.where(absent, 0.0, numbers)
    if dtype == "Int64" and (written == np.floor(written)).all():
        return pd.arrays.IntegerArray(numbers.astype(np.int64), absent)
    return pd.arrays.FloatingArray(numbers, absent)


def nested_rows(values: Sequence[Any], *, path: str, label: Label) -> list[Mapping[str, Any]]:
    """The objects of a nested member, an empty mapping where it is null or absent.

    A nested member (a thumbnail, a basket's owner) is never a key: one that is not an object
    is missing, with one :class:`MalformedItemWarning`.
    """
    if set(map(type, values)) - {dict, type(None)}:
        odd = [i for i, v in enumerate(values) if v is not None and type(v) is not dict]
        warn_unreadable(path, odd, len(values), label, values)
        return [value if type(value) is dict else _EMPTY for value in values]
    return [_EMPTY if value is None else value for value in values]


def _declared(values: Sequence[Any], column: Column, *, label: Label) -> Any:
    if column.required and None in values:
        index = next(i for i, value in enumerate(values) if value is None)
        raise MalformedItemError(
            f"{label(index)}: member {column.path!r} is missing or null; every item needs it "
            "to be identified (report the payload)",
            item=index,
        )
    if column.joined:
        values = _joined(values, column, label=label)
    strict = column.required  # keys raise; a minor member is mended or missing, with a warning
    return to_array(values, column.dtype, member=column.path, label=label, strict=strict)


def _joined(values: Sequence[Any], column: Column, *, label: Label) -> list[Any]:
    """Arrays of strings joined with ``,``; any other value is missing (one warning)."""
    kinds = set(map(type, values)) - {type(None)}
    entries = chain.from_iterable(v for v in values if type(v) is list)
    if kinds - {list} or set(map(type, entries)) - {str}:
        odd = [
            i
            for i, v in enumerate(values)
            if v is not None and (type(v) is not list or any(type(e) is not str for e in v))
        ]
        warn_unreadable(column.path, odd, len(values), label, values)
        unreadable = set(odd)
        values = [None if i in unreadable else v for i, v in enumerate(values)]
    return [None if v is None else ",".join(v) for v in values]


def _aliases_by_member(frame: Frame) -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    for alias, member in frame.aliases.items():
        found[member] = (*found.get(member, ()), alias)
    return found


def _unknown(
    frame: Frame, sources: Mapping[str, Mapping[str, Sequence[Any]]]
) -> Iterator[tuple[str, Sequence[Any]]]:
    """Members no declaration reads, the item's own first, then each nested object's in declared
    order, each named with its object's prefix (:func:`column_names` makes the names distinct)."""
    known = known_members(frame)
    for path, columns in sources.items():
        prefix = frame.nested.get(path, "")
        for member, values in columns.items():
            if (path, member) not in known:
                yield prefix + member, values


#: What the column of an unknown member is prefixed with while its name is already given.
UNKNOWN_PREFIX = "unknown_"


def known_members(frame: Frame) -> frozenset[tuple[str, str]]:
    """Every member ``frame`` reads, nests or leaves, as ``(object path, member name)``: a
    member named ``"thumbnail.name"`` is the item's own (``("", "thumbnail.name")``), never
    the thumbnail's name (``("thumbnail", "name")``)."""
    paths = {column.path for column in frame.columns}
    paths |= set(frame.nested) | set(frame.ignored) | set(frame.aliases)
    return frozenset(_split(path, frame) for path in paths)


def _split(path: str, frame: Frame) -> tuple[str, str]:
    """A declared dotted path as its object (the longest nested path before it) and member."""
    parents = [p for p in frame.nested if path.startswith(p + ".")]
    parent = max(parents, key=len, default="")
    return parent, path[len(parent) + 1 :] if parent else path
