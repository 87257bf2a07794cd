"""Feed frames: entries, their items as records, the feeds list, and baskets."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from mediaframe.frames.arrays import text, to_array, warn_unreadable
from mediaframe.frames.captions import Structure
from mediaframe.frames.flatten import flatten
from mediaframe.frames.members import prepend
from mediaframe.frames.normalise import as_items, children, labeller, nested_records
from mediaframe.frames.records import flatten_records
from mediaframe.frames.schema import BASKETS, FEED_ENTRIES, FEED_ITEMS, FEEDS

__all__ = ["baskets", "feed_entries", "feed_items", "feeds"]


def feed_entries(entries: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per feed entry; ``item_count`` says how many items it holds.

    Parameters
    ----------
    entries : the ``entries`` member of a feeds content response.
    """
    entries = as_items(entries, "feed entry")
    label = labeller(entries, FEED_ENTRIES.row, FEED_ENTRIES.key)
    _, owners, _ = children(entries, "items", what="item", label=label)
    counts = pd.array(np.bincount(owners, minlength=len(entries)), dtype="Int64")
    return flatten(entries, FEED_ENTRIES, given={"item_count": counts}, label=label)


def feed_items(entries: list[dict[str, Any]], structure: Structure | None = None) -> pd.DataFrame:
    """One row per feed item: ``entry_id, item_id``, then every column of :func:`records`.

    ``structure`` reads extended records' captions and status bits (see :func:`records`).

    Examples
    --------
    >>> feed_items([{"id": 4, "items": [{"item_id": 1, "record": {
    ...     "databox_id": 1, "record_id": 7}}]}])[["entry_id", "item_id", "record_id"]]
       entry_id  item_id  record_id
    0         4        1          7
    """
    entries = as_items(entries, "feed entry")
    label = labeller(entries, FEED_ENTRIES.row, FEED_ENTRIES.key)
    items, owners, item_label = children(entries, "items", what="item", label=label)
    entry_ids = to_array([entry.get("id") for entry in entries], "Int64", member="id", label=label)
    item_ids = to_array(
        [item.get("item_id") for item in items], "Int64", member="item_id", label=item_label
    )
    checked = nested_records(items, label=item_label)
    frame = flatten_records(checked, label=item_label, structure=structure)
    head = {"entry_id": entry_ids.take(owners), "item_id": item_ids}
    return prepend(frame, head, FEED_ITEMS.names)


def feeds(items: list[dict[str, Any]]) -> pd.DataFrame:
    """The feeds list; ``icon`` is a boolean on newer servers and a path on older ones.

    ``has_icon`` is true for ``true`` or a non-empty path; ``icon`` keeps the path (NA for a
    boolean). Any other ``icon`` is missing, with one :class:`MalformedItemWarning`.
    """
    items = as_items(items, "feed")
    label = labeller(items, FEEDS.row, FEEDS.key)
    icons = [item.get("icon") for item in items]
    odd = [i for i, icon in enumerate(icons) if icon is not None and type(icon) not in (bool, str)]
    warn_unreadable("icon", odd, len(icons), label, icons)  # neither a boolean nor a path
    unreadable = set(odd)
    icons = [None if i in unreadable else icon for i, icon in enumerate(icons)]
    given = {
        "has_icon": pd.array([None if i is None else bool(i) for i in icons], dtype="boolean"),
        "icon": text([i if type(i) is str else None for i in icons]),
    }
    return flatten(items, FEEDS, given=given, label=label)


def baskets(items: list[dict[str, Any]]) -> pd.DataFrame:
    """Baskets, one row each, with ``owner_*`` and ``pusher_*`` user columns."""
    return flatten(as_items(items, "basket"), BASKETS)
