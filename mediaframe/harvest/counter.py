"""Counting a shard: its total, the hits the server lets be retrieved, its first and last day.

A count is one hit, the earliest by the date field, so that it also tells the first day of a
shard that may be split by date; a shard expected to fit well within a page is counted with that
whole page, which is the shard itself when it holds every hit. The counter learns from the
root's count which meaning of ``available_results`` the server uses: a cap, or the hits in the
page (newer engines, which have no cap).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from mediaframe.exceptions import MalformedItemError, ResponseFormatError
from mediaframe.frames.arrays import timestamps
from mediaframe.harvest.answers import int_member, optional_int_member, repeated_keys
from mediaframe.harvest.spec import Page, Shard, Spec

__all__ = ["NOT_STORIES", "Count", "CountRoute", "ShardCounter", "padded"]

#: Why a story search found no story while its answers held records.
NOT_STORIES = (
    "the answers to this story search held records, not stories: the server may ignore "
    "search_type. Search records instead (client.records), or ask the service's administrators."
)
# A child expected below this share of a page is counted by fetching its page outright.
_PROBE_FILL = 0.8


@dataclasses.dataclass(frozen=True)
class Count:
    """How many hits a shard has; ``frame`` holds them all when the count was a whole page."""

    total: int
    retrievable: int
    frame: pd.DataFrame | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def over_cap(self) -> bool:
        return self.retrievable < self.total


#: One hit of a search, read as decoded JSON: ``count(**params) -> response``, the v1 answer
#: (``total_results``, ``available_results``, and ``results`` with its one record or story).
CountRoute = Callable[..., Mapping[str, Any]]


class ShardCounter:
    """Counts shards, knowing which meaning of ``available_results`` the server uses.

    A count is one hit. With ``count`` (a :data:`CountRoute`) it is read as decoded JSON; else
    through ``page``, as a frame. A frame of one record costs about 3 ms of CPU (its ~54 columns
    are built whatever the rows), the decoded answer a fifth of that, and a harvest's planning
    is a chain of rounds of counts, on threads that share one interpreter lock.
    """

    def __init__(
        self,
        page: Page,
        spec: Spec,
        *,
        page_size: int = 0,
        count: CountRoute | None = None,
        whole_pages: bool = True,
    ) -> None:
        self.page = page
        self.count = count
        self.spec = spec
        self.requests = 0
        self.capped_engine = True
        #: A shard expected to fit well within one page of this size is counted with that whole
        #: page (unless not ``whole_pages``): it answers the count, and is the shard itself when
        #: it holds every hit.
        self.page_size = page_size
        self.whole_pages = whole_pages
        #: The first day of a shard's hits, by shard id, from its count: a count of one hit
        #: asks for the earliest, so that a shard split by date needs only its last day.
        self._first_days: dict[str, dt.date | None] = {}
        self._lock = threading.Lock()

    def __call__(self, shard: Shard, expected: float | None = None) -> Count:
        probe = (
            self.whole_pages and expected is not None and expected <= _PROBE_FILL * self.page_size
        )
        dated = self._sortable_date()
        whole = None
        if probe:
            paging = {"per_page": self.page_size, "sort": self.spec.paging_sort, "ord": "asc"}
            response, frame = self._ask(shard, **paging)
            total = int_member(response, "total_results")
            # a page that repeats a key is no proof of the whole: the shard is paged, and judged
            if len(frame) == total and not repeated_keys(frame, self.spec.key_columns):
                whole = frame
            empty = not len(frame)
        else:
            # the one hit is the earliest: the first day of the shard's bounds
            response, first = self._hit(shard, "asc")
            total = int_member(response, "total_results")
            # kept for the date split, which only a shard of more than a page can need
            if dated is not None and first is not _NO_HIT and total > self.page_size:
                with self._lock:
                    self._first_days[shard.id] = first
            empty = first is _NO_HIT
        # Not all servers send it: missing or null, no cap is known. The search is then paged like
        # one on an engine without a cap, and windows that come back short show the cap.
        available = optional_int_member(response, "available_results")
        if available is None:
            if shard == Shard():
                self.capped_engine = False
            return Count(total, total, whole)
        if empty and total > 0 and available > 0:
            if self.spec.kind == "stories" and _hits(response, "records"):
                raise ResponseFormatError(NOT_STORIES)
            raise ResponseFormatError(
                f"the search answer contradicts itself: total_results {total} and "
                f"available_results {available}, yet its first page holds no hit (shard "
                f"{shard.id}). The server's search engine may be failing: try again later, "
                "and tell the service's administrators if it persists."
            )
        if shard == Shard() and total > 1 and available == 1 and not probe:
            # Newer engines report the hits *in this page* and have no cap; a cap of 1 looks the
            # same at per_page=1, so ask for two: only the page count then says 2.
            if self.count is None:
                again, _ = self._ask(shard, per_page=2)
            else:
                again = self._decoded(shard, per_page=2)
            seen = optional_int_member(again, "available_results")
            self.capped_engine = seen != 2
            if self.capped_engine and seen is not None:
                # the cap as the second answer tells it: nodes of two generations behind one
                # address (a rolling upgrade) may have answered the two, the first per page
                available = seen
        if not self.capped_engine:
            return Count(total, total, whole)
        return Count(total, min(available, total), whole)

    def latest(self, shard: Shard, rows: int) -> tuple[Mapping[str, Any], pd.DataFrame]:
        """The ``rows`` hits of ``shard`` updated last, latest first (one request): its
        ``total_results``, and what changed in it lately (see :mod:`mediaframe.harvest.kept`)."""
        return self._ask(shard, per_page=max(1, rows), sort="updated_on", ord="desc")

    def _sortable_date(self) -> str | None:
        """The date field the shards are split on, if the search can be sorted on it."""
        field = self.spec.date_field
        return field if field in ("created_on", "updated_on") else None

    def _ask(self, shard: Shard, **paging: Any) -> tuple[Mapping[str, Any], pd.DataFrame]:
        with self._lock:
            self.requests += 1
        return self.page(**self.spec.params(shard), offset_start=0, **paging)

    def _hit(self, shard: Shard, order: str) -> tuple[Mapping[str, Any], Any]:
        """The answer to a one-hit search of ``shard``, sorted by its date field in ``order``
        where it can be, and the day of that hit: ``None`` if it has none, :data:`_NO_HIT` if
        the shard has no hit."""
        field = self._sortable_date()
        paging: dict[str, Any] = {"per_page": 1}
        if field is not None:
            paging.update(sort=field, ord=order)
        if self.count is None:
            response, frame = self._ask(shard, **paging)
            return response, _first_day(frame, field) if len(frame) else _NO_HIT
        response = self._decoded(shard, **paging)
        hits = _hits(response, self.spec.kind)
        return response, _item_day(hits[0], field) if hits else _NO_HIT

    def _decoded(self, shard: Shard, **paging: Any) -> Mapping[str, Any]:
        """The decoded answer to a small search of ``shard`` (through :attr:`count`)."""
        assert self.count is not None
        with self._lock:
            self.requests += 1
        response = self.count(**self.spec.params(shard), offset_start=0, **paging)
        if not isinstance(response, Mapping):
            raise ResponseFormatError("the search answer is not a JSON object")
        return response

    def bounds(self, shard: Shard) -> tuple[dt.date, dt.date]:
        """First and last day the shard's hits fall on, padded (:func:`padded`)."""
        return padded(*self.days(shard))

    def days(self, shard: Shard) -> tuple[dt.date | None, dt.date | None]:
        """The days of the shard's first and last hit by date (``None`` where that hit has no
        date, or the date field cannot be sorted on: no request then). The first day comes
        from the shard's own count when it asked for one hit (one request fewer)."""
        field = self._sortable_date()
        if field is None:
            return None, None
        with self._lock:
            counted = shard.id in self._first_days
            first = self._first_days.pop(shard.id, None)
        if not counted:  # a count replayed from an interrupted run, or a probe's
            first = _day_or_none(self._hit(shard, "asc")[1])
        last = _day_or_none(self._hit(shard, "desc")[1])
        if first and last and first > last:  # a server sorting the other way round
            first, last = last, first
        return first, last


