"""One shard paged whole on a stable sort, its pages proving that each follows the one before.

Each page after a shard's first is asked from one hit before where the last one ended, and must
begin with that hit (same key): pages that meet so hold every hit that was in the shard while it
was paged, whatever moved. A shard whose pages do not meet, repeat a key, or whose total moved is
paged again, then given up as a :class:`PagingFault`; one grown past the cap raises
:class:`ShardOverCap`, to be planned again. The pages read are kept while paging goes on
(:mod:`mediaframe.cache.pages`), so that a resume goes on from them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable

import pandas as pd

from mediaframe.cache.pages import PageCheckpoints
from mediaframe.exceptions import CacheError
from mediaframe.harvest.answers import int_member, optional_int_member, repeated_keys
from mediaframe.harvest.spec import Page, Shard, Spec

__all__ = ["PAST_TOTAL", "Combine", "Edges", "PagingFault", "ShardOverCap", "fetch_shard", "join"]

#: How a shard's fault says the server served hits past its reported total (no cap).
PAST_TOTAL = "the server serves hits past its total_results"
# Times a shard whose pages disagree is paged again before it is given up as incomplete.
_REPAGES = 2
# Seconds of paging a shard after which the pages read so far are kept (they are kept at once
# when paging fails): a kill loses at most this much of a shard's pages.
_KEEP_EVERY = 2.0


Combine = Callable[[list[pd.DataFrame]], pd.DataFrame]


class PagingFault(Exception):
    """Raised inside the engine when a shard's pages disagree even after paging it again."""

    def __init__(self, reason: str, frame: pd.DataFrame, total: int, requests: int) -> None:
        super().__init__(reason)
        self.reason, self.frame, self.total, self.requests = reason, frame, total, requests


class ShardOverCap(Exception):
    """Raised inside the engine when a shard grew past the cap since it was planned."""

    def __init__(self, total: int) -> None:
        super().__init__(total)
        self.total = total


def fetch_shard(
    page: Page,
    spec: Spec,
    shard: Shard,
    *,
    per_page: int,
    capped_engine: bool,
    combine: Combine,
    partial: bool = False,
    pages: PageCheckpoints | None = None,
    resume: bool = True,
) -> tuple[pd.DataFrame, int, int, Edges]:
    """Page every hit of one shard; returns ``(frame, total, requests, edges)``.

    Each page after the first is asked from one hit before where the previous page ended, and
    must begin with the hit that page ended on: pages that meet so hold every hit that was in
    the shard while it was paged, whatever moved (a record deleted early in the paging order
    and another added later leave every total as it was, yet shift the later offsets). The
    overlapping hit is dropped. A shard whose pages do not meet, repeat a key, or whose total
    moved while it was paged is paged again, up to twice. With ``pages``, the pages read are
    kept when paging fails (and every few seconds while it goes on), and paging goes on from
    the pages an interrupted run kept (its requests are not counted again) unless the shard
    has moved since; without ``resume`` (a fresh harvest, which cleared them), no kept page is
    looked for.

    Raises
    ------
    ShardOverCap
        The shard can no longer be paged whole, unless ``partial``: then it takes what the
        server lets it retrieve.
    PagingFault
        The pages still disagree after paging again; it carries the distinct rows read.
    """
    requests = 0
    for attempt in range(1 + _REPAGES):
        if attempt and pages is not None:
            pages.discard()  # pages of a paging that disagreed are never resumed from
        paging = _Paging(page, spec, shard, per_page, capped_engine, partial, pages)
        frame, totals, spent = paging.through(combine, resume=resume and attempt == 0)
        requests += spent
        fault = paging_fault(frame, totals, spec.key_columns) or paging.broken
        if fault is None and paging.past_total:  # paging again would not change its count
            if pages is not None:
                pages.discard()
            raise PagingFault(
                f"shard {shard.id}: {PAST_TOTAL} ({totals[-1]}): at offset_start={totals[-1]} "
                "it still served a hit",
                frame.drop_duplicates(list(spec.key_columns)),
                totals[-1],
                requests,
            )
        if fault is None and shard.window is not None and totals[-1] != shard.window[2]:
            # offsets of the whole search shift when it moves: windows then miss or repeat hits
            fault = f"the search's total moved from {shard.window[2]} to {totals[-1]}"
        if fault is None:
            return frame, shard.size(totals[-1]), requests, paging.edges()
    if pages is not None:
        pages.discard()
    raise PagingFault(
        f"shard {shard.id}: {fault}",
        frame.drop_duplicates(list(spec.key_columns)),
        totals[-1],
        requests,
    )


#: A shard's key before its first hit (an offset window after the search's first: as its first
#: page served it) and of its last hit, where known: adjacent windows must meet on them.
Edges = tuple[list[int] | None, list[int] | None]


