"""The cache: harvests kept on disk as parquet datasets, with their manifests and shards.

:mod:`~mediaframe.cache.datasets` writes frames as hive-partitioned parquet and reads them back
identical; :mod:`~mediaframe.cache.store` keeps one harvest (manifest, plan, final dataset), and
:mod:`~mediaframe.cache.shards` its shards kept for resume; :mod:`~mediaframe.cache.lazy` opens a
dataset with Dask or DuckDB.
"""

from mediaframe.cache.datasets import PARTITIONS, SCHEMA_VERSION, read_frame, write_frame
from mediaframe.cache.lazy import to_dask, to_duckdb
from mediaframe.cache.store import HarvestStore, age, dataset_key, proven_complete

__all__ = [
    "PARTITIONS",
    "SCHEMA_VERSION",
    "HarvestStore",
    "age",
    "dataset_key",
    "proven_complete",
    "read_frame",
    "to_dask",
    "to_duckdb",
    "write_frame",
]
