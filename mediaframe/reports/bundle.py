"""Several tables and a README exported together: what an audit and a report share."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from mediaframe.exceptions import ExportError
from mediaframe.reports.excel import to_excel
from mediaframe.reports.exports import to_csv
from mediaframe.reports.files import writable

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
        """One CSV per table in ``folder`` (created), and ``README.csv``; returns the paths."""
        root = Path(folder)
        if root.exists() and not root.is_dir():
            raise ExportError(f"{root} is a file: give a folder for one CSV per table")
        root.mkdir(parents=True, exist_ok=True)
        # Every file is written first, in a hidden folder inside, then all are renamed into place
        # at once: a failure or a kill while writing leaves the earlier files, none of them
        # mixed with new ones (the folder itself is not replaced: it may hold other files).
        staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=root))
        try:
            frames = {"README": self.readme(), **self.tables}
            for name in frames:
                if not _FILE_NAME.fullmatch(name):
                    raise ExportError(f"a table named {name!r} cannot be a file name")
            written = [to_csv(frame, staging / f"{name}.csv") for name, frame in frames.items()]
            paths = []
            for file in written:
                os.replace(file, root / file.name)
                paths.append(root / file.name)
        except OSError as err:
            raise ExportError(f"cannot write into {root}: {err.strerror or err}") from err
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return paths

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
        elif Path(path).exists() and not Path(path).is_dir():
            raise ExportError(f"{path} is a file: give a folder for one CSV per table")
        return suffix
