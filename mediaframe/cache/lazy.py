"""Cached datasets opened lazily, by Dask or DuckDB, without reading them into pandas."""

from __future__ import annotations

import posixpath
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads

from mediaframe.cache.datasets import filesystem
from mediaframe.cache.store import HarvestStore
from mediaframe.exceptions import CacheError

__all__ = ["to_dask", "to_duckdb"]


def _data_path(path: str) -> str:
    # Accept either a harvest folder (its published dataset is read) or a dataset folder.
    fs, root = filesystem(path)
    if not fs.exists(f"{root}/manifest.json"):
        return path
    data = HarvestStore(path).data_url()
    if data is None:
        raise CacheError(f"no dataset is published under {path}")
    return data


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
