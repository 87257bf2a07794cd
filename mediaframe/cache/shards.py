"""The shards a harvest keeps for resume: finished shards written in batches (one Arrow file and
its entries), and the page checkpoints of shards still being paged.

In a harvest folder (see :mod:`~mediaframe.cache.store` for the whole of it)::

    shards/<batch>.arrow      finished shards kept together (Arrow IPC), written atomically
    shards/<batch>.json       their entries: each one's rows in the file, its CRC-32, total;
                              written after the file
    shards/<shard>.pages/     pages of a shard still being paged (see :mod:`mediaframe.cache.pages`)

The checks of a batch file's bytes are :mod:`~mediaframe.cache.batches`'; this module does the
I/O. Nothing here is flushed to disk: a checkpoint lost to a power cut fails its checksum and is
fetched again.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
import threading
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pandas as pd

from mediaframe.cache.batches import crc32, holds, shards_in, tiles
from mediaframe.cache.datasets import to_ipc, write_error
from mediaframe.cache.folder import HarvestFolder
from mediaframe.cache.manifest import ShardBatch, ShardEntry, decode, encode
from mediaframe.cache.pages import PageCheckpoints, is_plain_name
from mediaframe.exceptions import CacheCorruptError, CacheWarning

__all__ = ["ShardFiles"]


class ShardFiles(HarvestFolder):
    """The shards kept in a harvest folder while its harvest runs (see the module docstring).

    Shards cleared are renamed aside at once and removed on threads of their own: their names
    are in ``_retiring`` until then (a sweep leaves them to those threads).
    """

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self._retiring: set[str] = set()  # being removed on a thread of this store's
        self._removers: list[threading.Thread] = []

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
        damaged: list[str] = []
        # in the order written: a later batch's entry wins
        entries = {entry.id: entry for _, batch in self._batches(damaged) for entry in batch.shards}
        if damaged:
            self._tell_damaged(damaged)
        return entries

    def mark_faulty(self, ids: Iterable[str], fault: str) -> None:
        """Set ``fault`` on the entries of the finished shards ``ids``: kept in the folder, never
        reused by a resume (see :attr:`ShardEntry.fault`). Each batch naming one is rewritten
        whole, atomically; its file and the other entries stay as they are. Damaged batches
        are left as they are: a resume fetches their shards again anyway."""
        wanted = set(ids)
        try:
            batches = list(self._batches([])) if wanted else []
        except OSError as err:  # a listing refused (a remote store): said as the cache's
            raise write_error(self.url, err) from err
        for name, batch in batches:
            if wanted & {entry.id for entry in batch.shards}:
                marked = [
                    dataclasses.replace(entry, fault=fault) if entry.id in wanted else entry
                    for entry in batch.shards
                ]
                self._write_atomic(self._path(name), encode(ShardBatch(marked)))

    def _batches(self, damaged: list[str]) -> Iterator[tuple[str, ShardBatch]]:
        """Every whole batch of finished shards, ``(name, batch)`` in the order written; why
        each of the others is damage goes into ``damaged``."""
        root = self._path("shards")
        try:
            paths = sorted(self.fs.glob(posixpath.join(root, "*.json")))
        except FileNotFoundError:
            return
        for path in paths:
            name = "shards/" + posixpath.basename(path)
            try:
                data = self._read_bytes(name)
                if data is None:
                    continue  # vanished (cleared meanwhile): no damage
                batch = decode(ShardBatch, data, name)
            except CacheCorruptError as err:
                damaged.append(str(err))  # its shards are fetched again
                continue
            own = name.removesuffix(".json") + ".arrow"
            if not tiles(batch.shards, own):
                damaged.append(f"{name} has entries pointing elsewhere, overlapping or repeated")
                continue
            if not all(is_plain_name(entry.id) for entry in batch.shards):
                # ids that would name paths out of the folder (their pages)
                damaged.append(f"{name} has shard ids that are no plain names")
                continue
            yield name, batch

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
        if data is not None and holds(data, entry):
            return True
        flaw = "is not in the folder" if data is None else "does not hold its entries' shards"
        self._tell_damaged([f"shard file {entry.file or '(none)'} {flaw}"])
        return False

    def _tell_damaged(self, flaws: Sequence[str]) -> None:
        """Warn that finished shards kept for resume are damaged: told, for a resume that pages
        them again costs more than one that keeps them."""
        shown = "; ".join(flaws[:3]) + ("; ..." if len(flaws) > 3 else "")
        warnings.warn(
            f"finished shards kept for resume at {self.url} are damaged ({shown}): "
            "their shards are fetched again",
            CacheWarning,
            stacklevel=3,
        )

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

    def clear_pages(self) -> None:
        """Drop the pages kept within every shard still being paged: the search changed since
        they were read, so their offsets may have shifted (a deletion before them, an addition
        after, the total the same)."""
        try:
            found = self.fs.glob(posixpath.join(self._path("shards"), "*.pages"))
        except FileNotFoundError:
            return
        for path in found:
            self._remove("shards/" + posixpath.basename(path.rstrip("/")))

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
