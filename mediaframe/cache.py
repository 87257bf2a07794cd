"""The only parquet reader and writer: hive-partitioned datasets with provenance, atomic writes.

A cached harvest lives in one folder (local path or any fsspec URL)::

    <root>/<key>/
        manifest.json            plan, per-shard state and checksums, provenance (never a token)
        shards/<shard>.parquet   each finished shard, written atomically as it completes
        data/                    the final dataset, hive-partitioned
            databox_id=1/collection_id=2/part-0.parquet

``data/`` is an ordinary hive-partitioned parquet dataset: DuckDB, Dask and Spark read it as it
is. Every file carries the provenance and the frame's dtypes in its Arrow metadata under the key
``mediaframe``, so :func:`read_frame` gives back the identical frame.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import posixpath
import uuid
import zlib
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import fsspec
import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from mediaframe import __version__
from mediaframe.exceptions import CacheCorruptError, CacheError, CacheMissError

__all__ = [
    "PARTITIONS",
    "SCHEMA_VERSION",
    "HarvestStore",
    "age",
    "dataset_key",
    "read_frame",
    "to_dask",
    "to_duckdb",
    "write_frame",
]

#: Bumped whenever the layout or the frame schema changes incompatibly; older caches are refetched.
SCHEMA_VERSION = 1
#: Partition columns of record and story datasets, outermost first.
PARTITIONS = ("databox_id", "collection_id")
_META_KEY = b"mediaframe"
_SECRET_WORDS = ("token", "secret", "password")


def dataset_key(**identity: Any) -> str:
    """A short stable name for a cached dataset, from what identifies it (server, user, query...).

    Examples
    --------
    >>> dataset_key(server="https://a.example", user="ada", kind="records", params={"query": ""})
    '...'  # doctest: +SKIP
    """
    _refuse_secrets(identity)
    canonical = json.dumps(identity, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:20]


def _refuse_secrets(mapping: Mapping[str, Any]) -> None:
    # Provenance and cache keys are written to disk in clear: a token must never reach them.
    for name in mapping:
        if any(word in name.lower() for word in _SECRET_WORDS):
            raise CacheError(f"refusing to write {name!r} into cache metadata")


def _filesystem(path: str | Any) -> tuple[fsspec.AbstractFileSystem, str]:
    fs, root = fsspec.core.url_to_fs(str(path))
    return fs, root.rstrip("/")


# --------------------------------------------------------------------------- frames <-> parquet


def _frame_metadata(
    df: pd.DataFrame, provenance: Mapping[str, Any], sort_by: Iterable[str] = ()
) -> bytes:
    _refuse_secrets(provenance)
    categories = {
        name: [_plain(value) for value in df[name].cat.categories]
        for name in df.columns
        if isinstance(df[name].dtype, pd.CategoricalDtype)
    }
    return json.dumps(
        {
            "provenance": dict(provenance),
            "schema_version": SCHEMA_VERSION,
            "mediaframe_version": __version__,
            "columns": list(df.columns),
            "dtypes": {name: str(dtype) for name, dtype in df.dtypes.items()},
            "categories": categories,
            "rows": len(df),
            "sort_by": list(sort_by),
        },
        default=str,
    ).encode()


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _to_table(df: pd.DataFrame, metadata: bytes) -> pa.Table:
    if not df.columns.is_unique:
        raise CacheError("cannot cache a frame whose column names repeat")
    # Column by column rather than Table.from_pandas: our own metadata restores the dtypes, and
    # pandas' metadata cost 2 ms more per shard (a third of writing one).
    arrays = [pa.array(column.array) for _, column in df.items()]
    return pa.Table.from_arrays(
        arrays, names=[str(name) for name in df.columns], metadata={_META_KEY: metadata}
    )


def write_frame(
    df: pd.DataFrame,
    path: str,
    *,
    provenance: Mapping[str, Any],
    partition_cols: Iterable[str] = PARTITIONS,
    sort_by: Iterable[str] = (),
) -> None:
    """Write ``df`` as a parquet dataset at ``path``, replacing what was there atomically.

    The frame is partitioned by those of ``partition_cols`` it has (hive layout); a frame with
    none of them becomes one file. Partitioning regroups rows, so a frame must be sorted by
    ``sort_by`` (its key) for :func:`read_frame` to give the rows back in the same order.
    Readers never see a half-written dataset: the new one is written beside the old and swapped
    in with renames.
    """
    sort_by = list(sort_by)
    if sort_by and not _is_sorted(df, sort_by):
        raise CacheError(f"sort the frame by {sort_by} before caching it")
    fs, root = _filesystem(path)
    metadata = _frame_metadata(df, provenance, sort_by)
    # An empty frame has no partitions to write: one file keeps its schema.
    partitions = [name for name in partition_cols if name in df.columns] if len(df) else []
    staging = f"{root}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        if partitions:
            _write_partitions(df, fs, staging, partitions, metadata)
        else:
            fs.makedirs(staging, exist_ok=True)
            _write_file(_to_table(df, metadata), fs, posixpath.join(staging, "part-0.parquet"))
        _swap_in(fs, staging, root)
    except (OSError, pa.ArrowException) as err:
        _remove(fs, staging)
        raise CacheError(f"could not write the cache at {path}: {err}") from err
    finally:
        pa.default_memory_pool().release_unused()


def _write_partitions(
    df: pd.DataFrame,
    fs: fsspec.AbstractFileSystem,
    staging: str,
    partitions: list[str],
    metadata: bytes,
) -> None:
    # Partition by partition, so that only a slice of the frame is ever copied into Arrow; two at
    # a time, as parquet encoding leaves the GIL.
    groups = df.groupby(partitions, dropna=False, sort=True, observed=True).indices

    def write(values: Any, rows: np.ndarray) -> None:
        values = values if isinstance(values, tuple) else (values,)
        folder = "/".join(
            f"{name}={_HIVE_NULL if pd.isna(value) else int(value)}"
            for name, value in zip(partitions, values, strict=True)
        )
        if rows[-1] - rows[0] + 1 == len(rows):  # a sorted frame's partition: a view, no copy
            part = df.iloc[rows[0] : rows[-1] + 1]
        else:
            part = df.iloc[rows]
        fs.makedirs(posixpath.join(staging, folder), exist_ok=True)
        table = _to_table(part.drop(columns=partitions), metadata)
        _write_file(table, fs, posixpath.join(staging, folder, "part-0.parquet"))

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
    _remove(fs, retired)


def _remove(fs: fsspec.AbstractFileSystem, path: str) -> None:
    if fs.exists(path):
        fs.rm(path, recursive=True)


def read_frame(
    path: str, *, checks: Mapping[str, str] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read a dataset written by :func:`write_frame`: the identical frame and its provenance.

    Parameters
    ----------
    checks : the size and CRC-32 of every file under ``path``, by relative path, as
        :meth:`HarvestStore.write_data` returns them. Each file is then read once, checked, and
        parsed from the very bytes checked.

    Raises
    ------
    CacheMissError
        Nothing is cached at ``path``.
    CacheCorruptError
        The files are damaged, disagree with ``checks``, or with the metadata they carry.
    """
    fs, root = _filesystem(path)
    if not fs.exists(root):
        raise CacheMissError(f"nothing is cached at {path}")
    blobs = _contents_of(fs, root)
    if checks is not None and _checks(blobs) != dict(checks):
        raise CacheCorruptError(f"the cached dataset at {path} does not match its manifest")
    files = _in_partition_order(name for name in blobs if name.endswith(".parquet"))
    if not files:
        raise CacheCorruptError(f"the cached dataset at {path} has no files")
    try:
        tables = [_read_file(blobs.pop(name), _partition_values(name)) for name in files]
        meta = _read_metadata(tables[0].schema, files[0])
        table = _in_order(pa.concat_tables(tables), meta.get("sort_by") or [])
    except (OSError, pa.ArrowException, ValueError) as err:
        raise CacheCorruptError(f"the cache at {path} cannot be read ({err}); refetch it") from err
    del tables
    if table.num_rows != meta["rows"]:
        raise CacheCorruptError(
            f"the cache at {path} holds {table.num_rows} rows, its metadata says {meta['rows']}"
        )
    return _restore(table, meta), meta["provenance"]


