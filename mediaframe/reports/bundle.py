"""Several tables and a README exported together: what an audit and a report share."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from mediaframe.exceptions import ExportError
from mediaframe.reports.excel import to_excel
from mediaframe.reports.exports import to_csv

__all__ = ["Bundle"]


class Bundle:
    """A mixin: ``tables`` and ``readme()`` give :meth:`to_excel`, :meth:`to_csv` and
    :meth:`export`."""

    #: What the bundle is called in messages ("an audit").
    what: ClassVar[str] = "a bundle"

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        raise NotImplementedError

    def readme(self) -> pd.DataFrame:
        raise NotImplementedError

    def to_html(self, path: str | os.PathLike[str], **options: Any) -> Path:
        raise NotImplementedError

    def to_excel(self, path: str | os.PathLike[str]) -> Path:
        """A workbook: a README sheet, then one sheet per table."""
        return to_excel({"README": self.readme(), **self.tables}, path)

    def to_csv(self, folder: str | os.PathLike[str]) -> list[Path]:
        """One CSV per table in ``folder`` (created), and ``README.csv``; returns the paths."""
        root = Path(folder)
        if root.exists() and not root.is_dir():
            raise ExportError(f"{root} is a file: give a folder for one CSV per table")
        root.mkdir(parents=True, exist_ok=True)
        paths = [to_csv(self.readme(), root / "README.csv")]
        return paths + [to_csv(frame, root / f"{name}.csv") for name, frame in self.tables.items()]

    def export(self, path: str | os.PathLike[str]) -> Path | list[Path]:
        """By the extension: ``.html``, ``.xlsx``; a name without one is a folder of CSV files."""
        suffix = Path(path).suffix.lower()
        if suffix == ".html":
            return self.to_html(path)
        if suffix == ".xlsx":
            return self.to_excel(path)
        if suffix:
            raise ExportError(
                f"{self.what} is written as .html, .xlsx, or a folder of CSV files; not {suffix}"
            )
        return self.to_csv(path)
