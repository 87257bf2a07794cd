"""Exports safe to open, collection audits and periodic reports.

Exports (each writes atomically and neutralises what a spreadsheet could run):

- :func:`to_csv`, :func:`to_excel`, :func:`to_parquet`, :func:`to_json`, :func:`to_html`;
- :func:`export` picks one by the file's extension;
- :func:`safe_cell` is the one policy for text cells that CSV and Excel share.

>>> from mediaframe.reports import to_csv, to_excel
>>> to_excel({"records": df}, "records.xlsx")                     # doctest: +SKIP
"""

from mediaframe.reports.cells import FORMULA_POLICIES, risky, safe_cell, safe_frame
from mediaframe.reports.excel import to_excel
from mediaframe.reports.exports import FORMATS, export, read_parquet, to_csv, to_json, to_parquet
from mediaframe.reports.html import Section, provenance_of, render_html, to_html

__all__ = [
    "FORMATS",
    "FORMULA_POLICIES",
    "Section",
    "export",
    "provenance_of",
    "read_parquet",
    "render_html",
    "risky",
    "safe_cell",
    "safe_frame",
    "to_csv",
    "to_excel",
    "to_html",
    "to_json",
    "to_parquet",
]
