"""The checks of a collection audit: pure functions from frames to one tidy frame each.

Fixity drift, which compares two harvests, is :mod:`~mediaframe.reports.fixity`.

Each returns a :class:`Check`: the rows an auditor acts on, a one-line explanation and counts.
No I/O here: :mod:`~mediaframe.reports.audit` gathers the frames and runs the checks.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import mimetypes
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from mediaframe.exceptions import InvalidParameterError

__all__ = [
    "EMPTY_SHA256",
    "Check",
    "duplicates",
    "feeds",
    "format_mismatches",
    "limited_access",
    "missing_values",
    "no_checksum",
    "rights_matrix",
    "status_usage",
    "stories_without_records",
    "zero_byte",
]

#: SHA-256 of zero bytes: a record with this checksum holds an empty file.
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
KEY = ["databox_id", "record_id"]
#: Technical values every record should carry, and those its media type should.
KEY_TECHNICAL = ("FileSize", "MimeType")
KEY_TECHNICAL_BY_TYPE = {
    "image": ("Width", "Height"),
    "video": ("Width", "Height", "Duration"),
    "audio": ("Duration",),
}
# Names of one format that differ only by spelling.
_MIME_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/x-png": "image/png",
    "image/tif": "image/tiff",
    "audio/mp3": "audio/mpeg",
    "audio/x-mpeg": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "video/x-quicktime": "video/quicktime",
    "application/x-pdf": "application/pdf",
}
# The standard library's own table only: /etc/mime.types differs from machine to machine.
_TYPES = mimetypes.MimeTypes(filenames=())


@dataclasses.dataclass(frozen=True)
class Check:
    """One check's result: its rows, what it looks for in one line, and its counts."""

    name: str
    title: str
    explanation: str
    frame: pd.DataFrame
    counts: Mapping[str, int] = dataclasses.field(default_factory=dict)
    note: str = ""

    @property
    def summary(self) -> str:
        """The counts in words, e.g. ``"3 group(s), 4 extra copies"``."""
        parts = [f"{value:,} {name}" for name, value in self.counts.items()] or ["nothing found"]
        return "; ".join(parts + ([self.note] if self.note else []))

    @property
    def found(self) -> int:
        return len(self.frame)


def utc_dates(column: pd.Series) -> pd.Series:
    """``column`` as timezone-aware UTC times: dates read back as text (a CSV) are parsed as
    ISO 8601, and dates without an offset are taken as UTC, as the service writes its own.

    Raises
    ------
    InvalidParameterError
        A value is not a date.
    """
    if not pd.api.types.is_datetime64_any_dtype(column.dtype):
        parsed = pd.to_datetime(column, utc=True, format="ISO8601", errors="coerce")
        wrong = parsed.isna() & column.notna()
        if wrong.any():
            raise InvalidParameterError(
                f"{column.name} holds {column[wrong].iloc[0]!r}, not a date: give ISO 8601 "
                f"dates (pd.to_datetime(frame[{column.name!r}], utc=True))"
            )
        return parsed
    if column.dt.tz is None:
        return column.dt.tz_localize("UTC")
    return column.dt.tz_convert("UTC")


def latest_copies(records: pd.DataFrame) -> pd.DataFrame:
    """``records`` with one row per record: of the copies of a record listed more than once
    (two overlapping searches, a harvest read while it changed), the most recently updated, the
    last listed of equals. Every row without a ``databox_id`` or ``record_id`` is kept: no two
    are known to be one record."""
    # a missing id equals another to duplicated: rows without one would be taken for copies
    keyless = records[KEY].isna().any(axis=1)
    if not (records.duplicated(KEY) & ~keyless).any():
        return records
    if "updated_on" in records.columns:
        when = pd.to_datetime(records["updated_on"], utc=True, errors="coerce")
        order = when.reset_index(drop=True).sort_values(kind="stable", na_position="first")
        records, keyless = records.iloc[order.index], keyless.iloc[order.index]
    return records[keyless | ~records.duplicated(KEY, keep="last")]


def text_of(column: pd.Series) -> pd.Series:
    """``column`` as text, stripped (missing values stay missing)."""
    return column.astype("string").str.strip()


