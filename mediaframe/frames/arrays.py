"""Typed pandas arrays from decoded JSON values: declared conversions and the whole-input rule."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from mediaframe.exceptions import MalformedItemError, MalformedItemWarning

__all__ = [
    "TIMESTAMP",
    "column_arrays",
    "infer_array",
    "object_values",
    "render_text",
    "text",
    "to_array",
    "warn_unreadable",
]

#: Microseconds, not nanoseconds: pandas 3 parses ISO strings to this unit, it covers the years
#: 1-9999 (a nanosecond column overflows outside 1677-2262) and it round-trips through parquet.
TIMESTAMP = "datetime64[us, UTC]"

#: A column's values as the helpers take them: a list, or a numpy array of objects.
Values = Sequence[Any] | np.ndarray

_NONE = type(None)
_NUMBERS = frozenset({int, float})
_SCALARS = frozenset({bool, int, float, str})

#: What each declared dtype accepts, as the exact Python types a JSON decoder produces.
_ACCEPTS: dict[str, frozenset[type]] = {
    "Int64": frozenset({int}),
    "Float64": _NUMBERS,
    "boolean": frozenset({bool}),
    "string": frozenset({str}),
    "category": frozenset({str}),
    TIMESTAMP: frozenset({str}),
}

_EXPECTED = {
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    str: "a string",
}

Label = Callable[[int], str]

#: Text that unambiguously writes an integer, a JSON number, or a boolean.
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_BOOLEAN_TEXT = {"true": True, "false": False, "1": True, "0": False}


def to_array(
    values: Sequence[Any], dtype: str, *, member: str, label: Label, strict: bool = True
) -> Any:
    """Convert one declared column, refusing (``strict``) or mending values of the wrong type.

    Parameters
    ----------
    values : the column's values, ``None`` where the member is null or absent.
    dtype : a declared dtype: ``Int64``, ``Float64``, ``boolean``, ``string``, ``category`` or
        :data:`TIMESTAMP`.
    member : the API member the values come from, for messages.
    label : names the item at a position, for messages.
    strict : for keys and the members an item needs: a value of the wrong type raises. Otherwise
        (a minor member) a value that says one thing only is coerced (a numeric string where a
        number is declared, ``"true"``/``"false"``/``0``/``1`` for a boolean, a number or boolean
        where text is), and any other is missing, with one :class:`MalformedItemWarning` naming
        the member and how many items.

    Raises
    ------
    MalformedItemError
        ``strict``, and a value has another JSON type than the column declares; the message
        names the item.
    """
    accepted = _ACCEPTS[dtype]
    if dtype == "string":
        try:  # pyarrow checks every value is a str, faster than a pass in Python
            return text(values)
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            if strict:
                _refuse(values, accepted, member=member, label=label)
                raise
            return text(_mended(values, dtype, member=member, label=label))
    kinds = set(map(type, values))
    kinds.discard(_NONE)
    if not kinds <= accepted:
        if strict:
            _refuse(values, accepted, member=member, label=label)
        values = _mended(values, dtype, member=member, label=label)
    if dtype == "category":
        return categorical(values)
    if dtype == TIMESTAMP:
        return timestamps(values, member=member, label=label, strict=strict)
    if dtype == "Int64":
        return _integers(values, member=member, label=label, strict=strict)
    return pd.array(values, dtype=dtype)


def _mended(values: Values, dtype: str, *, member: str, label: Label) -> list[Any]:
    """The values with wrong types coerced where unambiguous, else ``None`` (warned once)."""
    accepted = _ACCEPTS[dtype]
    mended = list(values)
    unreadable = []
    for index, value in enumerate(mended):
        if value is None or type(value) in accepted:
            continue
        mended[index] = _coerced(value, dtype)
        if mended[index] is None:
            unreadable.append(index)
    warn_unreadable(member, unreadable, len(mended), label, values)
    return mended


def _coerced(value: Any, dtype: str) -> Any:
    """``value`` as ``dtype`` when it can only mean one thing, else ``None``."""
    kind = type(value)
    if kind is str:
        written = value.strip()
        if dtype == "Int64" and _INTEGER_TEXT.fullmatch(written):
            return int(written)
        if dtype == "Float64" and _NUMBER_TEXT.fullmatch(written):
            number = float(written)
            return number if math.isfinite(number) else None
        if dtype == "boolean":
            return _BOOLEAN_TEXT.get(written.lower())
        return None
    if dtype in ("string", "category") and kind in _SCALARS:
        return render_text(value)
    if kind is float and dtype == "Int64" and value.is_integer():
        return int(value)
    if kind is int and dtype == "boolean" and value in (0, 1):
        return bool(value)
    return None


def warn_unreadable(
    member: str,
    positions: Sequence[int],
    n: int,
    label: Label,
    values: Values | None = None,
    *,
    example: Any = None,
) -> None:
    """One :class:`MalformedItemWarning` for a minor member unreadable in items ``positions``.

    The message shows the first such item and its value (``values[positions[0]]``, or
    ``example``).
    """
    if not len(positions):
        return
    first = positions[0]
    shown = values[first] if values is not None else example
    warnings.warn(
        f"member {member!r} could not be read in {len(positions)} of {n} item(s) and is kept "
        f"as missing there (first: {label(first)}, {_describe(shown)}); the server's "
        "answer does not follow the API contract",
        MalformedItemWarning,
        stacklevel=2,
    )


def infer_array(values: Values) -> Any:
    """Type a column by every value it holds: the rule for technical names and unknown members.

    All integers give ``Int64``; integers and floats give ``Float64``; all booleans give
    ``boolean``; any string among scalars gives ``string``, the other scalars rendered by
    :func:`render_text`; nested values (objects, arrays) keep the column as ``object`` with the
    raw values; a column of nulls only is ``object`` holding ``None``.
    """
    kinds = set(map(type, values))
    kinds.discard(_NONE)
    if not kinds or not kinds <= _SCALARS:
        # fromiter keeps each value whole where np.array would turn nested lists into dimensions.
        return np.fromiter(values, dtype=object, count=len(values))
    if kinds == {int}:
        try:
            return _integers(values, member="", label=str)
        except MalformedItemError:
            pass  # beyond int64: the exact digits survive as text
    elif kinds <= _NUMBERS:
        return pd.array(values, dtype="Float64")
    elif kinds == {bool}:
        return pd.array(values, dtype="boolean")
    if kinds != {str}:
        values = [None if v is None else render_text(v) for v in values]
    return text(values)


def text(values: Values) -> pd.arrays.ArrowStringArray:
    """A ``string`` array (pyarrow storage, ``pd.NA`` for missing) from ``str`` or ``None`` values.

    Built with pyarrow directly: ``pd.array(..., dtype="string")`` first re-checks every value in
    Python, which doubles the cost of the most common column type; the result is the same array.
    """
    return pd.arrays.ArrowStringArray(pa.array(values, type=pa.large_string()))


def render_text(value: bool | int | float | str) -> str:
    """Write a scalar as text the way it reads in JSON, integral floats without ``.0``.

    Integral floats lose their ``.0`` because a ``Float64`` column no longer knows whether ``5.0``
    arrived as ``5`` or ``5.0``; rendering by value keeps a per-page frame and a whole-input frame
    identical when a later page turns the column into text.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def column_arrays(df: pd.DataFrame) -> Iterator[Any]:
    """The arrays of ``df``'s columns, in order (numpy or extension arrays), without a Series for
    each: ``df.items()`` builds one per column, with an index view and a deep copy of ``attrs``,
    which cost more than joining or converting a page's columns."""
    arrays = getattr(df, "_iter_column_arrays", None)  # pandas' own, private: checked for
    if arrays is None:
        return (column.array for _, column in df.items())
    iterated: Iterator[Any] = arrays()
    return iterated


