"""``technical_informations`` gathered as (row, name, value) triples, pivoted wide or kept long."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd

from mediaframe.exceptions import InvalidParameterError, MalformedItemError
from mediaframe.frames.arrays import Values, infer_array, object_values, to_array
from mediaframe.frames.flatten import stable_array
from mediaframe.frames.normalise import as_items, labeller
from mediaframe.frames.schema import RECORDS, TECHNICAL_LONG

__all__ = ["gather", "pivot", "scatter", "technical_long", "technical_wide"]

_SCALAR_OR_NULL = {bool, int, float, str, type(None)}
_KEY = ("databox_id", "record_id")


def technical_long(items: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per technical value of each record: ``databox_id, record_id, name, value``.

    ``value`` keeps the raw JSON value (int, float or str, in an ``object`` column) so that
    :func:`technical_wide` can type each name exactly as :func:`records` does.

    Examples
    --------
    >>> technical_long([{"databox_id": 1, "record_id": 7,
    ...                  "technical_informations": [{"name": "ISO", "value": 200}]}])
       databox_id  record_id name value
    0           1          7  ISO   200
    """
    items = as_items(items, "record")
    label = labeller(items, "record", _KEY)
    rows, names, values = gather(items, label=label)
    keys = {
        member: to_array([item.get(member) for item in items], "Int64", member=member, label=label)
        for member in _KEY
    }
    return pd.DataFrame(
        {
            "databox_id": keys["databox_id"].take(rows),
            "record_id": keys["record_id"].take(rows),
            "name": pd.array(names, dtype="string"),
            "value": np.fromiter(values, dtype=object, count=len(values)),
        }
    )


def technical_wide(long: pd.DataFrame) -> pd.DataFrame:
    """Pivot a :func:`technical_long` frame back: one row per record, one column per name.

    Rows keep the order in which records first appear; columns are the key then the names sorted,
    each typed over all its values by the rule of :func:`records` and named as there (a name equal
    to a records column gets the ``technical_`` prefix). Records without technical values have
    no row.
    """
    missing = [name for name in TECHNICAL_LONG.names if name not in long.columns]
    if missing:
        raise InvalidParameterError(
            f"technical_wide() needs the columns of technical_long(), missing {missing}; "
            "build the input with mediaframe.frames.technical_long(items)"
        )
    codes, keys = pd.factorize(pd.MultiIndex.from_arrays([long["databox_id"], long["record_id"]]))
    names = object_values(long["name"])
    if any(name is None for name in names):
        raise InvalidParameterError("technical_wide(): the 'name' column holds missing values")
    wide = pivot(len(keys), codes, names, object_values(long["value"]))
    columns = {
        "databox_id": pd.array(keys.get_level_values(0), dtype="Int64"),
        "record_id": pd.array(keys.get_level_values(1), dtype="Int64"),
    }
    for name in sorted(wide, key=column_name):
        # the contract's names in their one dtype, as records() gives them
        stable = RECORDS.stable.get(name)
        values = wide[name] if stable is None else stable_array(wide[name], stable, len(keys))
        columns[column_name(name)] = values
    return pd.DataFrame(columns)


def column_name(name: str) -> str:
    """The records column of a technical name: its own name unless a declared column has it."""
    return f"technical_{name}" if name in _DECLARED else name


_DECLARED = frozenset(RECORDS.names)


def gather(
    items: Sequence[dict[str, Any]], *, label: Callable[[int], str]
) -> tuple[np.ndarray, list[str], list[Any]]:
    """Collect every technical value as parallel ``(row, name, value)`` sequences.

    Flat passes over all entries instead of one loop per record, each running in C; the types
    of names and values are checked later, once per distinct name (see :func:`pivot`).
    """
    lists = [item.get("technical_informations") for item in items]
    if set(map(type, lists)) - {list, type(None)}:
        _refuse(lists, lambda v: v is not None and type(v) is not list, label, "is not an array")
    present = [entries or () for entries in lists]
    rows = np.repeat(np.arange(len(present)), [len(entries) for entries in present])
    flat = list(chain.from_iterable(present))
    try:
        names = list(map(itemgetter("name"), flat))
        values = [entry.get("value") for entry in flat]
    except (AttributeError, KeyError, TypeError):
        _refuse_entry(flat, rows, lambda e: type(e) is not dict, label, "is not an object")
        _refuse_entry(flat, rows, lambda e: "name" not in e, label, "has no name")
        raise
    return rows, names, values


