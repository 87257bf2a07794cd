"""An in-memory search route with a retrieval cap, for testing the harvest engine alone.

It implements only what the engine sends (bases, date windows, record type, status triples,
search type, sorting and paging), so a planning or paging bug shows up without HTTP in the way.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import threading

import pandas as pd

TYPES = ("image", "video", "audio", "document", "flash", "unknown")


@dataclasses.dataclass
class FakeService:
    records: list[dict]
    cap: int = 100
    newer_engine: bool = False  # available_results = hits in this page, and no cap
    #: A newer engine that has a cap after all, untold: no hit past this offset.
    untold_cap: int | None = None
    requests: int = 0
    #: A lying server or caching proxy: every page is the first one.
    ignore_offset: bool = False
    #: Called with each search's parameters once its answer is made (to change the catalogue
    #: between two pages).
    after_search: object = None
    #: The ``warning`` member of each answer, from its search's parameters (``None``: none).
    warning: object = None

    def __post_init__(self):
        self._lock = threading.Lock()

    @classmethod
    def build(cls, n, *, seed=0, days=400, bases=(1, 2, 3), same_day=0, undated=0, **knobs):
        rng = random.Random(seed)
        start = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
        records = []
        for i in range(n):
            base = bases[i % len(bases)]
            if i < same_day:
                created = start + dt.timedelta(days=3, seconds=i)
            else:
                created = start + dt.timedelta(seconds=rng.randrange(days * 86400))
            records.append(
                {
                    "databox_id": 1 + (base - 1) // 2,
                    "record_id": i + 1,
                    "base_id": base,
                    "collection_id": base,
                    "title": f"record {i}",
                    "created_on": None if i >= n - undated else created.isoformat(),
                    "updated_on": created.isoformat(),
                    "media_type": TYPES[rng.randrange(6)],
                    "status": rng.randrange(256),
                }
            )
        return cls(records, **knobs)

    def grow(self, n, **build):
        """Add ``n`` records made as :meth:`build` makes them, with record ids of their own."""
        extra = FakeService.build(n, **build).records
        for offset, record in enumerate(extra):
            record["record_id"] = 10_000 + len(self.records) + offset
        self.records.extend(extra)

    def __call__(self, **params):
        """The records page route: ``(response members, frame of the page)``."""
        answer = self.search(**params)
        return _without_results(answer), flatten(answer["results"]["records"])

    def search(self, **params):
        """The decoded v1 answer."""
        with self._lock:
            self.requests += 1
        hits = [r for r in self.records if self._match(r, params)]
        if params.get("sort") in ("created_on", "updated_on"):
            field = params["sort"]
            hits.sort(key=lambda r: (r[field] or "", r["record_id"]))
            if params.get("ord") == "desc":
                hits.sort(key=lambda r: (r[field] or "", r["record_id"]), reverse=True)
        offset, per_page = params.get("offset_start", 0), params.get("per_page", 10)
        if self.ignore_offset:
            offset = 0
        retrievable = hits if self.newer_engine else hits[: self.cap]
        if self.untold_cap is not None:
            retrievable = retrievable[: self.untold_cap]
        page = retrievable[offset : offset + per_page]
        kind = "records" if params.get("search_type", 0) == 0 else "stories"
        if self.after_search is not None:
            self.after_search(params)
        return {
            "total_results": len(hits),
            "available_results": len(page) if self.newer_engine else len(retrievable),
            "warning": self.warning(params) if callable(self.warning) else "",
            "results": {"records": page if kind == "records" else [], "stories": []},
        }

    @staticmethod
    def _match(record, params):
        if params.get("bases") and record["base_id"] not in params["bases"]:
            return False
        if params.get("record_type") and record["media_type"] != params["record_type"]:
            return False
        for bit, states in params.get("status", {}).items():
            for state, databoxes in states.items():
                on = bool(record["status"] >> bit & 1)
                if record["databox_id"] in databoxes and on != (state == "on"):
                    return False
        if params.get("date_field"):
            value = record[params["date_field"]]
            if value is None:
                return False
            day = dt.date.fromisoformat(value[:10])
            if params.get("date_min") and day < params["date_min"]:
                return False
            if params.get("date_max") and day > params["date_max"]:
                return False
        return True

    def v2(self, **params):
        """The v2 route read into a frame: the same hits as references with ``version``."""
        answer = self.search(**params)
        refs = [
            {
                "databox_id": r["databox_id"],
                "record_id": r["record_id"],
                "collection_id": r["collection_id"],
                "version": int(dt.datetime.fromisoformat(r["updated_on"]).timestamp()),
            }
            for r in answer["results"]["records"]
        ]
        return _without_results(answer), flatten_keys(refs)

    def item(self, databox_id, record_id):
        with self._lock:
            self.requests += 1
        return next(
            r for r in self.records if (r["databox_id"], r["record_id"]) == (databox_id, record_id)
        )

    def touch(self, index, when):
        self.records[index] = {**self.records[index], "updated_on": when.isoformat()}

    def truth(self):
        return {(r["databox_id"], r["record_id"]) for r in self.records}


def _without_results(answer):
    return {name: value for name, value in answer.items() if name != "results"}


def flatten(items):
    return pd.DataFrame(
        {
            "databox_id": pd.array([i["databox_id"] for i in items], dtype="Int64"),
            "record_id": pd.array([i["record_id"] for i in items], dtype="Int64"),
            "collection_id": pd.array([i["collection_id"] for i in items], dtype="Int64"),
            "title": pd.array([i["title"] for i in items], dtype="string"),
            "updated_on": pd.to_datetime(
                pd.Series([i["updated_on"] for i in items], dtype="object"), utc=True
            ),
        }
    )


def flatten_keys(items):
    return pd.DataFrame(
        {
            "databox_id": pd.array([i["databox_id"] for i in items], dtype="Int64"),
            "record_id": pd.array([i["record_id"] for i in items], dtype="Int64"),
            "collection_id": pd.array([i["collection_id"] for i in items], dtype="Int64"),
            "version": pd.array([i["version"] for i in items], dtype="Int64"),
        }
    )


def combine(parts):
    return pd.concat(parts, ignore_index=True) if parts else flatten([])