def object_values(array: Any) -> np.ndarray:
    """Return a column's values as Python objects with ``None`` for missing, to be typed again."""
    if isinstance(array, pd.Series):
        array = array.array
    if isinstance(array, pd.Categorical):
        return _categorical_values(array)
    if isinstance(array, pd.api.extensions.ExtensionArray):
        return array.to_numpy(dtype=object, na_value=None)
    return np.asarray(array, dtype=object)


def _categorical_values(array: pd.Categorical) -> np.ndarray:
    out = np.array(array.astype(object), dtype=object)
    out[array.isna()] = None
    return out


def categorical(values: Sequence[Any]) -> pd.Categorical:
    """Build a ``category`` array whose categories are sorted, so page order cannot change them.

    A column without any value gets the single unused category ``""``: pyarrow reads an empty
    dictionary back with other categories than were written, and this keeps the round trip exact.
    """
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=True)
    if len(uniques) == 0:
        uniques = [""]
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype="str"))


def timestamps(
    values: Sequence[Any], *, member: str, label: Label, strict: bool = True
) -> pd.DatetimeIndex:
    """Parse ISO 8601 strings to UTC timestamps; placeholders before year 1 become NaT.

    Servers write an unset date as ``-0001-11-30T00:00:00+00:09``: a negative year (or year 0),
    which no calendar holds, so any such value is missing rather than an error. Text that is no
    date raises when ``strict``, else is missing with one :class:`MalformedItemWarning`.
    """
    cleaned = [None if v is None or v[:1] == "-" or v[:4] == "0000" else v for v in values]
    try:
        parsed = pd.to_datetime(cleaned, format="ISO8601", utc=True)
    except (ValueError, OverflowError):
        if strict:
            _refuse_dates(cleaned, member=member, label=label)
            raise
        unreadable = [i for i, value in enumerate(cleaned) if not _is_date(value)]
        warn_unreadable(member, unreadable, len(cleaned), label, cleaned)
        for index in unreadable:
            cleaned[index] = None
        parsed = pd.to_datetime(cleaned, format="ISO8601", utc=True)
    return parsed.as_unit("us")


