"""One cached harvest on disk: its published dataset, its plan in progress, its finished shards.

<root>/<key>/                 private (0700; every file 0600)
    manifest.json             the published dataset: which data-<version>/ holds it, its checks
    data-<version>/           datasets (see :mod:`mediaframe.cache.datasets`); only the one the
                              manifest names is read, the others are leftovers, swept
    plan.json                 a harvest in progress: its plan and the splits proven so far
    shards/                   finished shards and pages, kept for resume (see
                              :mod:`mediaframe.cache.shards`)
    sync/                     a sync's passes while it runs, each a harvest folder of its own
    .writer                   lock file: one writer (harvest or sync) at a time
    .readers                  lock file: readers share it; old versions go only when none holds it

Publishing is one atomic step: a new dataset is written into a fresh ``data-<version>/``,
flushed to disk, and the manifest naming it replaces the old one with ``os.replace``. A kill
at any point leaves the old manifest naming the old, intact dataset, or the new one naming the
new; what the kill left behind (a half-written version, a temporary manifest) is swept by the
next writer. Locks are ``flock`` locks, released by the system when their process dies; they
are taken on local caches only (a remote fsspec cache has one writer by convention).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import posixpath
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pandas as pd

from mediaframe.cache.datasets import (
    file_checks,
    read_frame,
    refuse_secrets,
    write_error,
    write_frame,
)
from mediaframe.cache.locks import READERS, WRITER, LockFiles, release
from mediaframe.cache.manifest import Manifest, PlanFile, decode, encode, is_current
from mediaframe.cache.shards import ShardFiles
from mediaframe.exceptions import CacheCorruptError, CacheMissError
from mediaframe.files import flush_file

__all__ = ["HarvestStore", "age", "dataset_key"]

_MANIFEST = "manifest.json"
_PLAN = "plan.json"
_DATA_PREFIX = "data-"
_SYNC = "sync"


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


def reached(step: str) -> None:
    """A named step of publication has just been taken (tests kill the process here)."""


class HarvestStore(ShardFiles):
    """One cached harvest: its published dataset, its plan in progress and its finished shards
    (those are :class:`~mediaframe.cache.shards.ShardFiles`').

    Parameters
    ----------
    root : folder of the harvest (local path or fsspec URL), e.g. ``cache_dir/records/<key>``.
    """

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self._writer = threading.RLock()
        self._writer_depth = 0
        self._writer_file: int | None = None
        self._locks = LockFiles(self.root, self.url, local=self.local, make_root=self._make_root)

    def __repr__(self) -> str:
        return f"HarvestStore({self.url!r})"

    def __getstate__(self) -> dict[str, Any]:
        # Dask workers get the store to write shards: never its locks.
        return {"url": self.url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"])  # type: ignore[misc]

    # locks ------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the writer lock of this harvest folder: a second writer waits here.

        Re-entrant within one store. On first entry, what killed writers left behind is swept.
        """
        with self._writer:
            if self._writer_depth == 0:
                handle = self._locks.take(WRITER, fcntl.LOCK_EX)
                try:
                    self.sweep()
                except BaseException as err:
                    release(handle)  # a writer that cannot start holds nothing
                    if isinstance(err, OSError):
                        raise write_error(self.url, err) from err
                    raise
                self._writer_file = handle
            self._writer_depth += 1
            try:
                yield
            finally:
                self._writer_depth -= 1
                if self._writer_depth == 0:
                    release(self._writer_file)
                    self._writer_file = None

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Hold a reader's share: no version is removed while any reader holds one."""
        handle = self._locks.take(READERS, fcntl.LOCK_SH, create=False)
        try:
            yield
        finally:
            release(handle)

    def remove_unused(self, *, wait: bool = False) -> bool:
        """Remove this harvest unless a writer (harvest, sync) or a reader holds it.

        Takes the writer lock, then the readers' lock exclusively (the order writers take
        them in, so waiting cannot deadlock with one), and removes the folder holding both.
        With ``wait``, waits for both; without, returns ``False`` at once, removing nothing,
        when either is held. A writer that was waiting for the lock then starts afresh.
        """
        if not self.local or not os.path.isdir(self.root):
            self.remove()
            return True
        flags = 0 if wait else fcntl.LOCK_NB
        writer = self._locks.take(WRITER, fcntl.LOCK_EX | flags)
        if writer is None:
            return False
        try:
            readers = self._locks.take(READERS, fcntl.LOCK_EX | flags)
            if readers is None:
                return False
            try:
                self.remove()
            finally:
                os.close(readers)
        finally:
            os.close(writer)
        return True

    # published dataset ------------------------------------------------------

    def manifest(self) -> Manifest | None:
        """The published dataset's manifest; ``None`` if there is none, or an older layout's.

        Raises
        ------
        CacheCorruptError
            The manifest is damaged: not JSON, or of the wrong shape.
        """
        data = self._read_bytes(_MANIFEST)
        if data is None or not is_current(data):
            return None
        return decode(Manifest, data, f"the manifest of {self.url}")

    def published(self) -> str | None:
        """The dataset version the manifest names now; ``None`` if none, or if it is damaged."""
        try:
            manifest = self.manifest()
        except CacheCorruptError:
            return None
        return manifest.data if manifest is not None else None

    def data_url(self, manifest: Manifest | None = None) -> str | None:
        """Where the published dataset lives, or ``None`` if none is published.

        Raises
        ------
        CacheCorruptError
            The manifest is damaged, or names no dataset folder of this harvest's own.
        """
        manifest = manifest or self.manifest()
        return self._url(self._version(manifest)) if manifest else None

    def read_data(self, manifest: Manifest | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Read the published dataset, checking its files against the manifest.

        Raises
        ------
        CacheMissError
            Nothing is published.
        CacheCorruptError
            The manifest is damaged, or a file was changed, removed or added since publication.
        """
        with self.reading():
            manifest = manifest or self.manifest()
            if manifest is None:
                raise CacheMissError(f"nothing is cached at {self.url}")
            path = self._url(self._version(manifest))
            if not self.fs.exists(self._path(manifest.data)):
                raise CacheCorruptError(f"the dataset {path} named by its manifest is missing")
            return read_frame(path, checks=manifest.data_files)

    def _version(self, manifest: Manifest) -> str:
        # Only a data-<version> folder of this harvest's own: a manifest naming ../elsewhere
        # or an absolute path is damage, never followed (lazy readers included).
        if not _is_version(manifest.data):
            raise CacheCorruptError(f"the manifest of {self.url} names no dataset folder")
        return manifest.data

    def publish(
        self,
        df: pd.DataFrame,
        provenance: Mapping[str, Any],
        *,
        spec: Mapping[str, Any],
        sort_by: Iterable[str] = (),
        high_water: str | None = None,
        on_written: Callable[[int], object] | None = None,
    ) -> Manifest:
        """Write ``df`` as a new version and publish it in one atomic step; returns its manifest.

        The old version stays readable until the new manifest replaces it, and is removed only
        once no reader holds it (else by a later writer's sweep). The plan and shards of the
        harvest that made ``df`` are cleared after publication. ``on_written`` is told the rows
        of each file as it is written.
        """
        with self.writing():
            stamp = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
            version = f"{_DATA_PREFIX}{stamp}"
            write_frame(
                df,
                self._url(version),
                provenance=provenance,
                sort_by=sort_by,
                on_written=on_written,
                on_file=flush_file if self.local else None,
            )
            reached("data-written")
            self._flush_tree(self._path(version))
            reached("data-synced")
            manifest = Manifest(
                spec=dict(spec),
                data=version,
                data_files=file_checks(self._url(version)),
                published_at=dt.datetime.now(dt.UTC).isoformat(),
                high_water=high_water,
                complete=bool(provenance.get("complete", True)),
                rows=len(df),
                provenance={k: v for k, v in provenance.items() if k not in ("report", "complete")},
            )
            self._write_atomic(
                self._path(_MANIFEST),
                encode(manifest),
                durable=True,
                staged=lambda: reached("manifest-staged"),
            )
            reached("manifest-replaced")
            self.clear_plan()
            reached("plan-cleared")
            self.sweep()
            reached("swept")
            return manifest

    def sweep(self) -> None:
        """Remove leftovers: dataset versions the manifest does not name (when no reader holds
        one), temporary files, the scratch stores of a sync that did not end (``sync/``), and an
        older layout's ``data/``. Under the writer lock only."""
        if not self.fs.exists(self.root):
            return
        try:
            current = self.manifest()
        except CacheCorruptError:
            current = None
        keep = current.data if current else None
        names = [posixpath.basename(p.rstrip("/")) for p in self.fs.ls(self.root, detail=False)]
        for name in names:
            # a sync's scratch stores (sync/) are only used under this folder's writer lock
            if name == _SYNC or (".tmp-" in name and not name.startswith(_DATA_PREFIX)):
                self._remove(name)
        old = [
            name
            for name in names
            if name != keep
            and name not in self._retiring
            and (name.startswith(_DATA_PREFIX) or name == "data" or ".old-" in name)
        ]
        if not old:
            return
        readers = None  # a remote cache takes no locks
        if self.local:
            readers = self._locks.take(READERS, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if readers is None:
                return  # someone is reading: a later writer sweeps
        try:
            for name in old:
                self._remove(name)
        finally:
            release(readers)

    # plan in progress -------------------------------------------------------

    def scratch(self, *names: str) -> HarvestStore:
        """A store under this folder's ``sync/`` (a sync's passes, used under this folder's
        writer lock; what a killed sync leaves goes with the next writer's sweep)."""
        return HarvestStore(self._url(_SYNC, *names))

    def load_plan(self) -> PlanFile | None:
        """The plan of an interrupted harvest; ``None`` if none or damaged (start afresh)."""
        try:
            data = self._read_bytes(_PLAN)
            if data is None or not is_current(data):
                return None
            return decode(PlanFile, data, f"the plan of {self.url}")
        except CacheCorruptError:
            return None

    def save_plan(self, plan: PlanFile) -> None:
        """Replace the plan atomically."""
        refuse_secrets(plan.provenance)
        self._write_atomic(self._path(_PLAN), encode(plan), staged=lambda: reached("plan-staged"))

    def clear_plan(self) -> None:
        """Forget the harvest in progress: its shards, then its plan (a kill in between leaves
        a plan without shards, which a resume can tell is stale; never shards without a plan,
        which a resume would keep)."""
        self.clear_shards()
        self._remove(_PLAN)


def _is_version(name: str) -> bool:
    return name.startswith(_DATA_PREFIX) and "/" not in name and ".." not in name


def proven_complete(provenance: Mapping[str, Any]) -> bool:
    """Whether a cached dataset was proven complete (one fetched with ``allow_incomplete`` and
    short of hits was not)."""
    return provenance.get("complete", True) is not False


def age(provenance: Mapping[str, Any], *, now: dt.datetime | None = None) -> dt.timedelta:
    """How long ago the cached data was fetched."""
    fetched = dt.datetime.fromisoformat(str(provenance["fetched_at"]))
    return (now or dt.datetime.now(dt.UTC)) - fetched
