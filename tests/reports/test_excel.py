"""Excel's limits counted as Excel counts them (UTF-16 units), its first days, pyarrow dates."""

from __future__ import annotations

import datetime as dt

import openpyxl
import pandas as pd
import pytest

from mediaframe.reports import to_excel
from mediaframe.reports.excel import sheet_names

CAMERA = "\U0001f4f7"  # one character, two UTF-16 units


def _units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@pytest.mark.parametrize(
    "title",
    [f"{CAMERA} photos of the 2024 summer festival", CAMERA * 31, "a" * 29 + CAMERA + "x"],
    ids=["leading-emoji", "all-emoji", "emoji-across-the-limit"],
)
def test_a_sheet_title_with_emoji_is_cut_to_31_utf16_units_and_written(tmp_path, title):
    frame = pd.DataFrame({"a": [1]})
    to_excel({title: frame, title + "2": frame}, tmp_path / "s.xlsx")
    names = openpyxl.load_workbook(tmp_path / "s.xlsx").sheetnames
    assert len(names) == 2 and len({name.lower() for name in names}) == 2
    assert all(0 < _units(name) <= 31 for name in names)
    assert names[0] == sheet_names([title])[0][0]
    assert title.startswith(names[0])  # cut whole characters, never half of one


def test_dates_before_march_1900_are_iso_text_as_excel_has_no_serial_for_them(tmp_path):
    # Excel counts 29 February 1900, a day that never was: a serial before 1 March 1900 is a
    # day off, and 1900-01-01 (a common "unknown" placeholder) came out as "1900-01-00"
    days = ["1900-01-01", "1900-01-02", "1900-02-28", "1900-03-01"]
    to_excel({"dates": pd.DataFrame({"created_on": pd.to_datetime(days)})}, tmp_path / "d.xlsx")
    book = openpyxl.load_workbook(tmp_path / "d.xlsx")
    cells = [row[0] for row in book["dates"].iter_rows(min_row=2, values_only=True)]
    assert cells == [f"{day}T00:00:00" for day in days[:3]] + [pd.Timestamp(days[3])]
    notes = [note for _, _, note in book["notes"].iter_rows(min_row=2, values_only=True)]
    assert len(notes) == 1 and "3 value(s) written as text" in notes[0]
    assert "before 1 March 1900" in notes[0]


def test_text_past_excels_cell_limit_in_utf16_units_is_cut_whole_and_said(tmp_path):
    text = CAMERA * 20_000 + "END"  # 20,003 characters, 40,003 UTF-16 units
    to_excel({"long": pd.DataFrame({"caption": [text, "short"]})}, tmp_path / "l.xlsx")
    book = openpyxl.load_workbook(tmp_path / "l.xlsx")
    cells = [row[0] for row in book["long"].iter_rows(min_row=2, values_only=True)]
    assert cells == [CAMERA * 16_383, "short"]  # 32,766 units: no half of a character
    notes = list(book["notes"].iter_rows(min_row=2, values_only=True))
    assert notes == [("long", "caption", "1 cell(s) cut to Excel's 32,767 characters")]


def test_pyarrow_dates_are_written_as_numpy_dates_are(tmp_path):
    # a frame read back with read_parquet(dtype_backend="pyarrow") holds timestamp[us, tz=UTC]
    frame = pd.DataFrame(
        {
            "created_on": pd.to_datetime(["2024-05-01T12:00:00+02:00", None], utc=True),
            "taken": pd.to_datetime(["1850-01-01", "2024-01-01"]),
            "day": pd.to_datetime(["2024-02-03", None]).date,
        }
    )
    frame.to_parquet(tmp_path / "r.parquet")
    back = pd.read_parquet(tmp_path / "r.parquet", dtype_backend="pyarrow")
    assert all(isinstance(dtype, pd.ArrowDtype) for dtype in back.dtypes)
    to_excel({"dates": back}, tmp_path / "arrow.xlsx")
    book = openpyxl.load_workbook(tmp_path / "arrow.xlsx")
    rows = list(book["dates"].iter_rows(values_only=True))
    assert rows == [
        ("created_on (UTC)", "taken", "day"),
        (dt.datetime(2024, 5, 1, 10), "1850-01-01T00:00:00", dt.datetime(2024, 2, 3)),
        (None, dt.datetime(2024, 1, 1), None),
    ]
    notes = [row[1:] for row in book["notes"].iter_rows(min_row=2, values_only=True)]
    assert [(column, note[:22]) for column, note in notes] == [
        ("created_on (UTC)", "timezone-aware times w"),
        ("taken", "1 value(s) written as "),
    ]
