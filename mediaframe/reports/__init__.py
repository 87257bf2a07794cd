"""Exports safe to open, collection audits and periodic reports.

Exports (each writes atomically and neutralises what a spreadsheet could run):

- :func:`to_csv`, :func:`to_excel`, :func:`to_parquet`, :func:`to_json`, :func:`to_html`;
- :func:`export` picks one by the file's extension;
- :func:`safe_cell` is the one policy for text cells that CSV and Excel share.

Audits: :func:`audit` runs every check of :mod:`~mediaframe.reports.checks` and
:mod:`~mediaframe.reports.fixity` on a search (or on frames already harvested) and returns an
:class:`Audit`, one DataFrame per check.

Reports: :func:`report` counts what was created, updated and published per period.

>>> from mediaframe.reports import to_csv, to_excel
>>> to_excel({"records": df}, "records.xlsx")                     # doctest: +SKIP
"""

from mediaframe.reports.audit import CHECKS, Audit, audit
from mediaframe.reports.cells import FORMULA_POLICIES, risky, safe_cell, safe_frame
from mediaframe.reports.excel import to_excel
from mediaframe.reports.exports import FORMATS, export, read_parquet, to_csv, to_json, to_parquet
from mediaframe.reports.html import Section, provenance_of, render_html, to_html
from mediaframe.reports.periodic import PERIODS, Report, report

__all__ = [
    "CHECKS",
    "FORMATS",
    "FORMULA_POLICIES",
    "PERIODS",
    "Audit",
    "Report",
    "Section",
    "audit",
    "export",
    "provenance_of",
    "read_parquet",
    "render_html",
    "report",
    "risky",
    "safe_cell",
    "safe_frame",
    "to_csv",
    "to_excel",
    "to_html",
    "to_json",
    "to_parquet",
]
