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
    .readers                  lock file: the readers' gate, held while one chooses its version
    .readers-data-<version>   lock file: the readers of that version share it; an old version
                              goes only when none holds it

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
import warnings
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
from mediaframe.cache.locks import (
    READERS,
    VERSION_READERS,
    WRITER,
    LockFiles,
    release,
    version_lock,
)
from mediaframe.cache.manifest import (
    SCHEMA_VERSION,
    Manifest,
    PlanFile,
    another_version,
    decode,
    encode,
)
from mediaframe.cache.shards import ShardFiles
from mediaframe.exceptions import CacheCorruptError, CacheMissError, CacheWarning
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
    def reading(self) -> Iterator[Manifest | None]:
        """Hold the version published now for as long as the block reads it; yields its
        manifest (``None``: nothing is published). Read that manifest, not a later one: a writer
        may publish meanwhile, and only the version held is kept from the sweep.

        Raises
        ------
        CacheCorruptError
            The manifest is damaged.
        """
        manifest, held = self.hold()
        try:
            yield manifest
        finally:
            release(held)

    def hold(self) -> tuple[Manifest | None, int | None]:
        """The published manifest, and a reader's hold on the version it names: that version is
        not removed until the hold is freed with :func:`~mediaframe.cache.locks.release` (or its
        process ends). The hold is ``None`` where none is needed or can be taken: nothing
        published, a remote or read-only cache, a manifest naming no version of its own.

        The readers' gate (``.readers``) is held only while the manifest is read and the
        version's lock taken, so a sweep never sees a reader between the two: a reader of an
        old version never stops the sweep of another, and the version published is never swept.
        """
        gate = self._locks.take(READERS, fcntl.LOCK_SH, create=False)
        try:
            manifest = self.manifest()
            if gate is None or manifest is None or not _is_version(manifest.data):
                return manifest, None
            lock = version_lock(manifest.data)
            return manifest, self._locks.take(lock, fcntl.LOCK_SH, create=False)
        finally:
            release(gate)

    def remove_unused(self, *, wait: bool = False) -> bool:
        """Remove this harvest unless a writer (harvest, sync) or a reader holds it.

        Takes the writer lock, then the readers' gate and every version's lock exclusively (the
        order writers take them in), and removes the folder holding them all. Without ``wait``,
        returns ``False`` at once, removing nothing, when any is held. With ``wait``, waits for
        the writer, then for each version's readers with the gate let go (a reader of one
        version may open another meanwhile: waiting under the gate would deadlock with it),
        and tries again. A writer that was waiting for the lock then starts afresh.
        """
        if not self.local or not os.path.isdir(self.root):
            self.remove()
            return True
        writer = self._locks.take(WRITER, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        if writer is None:
            return False
        try:
            while (busy := self._remove_if_unread()) is not None:
                if not wait:
                    return False
                release(self._locks.take(busy, fcntl.LOCK_EX))  # its readers are done
        finally:
            release(writer)
        return True

    def remove_if_empty(self) -> bool:
        """Remove this harvest folder if it holds nothing but its lock files, and no one holds
        it; whether it was removed. For a call that failed before writing anything (a search
        the server refused): the folder its writer lock made would otherwise stay, listed by
        ``cache ls`` with nothing in it. Never waits: a writer or reader holding it keeps it.
        A writer that was waiting for the lock then starts afresh (its lock file was unlinked).
        """
        if not self.local or not os.path.isdir(self.root):
            return False
        writer = self._locks.take(WRITER, fcntl.LOCK_EX | fcntl.LOCK_NB, create=False)
        if writer is None:
            return False
        try:
            if not all(_is_lock(name) for name in os.listdir(self.root)):
                return False
            return self._remove_if_unread() is None
        finally:
            release(writer)

    def _remove_if_unread(self) -> str | None:
        """Remove the folder unless a reader holds the gate or a version: ``None``, or the name
        of the lock found held. Under the writer lock."""
        with contextlib.ExitStack() as held:
            for name in (READERS, *self._version_locks()):
                handle = self._locks.take(name, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if handle is None:
                    return name
                held.callback(release, handle)
            self.remove()
        return None

    def _version_locks(self) -> list[str]:
        return [name for name in os.listdir(self.root) if name.startswith(VERSION_READERS)]

    # published dataset ------------------------------------------------------

    def manifest(self) -> Manifest | None:
        """The published dataset's manifest; ``None`` if there is none.

        Raises
        ------
        CacheCorruptError
            The manifest is damaged (not JSON, or of the wrong shape), or was written by another
            version of mediaframe: read offline, that is told; online, it is fetched again and
            overwritten, never taken for "nothing cached" without a word.
        """
        data = self._read_bytes(_MANIFEST)
        if data is None:
            return None
        where = f"the manifest of {self.url}"
        _refuse_another_version(
            data,
            where,
            ": read it with that version, or fetch the search again online, which replaces it",
        )
        return decode(Manifest, data, where)

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
        with self.reading() as published:
            manifest = manifest or published
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
        """Remove leftovers: dataset versions the manifest does not name (each once no reader
        holds it, with its lock file), temporary files, the scratch stores of a sync that did
        not end (``sync/``), and an older layout's ``data/``. Under the writer lock only."""
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
        # a version's lock outliving it (a sweep killed between the two) goes the same way
        old += [
            version
            for name in names
            if name.startswith(VERSION_READERS)
            and _is_version(version := name.removeprefix(VERSION_READERS))
            and version not in names
        ]
        if not self.local:
            for name in old:  # a remote cache takes no locks
                self._remove(name)
            return
        unread = self._unread(old)
        try:
            for name, handle in unread:
                self._remove(name)
                if handle is not None:
                    self._remove(version_lock(name))
        finally:
            for _, handle in unread:  # every one, even past a removal that failed
                release(handle)

    def _unread(self, names: list[str]) -> list[tuple[str, int | None]]:
        """Of the leftovers ``names``, those no reader holds, each with its version's lock taken
        exclusively (``None``: it has none, so no reader ever held it). None at all while a
        reader is choosing its version (it holds the gate): a later writer sweeps them.

        Past the gate, no reader can take the lock of a version the manifest does not name: the
        locks taken here are kept, and the gate released, while the versions are removed.
        """
        if not names:
            return []
        gate = self._locks.take(READERS, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if gate is None:
            return []
        unread: list[tuple[str, int | None]] = []
        try:
            for name in names:
                if not os.path.exists(self._path(version_lock(name))):
                    unread.append((name, None))
                    continue
                handle = self._locks.take(version_lock(name), fcntl.LOCK_EX | fcntl.LOCK_NB)
                if handle is not None:
                    unread.append((name, handle))
        except BaseException:
            for _, handle in unread:
                release(handle)
            raise
        finally:
            release(gate)
        return unread

    # plan in progress -------------------------------------------------------

    def scratch(self, *names: str) -> HarvestStore:
        """A store under this folder's ``sync/`` (a sync's passes, used under this folder's
        writer lock; what a killed sync leaves goes with the next writer's sweep)."""
        return HarvestStore(self._url(_SYNC, *names))

    def load_plan(self) -> PlanFile | None:
        """The plan of an interrupted harvest, for its writer to resume; ``None`` if none.

        A plan that cannot be read (damaged as a whole, or written by another version of
        mediaframe) is dropped with the shards it made, with a :class:`CacheWarning`: the
        harvest starts afresh. Its shards kept without it would each be counted again to be
        trusted, and the resume would cost more than a fresh harvest.
        """
        try:
            return self.read_plan()
        except CacheCorruptError as err:
            warnings.warn(
                f"{err}: it is dropped with its shards, and the harvest fetched again",
                CacheWarning,
                stacklevel=2,
            )
            self.clear_plan()
            return None

    def read_plan(self) -> PlanFile | None:
        """The plan of an interrupted harvest as it is on disk; ``None`` if none.

        Raises
        ------
        CacheCorruptError
            The plan is damaged, or was written by another version of mediaframe.
        """
        data = self._read_bytes(_PLAN)  # a file that cannot be read says so itself
        if data is None:
            return None
        where = f"the plan of the harvest in progress at {self.url}"
        _refuse_another_version(data, where)
        try:
            return decode(PlanFile, data, _PLAN)
        except CacheCorruptError as err:
            raise CacheCorruptError(f"{where} is damaged ({err})") from None

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


def _refuse_another_version(data: bytes, where: str, advice: str = "") -> None:
    """Raise if ``data`` (the document at ``where``) was written by another version of
    mediaframe: this one cannot tell whether it reads it right."""
    written = another_version(data)
    if written is not None:
        raise CacheCorruptError(
            f"{where} was written by another version of mediaframe ({written}; this one "
            f"writes schema version {SCHEMA_VERSION}){advice}"
        )


def _is_lock(name: str) -> bool:
    return name in (WRITER, READERS) or name.startswith(VERSION_READERS)


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