def _is_date(value: str | None) -> bool:
    try:
        pd.to_datetime(value, format="ISO8601", utc=True)
    except (ValueError, OverflowError):
        return False
    return True


def _integers(values: Values, *, member: str, label: Label, strict: bool = True) -> Any:
    try:
        return pd.array(values, dtype="Int64")
    except (OverflowError, TypeError, ValueError):
        beyond = [
            index
            for index, value in enumerate(values)
            if value is not None and not -(2**63) <= value < 2**63
        ]
        if beyond and strict:
            index = beyond[0]
            raise MalformedItemError(
                f"{label(index)}: member {member!r} is {values[index]}, beyond a 64-bit integer; "
                "the server sent an id or count mediaframe cannot hold",
                item=index,
            ) from None
        if not beyond:
            raise
        warn_unreadable(member, beyond, len(values), label, values)
        kept = list(values)
        for index in beyond:
            kept[index] = None
        return pd.array(kept, dtype="Int64")


def _refuse(values: Sequence[Any], accepted: frozenset[type], *, member: str, label: Label) -> None:
    for index, value in enumerate(values):
        if value is not None and type(value) not in accepted:
            wanted = " or ".join(sorted({_EXPECTED[kind] for kind in accepted}))
            raise MalformedItemError(
                f"{label(index)}: member {member!r} is {_describe(value)}, expected {wanted}; "
                "the server's answer does not follow the API contract (report the payload)",
                item=index,
            )


def _refuse_dates(values: Sequence[Any], *, member: str, label: Label) -> None:
    for index, value in enumerate(values):
        if value is None:
            continue
        try:
            pd.to_datetime(value, format="ISO8601", utc=True)
        except (ValueError, OverflowError):
            raise MalformedItemError(
                f"{label(index)}: member {member!r} is {value!r}, not an ISO 8601 date-time; "
                "the server's answer does not follow the API contract (report the payload)",
                item=index,
            ) from None


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return f"{type(value).__name__} {value!r}"
