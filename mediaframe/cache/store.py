"""One cached harvest on disk: its published dataset, its plan in progress, its finished shards.

<root>/<key>/                 private (0700; every file 0600)
    manifest.json             the published dataset: which data-<version>/ holds it, its checks
    data-<version>/           datasets (see :mod:`mediaframe.cache.datasets`); only the one the
                              manifest names is read, the others are leftovers, swept
    plan.json                 a harvest in progress: its plan and the splits proven so far
    shards/<batch>.arrow      finished shards kept together (Arrow IPC), written atomically
    shards/<batch>.json       their entries: each one's rows in the file, its CRC-32, total;
                              written after the file
    shards/<shard>.pages/     pages of a shard still being paged (see :mod:`mediaframe.cache.pages`)
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
import dataclasses
import datetime as dt
import fcntl
import hashlib
import json
import os
import posixpath
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import pandas as pd
from fsspec.implementations.local import LocalFileSystem

from mediaframe.cache.batches import crc32, holds, shards_in, tiles
from mediaframe.cache.datasets import (
    file_checks,
    filesystem,
    read_frame,
    refuse_secrets,
    remove_tree,
    to_ipc,
    write_error,
    write_frame,
)
from mediaframe.cache.locks import READERS, WRITER, LockFiles, release
from mediaframe.cache.manifest import (
    Manifest,
    PlanFile,
    ShardBatch,
    ShardEntry,
    decode,
    encode,
    is_current,
)
from mediaframe.cache.pages import PageCheckpoints, is_plain_name
from mediaframe.exceptions import CacheCorruptError, CacheMissError
from mediaframe.files import (
    flush_file,
    flush_tree,
    private_dirs,
    read_regular,
    replace_atomically,
)

__all__ = ["HarvestStore", "age", "dataset_key", "private_dirs"]

D = TypeVar("D")

_MANIFEST = "manifest.json"
_PLAN = "plan.json"
_DATA_PREFIX = "data-"
_SYNC = "sync"

#: The most read of one document (manifest, plan, entry, page): far above any written, and a
#: bound on what a hostile or damaged folder can make a read take.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


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


class HarvestStore:
    """One cached harvest: its published dataset, its plan in progress and its finished shards.

    Parameters
    ----------
    root : folder of the harvest (local path or fsspec URL), e.g. ``cache_dir/records/<key>``.
    """

    def __init__(self, root: str) -> None:
        self.fs, self.root = filesystem(root)
        self.url = str(root)
        self.local = isinstance(self.fs, LocalFileSystem)
        self._writer = threading.RLock()
        self._writer_depth = 0
        self._writer_file: int | None = None
        self._retiring: set[str] = set()  # being removed on a thread of this store's
        self._removers: list[threading.Thread] = []
        self._locks = LockFiles(self.root, self.url, local=self.local, make_root=self._make_root)

    def __repr__(self) -> str:
        return f"HarvestStore({self.url!r})"

    def __getstate__(self) -> dict[str, Any]:
        # Dask workers get the store to write shards: never its locks.
        return {"url": self.url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"])  # type: ignore[misc]

    def _url(self, *parts: str) -> str:
        return posixpath.join(self.url.rstrip("/"), *parts)

    def _path(self, *parts: str) -> str:
        # Names may come from files of the folder (shard ids): none may lead out of it.
        for part in parts:
            if part.startswith("/") or ".." in part.split("/"):
                raise CacheCorruptError(f"{part!r} names no file inside {self.url}: damage")
        return posixpath.join(self.root, *parts)

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
                self._path(_MANIFEST), encode(manifest), step="manifest", durable=True
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

    def _remove(self, name: str) -> None:
        path = self._path(name)
        if self.local:  # past what another remover took first
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            return
        with contextlib.suppress(FileNotFoundError):
            remove_tree(self.fs, path)

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
        self._write_atomic(self._path(_PLAN), encode(plan), step="plan")

    def clear_plan(self) -> None:
        """Forget the harvest in progress: its shards, then its plan (a kill in between leaves
        a plan without shards, which a resume can tell is stale; never shards without a plan,
        which a resume would keep)."""
        self.clear_shards()
        self._remove(_PLAN)

    # shards -----------------------------------------------------------------

    def write_shard(self, shard_id: str, df: pd.DataFrame, **facts: Any) -> ShardEntry:
        """Write one finished shard (a batch of one, see :meth:`write_shards`) with ``facts``;
        returns its entry."""
        (entry,) = self.write_shards(df, [ShardEntry(id=shard_id, rows=len(df), **facts)])
        return entry

    def write_shards(
        self,
        df: pd.DataFrame,
        entries: Sequence[ShardEntry],
        columns: Sequence[Sequence[str]] | None = None,
    ) -> list[ShardEntry]:
        """Keep finished shards together: ``df`` holds their rows one after another, in the
        order of ``entries`` (each ``rows`` long). Writes one file, then the batch's entries;
        returns them, each naming its place in the file. ``columns`` are each shard's own
        (all of ``df``'s by default): a shard read back has its own, not its batch's.

        The entries are written last: a shard counts as finished only once its entry exists,
        so a crash between the two leaves unfinished shards, never half-written finished ones.
        Batches are named in the order they are written: where two hold the same shard (one
        fetched again), :meth:`finished_shards` takes the later.
        """
        if sum(entry.rows for entry in entries) != len(df):
            raise ValueError("the entries' rows do not add up to the frame's")
        if columns is None:
            columns = [list(df.columns)] * len(entries)
        columns = [[str(name) for name in own] for own in columns]
        name = f"b{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        # the file says which rows are whose (its CRC covers that; the entries' JSON is checked
        # against it) and each shard's own columns (a batch has the union of its shards')
        layout = [[entry.id, entry.rows, own] for entry, own in zip(entries, columns, strict=True)]
        data = to_ipc(df, {"shards": layout})
        self._write_atomic(self._path("shards", f"{name}.arrow"), data)
        crc, start, written = crc32(data), 0, []
        for entry in entries:
            placed = dataclasses.replace(entry, file=f"shards/{name}.arrow", start=start, crc32=crc)
            written.append(placed)
            start += entry.rows
        self._write_atomic(self._path("shards", f"{name}.json"), encode(ShardBatch(written)))
        return written

    def finished_shards(self) -> dict[str, ShardEntry]:
        """The entries of every shard written so far (intact or not: see :meth:`has_shard`)."""
        root = self._path("shards")
        entries = {}
        try:
            paths = sorted(self.fs.glob(posixpath.join(root, "*.json")))
        except FileNotFoundError:
            return {}
        for path in paths:  # in the order written: a later batch's entry wins
            try:
                data = self._read_bytes("shards/" + posixpath.basename(path))
                if data is None:
                    continue
                batch = decode(ShardBatch, data, path)
            except CacheCorruptError:
                continue  # a damaged or vanished batch: its shards are simply fetched again
            own = "shards/" + posixpath.basename(path).removesuffix(".json") + ".arrow"
            if not tiles(batch.shards, own):
                continue  # entries pointing elsewhere, overlapping or repeated: damage too
            if not all(is_plain_name(entry.id) for entry in batch.shards):
                continue  # ids that would name paths out of the folder (their pages): damage
            for entry in batch.shards:
                entries[entry.id] = entry
        return entries

    def read_shard(self, entry: ShardEntry) -> pd.DataFrame:
        """Read a shard written by :meth:`write_shards`, checking it against its entry."""
        return self.read_shards([entry])[entry.id]

    def read_shards(self, entries: Iterable[ShardEntry]) -> dict[str, pd.DataFrame]:
        """Read shards written by :meth:`write_shards`, by id, each file once; checked against
        their entries.

        Raises
        ------
        CacheCorruptError
            A file is missing, damaged, or does not hold an entry's rows.
        """
        by_file: dict[str, list[ShardEntry]] = {}
        for entry in entries:
            by_file.setdefault(entry.file, []).append(entry)
        frames = {}
        for file, kept in by_file.items():
            data = self._shard_bytes(file)
            if data is None:
                raise CacheCorruptError(f"shard file {file or '(none)'} is missing")
            frames.update(shards_in(data, kept, f"shard file {file}"))
        return frames

    def has_shard(self, entry: ShardEntry) -> bool:
        """Whether a finished shard's file is present, matches its checksum, and holds the
        shard's rows where its entry says (as the file itself lists them).

        The rows are not decoded: :meth:`read_shard` parses them when the shard is read, so a
        resume does not parse every kept shard twice.
        """
        data = self._shard_bytes(entry.file)
        return data is not None and holds(data, entry)

    def _shard_bytes(self, file: str) -> bytes | None:
        if not file.startswith("shards/") or "/" in file.removeprefix("shards/"):
            return None  # only this folder's own files are read
        try:
            return self._read_bytes(file, document=False)  # a batch: as large as its shards
        except CacheCorruptError:
            return None

    def pages(self, shard_id: str) -> PageCheckpoints:
        """The page checkpoints of one shard still being paged."""
        return PageCheckpoints(self, shard_id)

    def write_checkpoint(self, name: str, data: bytes) -> None:
        """Write the checkpoint file ``name`` (relative to the folder) atomically, unflushed."""
        self._write_atomic(self._path(name), data)

    def read_checkpoint(self, name: str) -> bytes | None:
        """The bytes of the checkpoint file ``name``; ``None`` if missing or unreadable."""
        try:
            return self._read_bytes(name)
        except CacheCorruptError:
            return None

    def remove_checkpoint(self, name: str) -> None:
        """Remove the checkpoint file or folder ``name`` (missing is fine)."""
        self._remove(name)

    def clear_shards(self) -> None:
        """Drop the staged shards: renamed aside at once, removed on a thread of their own (a
        process that exits first leaves them to the next writer's sweep)."""
        if not self.local:
            self._remove("shards")
            return
        retired = f"shards.old-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(self._path("shards"), self._path(retired))
        except FileNotFoundError:
            return
        self._retiring.add(retired)
        remover = threading.Thread(
            target=self._remove, args=(retired,), name="mediaframe-sweep", daemon=True
        )
        remover.start()
        self._removers.append(remover)

    def settle(self) -> None:
        """Wait until the shards cleared by this store are removed from disk."""
        for remover in self._removers:
            remover.join()
        self._removers.clear()

    def remove(self) -> None:
        """Forget this harvest entirely."""
        remove_tree(self.fs, self.root)

    # files ------------------------------------------------------------------

    def _read_bytes(self, name: str, *, document: bool = True) -> bytes | None:
        """The bytes of the file ``name``; ``None`` if it is missing. A symlink, FIFO or device
        in its place, or a ``document`` over MAX_DOCUMENT_BYTES, is damage: never followed,
        waited on or read without end."""
        path, data, limit = self._path(name), b"", MAX_DOCUMENT_BYTES if document else None
        try:
            if self.local:
                data = read_regular(path, limit)
            else:
                with self.fs.open(path, "rb") as handle:
                    data = handle.read(-1 if limit is None else limit + 1)
        except FileNotFoundError:
            return None
        except OSError as err:
            raise CacheCorruptError(f"{name} of {self.url} cannot be read ({err})") from err
        if limit is not None and len(data) > limit:
            raise CacheCorruptError(f"{name} of {self.url} is over {limit:,} bytes: damage")
        return data

    def _make_root(self) -> None:
        if self.local:
            private_dirs(self.root)
        else:
            self.fs.makedirs(self.root, exist_ok=True)

    def _write_atomic(
        self, path: str, data: bytes, *, step: str = "", durable: bool = False
    ) -> None:
        """Write a sibling and rename it over ``path``: a kill leaves the old file or the new.

        ``durable`` also flushes the file before the rename and the folder after it, so that
        a power cut cannot leave the name pointing at unwritten blocks: the manifest's due.
        Checkpoints are not flushed: one lost to a power cut fails its checksum and is fetched
        again, while flushing each would cost a disk round trip per shard.
        """
        try:
            if self.local:
                staged = (lambda: reached(f"{step}-staged")) if step else None
                replace_atomically(path, data, durable=durable, staged=staged)
                return
            partial = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
            self.fs.makedirs(posixpath.dirname(path), exist_ok=True)
            with self.fs.open(partial, "wb") as handle:
                handle.write(data)
            self.fs.mv(partial, path)
        except OSError as err:
            raise write_error(self.url, err) from err

    def _flush_tree(self, path: str) -> None:
        """Make a written dataset private and durable (local caches only)."""
        if not self.local:
            return
        try:
            flush_tree(path)
        except OSError as err:
            raise write_error(self.url, err) from err


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