def pivot(
    n: int,
    rows: np.ndarray,
    names: Values,
    values: Values,
    *,
    label: Callable[[int], str] = "record #{}".format,
) -> dict[str, Any]:
    """Scatter triples into one typed column of length ``n`` per name.

    Entries are grouped by name with one stable sort, so each name is typed from its own values
    only; a name repeated within one record keeps its last value.

    Raises
    ------
    MalformedItemError
        A name is not a string or a value is not a number, string, boolean or null; ``label``
        names the record holding it.
    """
    # fromiter keeps one dimension whatever the names are (equal-length lists would make two)
    array = np.fromiter(names, dtype=object, count=len(names))
    try:
        codes, uniques = pd.factorize(array)
    except TypeError:  # an unhashable name (a list, an object): find which, only on this path
        codes, uniques = np.zeros(0, dtype=np.intp), []
        index = next(i for i, name in enumerate(array) if type(name) is not str)
        _refuse_value(int(rows[index]), label, f"name {array[index]!r}")
    if len(codes) and codes.min() < 0:  # factorize leaves out None and NaN
        _refuse_value(int(rows[int(np.argmin(codes))]), label, f"name {array[np.argmin(codes)]!r}")
    for code, name in enumerate(uniques):
        if type(name) is not str:
            _refuse_value(int(rows[np.flatnonzero(codes == code)[0]]), label, f"name {name!r}")
    order = np.argsort(codes, kind="stable")
    ends = np.cumsum(np.bincount(codes, minlength=len(uniques)))
    rows = np.asarray(rows)[order]
    ordered = np.fromiter(values, dtype=object, count=len(values))[order]
    columns = {}
    start = 0
    for name, end in zip(uniques, ends, strict=True):
        kinds = set(map(type, ordered[start:end]))
        if kinds - _SCALAR_OR_NULL:
            bad = next(i for i in range(start, end) if type(ordered[i]) not in _SCALAR_OR_NULL)
            _refuse_value(int(rows[bad]), label, f"{name!r} has value {ordered[bad]!r}")
        named_rows, named_values = _last_per_row(rows[start:end], ordered[start:end])
        if len(named_values) < end - start:  # the type is decided by the values that remain
            kinds = set(map(type, named_values))
        columns[name] = scatter(n, named_rows, named_values, kinds=kinds)
        start = end
    return columns


def _last_per_row(rows: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep the last entry of a name repeated within one record (rows ascend, so repeats touch)."""
    if len(rows) < 2:
        return rows, values
    last = np.append(rows[1:] != rows[:-1], True)
    return (rows, values) if last.all() else (rows[last], values[last])


def scatter(n: int, rows: np.ndarray, values: np.ndarray, *, kinds: set[type]) -> Any:
    """One name's values placed at their rows of an ``n``-long column, typed by the rule.

    Plain numbers, by far the most common case, go straight into a masked numpy array; anything
    else takes the general route of :func:`arrays.infer_array`.
    """
    if kinds and kinds <= {int, float}:
        numbers = _numbers(values, np.int64 if kinds == {int} else np.float64)
        if numbers is not None:
            data = np.zeros(n, dtype=numbers.dtype)
            mask = np.ones(n, dtype=bool)
            data[rows] = numbers
            mask[rows] = False
            kind = pd.arrays.IntegerArray if kinds == {int} else pd.arrays.FloatingArray
            return kind(data, mask)
    column = np.full(n, None, dtype=object)
    column[rows] = values
    return infer_array(column)


def _numbers(values: np.ndarray, dtype: type) -> np.ndarray | None:
    try:
        return values.astype(dtype)
    except OverflowError:  # beyond int64: infer_array keeps the digits as text
        return None


def _refuse_value(index: int, label: Callable[[int], str], problem: str) -> None:
    raise MalformedItemError(
        f"{label(index)}: technical_informations {problem}, expected a number or a string; the "
        "server's answer does not follow the API contract (report the payload)",
        item=index,
    )


def _refuse(
    values: Sequence[Any], bad: Callable[[Any], bool], label: Callable, problem: str
) -> None:
    index = next(i for i, v in enumerate(values) if bad(v))
    raise MalformedItemError(
        f"{label(index)}: member 'technical_informations' {problem}; the server's answer does not "
        "follow the API contract (report the payload)",
        item=index,
    )


def _refuse_entry(
    flat: Sequence[Any], rows: np.ndarray, bad: Callable[[Any], bool], label: Callable, problem: str
) -> None:
    position = next((i for i, entry in enumerate(flat) if bad(entry)), None)
    if position is None:
        return
    index = int(rows[position])
    start = int(np.searchsorted(rows, index))
    raise MalformedItemError(
        f"{label(index)}: technical_informations[{position - start}] {problem} "
        f"({flat[position]!r}); the server's answer does not follow the API contract "
        "(report the payload)",
        item=index,
    )
