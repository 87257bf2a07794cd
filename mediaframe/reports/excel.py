"""Frames to an ``.xlsx`` workbook that opens safely in a spreadsheet.

Written with xlsxwriter so that no string ever becomes a formula, a link or a number; text a
spreadsheet could take for a formula keeps its value and gets Excel's quote-prefix style, so that
editing the cell does not turn it into one either. Excel's own limits are met rather than hit:
sheet names of at most 31 characters (counted as Excel counts them, in UTF-16 units: an emoji is
two), 1,048,576 rows a sheet (longer frames go on over several sheets), 32,767 characters a cell
(counted so too; longer text is cut), 15 significant digits a number (a longer integer, or whole
float in a column of ids, is written as text, not rounded), no date before 1 March 1900 (ISO
text), no infinity (``inf`` text rather than a ``=1/0`` formula), and no timezone-aware dates
(they are written in UTC, which the header says). What was changed is
listed in a ``notes`` sheet.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from mediaframe.exceptions import ExportError, InvalidParameterError, MediaframeError
from mediaframe.reports.cells import FormulaPolicy, indexed, plain_text, risky
from mediaframe.reports.files import atomic_path

__all__ = ["EXCEL_CELL_CHARS", "EXCEL_COLUMNS", "EXCEL_ROWS", "sheet_names", "to_excel"]

#: Rows in a worksheet, header included.
EXCEL_ROWS = 1_048_576
#: Columns in a worksheet: past it, xlsxwriter drops cells without a word.
EXCEL_COLUMNS = 16_384
#: Characters in a cell.
EXCEL_CELL_CHARS = 32_767
#: Significant digits Excel keeps of a number: a longer integer (an id) is rounded on opening.
EXCEL_DIGITS = 15
_SHEET_CHARS = 31
_BAD_SHEET_CHARS = re.compile(r"[\[\]:*?/\\\x00-\x1f]")
_WIDTH = (8, 60)

Frames: TypeAlias = pd.DataFrame | Mapping[str, pd.DataFrame] | Iterable[pd.DataFrame]


def to_excel(
    frames: Frames,
    path: str | os.PathLike[str],
    *,
    formula_policy: FormulaPolicy = "escape",
) -> Path:
    """Write one frame, or several (one sheet each), to an ``.xlsx`` file safe to open.

    Parameters
    ----------
    frames : a DataFrame, a mapping of sheet title to DataFrame, or a sequence of DataFrames.
        Titles are made valid sheet names (at most 31 characters, no ``[]:*?/\\``, unique).
    path : the file to write; an earlier file there is replaced only once the new one is whole.
    formula_policy : ``"escape"`` (default) marks text that could run as a formula with Excel's
        quote prefix; ``"off"`` writes it plain. Either way no string is written as a formula.

    Returns
    -------
    The path written.

    Examples
    --------
    >>> from mediaframe.reports import to_excel
    >>> to_excel({"records": df, "stories": stories}, "export.xlsx")       # doctest: +SKIP
    """
    if formula_policy not in ("escape", "off"):
        raise InvalidParameterError(
            f"formula_policy must be 'escape' or 'off', not {formula_policy!r}"
        )
    import xlsxwriter

    titled = _titled(frames)
    for title, frame in titled:
        if len(frame.columns) > EXCEL_COLUMNS:
            raise ExportError(
                f"{title!r} has {len(frame.columns):,} columns and an Excel sheet holds "
                f"{EXCEL_COLUMNS:,}: write .parquet or .csv, or select the columns you need"
            )
    # xlsxwriter keeps each sheet's rows in a temporary file it deletes only on close(): in a
    # folder of their own, removed whatever happens (an error, a Ctrl-C), none is left behind
    with atomic_path(path) as partial, tempfile.TemporaryDirectory(prefix="mediaframe-") as rows:
        book = xlsxwriter.Workbook(
            str(partial),
            {
                "strings_to_formulas": False,
                "strings_to_urls": False,
                "strings_to_numbers": False,
                "nan_inf_to_errors": True,
                "constant_memory": True,
                "tmpdir": rows,
            },
        )
        try:
            _fill(book, titled, formula_policy)
            book.close()
        except Exception as err:  # xlsxwriter raises its own exceptions and OSError
            if isinstance(err, MediaframeError | UnicodeEncodeError):
                raise  # the second told, with what to do, by the atomic writer
            raise ExportError(f"cannot write {path}: {err}") from err
        finally:
            for sheet in book.worksheets():  # left open by an error or a Ctrl-C
                handle = getattr(sheet, "row_data_fh", None)
                if handle is not None and not handle.closed:
                    handle.close()
    return Path(path)


def _fill(book: Any, titled: list[tuple[str, pd.DataFrame]], policy: FormulaPolicy) -> None:
    """Write the frames' sheets, and the notes sheet if something was changed."""
    notes: list[dict[str, str]] = []
    styles = _Styles(book)
    names = sheet_names([title for title, _ in titled], rows=[len(f) for _, f in titled])
    for (title, frame), sheets in zip(titled, names, strict=True):
        for number, name in enumerate(sheets):
            start = number * (EXCEL_ROWS - 1)
            part = frame.iloc[start : start + EXCEL_ROWS - 1]
            if len(sheets) > 1:
                notes.append(
                    _note(name, "", f"rows {start + 1:,}-{start + len(part):,} of {title!r}")
                )
            _write_sheet(book.add_worksheet(name), part, styles, notes, name, policy)
    if notes:
        used = {name for sheets in names for name in sheets}
        notes_frame = pd.DataFrame(notes, columns=["sheet", "column", "note"])
        name = _unique("notes", used)
        _write_sheet(book.add_worksheet(name), notes_frame, styles, [], name, policy)


