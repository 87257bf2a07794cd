"""What a page says of a table it shows no row of."""

from __future__ import annotations

import re

import pandas as pd

from mediaframe.reports import render_html


def _section_text(page: str) -> str:
    body = page.split("<section", 1)[1].split("</section>", 1)[0]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


def test_a_table_cut_to_no_rows_says_how_many_it_left_out_not_that_there_are_none():
    text = _section_text(render_html(pd.DataFrame({"a": range(50)}), max_rows=0))
    assert "No rows" not in text
    assert "Showing the first 0 of 50 rows: 50 rows were left out" in text


def test_rows_without_columns_are_counted_and_an_empty_table_says_no_rows():
    assert "5 rows, no columns." in _section_text(render_html(pd.DataFrame(index=range(5))))
    assert "1 row, no columns." in _section_text(render_html(pd.DataFrame(index=range(1))))
    assert "No rows." in _section_text(render_html(pd.DataFrame({"a": []})))