@dataclasses.dataclass
class _Paging:
    """One pass over a shard's pages, from where an interrupted run's kept pages end."""

    page: Page
    spec: Spec
    shard: Shard
    per_page: int
    capped_engine: bool
    partial: bool
    pages: PageCheckpoints | None
    #: A server with no cap served a hit past the total it reported: its total is capped.
    past_total: bool = False
    #: Why two pages do not meet (the later one did not begin with the hit the earlier ended
    #: on): hits moved between them, or the server does not page by ``offset_start``.
    broken: str | None = None
    #: The key of the hit before the shard's first (an offset window after the search's
    #: first), and of the last hit read.
    before: tuple[int, ...] | None = None
    last: tuple[int, ...] | None = None

    def edges(self) -> Edges:
        """Where the shard begins and ends, as keys (see :data:`Edges`)."""
        if self.shard.window is None:
            return None, None
        before = list(self.before) if self.before is not None else None
        return before, list(self.last) if self.last is not None else None

    def through(self, combine: Combine, *, resume: bool) -> tuple[pd.DataFrame, list[int], int]:
        """``(frame, every page's total, requests)``.

        Pages read are kept (:attr:`pages`) when paging fails — a revoked token, a dropped
        network: the next run goes on from them — and every :data:`_KEEP_EVERY` seconds while
        it goes on, so that a kill loses at most that much of a shard. A harvest whose shards
        page faster than that writes no page at all.
        """
        kept = self.pages.restore() if resume and self.pages is not None else []
        parts = [frame for _, frame in kept]
        totals = [entry.total for entry, _ in kept]
        offset = sum(entry.rows for entry, _ in kept)
        if kept:
            self.before = _as_key(kept[0][0].before)
            self.last = _key_of(parts[-1], -1, self.spec.key_columns)
        unsaved: list[tuple[int, pd.DataFrame, int, list[int] | None]] = []
        saved_at = time.monotonic()
        requests = 0
        try:
            while True:
                # every page but the search's first overlaps the hit read before it
                overlap = offset > 0 or self._window_start() > 0
                # no more than the hits left as the last page counted them (those past the
                # total are for _serves_past to find)
                left = self.shard.size(totals[-1]) - offset if totals else None
                frame, total = self._read(offset, overlap=overlap, left=left)
                requests += 1
                broken = self._disjoint(frame, offset) if overlap else None
                if kept and requests == 1 and (total != totals[0] or broken):
                    # the shard moved while the harvest was down: the kept pages shifted
                    assert self.pages is not None
                    self.pages.discard()
                    kept, parts, totals, offset = [], [], [], 0
                    self.before = self.last = None
                    continue
                totals.append(total)
                if broken:
                    self.broken = broken
                    # whole, a page served again shows as repeated keys (a hit without a key
                    # would show as one, and is told as what it is)
                    keyed = _key_of(frame, 0, self.spec.key_columns) is not None
                    parts.append(frame if keyed else frame.iloc[1:].reset_index(drop=True))
                    break
                hits = frame.iloc[1:].reset_index(drop=True) if overlap else frame
                if overlap and offset == 0:  # a window's first page: the hit before it
                    self.before = _key_of(frame, 0, self.spec.key_columns)
                if len(hits) or not parts:  # keep one (maybe empty) page: it has the columns
                    parts.append(hits)
                last = not len(hits) or offset + len(hits) >= self.shard.size(total)
                if not last:
                    before = list(self.before) if offset == 0 and self.before else None
                    unsaved.append((offset, hits, total, before))
                if len(hits):
                    self.last = _key_of(hits, -1, self.spec.key_columns)
                offset += len(hits)
                if last:
                    if len(hits) and self._ends_search(total):
                        self.past_total = self._serves_past(total, hits)
                        requests += 1
                    break
                if time.monotonic() - saved_at >= _KEEP_EVERY:
                    self._keep(unsaved)
                    saved_at = time.monotonic()
        except ShardOverCap:
            raise  # the shard is planned again: its pages are of no use
        except Exception:
            # what this run read is not read again by the next; a page that cannot be kept
            # (a full disk) is simply read again: the error told is the one that stopped paging
            with contextlib.suppress(CacheError):
                self._keep(unsaved)
            raise
        return join(parts, combine), totals, requests

    def _disjoint(self, frame: pd.DataFrame, offset: int) -> str | None:
        """Why a page asked from one hit before ``offset`` does not begin with the hit read
        there (``None`` when it does, and for a window's first page, which has none to meet)."""
        if offset == 0:
            return None
        where = f"offset_start={self._window_start() + offset - 1}"
        if not len(frame):
            return f"its page at {where} came back empty, though a hit was read there before"
        first = _key_of(frame, 0, self.spec.key_columns)
        if first is None or self.last is None:
            return f"its pages cannot be joined: a hit at {where} has no key to tell it by"
        if first != self.last:
            return (
                f"its pages do not meet: the page at {where} began with {first}, not with "
                f"{self.last}, the hit the page before ended on (hits moved between the pages, "
                "or offset_start is ignored)"
            )
        return None

    def _window_start(self) -> int:
        return 0 if self.shard.window is None else self.shard.window[0]

    def _ends_search(self, total: int) -> bool:
        """Whether the shard's last hit is its search's last, on a server with no cap: the
        total is then all that says no hit follows. Engines that count only so far (a search
        index reporting at most 10,000 hits unless told to count them all) still serve hits
        past it."""
        if self.capped_engine or self.partial:
            return False  # a capped server's total is proven by its cap and its empty pages
        return self.shard.window is None or self.shard.window[1] >= total

    def _serves_past(self, total: int, last: pd.DataFrame) -> bool:
        """Whether one hit comes back at ``offset_start=total`` (one request), sorted after
        the ``last`` page's: an earlier one is a server ignoring offset_start, which the
        repeated keys tell. A hit under a larger total is a record added since the last page
        (a live catalogue), not a total that stopped counting."""
        sort = self.spec.paging_sort
        params = {**self.spec.params(self.shard), "sort": sort, "ord": "asc"}
        response, frame = self.page(**params, offset_start=total, per_page=1)
        if not len(frame) or int_member(response, "total_results") != total:
            return False
        key = list(self.spec.key_columns)
        if set(key) <= set(frame.columns) & set(last.columns):
            seen = last[key].astype("int64").itertuples(index=False, name=None)
            if tuple(frame[key].astype("int64").iloc[0]) in set(seen):
                return False  # a hit served again: offsets ignored, which the repeats tell
        if sort not in frame.columns or sort not in last.columns:
            return True
        past, final = frame[sort].iloc[0], last[sort].iloc[-1]
        return bool(pd.isna(past) or pd.isna(final) or past >= final)

    def _keep(self, unsaved: list[tuple[int, pd.DataFrame, int, list[int] | None]]) -> None:
        if self.pages is not None:
            for offset, frame, total, before in unsaved:
                self.pages.save(offset, frame, total, before)
        unsaved.clear()

    def _read(
        self, offset: int, *, overlap: bool, left: int | None = None
    ) -> tuple[pd.DataFrame, int]:
        """The page of hits from ``offset`` (of the shard), from one hit before if ``overlap``;
        of at most ``left`` new hits, where known."""
        params = {**self.spec.params(self.shard), "sort": self.spec.paging_sort, "ord": "asc"}
        per_page = max(self.per_page, 2) if overlap else self.per_page  # one new hit at least
        if left is not None and left > 0:
            per_page = min(per_page, left + overlap)
        offset += self._window_start() - overlap
        if self.shard.window is not None:  # offsets within the window
            per_page = max(1, min(per_page, self.shard.window[1] - offset))
        response, frame = self.page(**params, offset_start=offset, per_page=per_page)
        total = int_member(response, "total_results")
        # available_results is read only where it means the cap (not all servers send it)
        capped = self.capped_engine and not self.partial
        available = optional_int_member(response, "available_results")
        if capped and available is not None and available < total:
            raise ShardOverCap(total)
        return frame, total