def _file_checks(path: str) -> dict[str, str]:
    """Size and CRC-32 of every file of the dataset at ``path``, by path relative to it.

    CRC-32 catches accidental damage anywhere in a file, parquet footers included (they carry
    no checksum of their own), at a few milliseconds per 10 MB.
    """
    return _checks(_contents_of(*_filesystem(path)))


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
    return {name: f"{len(data)}:{zlib.crc32(data):08x}" for name, data in sorted(blobs.items())}


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
    table = pq.ParquetFile(pa.BufferReader(data)).read()
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
    columns = [table.column(name).to_numpy().astype("float64") for name in sort_by]
    if _ordered([np.nan_to_num(values, nan=-1).astype("int64") for values in columns]):
        return table
    keys = [(name, "ascending", "at_start") for name in sort_by]
    return table.take(pc.sort_indices(table, sort_keys=keys))


def _read_metadata(schema: pa.Schema, name: str) -> dict[str, Any]:
    raw = (schema.metadata or {}).get(_META_KEY)
    if raw is None:
        raise CacheCorruptError(f"{name} was not written by mediaframe")
    meta = json.loads(raw)
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise CacheCorruptError(
            f"the cache uses schema version {meta.get('schema_version')}, "
            f"this mediaframe writes {SCHEMA_VERSION}"
        )
    return meta


