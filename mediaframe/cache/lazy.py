"""Cached datasets opened lazily, by Dask or DuckDB, without reading them into pandas.

A lazy reader opened on a harvest folder holds the version it opened (see
:meth:`~mediaframe.cache.store.HarvestStore.hold`) until it is dropped: a sync or refresh
publishing meanwhile does not sweep it, so the reader goes on reading what it was opened on, as
a file open on POSIX does. The hold is tied to an object that everything able to read the files
keeps alive, and let go when that object is collected; the next writer then sweeps the version:

- DuckDB: the connection. Every relation made on it (derived ones, and SQL over a view or a
  relation named in a query) keeps it alive, so the hold lasts as long as any can still read;
  a connection of the caller's own keeps the version for as long as it lives.
- Dask: a filesystem of the frame's own, which every task reading a file refers to, in the
  frame and in every frame or delayed object computed from it.
"""

from __future__ import annotations

import posixpath
import weakref
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads
from fsspec.implementations.local import LocalFileSystem

from mediaframe.cache.datasets import filesystem
from mediaframe.cache.locks import release
from mediaframe.cache.store import HarvestStore
from mediaframe.exceptions import CacheError

__all__ = ["to_dask", "to_duckdb"]


def _open(path: str) -> tuple[str, int | None]:
    """The dataset to read for ``path`` and the hold on its version (``None``: nothing held).

    ``path`` is a harvest folder (its published dataset is read, and held) or a dataset folder
    (read as it is).
    """
    fs, root = filesystem(path)
    if not fs.exists(f"{root}/manifest.json"):
        return path, None
    store = HarvestStore(path)
    manifest, held = store.hold()
    try:
        if manifest is None:
            raise CacheError(f"no dataset is published under {path}")
        data = store.data_url(manifest)
        assert data is not None  # a manifest names its dataset
    except BaseException:
        release(held)
        raise
    return data, held


def _keep(held: int | None, *anchors: object) -> None:
    """Let ``held`` go once the first of ``anchors`` that can be watched is collected (or the
    interpreter exits); at once if none can (a connection of a kind with no weak references):
    a hold never outlives what it was taken for."""
    if held is None:
        return
    for anchor in anchors:
        try:
            weakref.finalize(anchor, release, held)
        except TypeError:
            continue
        return
    release(held)


def _partitioning(path: str) -> pads.Partitioning | None:
    # Name the partition columns as int64 rather than letting each reader infer a type: a
    # partition holding only nulls (__HIVE_DEFAULT_PARTITION__) would otherwise defeat inference.
    fs, root = filesystem(path)
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

    A harvest folder's published version stays on disk, for this frame and every frame
    computed from it, until the last of them is dropped.

    Examples
    --------
    >>> ddf = mf.to_dask(client.cache_path("records", query="sunset"))  # doctest: +SKIP
    >>> ddf.groupby("media_type").size().compute()                      # doctest: +SKIP
    """
    try:
        import dask.dataframe as dd
    except ImportError as err:
        raise CacheError(
            "to_dask needs Dask: pip install -e '.[dask]' in the mediaframe folder"
        ) from err
    data, held = _open(path)
    try:
        kwargs.setdefault("dataset", {"partitioning": _partitioning(data)})
        anchor = None
        if held is not None and "filesystem" not in kwargs:
            # a filesystem of the frame's own: every task that reads a file refers to it
            anchor = kwargs["filesystem"] = LocalFileSystem(skip_instance_cache=True)
        frame = dd.read_parquet(data, **kwargs)
    except BaseException:
        release(held)
        raise
    _keep(held, anchor if anchor is not None else frame)
    return frame


def to_duckdb(path: str, *, connection: Any = None) -> Any:
    """Open a cached dataset lazily as a DuckDB relation (needs ``duckdb``).

    A harvest folder's published version stays on disk until the DuckDB connection is dropped:
    by default one of the relation's own, which lives as long as it or any relation derived
    from it does; with ``connection``, yours, for as long as it lives (a view made on it may
    read the files at any time).

    A cache on another fsspec filesystem (``memory://``, ``s3://`` …) is read through it: the
    filesystem is registered with the connection (yours too) unless it has one of that name.

    Raises
    ------
    CacheError
        DuckDB cannot read the dataset (its filesystem cannot be handed to DuckDB): the message
        says to use :func:`to_dask` or a local ``cache_dir``.

    Examples
    --------
    >>> rel = mf.to_duckdb(path)                                   # doctest: +SKIP
    >>> rel.aggregate("media_type, count(*)").df()                 # doctest: +SKIP
    """
    try:
        import duckdb
    except ImportError as err:
        raise CacheError("to_duckdb needs DuckDB: pip install duckdb") from err
    data, held = _open(path)
    try:
        con = connection or duckdb.connect()
        pattern = posixpath.join(str(data).rstrip("/"), "**", "*.parquet")
        try:
            _hand_filesystem(con, data)
            relation = con.read_parquet(pattern, hive_partitioning=True)
        except duckdb.Error as err:
            raise CacheError(
                f"DuckDB cannot read the cached dataset {data} ({err!s:.300}): read it with "
                "mf.to_dask, or keep the cache in a local cache_dir (MEDIAFRAME_CACHE_DIR)"
            ) from err
    except BaseException:
        release(held)
        raise
    _keep(held, con, relation)
    return relation


def _hand_filesystem(con: Any, data: str) -> None:
    """Register the fsspec filesystem ``data`` is on with the DuckDB connection ``con``, unless
    it is local (DuckDB reads local files itself) or ``con`` has one of that name already
    (DuckDB speaks it, or it was handed before): else DuckDB finds no file at a ``memory://``
    path, and says only that."""
    fs, _ = filesystem(data)
    if isinstance(fs, LocalFileSystem):
        return
    protocols = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    if not set(protocols) & set(con.list_filesystems()):
        con.register_filesystem(fs)
