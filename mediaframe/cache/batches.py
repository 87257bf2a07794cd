"""Batches of finished shards, as the store keeps them: one Arrow file whose rows are the shards'
one after another, and the list of their entries beside it (pure checks of the bytes read;
:class:`~mediaframe.cache.shards.ShardFiles` does the I/O).

The file lists, in its metadata and so under its checksum, each shard's id, rows and columns:
the entries beside it must tile it, and agree with that list, or the batch is damage.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import pandas as pd

from mediaframe.cache.datasets import from_ipc, ipc_provenance
from mediaframe.cache.manifest import ShardEntry
from mediaframe.exceptions import CacheCorruptError

__all__ = ["crc32", "holds", "shards_in", "tiles"]


def shards_in(data: bytes, entries: Sequence[ShardEntry], where: str) -> dict[str, pd.DataFrame]:
    """The frames of ``entries`` in the batch file ``data``, by id: each its own rows and
    columns.

    Raises
    ------
    CacheCorruptError
        ``data`` does not match the entries' checksum, or does not hold their rows as listed.
    """
    if {entry.crc32 for entry in entries} != {crc32(data)}:
        raise CacheCorruptError(f"{where} does not match its checksum")
    layout = _layout(ipc_provenance(data, where))
    whole = from_ipc(data, where)
    if sum(rows for _, rows, _ in layout.values()) != len(whole):
        raise CacheCorruptError(f"{where} does not hold the rows it lists")
    names = list(whole.columns)
    frames = {}
    for entry in entries:
        if layout.get(entry.id, (None,))[:2] != (entry.start, entry.rows):
            raise CacheCorruptError(f"{where} does not hold shard {entry.id} as listed")
        part = whole.iloc[entry.start : entry.start + entry.rows]
        own = layout[entry.id][2]
        if len(part) != entry.rows or not set(own) <= set(names):
            raise CacheCorruptError(f"{where} does not hold shard {entry.id} as listed")
        if own != names:
            part = part[own]
        frames[entry.id] = part.reset_index(drop=True)
    return frames


def holds(data: bytes, entry: ShardEntry) -> bool:
    """Whether the batch file ``data`` matches ``entry``'s checksum and lists the shard's rows
    where the entry says (its rows not decoded)."""
    if crc32(data) != entry.crc32:
        return False
    try:
        place = _layout(ipc_provenance(data, entry.file)).get(entry.id, (None,))[:2]
    except CacheCorruptError:
        return False
    return place == (entry.start, entry.rows)


def tiles(entries: Sequence[ShardEntry], file: str) -> bool:
    """Whether a batch's entries name its own file and lie one after another from row 0, each
    shard once."""
    start = 0
    for entry in entries:
        if entry.file != file or entry.start != start or entry.rows < 0:
            return False
        start += entry.rows
    return len({entry.id for entry in entries}) == len(entries)


def _layout(provenance: Any) -> dict[str, tuple[int, int, list[str]]]:
    """Where each shard's rows are in a batch file, and its own columns, as the file lists
    them: ``{id: (start, rows, columns)}``; ``{}`` for a file that lists none."""
    listed = provenance.get("shards") if isinstance(provenance, dict) else None
    layout, start = {}, 0
    for item in listed if isinstance(listed, list) else []:
        if not (isinstance(item, list) and len(item) == 3):
            return {}
        shard_id, rows, columns = item
        if type(rows) is not int or rows < 0 or not isinstance(columns, list):
            return {}
        if not all(isinstance(name, str) for name in columns):
            return {}
        layout[str(shard_id)] = (start, rows, columns)
        start += rows
    return layout


def crc32(data: bytes) -> str:
    """The checksum of a checkpoint file (a batch of shards, a page): damage, not tampering, is
    what it guards against, at a quarter of SHA-256's cost."""
    return f"{zlib.crc32(data):08x}"