def padded(first: dt.date | None, last: dt.date | None) -> tuple[dt.date, dt.date]:
    """The days to split a shard over: its first and last day, padded by a day for time zones.

    Where a day is not known (the date field cannot be sorted on, or the hit has no date), the
    bound is a wide default: bisection prunes empty windows in a few requests.
    """
    low, high = dt.date(1900, 1, 1), dt.date.today() + dt.timedelta(days=2)
    pad = dt.timedelta(days=1)
    return (first - pad if first else low), (last + pad if last else high)


#: What :meth:`ShardCounter._hit` gives for the day of a shard without hits.
_NO_HIT = object()


def _day_or_none(day: Any) -> dt.date | None:
    return None if day is _NO_HIT else day


def _hits(response: Mapping[str, Any], kind: str) -> list[Any]:
    """The records (or stories) of a decoded v1 answer; none where it holds none."""
    results = response.get("results")
    found = results.get(kind) if isinstance(results, Mapping) else None
    return found if isinstance(found, list) else []


def _item_day(item: Any, field: str | None) -> dt.date | None:
    """The day (UTC) of a decoded hit's date, read as its frame reads it; ``None`` when it has
    none or none that reads as a date (the shard's bounds are then the wide default)."""
    value = item.get(field) if field is not None and isinstance(item, Mapping) else None
    if not isinstance(value, str):
        return None
    try:
        stamp = timestamps([value], member=str(field), label=str)[0]
    except (ValueError, OverflowError, MalformedItemError):
        return None
    return None if pd.isna(stamp) else stamp.date()


def _first_day(frame: pd.DataFrame, field: str | None) -> dt.date | None:
    """The day of the first row's date (UTC; the caller pads a day for the server's zone)."""
    if field is None or field not in frame.columns or not len(frame):
        return None
    if pd.isna(frame[field].iloc[0]):
        return None
    return pd.Timestamp(frame[field].iloc[0]).date()
