"""The periodic report a scheduler runs: what was added and changed, per period.

>>> from mediaframe.reports import report
>>> monthly = report(client, period="month", start="2024-01-01")      # doctest: +SKIP
>>> monthly.to_excel("2024.xlsx"); monthly.to_html("2024.html")        # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from mediaframe import __version__
from mediaframe.exceptions import InvalidParameterError
from mediaframe.reports.bundle import Bundle
from mediaframe.reports.checks import as_ids, utc_dates
from mediaframe.reports.html import Section, draw, page_notes, provenance_of, to_html

__all__ = ["PERIODS", "Report", "report"]

#: Period names and the pandas frequency each counts by.
PERIODS = {"day": "D", "week": "W", "month": "M", "quarter": "Q", "year": "Y"}

_EXPLAIN = {
    "activity": "Records created and updated in each period, per collection and media type, "
    "and the storage the created ones added (sum of FileSize, bytes). A record counts as "
    "updated in the period of its last update only, and only if that is after its creation "
    "period: the service keeps no history of earlier updates.",
    "totals": "The same, summed over collections and media types; a period without activity "
    "is a row of zeros.",
    "feeds": "Feed entries published in each period, per feed, and the records they carried.",
}


@dataclasses.dataclass
class Report(Bundle):
    """What :func:`report` returns: ``activity``, ``totals`` and ``feeds`` DataFrames.

    Export with :meth:`to_html` (with figures when matplotlib is installed), :meth:`to_excel`
    (one sheet per table and a README) or :meth:`to_csv` (a folder of CSV files).
    """

    what: ClassVar[str] = "a report"
    activity: pd.DataFrame
    totals: pd.DataFrame
    feeds: pd.DataFrame
    period: str
    provenance: dict[str, Any]
    records: pd.DataFrame | None = dataclasses.field(default=None, repr=False)
    feed_entries: pd.DataFrame | None = dataclasses.field(default=None, repr=False)

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        return {"activity": self.activity, "totals": self.totals, "feeds": self.feeds}

    def __repr__(self) -> str:
        return (
            f"<Report per {self.period}: {len(self.totals)} period(s), "
            f"{int(self.totals['created'].sum()) if len(self.totals) else 0:,} created, "
            f"{int(self.totals['updated'].sum()) if len(self.totals) else 0:,} updated>"
        )

    def _repr_html_(self) -> str:
        return (
            f"<div><strong>Report per {html.escape(self.period)}</strong>"
            + self.totals.head(_SHOWN).to_html(index=False, escape=True)
            + (
                f"<small>{len(self.totals) - _SHOWN:,} more period(s) in <code>.totals</code>"
                "</small><br>"
                if len(self.totals) > _SHOWN
                else ""
            )
            + "<small>Members: <code>.activity</code>, <code>.totals</code>, <code>.feeds"
            "</code>; export with <code>.to_html()</code> or <code>.to_excel()</code>.</small>"
            "</div>"
        )

    def readme(self) -> pd.DataFrame:
        facts = [{"item": k, "value": str(v)} for k, v in self.provenance.items()]
        facts += [{"item": name, "value": text} for name, text in _EXPLAIN.items()]
        return pd.DataFrame(facts, columns=["item", "value"])

    def to_html(self, path: str | os.PathLike[str], **options: Any) -> Path:
        """One self-contained page: provenance, figures, and the three tables."""
        figures, notes = self._figures()
        # the caller's notes and figures beside the report's (given twice, to_html refused them)
        notes += page_notes(options.pop("notes", ()))
        figures = {**figures, **dict(options.pop("figures", None) or {})}
        options.setdefault("title", f"Report per {self.period}")
        options.setdefault("provenance", self.provenance)
        sections = [
            Section(name, frame, explanation=_EXPLAIN[name], summary=f"{len(frame):,} row(s)")
            for name, frame in self.tables.items()
        ]
        return to_html(sections, path, figures=figures, notes=notes, **options)

    def _figures(self) -> tuple[dict[str, str], list[str]]:
        from mediaframe import plots

        code = PERIODS[self.period]
        makers: dict[str, Callable[[], Any]] = {}
        if self.records is not None and len(self.records):
            records = self.records
            makers["records created"] = lambda: plots.timeline(records, period=code)
            makers["records updated"] = lambda: plots.timeline(
                records, by="updated_on", period=code
            )
            makers["media types"] = lambda: plots.media_types(records)
        if self.feed_entries is not None and len(self.feed_entries):
            entries = self.feed_entries
            makers["feed activity"] = lambda: plots.feed_activity(entries, period=code)
        return draw(makers)


def report(
    source: Any,
    query: str = "",
    *,
    period: str = "month",
    start: dt.date | str | None = None,
    end: dt.date | str | None = None,
    feed_entries: pd.DataFrame | None = None,
    collections: pd.DataFrame | None = None,
    feeds: pd.DataFrame | None = None,
    **filters: Any,
) -> Report:
    """Records created and updated per period × collection × media type, storage added, feeds.

    Parameters
    ----------
    source : a :class:`~mediaframe.Client` (its records matching ``query`` and ``filters`` are
        harvested, with its feed entries and collection names), or a records DataFrame.
    period : ``day``, ``week``, ``month`` (default), ``quarter`` or ``year``.
    start, end : days in the first and last period reported (whole periods are reported);
        all periods by default.
    feed_entries, collections, feeds : with a records frame, ``client.feed_entries()``,
        ``client.me().collections`` (for collection names) and ``client.feeds()`` (for the
        names of feeds whose entries do not say it, as older servers' do not).

    Examples
    --------
    >>> report(client, period="quarter", start="2024-01-01").totals      # doctest: +SKIP
    """
    if period not in PERIODS:
        raise InvalidParameterError(f"period={period!r}: use one of {', '.join(PERIODS)}")
    first, last = _day(start, "start"), _day(end, "end")
    if first is not None and last is not None and first > last:
        # else every row would be left out, and the export look like a quiet period
        raise InvalidParameterError(
            f"start={first.isoformat()} is after end={last.isoformat()}: swap them"
        )
    if not isinstance(source, pd.DataFrame) and not callable(getattr(source, "records", None)):
        raise InvalidParameterError(
            f"report reads a Client or a records DataFrame, not {type(source).__name__}: "
            "connect with mediaframe.connect(), or read a file first (pd.read_csv, "
            "mediaframe.reports.read_parquet)"
        )
    if isinstance(source, pd.DataFrame):
        if query or filters:
            raise InvalidParameterError(
                "query and filters select what a client harvests; a frame is reported as given"
            )
        records = source
        provenance = provenance_of(records)
    else:
        records = source.records(query, **filters)
        feed_entries = source.feed_entries() if feed_entries is None else feed_entries
        collections = source.me().collections if collections is None else collections
        feeds = source.feeds() if feeds is None else feeds
        provenance = provenance_of(records, server=source.base_url, user=source.user_key)
    absent = [name for name in ("created_on", "updated_on") if name not in records.columns]
    if absent:
        raise InvalidParameterError(
            f"no {' or '.join(absent)} column in the records: report counts records by the "
            "days they were created and updated (frames of client.records)"
        )
    if feed_entries is not None and len(feed_entries):
        absent = [n for n in ("feed_id", "created_on") if n not in feed_entries.columns]
        if absent:
            raise InvalidParameterError(
                f"no {' or '.join(absent)} column in the feed entries: report counts entries "
                "by feed and by the day they were published (frames of client.feed_entries())"
            )
    code = PERIODS[period]
    names = _names(collections)
    activity = _activity(records, code, names, first, last)
    totals = _totals(activity, code, first, last)
    per_feed = _feeds(feed_entries, code, first, last, _titles(feeds))
    provenance = {
        **provenance,
        "period": period,
        "from": first.isoformat() if first else "the first record",
        "to": last.isoformat() if last else "the last record",
        "reported at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "mediaframe version": __version__,
    }
    return Report(activity, totals, per_feed, period, provenance, records, feed_entries)


def _day(value: dt.date | str | None, name: str) -> dt.date | None:
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, dt.datetime):  # a pd.Timestamp too
        # its day in UTC, where records are counted; compared as a datetime, a date bound
        # raised a bare TypeError (and a Timestamp against a date too)
        return (value.astimezone(dt.UTC) if value.tzinfo else value).date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value).replace("/", "-"))
    except ValueError:
        raise InvalidParameterError(f"{name}={value!r} is not a day: write YYYY-MM-DD") from None


def _names(collections: pd.DataFrame | None) -> dict[int, str]:
    if collections is None or not {"base_id", "name"} <= set(collections.columns):
        return {}
    # a collection without an id (or one read back as text) or without a name names nothing
    bases = pd.to_numeric(collections["base_id"], errors="coerce")
    return {
        int(b): str(n)
        for b, n in zip(bases, collections["name"], strict=True)
        if pd.notna(b) and pd.notna(n)
    }


def _titles(feeds: pd.DataFrame | None) -> dict[Any, str]:
    if feeds is None or not {"id", "title"} <= set(feeds.columns):
        return {}
    named = feeds[feeds["title"].notna()]
    return dict(zip(as_ids(named["id"]), named["title"].astype(str), strict=True))


def _period_of(dates: pd.Series, code: str) -> pd.Series:
    return utc_dates(dates).dt.tz_localize(None).dt.to_period(code)


def _within(
    periods: pd.Series, code: str, first: dt.date | None, last: dt.date | None
) -> pd.Series:
    keep = periods.notna()
    if first is not None:
        keep &= periods >= pd.Period(first, code)
    if last is not None:
        keep &= periods <= pd.Period(last, code)
    return keep.fillna(False).astype(bool)


def _activity(
    records: pd.DataFrame,
    code: str,
    names: dict[int, str],
    first: dt.date | None,
    last: dt.date | None,
) -> pd.DataFrame:
    columns = [
        "period",
        "base_id",
        "collection",
        "media_type",
        "created",
        "updated",
        "storage_added",
    ]
    if records.empty:
        return pd.DataFrame(columns=columns)
    created = _period_of(records["created_on"], code)
    updated = _period_of(records["updated_on"], code)
    updated = updated.where(updated > created)  # a later period than its creation only
    group = {
        "base_id": records["base_id"].astype("Int64") if "base_id" in records else pd.NA,
        "media_type": records["media_type"].astype("string") if "media_type" in records else pd.NA,
    }
    size = pd.to_numeric(records["FileSize"], errors="coerce") if "FileSize" in records else 0
    made = pd.DataFrame(
        {"period": created, **group, "created": 1, "updated": 0, "storage_added": size}
    )
    changed = pd.DataFrame(
        {"period": updated, **group, "created": 0, "updated": 1, "storage_added": 0}
    )
    made = made[_within(made["period"], code, first, last)]
    changed = changed[_within(changed["period"], code, first, last)]
    both = pd.concat([made, changed], ignore_index=True)
    if both.empty:
        return pd.DataFrame(columns=columns)
    keys = ["period", "base_id", "media_type"]
    summed = both.groupby(keys, dropna=False, observed=True)[
        ["created", "updated", "storage_added"]
    ].sum()
    summed = summed.reset_index().sort_values(keys, ignore_index=True)
    summed["period"] = summed["period"].astype(str)
    summed["collection"] = (
        summed["base_id"].map(lambda b: names.get(int(b)) if pd.notna(b) else None).astype("string")
    )
    # whole bytes: a fractional FileSize (an odd server, a CSV) would not cast to Int64
    summed["storage_added"] = pd.to_numeric(summed["storage_added"]).round()
    summed = summed.astype({"created": "Int64", "updated": "Int64", "storage_added": "Int64"})
    return summed[columns]


#: Periods a notebook shows of the totals (a report per day over years has thousands).
_SHOWN = 60


def _totals(
    activity: pd.DataFrame, code: str, first: dt.date | None, last: dt.date | None
) -> pd.DataFrame:
    """Activity summed per period: every period from ``first`` (else the first active one) to
    ``last`` (else the last active one), a quiet period as a row of zeros, not left out."""
    columns = ["period", "created", "updated", "storage_added"]
    summed = activity.groupby("period", sort=True)[columns[1:]].sum() if len(activity) else None
    active = [] if summed is None else [pd.Period(p, freq=code) for p in summed.index]
    low = pd.Period(first, code) if first is not None else min(active, default=None)
    # padded to the end asked for but never past today's period: one yet to come would read as
    # a quiet one (activity dated in the future is still shown)
    now = pd.Period(dt.datetime.now(dt.UTC).date(), code)
    high = min(pd.Period(last, code), now) if last is not None else max(active, default=None)
    high = max([high, *active]) if high is not None else None
    if low is None or high is None or low > high:
        return pd.DataFrame(columns=columns)
    every = pd.Index([str(p) for p in pd.period_range(low, high, freq=code)], name="period")
    if summed is None:
        summed = pd.DataFrame(0, index=every, columns=columns[1:])
    totals = summed.reindex(every, fill_value=0).reset_index()
    return totals.astype({name: "Int64" for name in columns[1:]})[columns]


def _feeds(
    entries: pd.DataFrame | None,
    code: str,
    first: dt.date | None,
    last: dt.date | None,
    titles: dict[Any, str],
) -> pd.DataFrame:
    columns = ["period", "feed_id", "feed", "entries", "items"]
    if entries is None or entries.empty:
        return pd.DataFrame(columns=columns)
    periods = _period_of(entries["created_on"], code)
    # ids read back as text (a CSV) are numbers too: as text, none was named from the feed list
    entries = entries.assign(feed_id=as_ids(entries["feed_id"]))
    frame = pd.DataFrame(
        {
            "period": periods,
            "feed_id": entries["feed_id"],
            "feed": entries.get("feed_title", pd.Series(pd.NA, index=entries.index))
            .astype("string")
            .fillna(entries["feed_id"].map(titles).astype("string")),
            "entries": 1,
            # numbers, even read back as text: summed as text, "2" and "3" made 23
            "items": pd.to_numeric(entries["item_count"], errors="coerce")
            if "item_count" in entries.columns
            else pd.NA,
        }
    )[_within(periods, code, first, last)]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    summed = frame.groupby(["period", "feed_id", "feed"], dropna=False, observed=True)[
        ["entries", "items"]
    ].sum()
    summed = summed.reset_index().sort_values(["period", "feed_id"], ignore_index=True)
    summed["period"] = summed["period"].astype(str)
    return summed.astype({"entries": "Int64", "items": "Int64"})[columns]
