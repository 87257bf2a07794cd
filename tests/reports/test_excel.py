"""Excel's limits counted as Excel counts them (UTF-16 units), its first days, pyarrow dates."""

from __future__ import annotations

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
