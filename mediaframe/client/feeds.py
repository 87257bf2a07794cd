"""Every entry of the feeds, paged by offset from a server whose paging may not hold: each page
overlaps the last by one entry, so that the pages prove they follow on, and a read whose pages
do not is read again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mediaframe.exceptions import (
    IncompleteResultError,
    InvalidParameterError,
    MalformedItemError,
    ResponseFormatError,
)
from mediaframe.harvest.answers import int_member
from mediaframe.normalise import listed

__all__ = ["FEED_PAGE", "Fetch", "entries_of", "every_entry"]

#: Largest page of the feeds content route.
FEED_PAGE = 20

#: Whole reads of the feeds before giving up on a server whose pages never agree.
_READS = 3

#: One page of ``/feeds/content/``: ``(offset_start, per_page)`` in, the decoded answer out.
Fetch = Callable[[int, int], Mapping[str, Any]]


def every_entry(fetch: Fetch, *, per_page: int = FEED_PAGE, reads: int = _READS) -> list[dict]:
    """Every feed entry, each once, in the server's order: the feeds as the last request saw
    them.

    The feeds list newest first, and entries are published at the head. The pages are read
    from offset 0 until the server's ``total_entries``, each asked from the entry read last,
    which must come first again: then no entry crossed the boundary of the pages unread. When
    the total grows by ``k`` between pages (entries published meanwhile), the page starts with
    the ``k + 1`` entries read last; they are checked and skipped. A read of more than one page
    ends with the head read down to its first entry: the entries published meanwhile are read
    there, and the total of a last page of head must be the number of entries read. That
    catches an entry deleted from the pages already read while another was published, which
    leaves the total as it was and the pages following on.

    A read is started again when the total falls (an entry deleted), when a page does not start
    with the entries read last (the list shifted: entries deleted and others published), when a
    page repeats any other entry, when a page is empty before the total, or when the count at
    the end is not the total: an entry may then be doubled, lost or no longer there.

    Cost: feeds that do not change take one request when they fit one page, else
    ``ceil((n - 1) / (per_page - 1)) + 1`` for ``n`` entries: the overlap costs about one page
    in ``per_page - 1``, and the head one more; 4 requests for 45 entries, 54 for 1,000 (3 and
    50 for pages that do not overlap). Entries published meanwhile are read in that page of
    head while they fit it. Each read asks a number of pages bounded by the total and its
    growth, so a lying server cannot keep it going. An answer of ``{}`` (the service's answer
    for feeds the user cannot read) is no entries.

    Raises
    ------
    IncompleteResultError
        ``reads`` reads in a row did not agree with themselves (a server that ignores
        ``offset_start``, or feeds changing faster than they can be read).
    ResponseFormatError
        ``total_entries`` is not a number, or ``entries`` is not a list of entries with an id.
    InvalidParameterError
        ``per_page`` is below 2: pages that overlap by one entry need two.
    """
    if per_page < 2:
        raise InvalidParameterError(
            f"per_page={per_page}: the feeds are read in pages that overlap by one entry, "
            f"so a page holds 2 entries at least (the service's largest is {FEED_PAGE})"
        )
    problems = []
    for _ in range(reads):
        entries, problem = _read(fetch, per_page)
        if not problem:
            return entries
        problems.append(problem)
    raise IncompleteResultError(
        f"the feed entries could not be read whole in {reads} tries: "
        f"{'; '.join(dict.fromkeys(problems))}. The server's "
        "paging does not hold (it may ignore offset_start, or the feeds changed on every read); "
        "try again later, or read one page with feed_entries(offset_start=..., per_page=...)"
    )


def entries_of(page: Mapping[str, Any]) -> list[dict]:
    """The ``entries`` of one answer as a list (an object keyed by id gives its values, the id
    kept as ``id``); no member or null is no entry.

    Raises
    ------
    MalformedItemError
        ``entries`` is neither a list nor an object keyed by id.
    """
    return listed(page, "entries", key="id", what="feed entries")


#: Reads of the head, for entries published while the feeds were read, before giving up.
_HEADS = 3


def _read(fetch: Fetch, per_page: int) -> tuple[list[dict], str]:
    """One read from offset 0: the entries, and what went wrong ("" when nothing did).

    A read of one page is the feeds as that page saw them. A longer one reads the head again
    down to the first entry of the pass, for the entries published meanwhile, until a read of
    the head takes one page. That page is the last request: newest first, every entry published
    before it is on it, and the pages follow on from it to the end, so every entry it counts
    was read; its total is the number read unless an entry read was deleted meanwhile (which a
    publication hides from the totals between pages).
    """
    read, problem = _pass(fetch, per_page, stop_at=None)
    entries, ids = read.entries, read.ids
    if problem or read.pages == 1:
        return entries, problem
    for _ in range(_HEADS):
        head, problem = _pass(fetch, per_page, stop_at=ids[0])
        again = sorted(set(head.ids).intersection(ids))
        if again and not problem:
            problem = f"the newest entries repeated entries {_shown_ids(again)}"
        entries, ids = head.entries + entries, head.ids + ids
        if problem:
            return entries, problem
        if head.pages == 1:
            if head.total != len(ids):
                problem = (
                    f"the feeds count {head.total} entries at the end of the read, but {len(ids)} "
                    "were read: entries were deleted (and others published) meanwhile"
                )
            return entries, problem
    faster = "the feeds grew on every read of their newest entries (published to faster than read)"
    return entries, faster


@dataclass
class _Pass:
    """What a pass has read: the entries and their ids, how many entries were published at the
    head between its pages (left unread), the total of its last page, the pages it asked."""

    entries: list[dict] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    grown: int = 0
    total: int = 0
    pages: int = 0

    @property
    def end(self) -> int:
        """The offset after the entry read last, in the feeds as the last page saw them."""
        return len(self.ids) + self.grown


def _pass(fetch: Fetch, per_page: int, *, stop_at: int | None) -> tuple[_Pass, str]:
    """Pages from offset 0 until the total, or down to the entry ``stop_at``; what went wrong
    ("" when nothing did).

    Each page after the first asks from the entry read last, one entry back, and must start with
    the entries read already (:func:`_known`): each entry read next is then shown by a page
    right after one read before, and no entry can cross the boundary of the pages unseen. A
    total that falls, or a page that does not start so, makes the pass fail: the offsets no
    longer point where they did.
    """
    read = _Pass()
    budget = 1
    while budget > 0:
        budget -= 1
        offset = max(read.end - 1, 0)
        page = fetch(offset, per_page)
        read.pages += 1
        batch = entries_of(page)
        now = _total(page)
        batch_ids = [_entry_id(entry, offset + i) for i, entry in enumerate(batch)]
        more = now - read.total
        if read.pages == 1:  # the first page says how many pages the pass may take
            known, more = 0, 0
            budget = _pages_after(now, len(batch))
        else:
            known, problem = _known(read, batch_ids, offset, now)
            if problem:
                return read, problem
            if read.grown + more > 2 * max(read.total, per_page):
                return read, f"the feeds grew by {read.grown + more} entries while read"
            budget += math.ceil(more / max(len(batch) - 1, 1)) + 1 if more else 0
        read.grown, read.total = read.grown + more, now
        batch, batch_ids = batch[known:], batch_ids[known:]
        cut = batch_ids.index(stop_at) if stop_at is not None and stop_at in batch_ids else None
        found = cut is not None
        if found:  # the pass before read the rest
            batch, batch_ids = batch[:cut], batch_ids[:cut]
        elif not batch and read.end < read.total and not (more and known):
            return read, f"the entries from offset {read.end} of {now} came back empty"
        repeated = sorted(set(read.ids).intersection(batch_ids)) or _repeats(batch_ids)
        if repeated:
            return read, f"the page at offset {offset} repeated entries {_shown_ids(repeated)}"
        read.entries.extend(batch)
        read.ids.extend(batch_ids)
        if found:
            return read, ""
        if read.end >= read.total:
            lost = stop_at is not None
            return read, f"the entry {stop_at}, read first, was not found again" if lost else ""
    return read, f"{len(read.ids)} of {read.total} entries after the most pages the total allows"


def _pages_after(total: int, first: int) -> int:
    """The most pages a pass may ask after a first page of ``first`` entries out of ``total``:
    those that reach the total one entry back from the last, and one more."""
    return math.ceil(max(total - first, 0) / max(first - 1, 1)) + 1


def _known(read: _Pass, page_ids: list[int], offset: int, total: int) -> tuple[int, str]:
    """How many entries the page at ``offset`` starts with that were read already, and what
    went wrong ("" when nothing did).

    The page starts one entry back: with the entry read last, and before it the ``k`` entries
    read last when the total grew by ``k`` (``k`` entries published at the head pushed every
    other down by ``k``). Any other start means the list shifted between the pages.
    """
    more = total - read.total
    if more < 0:
        return 0, f"the total fell from {read.total} to {total} between pages"
    known = more + 1
    if known <= len(read.ids) and page_ids[:known] == read.ids[-known:][: len(page_ids)]:
        return min(known, len(page_ids)), ""
    repeated = sorted(set(read.ids).intersection(page_ids))
    if repeated and not more:
        return 0, f"the page at offset {offset} repeated entries {_shown_ids(repeated)}"
    if more:
        return 0, (
            f"the total grew from {read.total} to {total} between pages, but the page at "
            f"offset {offset} does not start with the {known} entries read last"
        )
    return 0, (
        f"the page at offset {offset} does not start with the entry {read.ids[-1]} read last, "
        "with the total unchanged: entries were deleted and others published between the pages"
    )


def _shown_ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:5])) + (", ..." if len(ids) > 5 else "")


def _total(page: Mapping[str, Any]) -> int:
    """The page's ``total_entries``; 0 for the answer with no member but (empty) entries."""
    if _no_feed(page):
        return 0
    try:
        total = int_member(page, "total_entries")
    except ResponseFormatError as err:
        shown = repr(page.get("total_entries"))
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise ResponseFormatError(
            f"the feeds answer has no number total_entries (got {shown}): "
            "it cannot be paged whole; read one page with feed_entries(offset_start=..., "
            "per_page=...)"
        ) from err
    if total < 0:
        raise ResponseFormatError(f"the feeds answer's total_entries is negative ({total})")
    return total


def _no_feed(page: Mapping[str, Any]) -> bool:
    """Whether the answer is the service's ``{}`` for feeds the user cannot read
    (deployed servers, on ``/feeds/<id>/content/``): no ``total_entries``, and no member
    but empty ``entries``. An answer with entries, or paging members, and no total stays an
    error: it cannot be paged whole."""
    return "total_entries" not in page and set(page) <= {"entries"} and not page.get("entries")


def _entry_id(entry: Any, position: int) -> int:
    ident = entry.get("id") if isinstance(entry, Mapping) else None
    if isinstance(ident, str) and ident.strip().isdecimal():
        ident = int(ident)
    if isinstance(ident, bool) or not isinstance(ident, int):
        raise MalformedItemError(
            f"feed entry #{position}: member 'id' is {ident!r}, not an integer; every entry "
            "needs it to be identified (report the payload)",
            item=position,
        )
    return ident


def _repeats(ids: list[int]) -> list[int]:
    """The ids listed twice within one page."""
    once: set[int] = set()
    twice: set[int] = set()
    for ident in ids:
        (twice if ident in once else once).add(ident)
    return sorted(twice)
