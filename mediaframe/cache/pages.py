"""Checkpoints of the pages of a shard still being paged, so that a resume goes on from them.

A shard of an uncapped server may be the whole search, paged a thousand hits at a time: were
only finished shards kept, a harvest stopped again and again (a token revoked every few dozen
requests) would page that shard from its start on every try and never converge. Pages read
are kept when paging fails, and every few seconds while it goes on (see
:mod:`mediaframe.harvest.paging`), beside the shard checkpoints::

    shards/<shard id>.pages/<offset>.arrow    the page's rows (Arrow IPC), written atomically
    shards/<shard id>.pages/<offset>.json     its entry (offset, rows, total, CRC-32; on a
                                              window's first page, the key of the hit before
                                              it): written after the file, the commit point

``offset`` is that of the page's first new hit (pages overlap by one hit, which is dropped).
Read back, pages are taken in order from offset 0 while each follows the last, matches its
checksum and reports the same shard total: the first gap or damage ends them (what follows is
fetched again; damage is told by a ``CacheWarning``, once a look, as that of finished shards
is). The caller drops them all when the shard has moved since (offsets have shifted: another
total, or a next page that does not begin with their last hit), and once the
shard itself is written.
"""

from __future__ import annotations

import re
import warnings
from typing import TYPE_CHECKING

import pandas as pd

from mediaframe.cache.batches import crc32
from mediaframe.cache.datasets import from_ipc, to_ipc
from mediaframe.cache.manifest import PageEntry, decode, encode
from mediaframe.exceptions import CacheCorruptError, CacheWarning

if TYPE_CHECKING:
    from mediaframe.cache.shards import ShardFiles

__all__ = ["PageCheckpoints", "is_plain_name"]

_PLAIN = re.compile(r"[A-Za-z0-9_.-]+")


def is_plain_name(name: str) -> bool:
    """Whether ``name`` (a shard id read back from a plan or an entry) can name a file of the
    harvest folder: letters, digits, ``_.-`` only, and neither ``.`` nor ``..``."""
    return _PLAIN.fullmatch(name) is not None and name not in (".", "..")


class PageCheckpoints:
    """The pages of one shard fetched so far, in a harvest folder (see the module docstring)."""

    def __init__(self, store: ShardFiles, shard_id: str) -> None:
        if not is_plain_name(shard_id):
            # a shard id from a damaged or planted plan: never a path out of the folder
            raise CacheCorruptError(
                f"shard id {shard_id!r} of {store.url} is no plain name: the plan is damaged"
            )
        self.store, self.shard_id = store, shard_id
        self.folder = f"shards/{shard_id}.pages"
        self._touched = False  # saved or found pages: only then is there anything to drop

    def __repr__(self) -> str:
        return f"PageCheckpoints({self.store.url!r}, {self.shard_id!r})"

    def _name(self, offset: int, suffix: str) -> str:
        return f"{self.folder}/{offset:010d}.{suffix}"

    def save(
        self, offset: int, frame: pd.DataFrame, total: int, before: list[int] | None = None
    ) -> None:
        """Keep the page read at ``offset`` (``total``: the shard's total on that page;
        ``before``: the key of the hit before a window's first, see ``PageEntry``)."""
        self._touched = True
        data = to_ipc(frame, {"shard": self.shard_id, "offset": offset})
        entry = PageEntry(
            shard=self.shard_id,
            offset=offset,
            rows=len(frame),
            total=total,
            crc32=crc32(data),
            before=before,
        )
        self.store.write_checkpoint(self._name(offset, "arrow"), data)
        self.store.write_checkpoint(self._name(offset, "json"), encode(entry))

    def restore(self) -> list[tuple[PageEntry, pd.DataFrame]]:
        """The pages kept, in order from offset 0, as long as each is whole and agrees; the
        first damaged one (and so this look) is told by a ``CacheWarning``."""
        pages: list[tuple[PageEntry, pd.DataFrame]] = []
        offset = 0
        while True:
            try:
                page = self._read(offset)
            except CacheCorruptError as err:
                self._tell_damaged(str(err))
                return pages
            if page is None:
                return pages
            entry = page[0]
            if pages and entry.total != pages[0][0].total:
                return pages  # a page of another paging (the shard moved): no damage
            pages.append(page)
            offset += entry.rows

    def _read(self, offset: int) -> tuple[PageEntry, pd.DataFrame] | None:
        """The page kept at ``offset``; ``None`` when there is none (a gap, or its file gone
        with the others meanwhile). Raises ``CacheCorruptError`` naming what is damaged."""
        # The entry is the page's commit point: without it the file is never read (a file
        # left by a kill before its entry is overwritten, or dropped with the shards).
        name = self._name(offset, "json")
        raw = self.store.read_checkpoint(name)
        if raw is None:
            return None
        self._touched = True
        data = self.store.read_checkpoint(self._name(offset, "arrow"))
        if data is None:
            return None  # dropped meanwhile with the rest: no damage
        entry = decode(PageEntry, raw, name)
        if (entry.shard, entry.offset) != (self.shard_id, offset) or entry.rows <= 0:
            raise CacheCorruptError(f"{name} is the entry of another page")
        if crc32(data) != entry.crc32:
            raise CacheCorruptError(f"{self._name(offset, 'arrow')} does not match its CRC-32")
        frame = from_ipc(data, self._name(offset, "arrow"))
        if len(frame) != entry.rows:
            raise CacheCorruptError(f"{self._name(offset, 'arrow')} does not hold its rows")
        return entry, frame

    def _tell_damaged(self, flaw: str) -> None:
        """Warn that a page kept for resume is damaged: told, as a damaged shard is, for paging
        it and those after it again costs requests a resume was meant to save."""
        warnings.warn(
            f"pages of shard {self.shard_id} kept for resume at {self.store.url} are damaged "
            f"({flaw}): that page and those after it are fetched again",
            CacheWarning,
            stacklevel=3,
        )

    @property
    def touched(self) -> bool:
        """Whether pages of the shard were kept, or read back, through this object."""
        return self._touched

    def discard(self, *, kept: bool = False) -> None:
        """Drop every page kept (the shard is written, or its offsets have shifted); ``kept``:
        the shard was written by another hand than the one that paged it, so its pages are
        looked for even if this one saved or read none."""
        if self._touched or kept:
            self.store.remove_checkpoint(self.folder)
            self._touched = False