def as_ids(column: pd.Series) -> pd.Series:
    """``column`` as numbers when every value is one (ids read back as text too), else as
    given."""
    numbers = pd.to_numeric(column, errors="coerce")
    return numbers if bool((numbers.notna() | column.isna()).all()) else column


def _as_id(value: Any) -> Any:
    """One id as a number when it is one (``"3"`` and ``3.0`` are 3), else as given."""
    number = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    return int(number) if pd.notna(number) and float(number).is_integer() else value


def _blank(column: pd.Series) -> pd.Series:
    text = text_of(column)
    return (text.isna() | (text == "")).astype(bool)


def _present(frame: pd.DataFrame, names: Sequence[str]) -> list[str]:
    return [name for name in names if name in frame.columns]


def _ids(frame: pd.DataFrame, *extra: str) -> list[str]:
    return _present(frame, [*KEY, "base_id", "collection_id", *extra])


def duplicates(records: pd.DataFrame) -> Check:
    """Records sharing a file (the same ``sha256``), within and across collections."""
    if set(KEY) <= set(records.columns):
        # a record listed twice (frames of two overlapping searches concatenated) is one
        # record, not two sharing a file
        records = latest_copies(records)
    sha = text_of(records["sha256"]).str.lower()
    usable = ~_blank(records["sha256"]) & (sha != EMPTY_SHA256)
    frame = records.loc[usable, _ids(records, "title", "original_name", "FileSize")].copy()
    frame.insert(0, "sha256", sha[usable])
    sizes = frame.groupby("sha256")["sha256"].transform("size")
    frame = frame[sizes > 1].copy()
    frame["copies"] = frame.groupby("sha256")["sha256"].transform("size").astype("Int64")
    where = _present(frame, ["base_id", "collection_id"])
    if where:
        spread = frame.groupby("sha256")[where[0]].transform("nunique")
        frame["across_collections"] = pd.array(spread > 1, dtype="boolean")
    else:  # a frame without its collections cannot tell
        frame["across_collections"] = pd.array([pd.NA] * len(frame), dtype="boolean")
    frame = frame.sort_values(["sha256", *_present(frame, KEY)], ignore_index=True)
    groups = frame["sha256"].nunique()
    return Check(
        "duplicates",
        "Duplicate files",
        "Records whose file has the same SHA-256 as another record's; empty files and records "
        "without a checksum are listed apart.",
        frame,
        {
            "group(s)": groups,
            "extra copies": len(frame) - groups,
            "group(s) across collections": int(
                frame.loc[frame["across_collections"].fillna(False), "sha256"].nunique()
            ),
        },
    )


def no_checksum(records: pd.DataFrame) -> Check:
    """Records without a ``sha256`` (no document, or a server that did not compute it)."""
    frame = records.loc[_blank(records["sha256"]), _ids(records, "title", "original_name")]
    return Check(
        "no_checksum",
        "Records without a checksum",
        "Records whose sha256 is missing or empty: no document, or never computed; they cannot "
        "be checked for duplicates or fixity.",
        frame.reset_index(drop=True),
        {"record(s)": len(frame)},
    )


def zero_byte(records: pd.DataFrame) -> Check:
    """Records whose file is empty: a ``FileSize`` of 0, or the checksum of zero bytes."""
    empty = text_of(records["sha256"]).str.lower() == EMPTY_SHA256
    if "FileSize" in records.columns:
        empty = empty | (pd.to_numeric(records["FileSize"], errors="coerce") == 0)
    empty = empty.fillna(False).astype(bool)
    frame = records.loc[empty, _ids(records, "title", "original_name", "FileSize", "sha256")]
    return Check(
        "zero_byte",
        "Zero-byte files",
        "Records whose file is empty (FileSize 0, or the SHA-256 of zero bytes).",
        frame.reset_index(drop=True),
        {"record(s)": len(frame)},
    )


def _mime(value: Any) -> str | None:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    text = str(value).split(";")[0].strip().lower()
    return _MIME_ALIASES.get(text, text) or None


def _extension_type(name: Any) -> str | None:
    if not isinstance(name, str) or "." not in name.strip():
        return None
    suffix = "." + name.strip().rsplit(".", 1)[1].lower()
    return _mime(_TYPES.guess_type(f"x{suffix}", strict=False)[0])


