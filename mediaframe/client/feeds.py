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

    The pages are read from offset 0 until the server's ``total_entries``. A read is started
    again when the total moves between pages (an entry was published or deleted meanwhile),
    when a page repeats an entry already read, or when a page is empty before the total: the
    offsets then no longer point where they did, and an entry may be doubled or lost. Each read
    asks at most ``total / page + 2`` pages, so a lying server cannot keep it going. An answer
    of ``{}`` (the service's answer for feeds the user cannot read) is no entries.

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


def _read(fetch: Fetch, per_page: int) -> tuple[list[dict], str]:
    """One read from offset 0: the entries, and what went wrong ("" when nothing did)."""
    entries: list[dict] = []
    seen: set[int] = set()
    total: int | None = None
    budget = 1
    while budget > 0:
        budget -= 1
        page = fetch(len(entries), per_page)
        batch = entries_of(page)
        now = _total(page)
        if total is None:  # the first page says how many pages the read may take
            total = now
            budget = math.ceil(total / max(len(batch), 1)) + 1
        elif now != total:
            return entries, f"the total moved from {total} to {now} between pages"
        if len(entries) < total and not batch:
            return entries, f"the page at offset {len(entries)} of {total} came back empty"
        ids = [_entry_id(entry, len(entries) + i) for i, entry in enumerate(batch)]
        repeated = sorted(seen.intersection(ids)) or _repeats(ids)
        if repeated:
            shown = ", ".join(map(str, repeated[:5])) + (", ..." if len(repeated) > 5 else "")
            return entries, f"the page at offset {len(entries)} repeated entries {shown}"
        seen.update(ids)
        entries.extend(batch)
        if len(entries) >= total:
            return entries, ""
    return entries, f"{len(entries)} of {total} entries after the most pages the total allows"


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
    (real-world-behaviour.md, on ``/feeds/<id>/content/``): no ``total_entries``, and no member
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