def join(parts: list[pd.DataFrame], combine: Combine) -> pd.DataFrame:
    """``combine(parts)``, where one part is its own join: a harvest's parts are pages or
    frames ``combine`` built, and joining one alone would rebuild its ~54 columns for nothing
    (2 ms of CPU a page; on a capped server whose cap is the page size, every shard is one)."""
    return parts[0] if len(parts) == 1 else combine(parts)


def _key_of(frame: pd.DataFrame, row: int, key: tuple[str, ...]) -> tuple[int, ...] | None:
    """The key of ``frame``'s ``row`` (``-1``: its last); ``None`` where it has none to tell
    it by (a missing value proves nothing about which hit it is)."""
    if not len(frame) or not all(name in frame.columns for name in key):
        return None
    values = [frame[name].iloc[row] for name in key]
    if any(pd.isna(value) for value in values):
        return None
    return tuple(int(value) for value in values)


def _as_key(values: list[int] | None) -> tuple[int, ...] | None:
    return None if values is None else tuple(values)


def paging_fault(frame: pd.DataFrame, totals: list[int], key: tuple[str, ...]) -> str | None:
    """Why a shard's pages cannot be trusted, or ``None``: a key served twice (a server or
    proxy ignoring ``offset_start``), or a total that moved between pages."""
    if len(set(totals)) > 1:
        return f"its total moved from {totals[0]} to {totals[-1]} while it was paged"
    repeated = repeated_keys(frame, key)
    if repeated:
        return f"its pages served {repeated} key(s) twice (is offset_start ignored?)"
    return None
