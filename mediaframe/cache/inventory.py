"""What the cache holds: one row per cached harvest, and removing them.

Reads only each harvest's manifest (or, for a harvest not yet published, its plan), whether the
dataset folder it names is there, and the sizes of its files, so it stays true whatever the
layout of the data inside a harvest's folder. A harvest that cannot be read is listed as damaged,
with what is wrong, never as one that holds nothing or as a healthy one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import posixpath
from collections.abc import Iterable
from typing import Any

import pandas as pd
from fsspec.implementations.local import LocalFileSystem

from mediaframe.cache.datasets import filesystem
from mediaframe.cache.manifest import Manifest
from mediaframe.cache.store import HarvestStore
from mediaframe.exceptions import CacheCorruptError

__all__ = ["KINDS", "cached", "remove"]

#: The folders of the cache root, one per kind of harvest.
KINDS = ("records", "stories")

_COLUMNS = {
    "kind": "string",
    "key": "string",
    "server": "string",
    "user": "string",
    "query": "string",
    "filters": "string",
    "complete": "boolean",
    "damage": "string",
    "hits": "Int64",
    "size_bytes": "Int64",
    "updated_at": "datetime64[us, UTC]",
    "age": "timedelta64[us]",
    "path": "string",
}


def cached(cache_dir: str, *, now: dt.datetime | None = None) -> pd.DataFrame:
    """Every harvest under ``cache_dir``: its search, size, when it was last written, and where.

    ``updated_at`` is when the harvest or its last sync was written; ``age`` is counted from it.
    ``damage`` says what makes a harvest unreadable (a damaged manifest or plan, one written by
    another version of mediaframe, a dataset folder gone), missing when nothing is; a damaged
    one is listed with what is known (its size and path), its ``complete`` unknown.
    """
    fs, root = filesystem(cache_dir)
    now = now or dt.datetime.now(dt.UTC)
    rows = []
    for kind in KINDS:
        folder = posixpath.join(root, kind)
        if not fs.isdir(folder):
            continue
        for path in sorted(fs.ls(folder, detail=False)):
            if fs.isdir(path):
                rows.append(_entry(fs, kind, path, now))
    frame = pd.DataFrame(rows, columns=list(_COLUMNS))
    return frame.astype(_COLUMNS).sort_values(["kind", "updated_at"], ignore_index=True)


def remove(paths: Iterable[str], *, wait: bool = False) -> list[str]:
    """Remove the cached harvests at ``paths`` (as :func:`cached` lists them) that no harvest,
    sync or reader is using; with ``wait``, wait for those that are, and remove them too.

    Returns the paths left in place because they were in use (none with ``wait``).
    """
    return [path for path in paths if not HarvestStore(path).remove_unused(wait=wait)]


def _entry(fs: Any, kind: str, path: str, now: dt.datetime) -> dict[str, Any]:
    store = HarvestStore(path)
    damage: str | None
    try:
        manifest = store.manifest()
    except CacheCorruptError as err:
        manifest, damage = None, _said(err, store)
    else:
        damage = _dataset_damage(fs, store, manifest) if manifest is not None else None
    plan = None
    if manifest is None and damage is None:  # a harvest not yet published
        try:  # read as it is: listing never drops a damaged plan, as a harvest resuming does
            plan = store.read_plan()
        except CacheCorruptError as err:
            damage = _said(err, store)
    provenance = manifest.provenance if manifest else plan.provenance if plan else {}
    spec = manifest.spec if manifest else plan.spec if plan else {}
    filters = spec.get("filters")
    if not isinstance(filters, dict):
        filters = {}  # damaged (a list, a text): listed without them rather than failing
    written = posixpath.join(path, "manifest.json" if manifest else "plan.json")
    updated = None
    if (manifest or plan) and fs.exists(written):
        modified = fs.modified(written)
        updated = modified if modified.tzinfo else modified.replace(tzinfo=dt.UTC)
    return {
        "kind": kind,
        "key": posixpath.basename(path),
        "server": provenance.get("server"),
        "user": provenance.get("user"),
        "query": spec.get("query"),
        "filters": ", ".join(f"{k}={v}" for k, v in sorted(filters.items())) or None,
        "complete": None if damage else manifest.complete if manifest else False if plan else None,
        "damage": damage,
        "hits": manifest.rows if manifest else plan.total if plan else None,
        "size_bytes": _size(fs, path),
        "updated_at": updated,
        "age": (now - updated) if updated else None,
        "path": path,
    }


def _dataset_damage(fs: Any, store: HarvestStore, manifest: Manifest) -> str | None:
    """What is wrong with the dataset folder ``manifest`` names: none of its own, or gone (its
    files are checked by every read; a listing only looks for the folder)."""
    try:
        store.data_url(manifest)
    except CacheCorruptError as err:
        return _said(err, store)
    if not fs.isdir(posixpath.join(store.root, manifest.data)):
        return f"its dataset folder {manifest.data} is missing"
    return None


def _said(err: CacheCorruptError, store: HarvestStore) -> str:
    """The damage ``err`` tells, without the harvest's own path (the listing shows it)."""
    return str(err).replace(f" of {store.url}", "").replace(f" at {store.url}", "")


def _size(fs: Any, path: str) -> int:
    """Bytes under ``path``; files removed while counting (a harvest of this process clearing
    its shards on a thread) are not counted, rather than failing the listing."""
    if not isinstance(fs, LocalFileSystem):
        return int(fs.du(path))
    total = 0
    for folder, _, files in os.walk(path):  # os.walk skips folders gone meanwhile
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(os.path.join(folder, name), follow_symlinks=False).st_size
    return total
