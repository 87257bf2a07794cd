"""Several tables and a README exported together: what an audit and a report share."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from mediaframe.exceptions import ExportError
from mediaframe.reports.excel import to_excel
from mediaframe.reports.exports import to_csv
from mediaframe.reports.files import atomic_folder, check_folder, writable

__all__ = ["Bundle"]

# a table's name is a file's name: no folder, no hidden file, nothing a shell or Windows refuses
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ .-]{0,99}")


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
        """One CSV per table and ``README.csv``, in ``folder``; returns the paths.

        The folder is written whole beside ``folder`` and put in its place in one step
        (:func:`~mediaframe.reports.files.atomic_folder`): whoever reads it, and however many
        exports run at once (notebooks, threads, processes), sees one export's files, all of
        them, never a mix of two; a failed or killed export leaves the earlier folder as it was.
        An existing folder is replaced whole, so it may hold only what an export wrote there:
        a folder holding other files is refused (:class:`ExportError`) before anything is
        written. A folder that cannot be replaced (a mount point, or a writable folder in a
        read-only one) is filled in place instead: every file written whole first, then each
        renamed into place, its list of files widened first and cut last; only a reader during
        those renames may see files of two exports, each whole.
        """
        frames = {"README": self.readme(), **self.tables}
        for name in frames:
            if not _FILE_NAME.fullmatch(name):
                raise ExportError(f"a table named {name!r} cannot be a file name")
        names = [f"{name}.csv" for name in frames]
        with atomic_folder(folder, names) as staging:
            for name, frame in frames.items():
                to_csv(frame, staging / f"{name}.csv")
        return [Path(folder) / name for name in names]

    def export(self, path: str | os.PathLike[str]) -> Path | list[Path]:
        """By the extension: ``.html``, ``.xlsx``; a name without one is a folder of CSV files."""
        suffix = self.check_export(path)
        if suffix == ".html":
            return self.to_html(path)
        if suffix == ".xlsx":
            return self.to_excel(path)
        return self.to_csv(path)

    @classmethod
    def check_export(cls, path: str | os.PathLike[str]) -> str:
        """The extension of ``path`` (``""`` for a folder of CSV files), or the
        :class:`ExportError` :meth:`export` would raise there, before the work."""
        suffix = Path(path).suffix.lower()
        if suffix not in ("", ".html", ".xlsx"):
            raise ExportError(
                f"{cls.what} is written as .html, .xlsx, or a folder of CSV files; not {suffix}"
            )
        if suffix:
            writable(path)
        else:
            check_folder(path)  # the tables' names are not known yet: any CSV file may go
        return suffix
