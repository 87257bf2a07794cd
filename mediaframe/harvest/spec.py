"""What is searched: the user's search (:class:`Spec`) and the shards narrowing it (:class:`Shard`).

A spec is the kind, query and filters a user asked for; a shard narrows it by bases, a day window,
a record type or status bits, and :meth:`Spec.params` renders the two as search parameters. Both
are plain values: the planner makes shards, the engine pages them, the cache names them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["Page", "Shard", "Spec", "Statuses", "earlier_day", "later_day", "to_plain", "without"]

#: Reads one page of a search: ``page(**params) -> (response members, frame of its items)``.
Page = Callable[..., tuple[Mapping[str, Any], pd.DataFrame]]
#: ``{base_id: (databox_id, status bits defined for it)}``, for the last split.
Statuses = Mapping[int, tuple[int, Sequence[int]]]


@dataclasses.dataclass(frozen=True)
class Spec:
    """What the user asked for: a kind of search, a query and its filters (Python-typed)."""

    kind: str  # "records" or "stories"
    query: str = ""
    filters: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def key_columns(self) -> tuple[str, str]:
        return ("databox_id", "record_id" if self.kind == "records" else "story_id")

    @property
    def row_order(self) -> tuple[str, str, str]:
        """How a result's rows are ordered: by databox, collection, then id.

        That is the order of the cache's partitions, so a cached result is read back without
        reordering.
        """
        return ("databox_id", "collection_id", self.key_columns[1])

    @property
    def paging_sort(self) -> str:
        """The stable order pages are read in: offsets mean nothing without one (the server
        breaks ties by id)."""
        return "updated_on" if self.date_field == "updated_on" else "created_on"

    @property
    def date_field(self) -> str:
        return self.filters.get("date_field") or "created_on"

    def identity(self) -> dict[str, Any]:
        """A JSON-friendly description, used in cache keys and manifests."""
        return {"kind": self.kind, "query": self.query, "filters": to_plain(self.filters)}

    def params(self, shard: Shard) -> dict[str, Any]:
        """Search parameters for one shard: the user's filters narrowed by the shard."""
        params: dict[str, Any] = {"query": self.query, **self.filters}
        params["search_type"] = 0 if self.kind == "records" else 1
        if shard.bases:
            params["bases"] = list(shard.bases)
        if shard.date_min or shard.date_max:
            params["date_field"] = self.date_field
            params["date_min"] = later_day(self.filters.get("date_min"), shard.date_min)
            params["date_max"] = earlier_day(self.filters.get("date_max"), shard.date_max)
        if shard.record_type:
            params["record_type"] = shard.record_type
        if shard.status:
            params["status"] = _merge_status(self.filters.get("status"), shard.status)
        return {name: value for name, value in params.items() if value is not None}


@dataclasses.dataclass(frozen=True)
class Shard:
    """One part of a search; its fields narrow the user's filters. The empty shard is the whole."""

    bases: tuple[int, ...] = ()
    date_min: dt.date | None = None
    date_max: dt.date | None = None
    record_type: str | None = None
    status: tuple[tuple[int, str, int], ...] = ()
    #: ``(start, stop, whole)``: the hits at offsets ``start`` to ``stop`` of a search of
    #: ``whole`` hits, sorted for paging (a server with no cap is paged by such windows).
    window: tuple[int, int, int] | None = None

    def size(self, total: int) -> int:
        """How many hits the shard holds when its search reports ``total``."""
        if self.window is None:
            return total
        start, stop, _ = self.window
        return max(0, min(stop, total) - start)

    @property
    def id(self) -> str:
        """A stable, file-name-safe name."""
        parts = []
        if self.bases:
            parts.append("b" + "-".join(map(str, self.bases)))
        if self.date_min or self.date_max:
            parts.append(f"d{_day(self.date_min)}-{_day(self.date_max)}")
        if self.record_type:
            parts.append("t" + self.record_type)
        parts.extend(f"s{bit}{state}{databox}" for bit, state, databox in self.status)
        if self.window is not None:
            parts.append("o{}-{}-of{}".format(*self.window))
        return "_".join(parts) or "all"

    @property
    def days(self) -> int:
        if not (self.date_min and self.date_max):
            return 0
        return (self.date_max - self.date_min).days + 1

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "bases": list(self.bases),
            "date_min": self.date_min.isoformat() if self.date_min else None,
            "date_max": self.date_max.isoformat() if self.date_max else None,
            "record_type": self.record_type,
            "status": [list(entry) for entry in self.status],
        }
        if self.window is not None:
            found["window"] = list(self.window)
        return found

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Shard:
        return cls(
            bases=tuple(data.get("bases") or ()),
            date_min=_parse_day(data.get("date_min")),
            date_max=_parse_day(data.get("date_max")),
            record_type=data.get("record_type"),
            status=tuple((int(b), str(s), int(d)) for b, s, d in data.get("status") or ()),
            window=_window(data.get("window")),
        )


def _window(value: Any) -> tuple[int, int, int] | None:
    if value is None:
        return None
    start, stop, whole = (int(number) for number in value)
    return start, stop, whole


def _merge_status(
    status: Mapping[int, Mapping[str, Any]] | None, extra: Sequence[tuple[int, str, int]]
) -> dict[int, dict[str, list[int]]]:
    """The user's ``{bit: {"on"|"off": databox ids}}`` with a shard's ``(bit, state, databox)``."""
    merged: dict[int, dict[str, list[int]]] = {}
    for bit, states in (status or {}).items():
        for state, ids in states.items():
            merged.setdefault(int(bit), {})[state] = [ids] if isinstance(ids, int) else list(ids)
    for bit, state, databox in extra:
        merged.setdefault(bit, {}).setdefault(state, []).append(databox)
    return merged


def later_day(a: Any, b: dt.date | None) -> dt.date | None:
    a = _to_date(a)
    return max(a, b) if a and b else (a or b)


def earlier_day(a: Any, b: dt.date | None) -> dt.date | None:
    a = _to_date(a)
    return min(a, b) if a and b else (a or b)


def _to_date(value: Any) -> dt.date | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.datetime.strptime(str(value), "%Y/%m/%d").date()


def _day(value: dt.date | None) -> str:
    return value.strftime("%Y%m%d") if value else ""


def _parse_day(value: str | None) -> dt.date | None:
    return dt.date.fromisoformat(value) if value else None


def without(mapping: Mapping[str, Any], *names: str) -> dict[str, Any]:
    """``mapping`` less the members ``names``."""
    return {name: value for name, value in mapping.items() if name not in names}


def to_plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple | set | frozenset):
        items = [to_plain(v) for v in value]
        return sorted(items, key=str) if isinstance(value, set | frozenset) else items
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return value
