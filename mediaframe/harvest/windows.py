"""Offset windows: a search on a server with no cap, paged in windows of whole pages.

On a server with no cap a search is not planned into filter shards but cut into windows of
``offset_start``, paged several at once. Each window after the first begins with the hit the
one before ended on, so that windows that meet prove nothing shifted between them; a plan of
windows that fails to bring the search whole (a window short, pages that disagree, windows that
do not add up) is given up, and the search planned into filter shards, under the cap a short
window showed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

from mediaframe.cache.manifest import PlannedShard, ShardEntry
from mediaframe.harvest.spec import Shard

__all__ = ["paged_whole", "windows", "windows_failed"]


def windows(total: int, per_page: int, concurrency: int, most: int) -> list[Shard]:
    """Offset windows covering a search of ``total`` hits on a server with no cap.

    Whole pages each, at most ``most`` hits, and as many windows as a multiple of
    ``concurrency``, so that the last round of windows keeps every thread busy. Every page but
    the search's first is asked from one hit before (it must begin with the hit the page before
    ended on: see :func:`mediaframe.harvest.paging.fetch_shard`), so a page brings
    ``per_page - 1`` new hits, the first page ``per_page``: the windows are cut so, and take
    the fewest pages that can overlap, ``ceil((total - 1) / (per_page - 1))``.
    """
    if not total:
        return []
    step = max(1, per_page - 1)  # new hits a page past the first
    pages = max(1, math.ceil((total - 1) / step))
    count = math.ceil(pages * step / most)
    count = max(1, math.ceil(count / concurrency) * concurrency)
    width = math.ceil(pages / count) * step
    # the first window holds the first page's extra hit
    edges = [0, *range(width + 1, total, width), total]
    return [Shard(window=(start, stop, total)) for start, stop in itertools.pairwise(edges)]


def paged_whole(most: int, per_page: int) -> int:
    """The largest shard of at most ``most`` hits whose pages, each after the first asked from
    one hit before, are all whole: ``(per_page - 1) * n + 1`` hits in ``n`` pages."""
    if per_page < 2 or per_page >= most:
        return most
    return (per_page - 1) * (most // per_page) + 1


def windows_failed(
    total: int, leaves: Sequence[PlannedShard], outcomes: Mapping[str, ShardEntry]
) -> tuple[bool, int | None]:
    """Whether a plan of offset windows failed to bring its search whole — a window short, its
    pages in disagreement, the windows not adding up to the search — and the cap a short window
    shows (the deepest offset it reached), if any. Filter shards never fail here: the engine
    judges them as they are."""
    windowed = [
        (window, outcomes[leaf.id])
        for leaf in leaves
        if leaf.shard.get("window") and (window := Shard.from_dict(leaf.shard).window)
    ]
    if not windowed:
        return False, None
    windowed.sort(key=lambda found: found[0][0])
    reached = [
        window[0] + entry.rows
        for window, entry in windowed
        if entry.fault is None and entry.rows < entry.total
    ]
    cap = min(reached) if reached else None
    failed = any(entry.fault or entry.rows < entry.total for _, entry in windowed)
    return failed or not _meet(windowed) or sum(e.total for _, e in windowed) != total, cap


def _meet(windowed: list[tuple[tuple[int, int, int], ShardEntry]]) -> bool:
    """Whether each window, in offset order, begins right after the hit the one before ended
    on (its first page, asked from one hit before, began with that hit's key): a record
    deleted before a window's start and another added after leave every total as it was, yet
    shift the later windows by one. A window without the keys to tell cannot be joined."""
    for (earlier, previous), (window, entry) in itertools.pairwise(windowed):
        if earlier[1] != window[0]:
            return False
        if entry.before is None or previous.last is None or entry.before != previous.last:
            return False
    return True