def sheet_names(titles: list[str], *, rows: list[int] | None = None) -> list[list[str]]:
    """Valid, unique sheet names for each title: one per sheet its rows need.

    Examples
    --------
    >>> sheet_names(["a/b", "A/B", "x" * 40])
    [['a_b'], ['A_B (2)'], ['xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx']]
    """
    used: set[str] = set()
    out = []
    for index, title in enumerate(titles):
        count = 1 if rows is None else max(1, math.ceil(rows[index] / (EXCEL_ROWS - 1)))
        base = _clean(title)
        names = [_unique(base if n == 0 else f"{base} ({n + 1})", used) for n in range(count)]
        out.append(names)
    return out


def _clean(title: str) -> str:
    name = _trimmed(_BAD_SHEET_CHARS.sub("_", str(title)))
    # trimmed again once cut: a cut may end it on an apostrophe, which Excel refuses
    return _trimmed(_cut(name, _SHEET_CHARS)) or "sheet"


def _cut(text: str, units: int) -> str:
    """``text`` cut to at most ``units`` UTF-16 code units, as Excel counts its limits (a
    character past U+FFFF, an emoji, counts two), never between the two halves of one."""
    if len(text) * 2 <= units:  # the quick answer for all but the longest texts
        return text
    count = 0
    for index, char in enumerate(text):
        count += 2 if ord(char) > 0xFFFF else 1
        if count > units:
            return text[:index]
    return text


def _trimmed(name: str) -> str:
    return name.strip().strip("'").strip()


def _unique(name: str, used: set[str]) -> str:
    # Excel compares sheet names without case, and reserves "History".
    candidate, number = _cut(name, _SHEET_CHARS), 1
    while candidate.lower() in used or candidate.lower() == "history":
        number += 1
        suffix = f" ({number})"
        candidate = _cut(name, _SHEET_CHARS - len(suffix)) + suffix
    used.add(candidate.lower())
    return candidate


def _titled(frames: Frames) -> list[tuple[str, pd.DataFrame]]:
    """Each frame with its sheet title, and its index as columns if it holds data."""
    pairs = _pairs(frames)
    return [(title, indexed(frame)) for title, frame in pairs]


def _pairs(frames: Frames) -> list[tuple[str, pd.DataFrame]]:
    if isinstance(frames, pd.DataFrame):
        return [(_title_of(frames), frames)]
    if isinstance(frames, Mapping):
        pairs = [(str(title), frame) for title, frame in frames.items()]
    else:
        pairs = [(_title_of(frame), frame) for frame in frames]
    for title, frame in pairs:
        if not isinstance(frame, pd.DataFrame):
            raise InvalidParameterError(
                f"to_excel writes DataFrames; {title!r} is a {type(frame).__name__}"
            )
    if not pairs:
        raise InvalidParameterError("to_excel needs at least one DataFrame")
    return pairs


def _title_of(frame: Any) -> str:
    attrs = getattr(frame, "attrs", {}) or {}
    harvest = attrs.get("harvest")
    return str(harvest.get("kind")) if isinstance(harvest, Mapping) else "data"