def _restore(table: pa.Table, meta: Mapping[str, Any]) -> pd.DataFrame:
    # The files keep no pandas metadata and the partition columns come last: every column goes
    # back to its place and its declared dtype from our own metadata.
    table = table.select(list(meta["columns"]))  # in Arrow: no copy
    df = table.to_pandas(types_mapper=_nullable_types.get, self_destruct=True)
    del table
    for name, dtype in meta["dtypes"].items():
        if name in meta["categories"]:
            df[name] = _categories(df[name], meta["categories"][name])
        elif str(df[name].dtype) != dtype:
            df[name] = df[name].astype(dtype)
    return df.reset_index(drop=True)


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


# --------------------------------------------------------------------------- harvest store


class HarvestStore:
    """One cached harvest: its manifest, its finished shards and its final dataset.

    Parameters
    ----------
    root : folder of the harvest (local path or fsspec URL), e.g. ``cache_dir/records/<key>``.
    """

    def __init__(self, root: str) -> None:
        self.fs, self.root = _filesystem(root)
        self.url = str(root)

    def __repr__(self) -> str:
        return f"HarvestStore({self.url!r})"

    @property
    def data_path(self) -> str:
        return self._url("data")

    def _url(self, *parts: str) -> str:
        return posixpath.join(self.url.rstrip("/"), *parts)

    def _path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts)

    # manifest ---------------------------------------------------------------

    def load_manifest(self) -> dict[str, Any] | None:
        """The manifest, or ``None`` when there is none or it cannot be read (start afresh)."""
        path = self._path("manifest.json")
        if not self.fs.exists(path):
            return None
        try:
            with self.fs.open(path, "rb") as handle:
                manifest = orjson.loads(handle.read())
        except (OSError, ValueError):
            return None
        if manifest.get("schema_version") != SCHEMA_VERSION:
            return None
        return manifest

    def save_manifest(self, manifest: Mapping[str, Any]) -> None:
        """Replace the manifest atomically (write a sibling, then rename over)."""
        _refuse_secrets(manifest.get("provenance", {}))
        body = {**manifest, "schema_version": SCHEMA_VERSION}
        self._write_atomic(self._path("manifest.json"), orjson.dumps(body, default=str))

    def _write_atomic(self, path: str, data: bytes) -> None:
        self.fs.makedirs(posixpath.dirname(path), exist_ok=True)
        partial = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
        with self.fs.open(partial, "wb") as handle:
            handle.write(data)
        self.fs.mv(partial, path)

    # shards -----------------------------------------------------------------

    def write_shard(self, shard_id: str, df: pd.DataFrame, **facts: Any) -> dict[str, Any]:
        """Write one finished shard, then its entry (with ``facts``) beside it; returns the entry.

        The entry is written last: a shard counts as finished only once its entry exists, so a
        crash between the two leaves an unfinished shard, never a half-written finished one.
        """
        # Staging only (for resume), so Arrow's own file format: no parquet encoding to pay.
        buffer = io.BytesIO()
        table = _to_table(df, _frame_metadata(df, {"shard": shard_id}))
        with pa.ipc.new_file(buffer, table.schema) as writer:
            writer.write_table(table)
        data = buffer.getvalue()
        self._write_atomic(self._path("shards", f"{shard_id}.arrow"), data)
        entry = {
            "id": shard_id,
            "file": f"shards/{shard_id}.arrow",
            "rows": len(df),
            "sha256": _digest(data),
            **facts,
        }
        self._write_atomic(self._path("shards", f"{shard_id}.json"), orjson.dumps(entry))
        return entry

    def finished_shards(self) -> dict[str, dict[str, Any]]:
        """The entries of every shard written so far (intact or not: see :meth:`has_shard`)."""
        root = self._path("shards")
        if not self.fs.exists(root):
            return {}
        entries = {}
        for path in self.fs.glob(posixpath.join(root, "*.json")):
            try:
                with self.fs.open(path, "rb") as handle:
                    entry = orjson.loads(handle.read())
            except (OSError, ValueError):
                continue  # a damaged entry: the shard is simply fetched again
            entries[entry["id"]] = entry
        return entries

    def read_shard(self, entry: Mapping[str, Any]) -> pd.DataFrame:
        """Read a shard written by :meth:`write_shard`, checking it against its manifest entry."""
        path = self._path(entry["file"])
        try:
            with self.fs.open(path, "rb") as handle:
                data = handle.read()
        except OSError as err:
            raise CacheCorruptError(f"shard file {entry['file']} is missing") from err
        if _digest(data) != entry["sha256"]:
            raise CacheCorruptError(f"shard file {entry['file']} does not match its checksum")
        table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
        meta = json.loads(table.schema.metadata[_META_KEY])
        if table.num_rows != entry["rows"]:
            raise CacheCorruptError(f"shard file {entry['file']} has the wrong number of rows")
        return _restore(table, meta)

    def has_shard(self, entry: Mapping[str, Any]) -> bool:
        """Whether a finished shard's file is present and matches its checksum.

        Only the bytes are hashed: :meth:`read_shard` parses and checks the rest when the shard
        is read, so a resume does not parse every kept shard twice.
        """
        try:
            with self.fs.open(self._path(entry["file"]), "rb") as handle:
                return _digest(handle.read()) == entry["sha256"]
        except OSError:
            return False

    def clear_shards(self) -> None:
        """Drop the staged shards once the final dataset is written."""
        _remove(self.fs, self._path("shards"))

    # final dataset ----------------------------------------------------------

    def write_data(
        self, df: pd.DataFrame, provenance: Mapping[str, Any], *, sort_by: Iterable[str] = ()
    ) -> dict[str, str]:
        """Write the final dataset; returns its files' sizes and CRC-32s, for the manifest."""
        write_frame(df, self.data_path, provenance=provenance, sort_by=sort_by)
        return _file_checks(self.data_path)

    def read_data(
        self, files: Mapping[str, str] | None = None
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Read the final dataset, first checking its files against ``files`` from the manifest.

        CRC-32 catches accidental damage anywhere in a file, parquet footers included (they
        carry no checksum of their own), at a few milliseconds per 10 MB.

        Raises
        ------
        CacheCorruptError
            A file was changed, removed or added since the dataset was written.
        """
        return read_frame(self.data_path, checks=files)

    def has_data(self) -> bool:
        return self.fs.exists(self._path("data"))

    def remove(self) -> None:
        """Forget this harvest entirely."""
        _remove(self.fs, self.root)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def age(provenance: Mapping[str, Any], *, now: dt.datetime | None = None) -> dt.timedelta:
    """How long ago the cached data was fetched."""
    fetched = dt.datetime.fromisoformat(str(provenance["fetched_at"]))
    return (now or dt.datetime.now(dt.UTC)) - fetched


# --------------------------------------------------------------------------- lazy readers


def _data_path(path: str) -> str:
    # Accept either a harvest folder or its data/ folder.
    fs, root = _filesystem(path)
    return posixpath.join(str(path).rstrip("/"), "data") if fs.exists(f"{root}/data") else path


def _partitioning(path: str) -> pads.Partitioning | None:
    # Name the partition columns as int64 rather than letting each reader infer a type: a
    # partition holding only nulls (__HIVE_DEFAULT_PARTITION__) would otherwise defeat inference.
    fs, root = _filesystem(path)
    names = []
    while True:
        keyed = [p for p in fs.ls(root, detail=False) if "=" in posixpath.basename(p)]
        if not keyed:
            break
        names.append(posixpath.basename(keyed[0]).split("=", 1)[0])
        root = keyed[0]
    if not names:
        return None
    return pads.partitioning(pa.schema([(name, pa.int64()) for name in names]), flavor="hive")


def to_dask(path: str, **kwargs: Any) -> Any:
    """Open a cached dataset lazily as a Dask DataFrame (needs the ``dask`` extra).

    Examples
    --------
    >>> ddf = mf.to_dask(client.cache_path("records", query="sunset"))  # doctest: +SKIP
    >>> ddf.groupby("media_type").size().compute()                      # doctest: +SKIP
    """
    try:
        import dask.dataframe as dd
    except ImportError as err:
        raise CacheError("to_dask needs Dask: pip install 'mediaframe[dask]'") from err
    data = _data_path(path)
    kwargs.setdefault("dataset", {"partitioning": _partitioning(data)})
    return dd.read_parquet(data, **kwargs)


def to_duckdb(path: str, *, connection: Any = None) -> Any:
    """Open a cached dataset lazily as a DuckDB relation (needs ``duckdb``).

    Examples
    --------
    >>> rel = mf.to_duckdb(path)                                   # doctest: +SKIP
    >>> rel.aggregate("media_type, count(*)").df()                 # doctest: +SKIP
    """
    try:
        import duckdb
    except ImportError as err:
        raise CacheError("to_duckdb needs DuckDB: pip install duckdb") from err
    con = connection or duckdb.connect()
    pattern = posixpath.join(str(_data_path(path)).rstrip("/"), "**", "*.parquet")
    return con.read_parquet(pattern, hive_partitioning=True)
