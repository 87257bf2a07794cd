"""Frames to CSV, parquet and JSON files, safe by default, and one door that picks by extension.

Excel is :mod:`~mediaframe.reports.excel`, HTML :mod:`~mediaframe.reports.html`.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from pandas.io.common import get_handle

from mediaframe import __version__
from mediaframe.exceptions import ExportError
from mediaframe.reports.cells import FormulaPolicy, indexed, plain_text, safe_frame
from mediaframe.reports.files import atomic_path, writable

__all__ = [
    "COMPRESSED",
    "FORMATS",
    "check_export",
    "export",
    "read_parquet",
    "to_csv",
    "to_json",
    "to_parquet",
]

#: File extensions :func:`export` writes, with what they hold.
FORMATS = {
    ".csv": "CSV, risky text neutralised with a leading '",
    ".xlsx": "Excel workbook, one sheet per frame, no formulas",
    ".parquet": "parquet, dtypes and provenance kept",
    ".json": "JSON, a list of records",
    ".html": "one self-contained HTML page",
}
#: The formats also written compressed, as the name's last ending says: ``.csv.gz``,
#: ``.json.zip``; any of ``.gz``, ``.bz2``, ``.xz``, ``.zip``, ``.zst``, ``.tar``, ``.tar.gz``,
#: ``.tar.bz2``, ``.tar.xz`` (``.zst`` needs the ``zstandard`` package).
COMPRESSED = (".csv", ".json")
_SECRET_WORDS = ("token", "secret", "password")


def to_csv(
    frame: pd.DataFrame,
    path: str | os.PathLike[str],
    *,
    formula_policy: FormulaPolicy = "escape",
    **to_csv_options: Any,
) -> Path:
    """Write ``frame`` as CSV that a spreadsheet opens without running anything.

    Text cells (and column names) a spreadsheet could take for a formula get a leading ``'``
    (:func:`~mediaframe.reports.safe_cell`); numbers are left alone; lists become ``"; "``-joined
    text. Dates keep their offset (ISO 8601). Rows end in CRLF as RFC 4180 says, so that a CR
    or LF inside a value is always quoted. An index that holds data (a ``groupby`` result's)
    is written as leading columns, row numbers are not (``index=True`` or ``False`` decides
    instead; see :func:`~mediaframe.reports.cells.indexed`). A name ending in ``.gz``, ``.zip``,
    ``.bz2``, ``.xz``, ``.zst`` or ``.tar[.gz]`` is compressed so, as by pandas
    (``compression=None`` writes it plain). Other ``to_csv_options`` go to
    :meth:`pandas.DataFrame.to_csv`, but for ``mode``: the file is always written whole and
    replaces any earlier one once complete, so appending (``mode="a"``) is refused.

    Examples
    --------
    >>> from mediaframe.reports import to_csv
    >>> to_csv(client.records("sunset"), "sunset.csv")                     # doctest: +SKIP
    """
    mode = to_csv_options.pop("mode", "w")
    if mode != "w":
        # the file is written beside and renamed over the earlier one: appended to a new file,
        # the rows would replace the earlier ones rather than follow them
        raise ExportError(
            f"to_csv writes {path} whole and cannot open it with mode={mode!r}: to add rows, "
            "write the earlier and the new rows together, "
            "e.g. to_csv(pd.concat([pd.read_csv(path), frame]), path)"
        )
    to_csv_options.setdefault("lineterminator", "\r\n")
    index = to_csv_options.pop("index", None)
    label = to_csv_options.pop("index_label", None)
    to_csv_options["index"] = False
    to_csv_options["compression"] = _compression(path, to_csv_options.get("compression", "infer"))
    if label is not None and index is not False:  # names the index's columns, as in pandas
        frame = frame.rename_axis([label] if isinstance(label, str) else list(label))
    with atomic_path(path) as partial:
        # the index goes through the same policy as the columns: written as columns
        safe = safe_frame(indexed(frame, index), formula_policy)
        safe.to_csv(partial, **to_csv_options)
    return Path(path)


def to_parquet(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``frame`` as one parquet file that :func:`read_parquet` (or ``pd.read_parquet``)
    reads back identical: dtypes, and the provenance in ``frame.attrs`` (never a secret).

    Examples
    --------
    >>> to_parquet(df, "records.parquet")                                   # doctest: +SKIP
    >>> read_parquet("records.parquet").attrs["harvest"]["query"]           # doctest: +SKIP
    'sunset'
    """
    out = frame.copy(deep=False)
    out.attrs = _plain_attrs(frame.attrs)
    out.attrs.setdefault("mediaframe_version", __version__)
    import pyarrow as pa

    with atomic_path(path) as partial:
        try:
            out.to_parquet(partial, index=indexed(frame) is not frame, engine="pyarrow")
        except UnicodeEncodeError:
            raise  # told, with what to do, by the atomic writer
        except (ValueError, TypeError, pa.ArrowException) as err:
            raise ExportError(f"cannot write {path} as parquet: {_unwritable(out, err)}") from err
    return Path(path)


def _unwritable(frame: pd.DataFrame, err: Exception) -> str:
    """Which column parquet cannot hold, and what to do; else pyarrow's own words."""
    import pyarrow as pa

    for index in range(frame.shape[1]):
        column = frame.iloc[:, index]
        try:
            pa.Array.from_pandas(column)
        except (ValueError, TypeError, pa.ArrowException) as why:
            return (
                f"column {frame.columns[index]!r} ({column.dtype}) holds values parquet cannot "
                f"hold together ({why}); convert it to one type first "
                f"(frame[{frame.columns[index]!r}].astype(str)), or write .csv or .xlsx"
            )
    return str(err)


def read_parquet(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A frame written by :func:`to_parquet`, with its dtypes and ``attrs``."""
    return pd.read_parquet(path, engine="pyarrow")


def to_json(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``frame`` as a JSON list of records, one compact record a line (ISO 8601 dates,
    missing values as null), compressed as the name says (``.json.gz``), as by pandas.

    Values JSON has no type for (a month of a ``to_period`` grouping, an interval, a
    ``Decimal``) are written as their text. Compact, so that the file grows with the data: an
    indented one grew with the square of a nested value's depth (each level indented by its
    depth), which a server chooses.
    """
    records = indexed(frame)  # a list of records has no index: one holding data is a column
    with atomic_path(path) as partial:
        try:
            lines = records.to_json(
                orient="records",
                lines=True,
                date_format="iso",
                force_ascii=False,
                default_handler=str,
            )
            # a line per record: JSON escapes every line break inside a value, so the only
            # ones are between records
            listed = "[" + lines.rstrip("\n").replace("\n", ",\n") + "]\n"
            with get_handle(
                partial, "w", encoding="utf-8", compression=_compression(path)
            ) as handle:
                handle.handle.write(listed)
        except UnicodeEncodeError:
            raise  # told, with what to do, by the atomic writer
        except (ValueError, TypeError, OverflowError) as err:  # pandas' own, bytes it decodes
            raise ExportError(
                f"cannot write {path} as JSON: {err}; convert that column to text first "
                "(frame[column].astype(str)), or write .parquet"
            ) from err
    return Path(path)


#: Compression pandas infers from a file name's ending, longest endings first.
_COMPRESSIONS = (
    (".tar.gz", "tar", "w:gz"),
    (".tar.bz2", "tar", "w:bz2"),
    (".tar.xz", "tar", "w:xz"),
    (".tar", "tar", "w"),
    (".gz", "gzip", None),
    (".bz2", "bz2", None),
    (".xz", "xz", None),
    (".zst", "zstd", None),
    (".zip", "zip", None),
)


def _compression(path: str | os.PathLike[str], given: Any = "infer") -> Any:
    """pandas' ``compression`` for a file written at ``path`` through a partial file beside it:
    what pandas would infer from ``path``'s own name (never the partial's, which says none),
    an archive's member named as the file without the archive's ending."""
    name = Path(path).name
    ending = _ending(name)
    if given == "infer":
        if ending is None:
            return None
        given = {"method": ending[1]} | ({"mode": ending[2]} if ending[1] == "tar" else {})
    elif given in ("zip", "tar"):
        given = {"method": given}
    if isinstance(given, Mapping) and given.get("method") in ("zip", "tar"):
        stem = name[: -len(ending[0])] if ending is not None else name
        given = {"archive_name": stem, **given}
    return given


def _ending(name: str) -> tuple[str, str, str | None] | None:
    """The compression ending of the file name ``name`` (see :data:`_COMPRESSIONS`), if any."""
    return next((e for e in _COMPRESSIONS if name.lower().endswith(e[0])), None)


def export(
    frames: pd.DataFrame | Mapping[str, pd.DataFrame],
    path: str | os.PathLike[str],
    **options: Any,
) -> Path:
    """Write through the safe writer the file's extension names (see :data:`FORMATS`).

    Several frames go to one workbook or page (``.xlsx``, ``.html``); a single-table format
    takes one frame.

    Raises
    ------
    ExportError
        The extension is not one of :data:`FORMATS`, or the file cannot be written.
    """
    from mediaframe.reports.excel import to_excel
    from mediaframe.reports.html import to_html

    suffix = _suffix(path)
    if suffix == ".xlsx":
        return to_excel(frames, path, **options)
    if suffix == ".html":
        return to_html(frames, path, **options)
    frame = _one(frames, suffix)
    if suffix == ".csv":
        return to_csv(frame, path, **options)
    if suffix == ".parquet":
        return to_parquet(frame, path)
    return to_json(frame, path)


def check_export(path: str | os.PathLike[str]) -> None:
    """Raise the :class:`ExportError` that :func:`export` would, before the work: the extension
    names no format, or the file cannot be written there (no such folder, a folder)."""
    _suffix(path)
    writable(path)


def _suffix(path: str | os.PathLike[str]) -> str:
    """The format ``path``'s name says (see :data:`FORMATS`), behind a compression ending
    (:data:`COMPRESSED`) for the formats written compressed; refused, saying what to write,
    where the name says none, or a compression the format cannot take."""
    ending = _ending(Path(path).name)
    plain = Path(Path(path).name[: -len(ending[0])] if ending else Path(path).name)
    suffix = plain.suffix.lower()
    if suffix not in FORMATS:
        raise ExportError(
            f"cannot tell the format of {path}: end the file name with one of "
            f"{', '.join(FORMATS)}, or a compressed {' or '.join(COMPRESSED)} "
            f"(e.g. {plain.stem}.csv.gz)"
        )
    if ending is None:
        return suffix
    if suffix not in COMPRESSED:
        why = "parquet compresses itself" if suffix == ".parquet" else f"{suffix} is not compressed"
        raise ExportError(
            f"cannot write {path}: {why}; write {plain} uncompressed, or "
            f"{plain.stem}.csv{ending[0]} (or .json{ending[0]})"
        )
    if ending[1] == "zstd" and importlib.util.find_spec("zstandard") is None:
        raise ExportError(
            f"writing {path} needs the zstandard package: pip install zstandard, "
            "or compress it with .gz, .bz2 or .xz"
        )
    return suffix


def _one(frames: pd.DataFrame | Mapping[str, pd.DataFrame], suffix: str) -> pd.DataFrame:
    if isinstance(frames, pd.DataFrame):
        return frames
    if len(frames) == 1:
        return next(iter(frames.values()))
    raise ExportError(
        f"a {suffix} file holds one table, and there are {len(frames)}: write .xlsx or .html, "
        "or one file per table"
    )


def _plain_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """``attrs`` as plain JSON values (parquet keeps them as JSON), secrets refused."""
    plain = json.loads(json.dumps(dict(attrs), default=lambda v: str(plain_text(v))))
    _refuse_secrets(plain)
    return dict(plain)


def _refuse_secrets(value: Any) -> None:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if any(word in str(key).lower() for word in _SECRET_WORDS):
                raise ExportError(f"refusing to write {key!r} from the frame's attrs into a file")
            _refuse_secrets(inner)
    elif isinstance(value, list):
        for inner in value:
            _refuse_secrets(inner)
