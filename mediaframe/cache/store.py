"""One cached harvest on disk: its manifest, its finished shards, and its final dataset.

<root>/<key>/
    manifest.json            plan, per-shard state and checksums, provenance (never a token)
    shards/<shard>.arrow     each finished shard (Arrow IPC), written atomically as it completes
    shards/<shard>.json      its entry: rows, SHA-256, total; written after the file
    data/                    the final dataset (see :mod:`mediaframe.cache.datasets`)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import posixpath
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa

from mediaframe.cache.datasets import (
    META_KEY,
    SCHEMA_VERSION,
    file_checks,
    filesystem,
    frame_metadata,
    read_frame,
    refuse_secrets,
    remove_tree,
    restore_frame,
    to_table,
    write_frame,
)
from mediaframe.exceptions import CacheCorruptError

__all__ = ["HarvestStore", "age", "dataset_key"]


def dataset_key(**identity: Any) -> str:
    """A short stable name for a cached dataset, from what identifies it (server, user, query...).

    Examples
    --------
    >>> dataset_key(server="https://a.example", user="ada", kind="records", params={"query": ""})
    '...'  # doctest: +SKIP
    """
    refuse_secrets(identity)
    canonical = json.dumps(identity, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:20]


class HarvestStore:
    """One cached harvest: its manifest, its finished shards and its final dataset.

    Parameters
    ----------
    root : folder of the harvest (local path or fsspec URL), e.g. ``cache_dir/records/<key>``.
    """

    def __init__(self, root: str) -> None:
        self.fs, self.root = filesystem(root)
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
        refuse_secrets(manifest.get("provenance", {}))
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
        table = to_table(df, frame_metadata(df, {"shard": shard_id}))
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
        meta = json.loads(table.schema.metadata[META_KEY])
        if table.num_rows != entry["rows"]:
            raise CacheCorruptError(f"shard file {entry['file']} has the wrong number of rows")
        return restore_frame(table, meta)

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
        remove_tree(self.fs, self._path("shards"))

    # final dataset ----------------------------------------------------------

    def write_data(
        self, df: pd.DataFrame, provenance: Mapping[str, Any], *, sort_by: Iterable[str] = ()
    ) -> dict[str, str]:
        """Write the final dataset; returns its files' sizes and CRC-32s, for the manifest."""
        write_frame(df, self.data_path, provenance=provenance, sort_by=sort_by)
        return file_checks(self.data_path)

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
        remove_tree(self.fs, self.root)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def age(provenance: Mapping[str, Any], *, now: dt.datetime | None = None) -> dt.timedelta:
    """How long ago the cached data was fetched."""
    fetched = dt.datetime.fromisoformat(str(provenance["fetched_at"]))
    return (now or dt.datetime.now(dt.UTC)) - fetched
