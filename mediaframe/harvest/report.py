"""The report of a harvest: its plan, per-shard counts and the proof of completeness."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from mediaframe.harvest.plan import without


@dataclasses.dataclass
class HarvestReport:
    """What a harvest did and the proof that it is complete.

    ``df.attrs["harvest"]`` holds :meth:`to_dict` of it; :meth:`from_frame` rebuilds it.
    """

    kind: str
    query: str
    filters: dict[str, Any]
    total_results: int = 0
    fetched: int = 0
    duplicates: int = 0
    complete: bool = False
    cap: int | None = None
    capped_engine: bool = True
    requests: int = 0
    seconds: float = 0.0
    resumed_shards: int = 0
    from_cache: bool = False
    synced: dict[str, int] | None = None
    shards: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    incomplete: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: Queries the server suggests when nothing matched: ``{suggestion, query, hits}`` each.
    suggestions: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: What the client filled in for the user (e.g. the date field date bounds filter on).
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def plan(self) -> pd.DataFrame:
        """One row per shard: its bounds, expected and fetched counts, state and time taken."""
        rows = [{"shard": s["id"], **s["shard"], **without(s, "id", "shard")} for s in self.shards]
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **defaults: Any) -> HarvestReport:
        """A report from :meth:`to_dict`; ``defaults`` fill what ``data`` lacks."""
        known = {field.name for field in dataclasses.fields(cls)}
        merged = {"query": "", "filters": {}, **defaults, **data}
        return cls(**{name: value for name, value in merged.items() if name in known})

    @classmethod
    def from_frame(cls, df: pd.DataFrame) -> HarvestReport:
        """The report attached to a harvested frame."""
        data = df.attrs.get("harvest")
        if data is None:
            raise KeyError("this frame carries no harvest report")
        return cls(**data)

    def summary(self) -> str:
        state = "complete" if self.complete else "INCOMPLETE"
        return (
            f"{self.fetched} {self.kind} of {self.total_results} ({state}) from "
            f"{len(self.shards)} shard(s), {self.requests} request(s), {self.seconds:.1f} s"
            + (f", {self.duplicates} duplicate(s) dropped" if self.duplicates else "")
            + (", from cache" if self.from_cache else "")
        )