def format_mismatches(records: pd.DataFrame) -> Check:
    """Records whose ``mime_type``, technical ``MimeType`` and file extension disagree."""
    nothing = [None] * len(records)
    declared = [_mime(v) for v in records["mime_type"].astype(object)]
    technical = (
        [_mime(v) for v in records["MimeType"].astype(object)]
        if "MimeType" in records.columns
        else nothing
    )
    names = records["original_name"].astype(object) if "original_name" in records else nothing
    by_extension = [_extension_type(v) for v in names]
    problems: list[str | None] = []
    for said, measured, ext in zip(declared, technical, by_extension, strict=True):
        found = []
        if said and measured and said != measured:
            found.append("mime_type and MimeType differ")
        against = measured or said
        if ext and against and ext != against:
            found.append(f"extension says {ext}")
        problems.append("; ".join(found) or None)
    flagged = pd.Series([p is not None for p in problems], index=records.index)
    frame = records.loc[flagged, _ids(records, "original_name", "mime_type", "MimeType")].copy()
    frame["extension_type"] = pd.array(
        [e for e, f in zip(by_extension, flagged, strict=True) if f], dtype="string"
    )
    frame["problem"] = pd.array([p for p in problems if p is not None], dtype="string")
    return Check(
        "format_mismatches",
        "Format mismatches",
        "Records whose declared mime_type, technical MimeType and original name's extension "
        "do not name the same format.",
        frame.reset_index(drop=True),
        {
            "mime_type vs MimeType": int(frame["problem"].str.contains("differ").sum()),
            "extension mismatch": int(frame["problem"].str.contains("extension").sum()),
        },
    )


def missing_values(
    records: pd.DataFrame, required: Mapping[int, Sequence[str]] | None = None
) -> Check:
    """Records missing a title, a key technical value, or a caption field their databox requires.

    ``required`` maps a databox id to the names of its required caption fields; they are looked
    for in ``caption_<name>`` columns.
    """
    parts = [_missing(records, _blank(records["title"]), "title")]
    media = records["media_type"].astype("string") if "media_type" in records else None
    names = set(KEY_TECHNICAL) | {n for names in KEY_TECHNICAL_BY_TYPE.values() for n in names}
    for name in sorted(names):
        expected = pd.Series(name in KEY_TECHNICAL, index=records.index)
        if media is not None:
            kinds = [k for k, wanted in KEY_TECHNICAL_BY_TYPE.items() if name in wanted]
            expected = expected | media.isin(kinds).fillna(False).astype(bool)
        absent = records[name].isna() if name in records.columns else True
        parts.append(_missing(records, expected & absent, name))
    has_captions = any(str(c).startswith("caption_") for c in records.columns)
    for databox, fields in (required or {}).items() if has_captions else ():
        # ids read back as text (a CSV) are numbers too: compared as text, none matched, and
        # required fields went unchecked without a word
        box = pd.to_numeric(records["databox_id"], errors="coerce")
        in_box = (box == databox).fillna(False).astype(bool)
        for field in fields:
            column = f"caption_{field}"
            absent = _blank(records[column]) if column in records.columns else True
            parts.append(_missing(records, in_box & absent, f"caption {field}"))
    frame = pd.concat(parts, ignore_index=True)
    counts = frame["missing"].value_counts().to_dict() if len(frame) else {}
    return Check(
        "missing_values",
        "Missing values",
        "Records without a title, a key technical value (FileSize, MimeType; sizes and "
        "durations by media type) or a required caption field, one row per missing value.",
        frame,
        {f"without {name}": int(count) for name, count in counts.items()},
        note=""
        if required and has_captions
        else "required caption fields not checked ("
        + ("no field structure" if not required else "no caption columns: harvest extended")
        + ")",
    )


def _missing(records: pd.DataFrame, mask: Any, name: str) -> pd.DataFrame:
    mask = pd.Series(mask, index=records.index).fillna(False).astype(bool)
    frame = records.loc[mask, _ids(records, "media_type", "title")].copy()
    frame["missing"] = pd.array([name] * len(frame), dtype="string")
    return frame