class _Styles:
    def __init__(self, book: Any) -> None:
        header = {"bold": True, "bg_color": "#DDE4EE", "bottom": 1, "text_wrap": False}
        self.header = book.add_format(header)
        self.header_quoted = book.add_format({**header, "quote_prefix": True})
        self.quoted = book.add_format({"quote_prefix": True})
        self.datetime = book.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"})


@dataclasses.dataclass
class _Column:
    header: str
    write: Callable[..., None]
    values: list[Any]
    width: int
    #: Whether some value may be one Excel cannot hold as it is (checked cell by cell): an
    #: integer of more digits than it keeps, a date before its calendar starts.
    checked: bool = False


def _write_sheet(
    sheet: Any,
    frame: pd.DataFrame,
    styles: _Styles,
    notes: list[dict[str, str]],
    name: str,
    policy: FormulaPolicy,
) -> None:
    columns = [
        _column(str(header), frame[header] if frame.columns.is_unique else frame.iloc[:, i])
        for i, header in enumerate(frame.columns)
    ]
    for index, column in enumerate(columns):
        quoted = policy == "escape" and risky(column.header)
        style = styles.header_quoted if quoted else styles.header
        sheet.write_string(0, index, column.header, style)
        sheet.set_column(index, index, max(_WIDTH[0], min(column.width, _WIDTH[1])))
        if column.header.endswith(" (UTC)"):
            notes.append(_note(name, column.header, "timezone-aware times written in UTC"))
    cut: dict[str, int] = {}
    as_text: dict[str, int] = {}
    for row in range(len(frame)):
        for index, column in enumerate(columns):
            value = column.values[row]
            if value is None:
                continue
            if column.write is _text and isinstance(value, str):
                short = _cut(value, EXCEL_CELL_CHARS)  # in UTF-16 units: an emoji is two
                if len(short) < len(value):
                    value = short
                    cut[column.header] = cut.get(column.header, 0) + 1
                style = styles.quoted if policy == "escape" and risky(value) else None
                sheet.write_string(row + 1, index, value, style)
            elif (column.checked or column.write is _text) and (text := _unheld(value)):
                # Excel would round 12345678901234567 to 12345678901234600, show a date of
                # 1850 as ####, and an infinity as #DIV/0! (xlsxwriter's =1/0): the text keeps it
                style = styles.quoted if policy == "escape" and risky(text) else None
                sheet.write_string(row + 1, index, text, style)
                as_text[column.header] = as_text.get(column.header, 0) + 1
            elif column.write is _text:
                _scalar(sheet, row + 1, index, value, styles)  # a number among text
            else:
                column.write(sheet, row + 1, index, value, styles)
    for header, count in cut.items():
        notes.append(
            _note(name, header, f"{count:,} cell(s) cut to Excel's {EXCEL_CELL_CHARS:,} characters")
        )
    for header, count in as_text.items():
        notes.append(
            _note(
                name,
                header,
                f"{count:,} value(s) written as text, which Excel would otherwise change: "
                f"integers of more than {EXCEL_DIGITS} digits, dates before 1 March 1900, "
                "infinities",
            )
        )
    if columns:
        sheet.freeze_panes(1, 0)
        sheet.autofilter(0, 0, max(len(frame), 1), len(columns) - 1)


def _column(header: str, column: pd.Series) -> _Column:
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype) and pd.api.types.is_datetime64_any_dtype(
        dtype.categories.dtype
    ):  # dates made categorical are still dates (a missing one is NaT)
        return _column(header, column.astype(dtype.categories.dtype))
    if isinstance(dtype, pd.ArrowDtype) and dtype.kind == "M":
        # pyarrow's dates and times (read_parquet(dtype_backend="pyarrow")) as numpy's, which
        # the rules below know: a date cell, UTC said in the header, early dates as text
        return _column(header, column.astype(dtype.pyarrow_dtype.to_pandas_dtype()))
    if isinstance(dtype, pd.DatetimeTZDtype):
        column = column.dt.tz_convert("UTC").dt.tz_localize(None)
        header = f"{header} (UTC)"
        return _Column(header, _datetime, _objects(column), 20, _early(column))
    if pd.api.types.is_datetime64_dtype(dtype):
        return _Column(header, _datetime, _objects(column), 20, _early(column))
    if pd.api.types.is_bool_dtype(dtype):
        return _Column(header, _boolean, _objects(column), len(header) + 2)
    if pd.api.types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype):
        return _Column(
            header, _number, _objects(column), max(len(header) + 2, 12), _unheld_numbers(column)
        )
    # a column of mixed values keeps its numbers and booleans as such (a negative number stays
    # a number); everything else is text
    values = [
        None if _missing(v) else v if _is_scalar(v) else str(plain_text(v))
        for v in column.astype(object)
    ]
    sample = [len(str(v)) for v in values[:200] if v is not None]
    return _Column(header, _text, values, max([len(header) + 2, *sample]))


