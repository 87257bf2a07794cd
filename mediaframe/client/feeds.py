"""Every entry of the feeds, paged by offset from a server whose paging may not hold: pages are
checked against the total and against each other, and read again when the feeds change meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from mediaframe.exceptions import IncompleteResultError, MalformedItemError, ResponseFormatError
from mediaframe.harvest.plan import int_member
from mediaframe.normalise import listed

__all__ = ["FEED_PAGE", "Fetch", "entries_of", "every_entry"]

#: Largest page of the feeds content route.
FEED_PAGE = 20

#: Whole reads of the feeds before giving up on a server whose pages never agree.
_READS = 3

#: One page of ``/feeds/content/``: ``(offset_start, per_page)`` in, the decoded answer out.
Fetch = Callable[[int, int], Mapping[str, Any]]


def every_entry(fetch: Fetch, *, per_page: int = FEED_PAGE, reads: int = _READS) -> list[dict]:
    """Every feed entry, each once, in the server's order.

    The pages are read from offset 0 until the server's ``total_entries``. The feeds list
    newest first: when the total grows by ``k`` between pages (entries published meanwhile),
    the next page starts with the ``k`` entries read last; they are checked and skipped, and
    the newest entries are read at the end, down to the first one read. A read is started
    again when the total falls (an entry deleted), when a growth is not shown so by the page,
    when a page repeats any other entry, or when a page is empty before the total: the offsets
    then no longer point where they did, and an entry may be doubled or lost. Each read asks a
    number of pages bounded by the total and its growth, so a lying server cannot keep it
    going. An answer of ``{}`` (the service's answer for feeds the user cannot read) is no
    entries.

    Raises
    ------
    IncompleteResultError
        ``reads`` reads in a row did not agree with themselves (a server that ignores
        ``offset_start``, or feeds changing faster than they can be read).
    ResponseFormatError
        ``total_entries`` is not a number, or ``entries`` is not a list of entries with an id.
    """
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

    The feeds list newest first, so an entry published while they are read pushes every other
    down by one: the pass skips the entries a grown total explains, then the head is read
    down to the first entry of the pass, for the entries published meanwhile.
    """
    entries, read_ids, grown, problem = _pass(fetch, per_page, stop_at=None)
    for _ in range(_HEADS):
        if problem or not grown:
            return entries, problem
        head, head_ids, grown, problem = _pass(fetch, per_page, stop_at=read_ids[0])
        again = sorted(set(head_ids).intersection(read_ids))
        if again and not problem:
            problem = f"the newest entries repeated entries {', '.join(map(str, again[:5]))}"
        entries, read_ids = head + entries, head_ids + read_ids
    return entries, problem or (
        "the feeds grew on every read of their newest entries (published to faster than read)"
    )


def _pass(
    fetch: Fetch, per_page: int, *, stop_at: int | None
) -> tuple[list[dict], list[int], int, str]:
    """Pages from offset 0 until the total, or down to the entry ``stop_at``.

    Returns the entries, their ids, how many entries were published at the head between its
    pages (left unread), and what went wrong ("" when nothing did). When the total grows by
    ``k`` between two pages, the next page starts with the ``k`` entries read last: they are
    checked and skipped. A total that falls, or a growth the page does not show so, makes the
    pass fail: the offsets no longer point where they did.
    """
    entries: list[dict] = []
    ids: list[int] = []
    total: int | None = None
    grown = 0
    budget = 1
    while budget > 0:
        budget -= 1
        offset = len(entries) + grown
        page = fetch(offset, per_page)
        batch = entries_of(page)
        empty = not batch
        now = _total(page)
        batch_ids = [_entry_id(entry, offset + i) for i, entry in enumerate(batch)]
        if total is None:  # the first page says how many pages the read may take
            total = now
            budget = math.ceil(total / max(len(batch), 1)) + 1
        elif now < total:
            return entries, ids, grown, f"the total fell from {total} to {now} between pages"
        elif now > total:
            more = now - total
            if more > len(ids) or batch_ids[:more] != ids[len(ids) - more :][: len(batch_ids)]:
                problem = (
                    f"the total grew from {total} to {now} between pages, but the page at "
                    f"offset {offset} does not start with the {more} entries read last"
                )
                return entries, ids, grown, problem
            if grown + more > 2 * max(total, per_page):
                problem = f"the feeds grew by {grown + more} entries while read"
                return entries, ids, grown, problem
            # the k entries read last, pushed down by k new ones at the head
            batch, batch_ids = batch[more:], batch_ids[more:]
            grown, total = grown + more, now
            budget += math.ceil(more / max(len(batch) + more, 1)) + 1
        if stop_at is not None and stop_at in batch_ids:
            cut = batch_ids.index(stop_at)
            batch, batch_ids = batch[:cut], batch_ids[:cut]
            stop_at = None
            total = len(entries) + len(batch) + grown  # the pass before read the rest
        if empty and len(entries) + grown < total:
            return entries, ids, grown, f"the page at offset {offset} of {total} came back empty"
        repeated = sorted(set(ids).intersection(batch_ids)) or _repeats(batch_ids)
        if repeated:
            shown = ", ".join(map(str, repeated[:5])) + (", ..." if len(repeated) > 5 else "")
            return entries, ids, grown, f"the page at offset {offset} repeated entries {shown}"
        entries.extend(batch)
        ids.extend(batch_ids)
        if len(entries) + grown >= total:
            lost = f"the entry {stop_at}, read first, was not found again" if stop_at else ""
            return entries, ids, grown, lost
    problem = f"{len(entries)} of {total} entries after the most pages the total allows"
    return entries, ids, grown, problem


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