def rights_matrix(collections: pd.DataFrame) -> Check:
    """The user's rights, one row per collection, one boolean column per right."""
    rights = [c for c in collections.columns if pd.api.types.is_bool_dtype(collections[c].dtype)]
    front = _present(collections, ["base_id", "name", "databox_id", "collection_id"])
    frame = collections[front + [c for c in rights if c not in front]].reset_index(drop=True)
    granted = {name: int(frame[name].fillna(False).sum()) for name in rights}
    return Check(
        "rights_matrix",
        "Rights matrix",
        "The user's rights in each collection they can reach (collections × rights).",
        frame,
        {"collection(s)": len(frame), "right(s) granted": sum(granted.values())},
    )


def limited_access(collections: pd.DataFrame, statuses: pd.DataFrame | None = None) -> Check:
    """Collections the user cannot fully see, search or download, with the reason."""
    rows = []
    restricted = _restricted_bits(statuses)
    for entry in collections.to_dict("records"):
        reasons = []
        if entry.get("actif") is False:
            reasons.append("not active for the user (actif off): its records are not searched")
        if entry.get("candwnldhd") is False:
            reasons.append("originals cannot be downloaded (no candwnldhd)")
        if entry.get("restrict_dwnld") is True:
            reasons.append("downloads restricted (restrict_dwnld)")
        if entry.get("nowatermark") is False and entry.get("candwnldpreview") is True:
            reasons.append("previews are watermarked (no nowatermark)")
        bits = restricted.get(_as_id(entry.get("base_id")), [])
        if bits:
            reasons.append(
                f"records with status bit(s) {', '.join(map(str, bits))} may be hidden (restricted)"
            )
        for reason in reasons:
            rows.append(
                {**{k: entry.get(k) for k in ("base_id", "name", "databox_id")}, "reason": reason}
            )
    frame = pd.DataFrame(rows, columns=["base_id", "name", "databox_id", "reason"])
    frame = frame.astype(
        {"base_id": "Int64", "databox_id": "Int64", "name": "string", "reason": "string"}
    )
    return Check(
        "limited_access",
        "Collections not fully visible",
        "Collections the user reaches but cannot fully search, see or download, and why.",
        frame,
        {"collection(s)": int(frame["base_id"].nunique()), "limitation(s)": len(frame)},
    )


def _restricted_bits(statuses: pd.DataFrame | None) -> dict[Any, list[int]]:
    if statuses is None or statuses.empty or "restricted" not in statuses.columns:
        return {}
    flagged = statuses[statuses["restricted"].fillna(False).astype(bool)]
    # a bit without a position (a hostile or damaged answer) restricts nothing one could name
    positions = pd.to_numeric(flagged["position"], errors="coerce")
    flagged = flagged.assign(position=positions)[positions.notna()]
    return {
        _as_id(base): sorted(int(p) for p in group["position"])
        for base, group in flagged.groupby("base_id")
    }


def status_usage(
    counts: pd.DataFrame, statuses: pd.DataFrame | None = None, *, language: str = "en"
) -> Check:
    """Records per status bit and state in each collection, with the bits' labels.

    ``counts`` has ``base_id, position, on`` (records with the bit on) and ``records`` (in the
    collection); labels come from ``statuses`` (``me().statuses``).
    """
    frame = counts.copy()
    if statuses is not None and not statuses.empty:
        # keys read back as text (a CSV) merged with numbers: a bare ValueError
        frame = frame.assign(base_id=as_ids(frame["base_id"]), position=as_ids(frame["position"]))
        statuses = statuses.assign(
            base_id=as_ids(statuses["base_id"]), position=as_ids(statuses["position"])
        )
        labels = _present(statuses, [f"label_on_{language}", f"label_off_{language}"])
        extra = statuses[["base_id", "position", *labels]].drop_duplicates(["base_id", "position"])
        frame = frame.merge(extra, on=["base_id", "position"], how="left")
        frame = frame.rename(
            columns={f"label_on_{language}": "label_on", f"label_off_{language}": "label_off"}
        )
    frame["off"] = (frame["records"] - frame["on"]).astype("Int64")
    frame["share_on"] = (
        (frame["on"] / frame["records"].where(frame["records"] > 0)).astype("Float64").round(3)
    )
    undefined = (
        frame["label_on"].isna()
        if "label_on" in frame.columns
        else pd.Series(True, index=frame.index)
    )
    used_undefined = int((undefined & (frame["on"] > 0)).sum())
    return Check(
        "status_usage",
        "Status bits",
        "Records with each status bit on and off, per collection, with the bit's labels; a bit "
        "in use without a label is undefined.",
        frame.reset_index(drop=True),
        {"bit(s) in use": int((frame["on"] > 0).sum()), "undefined bit(s) in use": used_undefined},
    )