def _objects(column: pd.Series) -> list[Any]:
    return [None if _missing(v) else v for v in column.astype(object)]


def _missing(value: Any) -> bool:
    if value is None or value is pd.NaT or value is pd.NA:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # arrays and other containers
        return False


def _is_scalar(value: Any) -> bool:
    """A number or boolean Excel holds as it is (finite: Excel has no NaN or infinity)."""
    if isinstance(value, bool | np.bool_):
        return True
    return isinstance(value, int | float | np.integer | np.floating) and math.isfinite(value)


_EXACT = 10**EXCEL_DIGITS
#: Past it a whole float is no id (ids are 64-bit integers): a measurement, kept a number.
_IDS = 2.0**64


#: The first day Excel's serial numbers say right: it counts a 29 February 1900 that never was,
#: so that 1900-01-01 (a common "unknown" placeholder) would show as 1900-01-00.
_FIRST_DAY = pd.Timestamp("1900-03-01")


def _unheld_numbers(column: pd.Series) -> bool:
    """Whether a numeric column may hold numbers Excel cannot hold as they are: an infinity, an
    integer past 15 digits in an integer column, or in a float one (ids that went through a
    NaN, or read back from a CSV) whose every value is whole. A float column with a fraction
    anywhere holds measurements, which stay numbers, rounded as Excel rounds them."""
    values = column.dropna()
    if pd.api.types.is_complex_dtype(values.dtype):
        return False  # refused when written: Excel has no complex numbers
    if not pd.api.types.is_integer_dtype(values.dtype):
        finite = np.isfinite(values.to_numpy(dtype=float))
        if not finite.all():
            return True
        if not bool((values == values.round()).all()):
            return False
    return bool(((values >= _EXACT) | (values <= -_EXACT)).any())


def _early(column: pd.Series) -> bool:
    return bool((column < _FIRST_DAY).any())


def _unheld(value: Any) -> str:
    """``value`` as text if Excel cannot hold it as it is (else ""): an integer of more
    significant digits than it keeps, an infinity, or a date before the first day its
    calendar says right (1 March 1900)."""
    if isinstance(value, pd.Timestamp | dt.datetime):
        return value.isoformat() if value < _FIRST_DAY else ""
    if isinstance(value, bool | np.bool_):
        return ""
    if isinstance(value, float | np.floating):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        # an id in a float column: whole, within an integer's range, and of more digits than
        # Excel keeps as the float says them (3.3e25 says two: a measurement, kept a number)
        number = float(value)
        digits = repr(abs(number)).split("e")[0].replace(".", "").strip("0")
        if not number.is_integer() or abs(number) >= _IDS or len(digits) <= EXCEL_DIGITS:
            return ""
    elif not isinstance(value, int | np.integer):
        return ""
    text = str(int(value))
    return text if len(text.lstrip("-").rstrip("0")) > EXCEL_DIGITS else ""


def _scalar(sheet: Any, row: int, col: int, value: Any, styles: _Styles) -> None:
    if isinstance(value, bool | np.bool_):
        _boolean(sheet, row, col, value, styles)
    else:
        _number(sheet, row, col, value, styles)


def _text(sheet: Any, row: int, col: int, value: Any, styles: _Styles) -> None:
    sheet.write_string(row, col, value)


def _datetime(sheet: Any, row: int, col: int, value: Any, styles: _Styles) -> None:
    sheet.write_datetime(row, col, value.to_pydatetime(warn=False), styles.datetime)


def _boolean(sheet: Any, row: int, col: int, value: Any, styles: _Styles) -> None:
    sheet.write_boolean(row, col, bool(value))


def _number(sheet: Any, row: int, col: int, value: Any, styles: _Styles) -> None:
    sheet.write_number(row, col, float(value))


def _note(sheet: str, column: str, note: str) -> dict[str, str]:
    return {"sheet": sheet, "column": column, "note": note}
