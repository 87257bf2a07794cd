"""The report of a harvest: its plan, per-shard counts and the proof of completeness."""

from __future__ import annotations

import dataclasses
import html
import reprlib
from collections.abc import Mapping
from typing import Any

import pandas as pd

from mediaframe.harvest.spec import without
from mediaframe.harvest.warned import notes_of


@dataclasses.dataclass(repr=False)
class HarvestReport:
    """What a harvest did and the proof that it is complete.

    ``df.attrs["harvest"]`` holds :meth:`to_dict` of it; :meth:`from_frame` rebuilds it. Its
    repr is a few lines and its HTML a small table, however many shards it has; the shards are
    in :attr:`plan`.
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
    #: Pages read natively from their bytes and pages decoded, with the first reason per kind:
    #: ``{"native": n, "decoded": m, "reasons": {kind: detail}}`` (a Dask worker's not counted).
    page_reads: dict[str, Any] | None = None
    shards: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    incomplete: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: Queries the server suggests when nothing matched: ``{suggestion, query, hits}`` each.
    suggestions: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: What the client filled in for the user (e.g. the date field date bounds filter on), and
    #: what the server warned of (:attr:`server_warnings`, a line each).
    notes: list[str] = dataclasses.field(default_factory=list)
    #: Each distinct ``warning`` the search answers carried, with how many carried it: a few
    #: texts at most, the answers warning of others counted under ``""``.
    server_warnings: dict[str, int] = dataclasses.field(default_factory=dict)

    def heard(self, counts: Mapping[str, int]) -> None:
        """Make ``counts`` the server's warnings, in :attr:`server_warnings` and as notes (in
        place of the notes of those it held before)."""
        before = set(notes_of(self.server_warnings))
        self.server_warnings = dict(counts)
        self.notes = [note for note in self.notes if note not in before]
        self.notes += notes_of(self.server_warnings)

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
            f"{len(self.shards)} shard(s)"
            + (f" ({self.resumed_shards} resumed)" if self.resumed_shards else "")
            + f", {self.requests} request(s), {self.seconds:.1f} s"
            + (f", {self.duplicates} duplicate(s) dropped" if self.duplicates else "")
            + (", from cache" if self.from_cache else "")
            + (", the server warned (see its notes)" if self.server_warnings else "")
        )

    def __repr__(self) -> str:
        search = f"{self.kind} {self.query!r}" + (
            f" {_short(self.filters)}" if self.filters else ""
        )
        lines = [
            f"<HarvestReport of {search}: {self.summary()}>",
            *(f"  {label}: {value}" for label, value in self._extra_rows()),
            "  per shard: .plan (a DataFrame); everything: .to_dict()",
        ]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        state = "yes" if self.complete else "<b>NO</b>"
        rows = [
            ("complete", state),
            ("rows", _e(f"{self.fetched:,} of {self.total_results:,} {self.kind}")),
            ("shards", _e(f"{len(self.shards):,}")),
            ("requests", _e(f"{self.requests:,}")),
            ("seconds", _e(f"{self.seconds:.1f}")),
            ("cache", "read from the cache" if self.from_cache else "fetched, then cached"),
            *((_e(label), _e(value)) for label, value in self._extra_rows()),
        ]
        body = "".join(
            f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>" for k, v in rows
        )
        title = _e(f"Harvest of {self.kind} {self.query!r}")
        if self.filters:
            title += " " + _e(_short(self.filters))
        return (
            f"<div><p>{title}</p><table>{body}</table>"
            "<p><small>per shard: <code>.plan</code></small></p></div>"
        )

    def _extra_rows(self) -> list[tuple[str, str]]:
        """What deserves a line beyond the summary: incompleteness, a sync, any other member."""
        rows = []
        if self.incomplete:
            ids = ", ".join(str(entry.get("id")) for entry in self.incomplete[:3])
            more = ", ..." if len(self.incomplete) > 3 else ""
            rows.append(("incomplete shards", f"{len(self.incomplete)} ({ids}{more})"))
        if self.duplicates:
            rows.append(("duplicates dropped", f"{self.duplicates:,}"))
        if self.resumed_shards:
            rows.append(("resumed shards", f"{self.resumed_shards:,}"))
        if self.synced:
            rows.append(("synced", _short(self.synced)))
        if self.page_reads and (self.page_reads.get("native") or self.page_reads.get("decoded")):
            rows.append(("pages", _pages(self.page_reads)))
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name not in _SHOWN and value not in (None, 0, "", [], {}):
                rows.append((field.name.replace("_", " "), _short(value)))
        return rows


#: Members every repr shows in its own way; any other (added later) is listed as it is.
_SHOWN = frozenset(
    {
        "kind",
        "query",
        "filters",
        "total_results",
        "fetched",
        "duplicates",
        "complete",
        "cap",
        "capped_engine",
        "requests",
        "page_reads",
        "seconds",
        "resumed_shards",
        "from_cache",
        "synced",
        "shards",
        "incomplete",
        "server_warnings",  # as notes
    }
)
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlist = _SHORT.maxdict = 4
_SHORT.maxlevel = 2


def _short(value: Any) -> str:
    """A bounded repr: a few members of a big collection, the start of a long string."""
    return _SHORT.repr(value)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _pages(reads: Mapping[str, Any]) -> str:
    """``120 read natively, 3 decoded (dates: ...)``: how the pages were read, and why not."""
    text = f"{reads.get('native', 0):,} read natively, {reads.get('decoded', 0):,} decoded"
    reasons = reads.get("reasons") or {}
    if reasons:
        text += " (" + "; ".join(f"{kind}: {why}" for kind, why in reasons.items()) + ")"
    return text
