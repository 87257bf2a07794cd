"""A frame as a table a terminal can show: as many columns as fit, text cut, controls removed."""

from __future__ import annotations

from typing import Any

import pandas as pd

from mediaframe.inert import neutralised, unsafe

__all__ = ["printable", "render", "unsafe"]

# Values come from a server: an escape sequence could rewrite the terminal, so every control
# character (C0, DEL and C1) is shown as a visible replacement; so is every format character
# (Unicode's Cf: U+202E and the other bidi controls could make a row say something else),
# except the two joiners some scripts and emoji are written with, which reorder nothing
# (mediaframe.normalise.unsafe, the one rule server text is shown by).
_GAP = "  "


def render(
    frame: pd.DataFrame, *, width: int = 100, max_rows: int = 20, max_cell: int = 32
) -> tuple[str, str | None]:
    """The table's text and, when rows or columns were left out, a note saying so.

    Examples
    --------
    >>> text, note = render(pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}))
    >>> print(text)
    a  b
    1  x
    2  y
    """
    shown = frame.head(max_rows) if max_rows >= 0 else frame
    columns: list[tuple[str, list[str], bool]] = []
    used = 0
    for name, column in shown.items():
        header = _cell(name, max_cell)
        cells = [_cell(value, max_cell) for value in column.astype(object)]
        size = max([len(header), *map(len, cells)])
        room = width - used - (len(_GAP) if columns else 0)
        if columns and size > room:
            if room < max(len(header), 12):
                break
            # the last column that fits in part is cut to the room left
            cells = [_cut(cell, room) for cell in cells]
            size = max([len(header), *map(len, cells)])
            stop = True
        else:
            stop = False
        used += (len(_GAP) if columns else 0) + size
        numeric = pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(
            column.dtype
        )
        columns.append((header, cells, numeric))
        if stop:
            break
    lines = []
    sizes = [max([len(h), *map(len, c)]) for h, c, _ in columns]
    lines.append(_GAP.join(h.ljust(s) for (h, _, _), s in zip(columns, sizes, strict=True)))
    for row in range(len(shown)):
        lines.append(
            _GAP.join(
                (c[row].rjust(s) if numeric else c[row].ljust(s))
                for (_, c, numeric), s in zip(columns, sizes, strict=True)
            )
        )
    text = "\n".join(line.rstrip() for line in lines)
    left_rows, left_columns = len(frame) - len(shown), len(frame.columns) - len(columns)
    note = None
    if left_rows > 0 or left_columns > 0:
        parts = []
        if left_rows > 0:
            parts.append(f"{len(shown):,} of {len(frame):,} rows")
        if left_columns > 0:
            parts.append(f"{len(columns)} of {len(frame.columns)} columns")
        note = (
            f"Showing {' and '.join(parts)}; -o FILE (.csv, .xlsx, .parquet, .json, .html) "
            "writes them all."
        )
    return text, note


def printable(text: object, *, one_line: bool = False) -> str:
    """``text`` safe to print to a terminal: controls shown as a replacement character.

    Line breaks and tabs stay, unless ``one_line`` folds every run of whitespace to one space.
    Server text reaches the terminal in error messages and narration as well as in tables.
    """
    value = str(text)
    if one_line:
        value = " ".join(value.split())
    return neutralised(value, kept="" if one_line else "\t\n")


def _cell(value: Any, limit: int) -> str:
    if (
        value is None
        or value is pd.NA
        or value is pd.NaT
        or (isinstance(value, float) and value != value)
    ):
        text = ""
    elif isinstance(value, pd.Timestamp):
        text = value.isoformat(sep=" ")
    else:
        text = str(value)
    return _cut(neutralised(text), limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\N{HORIZONTAL ELLIPSIS}"
