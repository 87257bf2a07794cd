"""The collection audit: gather the frames of a search, run every check, export the result.

>>> from mediaframe.reports import audit
>>> result = audit(client, "sunset", bases=[3])                   # doctest: +SKIP
>>> result.duplicates                                             # a DataFrame per check
>>> result.to_html("audit.html"); result.to_excel("audit.xlsx")   # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from mediaframe import __version__, validate
from mediaframe.exceptions import CacheError, InvalidParameterError, MediaframeWarning
from mediaframe.reports import checks, fixity
from mediaframe.reports.bundle import Bundle
from mediaframe.reports.cells import indexed
from mediaframe.reports.checks import Check
from mediaframe.reports.html import Section, draw, page_notes, provenance_of, to_html

__all__ = ["CHECKS", "Audit", "audit"]

#: The checks, in the order they are shown.
CHECKS = (
    "duplicates",
    "no_checksum",
    "zero_byte",
    "format_mismatches",
    "missing_values",
    "rights_matrix",
    "limited_access",
    "status_usage",
    "stories_without_records",
    "feeds",
    "fixity_drift",
)
#: The records' columns each check cannot run without.
_NEEDS = {
    "duplicates": ("sha256",),
    "no_checksum": ("sha256",),
    "zero_byte": ("sha256",),
    "format_mismatches": ("mime_type",),
    "missing_values": ("title",),
    "fixity_drift": (*checks.KEY, "sha256"),
}
# Filters that select records but mean nothing (or something else) to a story search.
_RECORD_ONLY = ("record_type", "status", "status_only", "fields", "extended")


def _member(name: str) -> property:
    return property(
        lambda self: self.checks[name].frame if name in self.checks else None,
        doc=f"The rows of the ``{name}`` check (``None`` when it could not run).",
    )


@dataclasses.dataclass
class Audit(Bundle):
    """The result of :func:`audit`: one DataFrame per check, each explained and counted.

    ``audit.duplicates`` (and each name of :data:`CHECKS`) is the check's DataFrame;
    ``audit.checks[name]`` adds its ``explanation``, ``counts`` and ``summary``;
    :attr:`summary` is one row per check. Export with :meth:`to_html`, :meth:`to_excel` and
    :meth:`to_csv`; in a notebook it shows itself as a summary table.
    """

    what: ClassVar[str] = "an audit"
    checks: dict[str, Check]
    provenance: dict[str, Any]
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)
    records: pd.DataFrame | None = dataclasses.field(default=None, repr=False)

    duplicates = _member("duplicates")
    no_checksum = _member("no_checksum")
    zero_byte = _member("zero_byte")
    format_mismatches = _member("format_mismatches")
    missing_values = _member("missing_values")
    rights_matrix = _member("rights_matrix")
    limited_access = _member("limited_access")
    status_usage = _member("status_usage")
    stories_without_records = _member("stories_without_records")
    feeds = _member("feeds")
    fixity_drift = _member("fixity_drift")

    @property
    def summary(self) -> pd.DataFrame:
        """One row per check: its title, what it looks for, rows found and counts in words."""
        rows = [
            {
                "check": check.name,
                "title": check.title,
                "rows": check.found,
                "summary": check.summary,
                "explanation": check.explanation,
            }
            for check in self.checks.values()
        ]
        rows += [
            {"check": name, "title": name, "rows": None, "summary": f"not run: {why}",
             "explanation": ""}
            for name, why in self.skipped.items()
        ]  # fmt: skip
        frame = pd.DataFrame(rows, columns=["check", "title", "rows", "summary", "explanation"])
        return frame.astype({"rows": "Int64"})

    def __repr__(self) -> str:
        lines = [f"<Audit of {self.provenance.get('rows', 'records')}>"]
        for check in self.checks.values():
            lines.append(f"  {check.name}: {check.summary}")
        for name, why in self.skipped.items():
            lines.append(f"  {name}: not run ({why})")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        table = self.summary.drop(columns=["explanation"]).to_html(index=False, escape=True)
        where = html.escape(", ".join(f"{k}: {v}" for k, v in self.provenance.items()))
        return (
            f"<div><strong>Collection audit</strong> <small>{where}</small>{table}"
            "<small>Each check is a member, e.g. <code>audit.duplicates</code>; export with "
            "<code>.to_html()</code>, <code>.to_excel()</code> or <code>.to_csv()</code>.</small>"
            "</div>"
        )

    def sections(self) -> list[Section]:
        return [
            Section(c.title, c.frame, explanation=c.explanation, summary=c.summary)
            for c in self.checks.values()
        ]

    def readme(self) -> pd.DataFrame:
        """What the workbook holds: the provenance, then one row per check."""
        facts = pd.DataFrame(
            {"check": list(self.provenance), "title": "", "rows": None,
             "summary": [str(v) for v in self.provenance.values()], "explanation": ""}
        )  # fmt: skip
        return pd.concat([facts, self.summary], ignore_index=True)

    def to_html(self, path: str | os.PathLike[str], **options: Any) -> Path:
        """One self-contained page: provenance, a contents list and a section per check."""
        options.setdefault("title", "Collection audit")
        options.setdefault("provenance", self.provenance)
        notes = [f"{name} not run: {why}" for name, why in self.skipped.items()]
        figures, figure_notes = self._figures()
        # the caller's notes and figures beside the audit's (given twice, to_html refused them)
        notes += [*figure_notes, *page_notes(options.pop("notes", ()))]
        figures = {**figures, **dict(options.pop("figures", None) or {})}
        return to_html(self.sections(), path, notes=notes, figures=figures, **options)

    def _figures(self) -> tuple[dict[str, str], list[str]]:
        from mediaframe import plots

        makers: dict[str, Callable[[], Any]] = {}
        records_by = {"base_id", "collection"} & set(getattr(self.records, "columns", ()))
        if self.records is not None and len(self.records) and records_by:
            records = self.records
            makers["records per collection"] = lambda: plots.collections(
                records, names=self.rights_matrix
            )
        if self.rights_matrix is not None and len(self.rights_matrix):
            rights = self.rights_matrix
            makers["collection rights"] = lambda: plots.rights(rights)
        return draw(makers)

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """Each check's rows, by the check's name."""
        return {check.name: check.frame for check in self.checks.values()}


def audit(
    source: Any,
    query: str = "",
    *,
    stories: pd.DataFrame | None = None,
    collections: pd.DataFrame | None = None,
    statuses: pd.DataFrame | None = None,
    feeds: pd.DataFrame | None = None,
    feed_entries: pd.DataFrame | None = None,
    previous: pd.DataFrame | None = None,
    required_fields: Mapping[int, Iterable[str]] | None = None,
    stale_days: int = 365,
    echo: Callable[[str], Any] | None = None,
    **filters: Any,
) -> Audit:
    """Audit the records of a search, or frames already harvested.

    Parameters
    ----------
    source : a :class:`~mediaframe.Client` — its records matching ``query`` and ``filters``
        are harvested (synced if cached), with its stories, rights and feeds — or a records
        DataFrame, with the other frames given by keyword.
    stories, collections, statuses, feeds, feed_entries : frames of an earlier harvest
        (``client.stories()``, ``client.me().collections`` / ``.statuses``, ``client.feeds()``,
        ``client.feed_entries()``); a check whose frame, or a column it reads, is missing is
        listed as not run, with why.
    previous : an earlier records frame of the same search, for fixity drift. With a client,
        the last cached harvest of the search is read before it is synced.
    required_fields : databox id to the caption fields it requires (checked in
        ``caption_<name>`` columns); with a client, read from its field structure when it has
        one.
    stale_days : a feed with no entry in that many days is stale.
    echo : where progress sentences go (e.g. ``print``).
    **filters : the search filters of ``client.records`` and how to collect (``refresh=True``
        re-reads every record, so that fixity drift also finds changes the server did not
        date). Records are harvested with ``extended=True`` unless told otherwise, for their
        captions and status bits.

    Examples
    --------
    >>> result = audit(client, bases=[3])                              # doctest: +SKIP
    >>> result.summary                                                 # doctest: +SKIP
    >>> audit(records_df, stories=stories_df).duplicates               # doctest: +SKIP
    """
    say = echo or (lambda _message: None)
    if not isinstance(source, pd.DataFrame) and not callable(getattr(source, "records", None)):
        raise InvalidParameterError(
            f"audit reads a Client or a records DataFrame, not {type(source).__name__}: "
            "connect with mediaframe.connect(), or read a file first (pd.read_csv, "
            "mediaframe.reports.read_parquet)"
        )
    # checked before any harvest: a string here was a bare TypeError deep in the feeds check
    # (a negative count called every feed stale), a field name for a list of them had each of
    # its letters checked as a field
    stale_days = validate.count(stale_days, "stale_days", minimum=0)
    required = _required(required_fields)
    if isinstance(source, pd.DataFrame):
        if query or filters:
            raise InvalidParameterError(
                "query and filters select what a client harvests; frames are audited as given"
            )
        records, status_counts = _as_columns(source, "records"), None
        provenance = provenance_of(source)
    else:
        gathered = _gather(source, query, filters, stale_days, say)
        records = gathered.pop("records")
        status_counts = gathered.pop("status_counts")
        provenance = gathered.pop("provenance")
        required = required or gathered.pop("required_fields")
        stories = gathered["stories"] if stories is None else stories
        collections = gathered["collections"] if collections is None else collections
        statuses = gathered["statuses"] if statuses is None else statuses
        feeds = gathered["feeds"] if feeds is None else feeds
        feed_entries = gathered["feed_entries"] if feed_entries is None else feed_entries
        previous = gathered["previous"] if previous is None else previous
    if previous is not None:
        previous = _as_columns(previous, "earlier harvest")
    provenance = {**provenance, "audited at": _now(), "mediaframe version": __version__}
    # a record listed twice (baskets concatenated) is audited once; fixity drift reads every
    # copy, and its note says how many were repeated
    listed = records
    records = checks.latest_copies(records) if set(checks.KEY) <= set(records) else records
    runs: dict[str, Callable[[], Check] | str] = {
        "duplicates": lambda: checks.duplicates(records),
        "no_checksum": lambda: checks.no_checksum(records),
        "zero_byte": lambda: checks.zero_byte(records),
        "format_mismatches": lambda: checks.format_mismatches(records),
        "missing_values": lambda: checks.missing_values(records, required),
    }
    if collections is not None:
        runs["rights_matrix"] = lambda: checks.rights_matrix(collections)
        runs["limited_access"] = lambda: checks.limited_access(collections, statuses)
    else:
        runs["rights_matrix"] = runs["limited_access"] = "no collection rights given"
    counts = status_counts if status_counts is not None else checks.status_counts_from(records)
    runs["status_usage"] = (
        (lambda: checks.status_usage(counts, statuses))
        if counts is not None
        else "no status columns in the records and no client to count them"
    )
    runs["stories_without_records"] = (
        (lambda: checks.stories_without_records(stories))
        if stories is not None
        else "no stories given"
    )
    runs["feeds"] = (
        (
            lambda: checks.feeds(
                feeds,
                feed_entries if feed_entries is not None else _no_entries(),
                stale_days=stale_days,
            )
        )
        if feeds is not None
        else "no feeds given"
    )
    runs["fixity_drift"] = lambda: fixity.fixity_drift(previous, listed)
    for name, needed in _NEEDS.items():  # a frame of a few columns (a CSV, a selection)
        read = [(records, "the records")]
        if name == "fixity_drift" and previous is not None:
            read.append((previous, "the earlier harvest"))
        for frame, whose in read:
            absent = [c for c in needed if c not in frame.columns]
            if absent and not isinstance(runs[name], str):
                runs[name] = f"no {', '.join(absent)} column in {whose}"
    done: dict[str, Check] = {}
    skipped: dict[str, str] = {}
    for name in CHECKS:
        run = runs[name]
        if isinstance(run, str):
            skipped[name] = run
        else:
            done[name] = run()
    say(
        f"Audit done: {sum(1 for c in done.values() if c.found)} of {len(done)} checks "
        "found something."
    )
    return Audit(done, {k: v for k, v in provenance.items() if v is not None}, skipped, records)


def _required(given: Any) -> dict[int, list[str]] | None:
    """``required_fields`` checked: databox ids (numbers, or their text) to lists of names."""
    if given is None:
        return None
    if not isinstance(given, Mapping):
        raise InvalidParameterError(
            "required_fields must map a databox id to its required caption fields, e.g. "
            f"{{1: ['Title', 'Credit']}}; not {type(given).__name__}"
        )
    checked: dict[int, list[str]] = {}
    for key, names in given.items():
        option = f"required_fields[{key!r}]"
        try:
            databox = int(str(key))
        except ValueError:
            raise InvalidParameterError(
                f"required_fields must map a databox id to field names; {key!r} is no databox id"
            ) from None
        checked[databox] = [validate.name(n, option) for n in validate.items(names, option)]
    return checked


def _as_columns(frame: pd.DataFrame, what: str) -> pd.DataFrame:
    """``frame`` with the ids its index holds (``set_index(["databox_id", "record_id"])``) as
    columns, as the checks read them; two columns of one name are refused (which to read?)."""
    frame = indexed(frame)
    repeated = frame.columns[frame.columns.duplicated()]
    if len(repeated):
        raise InvalidParameterError(
            f"the {what} have two columns named {repeated[0]!r}: rename or drop one "
            "(frame.loc[:, ~frame.columns.duplicated()] keeps the first)"
        )
    return frame


def _no_entries() -> pd.DataFrame:
    return pd.DataFrame(
        {"feed_id": pd.array([], dtype="Int64"), "created_on": pd.to_datetime([], utc=True)}
    )


def _gather(
    client: Any, query: str, filters: dict[str, Any], stale_days: int, say: Callable[[str], Any]
) -> dict[str, Any]:
    """Everything the checks read, from the service (and the cache, for fixity)."""
    previous = None
    # Captions and status bits come with extended records: required fields and status usage
    # are then read from the records themselves.
    filters.setdefault("extended", True)
    try:
        # offline given by the caller too (an audit of the cache alone) was passed twice
        earlier = _without(filters, "refresh", "ttl", "offline")
        previous = client.records(query, offline=True, **earlier)
        say(f"Read the earlier harvest of this search from the cache: {len(previous):,} records.")
    except CacheError:
        say("No earlier harvest of this search is cached: this audit becomes the fixity baseline.")
    filters.setdefault("ttl", 0)
    records = client.records(query, **filters)
    say(f"Harvested {len(records):,} records.")
    story_filters = _without(filters, *_RECORD_ONLY, "sort", "ord")
    story_frame = client.stories(query, **story_filters)
    me = client.me()
    feeds = client.feeds()
    entries = client.feed_entries()
    say(
        f"Read {len(story_frame):,} stories, {len(me.collections)} collections, {len(feeds)} feeds."
    )
    return {
        "records": records,
        "previous": previous,
        "stories": story_frame,
        "collections": me.collections,
        "statuses": me.statuses,
        "feeds": feeds,
        "feed_entries": entries,
        "status_counts": _status_counts(client, query, filters, records, me),
        "required_fields": _required_fields(client),
        "provenance": provenance_of(records, server=client.base_url, user=client.user_key),
    }


def _status_counts(
    client: Any, query: str, filters: Mapping[str, Any], records: pd.DataFrame, me: Any
) -> pd.DataFrame | None:
    """Records with each defined status bit on, per collection: from the records' status
    columns when they have them, else one count-only search per collection and bit."""
    from_columns = checks.status_counts_from(records)
    if from_columns is not None:
        return from_columns
    statuses = me.statuses
    if statuses is None or statuses.empty or "base_id" not in records.columns:
        return None
    search = _without(
        filters, "refresh", "offline", "ttl", "allow_incomplete", "progress", "concurrency",
        "per_page", "dask", "cache_dir", "sort", "ord", "status", "bases", "extended",
        "status_only",
    )  # fmt: skip
    per_base = records.groupby("base_id").size()
    rows = []
    for entry in statuses.drop_duplicates(["base_id", "position"]).to_dict("records"):
        base, bit, databox = int(entry["base_id"]), int(entry["position"]), int(entry["databox_id"])
        answer = client.api.search(
            query, per_page=1, bases=[base], status={bit: {"on": [databox]}}, **search
        )
        rows.append({"base_id": base, "position": bit, "on": int(answer.get("total_results") or 0),
                     "records": int(per_base.get(base, 0))})  # fmt: skip
    return pd.DataFrame(rows, columns=["base_id", "position", "on", "records"])


def _required_fields(client: Any) -> dict[int, list[str]] | None:
    """Required caption fields per databox, from the client's field structure when it has one."""
    fields = getattr(client, "fields", None)
    if not callable(fields):
        return None
    try:
        frame = fields()
    except Exception as err:  # an older server without the route: audit without it
        warnings.warn(
            f"required caption fields not checked: the field structure could not be read ({err})",
            MediaframeWarning,
            stacklevel=4,
        )
        return None
    if not isinstance(frame, pd.DataFrame) or not {"databox_id", "name", "required"} <= set(frame):
        return None
    wanted = frame[frame["required"].fillna(False).astype(bool)]
    return {
        int(box): sorted(group["name"].astype(str)) for box, group in wanted.groupby("databox_id")
    }


def _without(mapping: Mapping[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k not in names}


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