def status_counts_from(records: pd.DataFrame) -> pd.DataFrame | None:
    """``status_<bit>`` columns of a records frame counted per collection, when it has them."""
    bits = [
        c
        for c in records.columns
        if isinstance(c, str) and c.startswith("status_") and c[7:].isdigit()
    ]
    if not bits or "base_id" not in records.columns:
        return None
    rows = []
    for base, group in records.groupby("base_id"):
        for column in bits:
            on = int(group[column].fillna(False).astype(bool).sum())
            rows.append(
                {"base_id": base, "position": int(column[7:]), "on": on, "records": len(group)}
            )
    return pd.DataFrame(rows, columns=["base_id", "position", "on", "records"])


def stories_without_records(stories: pd.DataFrame) -> Check:
    """Stories holding no record the user can see."""
    if "record_count" in stories.columns:
        count = pd.to_numeric(stories["record_count"], errors="coerce")  # "0" read back too
        empty = (count == 0).fillna(False).astype(bool)
        note = ""
    else:
        empty = pd.Series(False, index=stories.index)
        note = "the server does not say how many records a story holds"
    columns = _present(
        stories,
        [
            "databox_id",
            "story_id",
            "base_id",
            "collection_id",
            "dc:title",
            "created_on",
            "updated_on",
        ],
    )
    frame = stories.loc[empty, columns].reset_index(drop=True)
    return Check(
        "stories_without_records",
        "Stories without records",
        "Stories that hold no record the user can see.",
        frame,
        {"story(ies)": len(frame)},
        note=note,
    )


def feeds(
    feed_list: pd.DataFrame,
    entries: pd.DataFrame,
    *,
    stale_days: int = 365,
    now: dt.datetime | None = None,
) -> Check:
    """Feeds with no entry, and feeds whose newest entry is older than ``stale_days``."""
    now = now or dt.datetime.now(dt.UTC)
    # ids read back as text (a CSV read with dtype=str) matched no feed: every feed was called
    # empty, and a stale one went unseen
    if "id" in feed_list.columns:
        feed_list = feed_list.assign(id=as_ids(feed_list["id"]))
    if len(entries):
        entries = entries.assign(
            created_on=utc_dates(entries["created_on"]), feed_id=as_ids(entries["feed_id"])
        )
    latest = (
        entries.groupby("feed_id")["created_on"].max()
        if len(entries)
        else pd.Series(dtype="datetime64[us, UTC]")
    )
    counted = entries.groupby("feed_id").size() if len(entries) else pd.Series(dtype="int64")
    rows = []
    for feed in feed_list.to_dict("records"):
        ident = feed.get("id")
        # a total that is no number (a server's "many") is counted from the entries instead
        total = pd.to_numeric(pd.Series([feed.get("total_entries")]), errors="coerce").iloc[0]
        count = int(total) if pd.notna(total) else int(counted.get(ident, 0))
        last = latest.get(ident)
        days = None if last is None or pd.isna(last) else (now - last.to_pydatetime()).days
        if count == 0:
            problem = "empty: no entry"
        elif days is not None and days > stale_days:
            problem = f"stale: no entry in {days:,} days"
        else:
            continue
        rows.append(
            {
                "feed_id": ident,
                "title": feed.get("title"),
                "entries": count,
                "last_entry": last,
                "days_since": days,
                "problem": problem,
            }
        )
    frame = pd.DataFrame(
        rows, columns=["feed_id", "title", "entries", "last_entry", "days_since", "problem"]
    )
    frame = frame.astype(
        {
            "feed_id": "Int64",
            "title": "string",
            "entries": "Int64",
            "days_since": "Int64",
            "problem": "string",
        }
    )
    frame["last_entry"] = pd.to_datetime(frame["last_entry"], utc=True)
    empty = int(frame["problem"].str.startswith("empty").sum())
    return Check(
        "feeds",
        "Empty or stale feeds",
        f"Feeds with no entry, or none in the last {stale_days:,} days.",
        frame,
        {"empty feed(s)": empty, "stale feed(s)": len(frame) - empty},
    )
