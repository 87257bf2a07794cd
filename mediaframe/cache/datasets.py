"""Frames to parquet datasets and back: the only parquet writer and reader of mediaframe.

A dataset is an ordinary hive-partitioned parquet folder (``databox_id=1/collection_id=2/
part-0.parquet``) that DuckDB, Dask and Spark read as it is. Every file carries the provenance
and the frame's dtypes in its Arrow metadata under the key ``mediaframe``, so
:func:`read_frame` gives back the identical frame; writes are atomic (staged, then swapped in).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import posixpath
import threading
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from mediaframe import __version__
from mediaframe._process import give_back_memory, reader_threads
from mediaframe.exceptions import CacheCorruptError, CacheError, CacheMissError
from mediaframe.frames.arrays import column_arrays
from mediaframe.futures import finished, run_on

__all__ = ["PARTITIONS", "SCHEMA_VERSION", "read_frame", "write_frame"]

#: Bumped whenever the layout or the frame schema changes incompatibly; older caches are refetched.
SCHEMA_VERSION = 1
#: Partition columns of record and story datasets, outermost first.
PARTITIONS = ("databox_id", "collection_id")
META_KEY = b"mediaframe"
_SECRET_WORDS = ("token", "secret", "password")


def refuse_secrets(mapping: Mapping[str, Any]) -> None:
    # Provenance and cache keys are written to disk in clear: a token must never reach them.
    for name in mapping:
        if any(word in name.lower() for word in _SECRET_WORDS):
            raise CacheError(f"refusing to write {name!r} into cache metadata")


def filesystem(path: str | Any) -> tuple[fsspec.AbstractFileSystem, str]:
    fs, root = fsspec.core.url_to_fs(str(path))
    return fs, root.rstrip("/")


def frame_metadata(
    df: pd.DataFrame, provenance: Mapping[str, Any], sort_by: Iterable[str] = ()
) -> bytes:
    refuse_secrets(provenance)
    # from the dtypes at once: ``df[name]`` makes a Series per column (a copy of ``attrs`` each)
    categories = {
        name: [_plain(value) for value in dtype.categories]
        for name, dtype in df.dtypes.items()
        if isinstance(dtype, pd.CategoricalDtype)
    }
    return json.dumps(
        {
            "provenance": dict(provenance),
            "schema_version": SCHEMA_VERSION,
            "mediaframe_version": __version__,
            "columns": list(df.columns),
            "dtypes": {name: str(dtype) for name, dtype in df.dtypes.items()},
            "categories": categories,
            "json": [name for name, dtype in df.dtypes.items() if _is_raw(dtype)],
            "rows": len(df),
            "sort_by": list(sort_by),
        },
        default=str,
    ).encode()


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def to_table(df: pd.DataFrame, metadata: bytes) -> pa.Table:
    if not df.columns.is_unique:
        raise CacheError("cannot cache a frame whose column names repeat")
    # Column by column rather than Table.from_pandas: our own metadata restores the dtypes, and
    # pandas' metadata cost 2 ms more per shard (a third of writing one). The columns' arrays
    # are taken as they are (:func:`column_arrays`).
    arrays = [
        _as_json(name, array) if _is_raw(array.dtype) else pa.array(array)
        for name, array in zip(df.columns, column_arrays(df), strict=True)
    ]
    return pa.Table.from_arrays(
        arrays, names=[str(name) for name in df.columns], metadata={META_KEY: metadata}
    )


def _is_raw(dtype: Any) -> bool:
    """Whether a column of this dtype holds raw Python values (numpy's ``object``)."""
    return isinstance(dtype, np.dtype) and dtype.kind == "O"


def _as_json(name: Any, values: Any) -> pa.Array:
    """A column of raw values (the nested members records() keeps as they came) as JSON text.

    Arrow would type them: lists read back as numpy arrays, the members of objects unified
    (``{"stars": 4}`` back as ``{"stars": 4.0, "x": None}``), and an object beside a text in
    one column refused, so that such a harvest could not be cached at all. JSON gives back the
    very values; DuckDB, Dask and Spark read the column as text (JSON functions apply).
    """
    try:
        texts = [
            None if value is None or value is pd.NA else json.dumps(value, default=_scalar)
            for value in values
        ]
    except (TypeError, ValueError) as err:
        raise CacheError(
            f"cannot cache column {name!r}: it holds values that are not JSON ({err}); convert "
            "them (astype(str), say) or drop the column before caching"
        ) from err
    except RecursionError as err:  # answers are refused past DEEPEST; a frame made by hand is not
        raise CacheError(
            f"cannot cache column {name!r}: it holds values nested too deep to write as JSON; "
            "convert them (astype(str), say) or drop the column before caching"
        ) from err
    return pa.array(texts, pa.large_string())


def _scalar(value: Any) -> Any:
    """A numpy scalar or array as the Python value JSON writes (an array read back from a cache
    of an earlier version, which kept lists as Arrow lists); other objects are no JSON."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _from_json(column: pa.ChunkedArray) -> np.ndarray:
    """The raw values :func:`_as_json` wrote, as an object array (each element set alone:
    numpy would make rows of lists of one length)."""
    values = np.empty(len(column), dtype=object)
    for index, text in enumerate(column.to_pylist()):
        values[index] = None if text is None else json.loads(text)
    return values


def to_ipc(df: pd.DataFrame, provenance: Mapping[str, Any]) -> bytes:
    """``df`` as one Arrow IPC file: a checkpoint (staging only, no parquet encoding to pay)."""
    buffer = io.BytesIO()
    try:
        table = to_table(df, frame_metadata(df, provenance))
        with pa.ipc.new_file(buffer, table.schema) as writer:
            writer.write_table(table)
    except pa.ArrowException as err:  # a column Arrow cannot hold, told like a write's
        raise CacheError(f"could not keep the frame in the cache: {err}") from err
    return buffer.getvalue()


def ipc_provenance(data: bytes, where: str) -> dict[str, Any]:
    """The provenance :func:`to_ipc` wrote into a file, read from its schema alone.

    Raises
    ------
    CacheCorruptError
        ``data`` is not such a file.
    """
    try:
        schema = pa.ipc.open_file(pa.BufferReader(data)).schema
        provenance = json.loads(schema.metadata[META_KEY])["provenance"]
    except (pa.ArrowException, KeyError, TypeError, ValueError) as err:
        raise CacheCorruptError(f"{where} cannot be read ({err})") from err
    if not isinstance(provenance, dict):
        raise CacheCorruptError(f"{where} carries no provenance")
    return provenance


def from_ipc(data: bytes, where: str) -> pd.DataFrame:
    """The frame :func:`to_ipc` wrote, identical.

    Raises
    ------
    CacheCorruptError
        ``data`` is not such a file.
    """
    try:
        table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
        meta = json.loads(table.schema.metadata[META_KEY])
    except (pa.ArrowException, KeyError, TypeError, ValueError) as err:
        raise CacheCorruptError(f"{where} cannot be read ({err})") from err
    return restore_frame(table, meta)


def write_frame(
    df: pd.DataFrame,
    path: str,
    *,
    provenance: Mapping[str, Any],
    partition_cols: Iterable[str] = PARTITIONS,
    sort_by: Iterable[str] = (),
    on_written: Callable[[int], object] | None = None,
    on_file: Callable[[str], object] | None = None,
) -> None:
    """Write ``df`` as a parquet dataset at ``path``, replacing what was there atomically.

    ``on_written`` is told the rows of each file as it is written (a progress display);
    ``on_file`` is given the path of each file once written, on the thread that wrote it,
    before the dataset is swapped in (a local cache flushes it there, beside the next file's
    encoding, rather than every file after the last).

    The frame is partitioned by those of ``partition_cols`` it has (hive layout); a frame with
    none of them becomes one file. Partitioning regroups rows, so a frame must be sorted by
    ``sort_by`` (its key) for :func:`read_frame` to give the rows back in the same order.
    Readers never see a half-written dataset: the new one is written beside the old and swapped
    in with renames.
    """
    sort_by = list(sort_by)
    if sort_by and not _is_sorted(df, sort_by):
        raise CacheError(f"sort the frame by {sort_by} before caching it")
    fs, root = filesystem(path)
    metadata = frame_metadata(df, provenance, sort_by)
    # An empty frame has no partitions to write: one file keeps its schema.
    partitions = [name for name in partition_cols if name in df.columns] if len(df) else []
    staging = f"{root}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        if partitions:
            _write_partitions(df, fs, staging, partitions, metadata, on_written, on_file)
        else:
            fs.makedirs(staging, exist_ok=True)
            file = posixpath.join(staging, "part-0.parquet")
            _write_file(to_table(df, metadata), fs, file)
            if on_file is not None:
                on_file(file)
            if on_written is not None:
                on_written(len(df))
        _swap_in(fs, staging, root)
    except OSError as err:
        with contextlib.suppress(OSError):
            remove_tree(fs, staging)
        raise write_error(path, err) from err
    except pa.ArrowException as err:
        with contextlib.suppress(OSError):
            remove_tree(fs, staging)
        raise CacheError(f"could not write the cache at {path}: {err}") from err
    except BaseException:  # a column that cannot be cached, an interrupt: nothing left behind
        with contextlib.suppress(OSError):
            remove_tree(fs, staging)
        raise
    finally:
        give_back_memory(heap=False)


def _write_partitions(
    df: pd.DataFrame,
    fs: fsspec.AbstractFileSystem,
    staging: str,
    partitions: list[str],
    metadata: bytes,
    on_written: Callable[[int], object] | None,
    on_file: Callable[[str], object] | None,
) -> None:
    # Partition by partition, so that only a slice of the frame is ever copied into Arrow; two at
    # a time, as parquet encoding leaves the GIL.
    groups = df.groupby(partitions, dropna=False, sort=True, observed=True).indices

    failed = threading.Event()  # once a file fails (a full disk), the others are not begun

    def write(values: Any, rows: np.ndarray) -> None:
        if failed.is_set():
            return
        try:
            write_one(values if isinstance(values, tuple) else (values,), rows)
        except BaseException:
            failed.set()
            raise

    def write_one(values: tuple[Any, ...], rows: np.ndarray) -> None:
        folder = "/".join(
            f"{name}={_HIVE_NULL if pd.isna(value) else int(value)}"
            for name, value in zip(partitions, values, strict=True)
        )
        if rows[-1] - rows[0] + 1 == len(rows):  # a sorted frame's partition: a view, no copy
            part = df.iloc[rows[0] : rows[-1] + 1]
        else:
            part = df.iloc[rows]
        fs.makedirs(posixpath.join(staging, folder), exist_ok=True)
        table = to_table(part.drop(columns=partitions), metadata)
        file = posixpath.join(staging, folder, "part-0.parquet")
        _write_file(table, fs, file)
        if on_file is not None:
            on_file(file)
        if on_written is not None:
            on_written(len(rows))

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="mediaframe-write") as pool:
        for done in [pool.submit(write, values, rows) for values, rows in groups.items()]:
            done.result()


def _write_file(table: pa.Table, fs: fsspec.AbstractFileSystem, path: str) -> None:
    # lz4 reads back about 1.6x faster than the default snappy, at the same size. Dictionary
    # encoding only for categoricals: decoding a dictionary-encoded column of numbers or text
    # costs ~20 ns a value more than a plain one once compressed, and saves no space here.
    dictionaries = [field.name for field in table.schema if pa.types.is_dictionary(field.type)]
    pq.write_table(table, path, filesystem=fs, compression="lz4", use_dictionary=dictionaries)


def _is_sorted(df: pd.DataFrame, columns: list[str]) -> bool:
    return _ordered([df[name].to_numpy("int64", na_value=-1) for name in columns])


def _ordered(columns: list[np.ndarray]) -> bool:
    """Whether rows are sorted by ``columns`` (integers, missing values as -1), vectorised."""
    if not columns or len(columns[0]) < 2:
        return True
    before = np.zeros(len(columns[0]) - 1, dtype=bool)  # strictly before on an earlier column
    tied = np.ones_like(before)
    for values in columns:
        before |= tied & (values[:-1] < values[1:])
        tied &= values[:-1] == values[1:]
    return bool((before | tied).all())


def _swap_in(fs: fsspec.AbstractFileSystem, staging: str, root: str) -> None:
    retired = f"{root}.old-{uuid.uuid4().hex[:8]}"
    if fs.exists(root):
        fs.mv(root, retired, recursive=True)
    fs.mv(staging, root, recursive=True)
    remove_tree(fs, retired)


def write_error(url: str, err: OSError) -> CacheError:
    """A write failure as a CacheError saying what to do."""
    if err.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(err):
        advice = (
            "the disk is full: free some space, or point cache_dir (MEDIAFRAME_CACHE_DIR) "
            "at a disk with room"
        )
    elif err.errno in (errno.EROFS, errno.EACCES, errno.EPERM) or "Read-only" in str(err):
        advice = (
            "the cache is not writable: fix its permissions, or point cache_dir "
            "(MEDIAFRAME_CACHE_DIR) at a folder you can write"
        )
    else:
        advice = "check the cache folder, or point cache_dir (MEDIAFRAME_CACHE_DIR) elsewhere"
    return CacheError(f"could not write the cache at {url} ({err.strerror or err}): {advice}")


def remove_tree(fs: fsspec.AbstractFileSystem, path: str) -> None:
    if fs.exists(path):
        fs.rm(path, recursive=True)


def read_frame(
    path: str, *, checks: Mapping[str, str] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read a dataset written by :func:`write_frame`: the identical frame and its provenance.

    Parameters
    ----------
    checks : the size and CRC-32 of every file under ``path``, by relative path, as
        :meth:`HarvestStore.publish` records them in the manifest. Each file is then read once,
        checked, and parsed from the very bytes checked.

    Raises
    ------
    CacheMissError
        Nothing is cached at ``path``.
    CacheCorruptError
        The files are damaged, disagree with ``checks``, or with the metadata they carry.
    """
    fs, root = filesystem(path)
    if not fs.exists(root):
        raise CacheMissError(f"nothing is cached at {path}")
    blobs = _contents_of(fs, root)
    if checks is not None and not _same_files(blobs, checks):
        raise CacheCorruptError(f"the cached dataset at {path} does not match its manifest")
    files = _in_partition_order(name for name in blobs if name.endswith(".parquet"))
    if not files:
        raise CacheCorruptError(f"the cached dataset at {path} has no files")

    def read(name: str) -> pa.Table:
        data = blobs.pop(name)
        if checks is not None and _check(data) != checks[name]:
            raise CacheCorruptError(
                f"{name} of the cached dataset at {path} does not match its manifest: damaged"
            )
        return _read_file(data, _partition_values(name))

    try:
        with reader_threads() as pool:
            # A file per thread: each file's checksum and decoding run beside another's.
            tables = list(pool.map(read, files))
            meta = _read_metadata(tables[0].schema, files[0])
            table = _in_order(pa.concat_tables(tables), meta.get("sort_by") or [])
            del tables
            if table.num_rows != meta["rows"]:
                raise CacheCorruptError(
                    f"the cache at {path} holds {table.num_rows} rows, "
                    f"its metadata says {meta['rows']}"
                )
            return restore_frame(table, meta, pool=pool), meta["provenance"]
    except (OSError, pa.ArrowException, ValueError) as err:
        raise CacheCorruptError(f"the cache at {path} cannot be read ({err}); refetch it") from err


def file_checks(path: str) -> dict[str, str]:
    """Size and CRC-32 of every file of the dataset at ``path``, by path relative to it.

    CRC-32 catches accidental damage anywhere in a file, parquet footers included (they carry
    no checksum of their own), at a few milliseconds per 10 MB.
    """
    return _checks(_contents_of(*filesystem(path)))


def _contents_of(fs: fsspec.AbstractFileSystem, root: str) -> dict[str, Any]:
    """Every file below ``root``, by path relative to it, as :func:`_contents` reads it."""
    return {posixpath.relpath(file, root): _contents(fs, file) for file in fs.find(root)}


def _contents(fs: fsspec.AbstractFileSystem, path: str) -> Any:
    """A file's bytes (any object with the buffer protocol), mapped rather than copied if local.

    A copy is fresh memory on every read, and on a virtual machine the page faults of fresh
    memory cost as much as parsing it; the mapped page cache is shared and faulted in blocks.
    """
    if isinstance(fs, LocalFileSystem):
        with pa.memory_map(path) as mapped:
            return mapped.read_buffer()
    return fs.cat_file(path)


def _checks(blobs: Mapping[str, Any]) -> dict[str, str]:
    return {name: _check(data) for name, data in sorted(blobs.items())}


def _check(data: Any) -> str:
    return f"{len(data)}:{zlib.crc32(data):08x}"


def _same_files(blobs: Mapping[str, Any], checks: Mapping[str, str]) -> bool:
    """Whether ``blobs`` are the files ``checks`` lists, of the sizes it gives: the cheap half of
    the check, made before any decoding; each file's CRC-32 is checked as the file is read."""
    sizes = {name: int(check.split(":", 1)[0]) for name, check in checks.items()}
    return sizes == {name: len(data) for name, data in blobs.items()}


def _partition_values(name: str) -> list[tuple[str, int | None]]:
    """The hive partition of a file from its relative path: ``[(column, value), ...]``."""
    pairs = [part.split("=", 1) for part in name.split("/")[:-1] if "=" in part]
    return [(column, None if value == _HIVE_NULL else int(value)) for column, value in pairs]


def _in_partition_order(names: Iterable[str]) -> list[str]:
    # Numeric order of the partition values (collection_id=10 after collection_id=9), missing
    # values first: the order frames sorted by their partition columns were written in.
    def rank(name: str) -> list[int]:
        return [-1 if value is None else value for _, value in _partition_values(name)]

    return sorted(names, key=rank)


def _read_file(data: Any, partition: list[tuple[str, int | None]]) -> pa.Table:
    """One parquet file, its partition columns (held by its folders' names) added as ``int64``."""
    # ParquetFile rather than read_table, which builds a dataset per file: 6 ms each.
    table = pq.ParquetFile(pa.BufferReader(data)).read(use_threads=False)
    for column, value in partition:
        values = (
            pa.nulls(table.num_rows, pa.int64())
            if value is None
            else pa.array(np.full(table.num_rows, value, dtype=np.int64))
        )
        table = table.append_column(column, values)
    return table


def _in_order(table: pa.Table, sort_by: list[str]) -> pa.Table:
    # Files are read in partition order, which is the frame's row order; should a dataset have
    # been written otherwise (by another tool), sort in Arrow, before any conversion.
    if not sort_by or table.num_rows < 2:
        return table
    columns = [pc.fill_null(table.column(name).cast(pa.int64()), -1) for name in sort_by]
    if _ordered([column.to_numpy() for column in columns]):
        return table
    keys = [(name, "ascending", "at_start") for name in sort_by]
    return table.take(pc.sort_indices(table, sort_keys=keys))


def _read_metadata(schema: pa.Schema, name: str) -> dict[str, Any]:
    raw = (schema.metadata or {}).get(META_KEY)
    if raw is None:
        raise CacheCorruptError(f"{name} was not written by mediaframe")
    meta = json.loads(raw)
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise CacheCorruptError(
            f"the cache uses schema version {meta.get('schema_version')}, "
            f"this mediaframe writes {SCHEMA_VERSION}"
        )
    return meta


def restore_frame(
    table: pa.Table, meta: Mapping[str, Any], *, pool: ThreadPoolExecutor | None = None
) -> pd.DataFrame:
    """The frame ``table`` was written from, by the columns and dtypes its ``meta`` records."""
    # The files keep no pandas metadata and the partition columns come last: every column goes
    # back to its place and its declared dtype from our own metadata.
    names = list(meta["columns"])
    masked = [name for name in names if table.schema.field(name).type in _MASKED]
    converting = {name: run_on(pool, _masked, table.column(name)) for name in masked}
    raw = set(meta.get("json") or ())  # absent from caches written before raw values were JSON
    converting.update((n, finished(_from_json(table.column(n)))) for n in names if n in raw)
    rest = table.select([name for name in names if name not in converting])  # no copy
    del table
    others = rest.to_pandas(types_mapper=_nullable_types.get, self_destruct=True)
    del rest
    arrays = {
        name: converting[name].result() if name in converting else others[name].array
        for name in names
    }
    del others
    df = pd.DataFrame(arrays, copy=False)
    for name, dtype in meta["dtypes"].items():
        if name in meta["categories"]:
            df[name] = _categories(df[name], meta["categories"][name])
        elif str(df[name].dtype) != dtype:
            df[name] = df[name].astype(dtype)
    return df.reset_index(drop=True)


def _empty(length: int, dtype: np.dtype) -> np.ndarray:
    """An uninitialised array in memory from Arrow's pool, which keeps the pages it has used."""
    return np.frombuffer(pa.allocate_buffer(length * dtype.itemsize), dtype=dtype)


def _masked(column: pa.ChunkedArray) -> pd.api.extensions.ExtensionArray:
    """A column of nullable numbers as pandas' masked array, its values copied once.

    pandas' own conversion (``Int64Dtype.__from_arrow__``) joins the chunks, copies the result
    and builds the mask in three more arrays; on a cache read, the page faults of that fresh
    memory cost more than the copying. The copies release the GIL, so columns convert side by
    side.
    """
    dtype = _nullable_types[column.type]
    values = _empty(len(column), dtype.numpy_dtype)
    missing = _empty(len(column), np.dtype(bool))
    start = 0
    for chunk in column.chunks:
        end = start + len(chunk)
        missing[start:end] = chunk.null_count == len(chunk)
        if chunk.null_count < len(chunk):
            values[start:end] = np.frombuffer(
                chunk.buffers()[1],
                dtype=values.dtype,
                count=len(chunk),
                offset=chunk.offset * values.itemsize,
            )
            if chunk.null_count:
                missing[start:end] = chunk.is_null().to_numpy(zero_copy_only=False)
        start = end
    if values.dtype.kind == "f" and not pd.get_option("future.distinguish_nan_and_na"):
        missing |= np.isnan(values)  # as pandas' own conversion: NaN is missing too
    return dtype.construct_array_type()(values, missing, copy=False)


def _categories(column: pd.Series, categories: list[Any]) -> pd.Series:
    """The column as a categorical with exactly the categories it was written with, in order."""
    if not isinstance(column.dtype, pd.CategoricalDtype):
        column = column.astype("category")
    if list(column.cat.categories) == categories:
        return column
    return column.cat.set_categories(pd.Index(categories, dtype=_categories_dtype(categories)))


def _categories_dtype(categories: list[Any]) -> Any:
    # Empty or textual categories are strings, as frames builds them; others keep their type.
    return "str" if all(isinstance(value, str) for value in categories) else None


_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

_nullable_types = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
    pa.float64(): pd.Float64Dtype(),
    pa.string(): pd.StringDtype(),
    pa.large_string(): pd.StringDtype(),
}
#: The Arrow types :func:`_masked` converts.
_MASKED = (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float64())
