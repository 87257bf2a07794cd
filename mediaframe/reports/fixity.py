"""Fixity drift: which records' checksums changed, went or came since an earlier harvest.

One check like those of :mod:`~mediaframe.reports.checks` (pure: frames in, a
:class:`~mediaframe.reports.checks.Check` out), kept apart because it compares two harvests,
each reduced first to one row per record.
"""

from __future__ import annotations

import pandas as pd

from mediaframe.exceptions import InvalidParameterError
from mediaframe.reports.checks import KEY, Check, latest_copies, text_of

__all__ = ["fixity_drift"]


def fixity_drift(before: pd.DataFrame | None, now: pd.DataFrame) -> Check:
    """Records whose ``sha256`` changed since an earlier harvest of the same search.

    In the fixity vocabulary: *changed* (same record, another checksum), *missing* (gone, or
    out of the user's rights) and *untracked* (new since). A record listed more than once (in
    two baskets, or on two pages of a harvest read while it changed) is compared once, and the
    check's note says how many were.

    A row without a ``databox_id`` or ``record_id`` (a baseline edited by hand, a frame
    joined with another) is no record that can be followed: two such rows are not the same
    record, so none is compared. Each is listed as *unkeyed*, with the checksum it holds on the
    side it comes from, counted, and named in the check's note.
    """
    columns = [
        "databox_id",
        "record_id",
        "state",
        "sha256_before",
        "sha256_now",
        "updated_on_before",
        "updated_on_now",
        "title",
    ]
    if before is None:
        frame = pd.DataFrame(columns=columns)
        return Check(
            "fixity_drift",
            "Fixity drift",
            "Records whose SHA-256 changed since the last cached harvest of the same search.",
            frame,
            {},
            note="no earlier harvest cached: this one is the baseline",
        )
    for frame, what in ((before, "the earlier harvest"), (now, "the harvest")):
        absent = [c for c in (*KEY, "sha256") if c not in frame.columns]
        if absent:
            raise InvalidParameterError(
                f"no {', '.join(absent)} column in {what}: fixity drift compares records by "
                "their ids and sha256 (frames of client.records)"
            )
    # what either frame holds, both given (missing in one, as missing): a column in one only
    # left the merge unsuffixed, and today's title and update date were dropped
    keep = [
        c
        for c in (*KEY, "sha256", "updated_on", "title")
        if c in now.columns or c in before.columns
    ]
    old, unkeyed_before, repeated_before, differing_before = _one_per_record(
        before, keep, "earlier harvest"
    )
    new, unkeyed_now, repeated_now, differing_now = _one_per_record(now, keep, "harvest")
    merged = old.merge(new, on=KEY, how="outer", suffixes=("_before", "_now"), indicator=True)
    sha_before, sha_now = merged["sha256_before"], merged["sha256_now"]
    state = pd.Series(pd.NA, index=merged.index, dtype="string")
    both = merged["_merge"] == "both"
    state[both & (sha_before != sha_now).fillna(sha_before.isna() != sha_now.isna())] = "changed"
    state[merged["_merge"] == "left_only"] = "missing"
    state[merged["_merge"] == "right_only"] = "untracked"
    merged["state"] = state
    if "title" in keep:
        titles = merged["title_now"].astype("string")
        merged["title"] = titles.fillna(merged["title_before"].astype("string"))
    frame = merged[state.notna()]
    frame = frame[[c for c in columns if c in frame.columns]]
    unkeyed = [
        _unkeyed(rows, side)
        for rows, side in ((unkeyed_before, "before"), (unkeyed_now, "now"))
        if len(rows)
    ]
    if unkeyed:  # empty frames left out: their all-missing columns would decide no dtype
        parts = [part for part in (frame, *unkeyed) if len(part)]
        frame = pd.concat(parts, ignore_index=True).reindex(columns=frame.columns)
    frame = frame.sort_values(["state", *KEY], ignore_index=True)
    counts = frame["state"].value_counts()
    found = {state: int(counts.get(state, 0)) for state in ("changed", "missing", "untracked")}
    if len(unkeyed_before) or len(unkeyed_now):  # said only when there are some
        found["unkeyed"] = len(unkeyed_before) + len(unkeyed_now)
    notes = [
        _unkeyed_note(len(unkeyed_now), len(unkeyed_before)),
        _repeats_note(repeated_now, repeated_before, differing_now + differing_before),
    ]
    return Check(
        "fixity_drift",
        "Fixity drift",
        "Records whose SHA-256 changed since the last cached harvest of the same search "
        "(changed), that are gone (missing) or new (untracked); rows without an id, which "
        "cannot be compared, apart (unkeyed).",
        frame,
        found,
        note="; ".join(note for note in notes if note),
    )


def _unkeyed(rows: pd.DataFrame, side: str) -> pd.DataFrame:
    """Rows without an id as rows of the check: state ``unkeyed``, their values on ``side``."""
    out = rows.rename(
        columns={name: f"{name}_{side}" for name in ("sha256", "updated_on") if name in rows}
    )
    out.insert(len(KEY), "state", pd.Series("unkeyed", index=out.index, dtype="string"))
    if "title" in out.columns:
        out["title"] = out["title"].astype("string")
    return out


def _one_per_record(
    frame: pd.DataFrame, keep: list[str], what: str
) -> tuple[pd.DataFrame, pd.DataFrame, int, int]:
    """``frame``'s ``keep`` columns, one row per record, its ids as numbers and its checksum
    normalised (lower case, blank as missing); the rows without an id apart (every one kept:
    no two are known to be one record); how many records it listed more than once, and how
    many of those with differing checksums. Of differing copies the most recently updated one
    is kept (the last listed of equals): the record changed while the harvest was read."""
    frame = frame.reindex(columns=keep)  # a copy
    for name in KEY:  # a frame read back as text (read_csv(dtype=str)) has ids as text
        frame[name] = _numbers(frame[name], f"the {what}'s {name}")
    sha = text_of(frame["sha256"]).str.lower()
    frame["sha256"] = sha.mask(sha == "")
    # a missing id equals another to merge and duplicated: those rows would be matched
    keyless = frame[KEY].isna().any(axis=1)
    unkeyed, frame = frame[keyless], frame[~keyless]
    repeated = frame.duplicated(KEY, keep=False)
    if not repeated.any():
        return frame, unkeyed, 0, 0
    copies = frame[repeated].groupby(KEY)["sha256"].nunique(dropna=False)
    return latest_copies(frame), unkeyed, len(copies), int((copies > 1).sum())


def _numbers(column: pd.Series, what: str) -> pd.Series:
    if pd.api.types.is_numeric_dtype(column.dtype):
        return column
    numbers = pd.to_numeric(column.astype("string").str.strip(), errors="coerce")
    wrong = numbers.isna() & column.notna()
    if wrong.any():
        raise InvalidParameterError(
            f"{what} holds {column[wrong].iloc[0]!r}, not a number: fixity drift compares "
            "records by their numeric ids (frames of client.records)"
        )
    try:
        return numbers.astype("Int64")
    except (TypeError, ValueError):  # a fraction: kept, and matched against nothing
        return numbers.astype("Float64")


def _unkeyed_note(now: int, before: int) -> str:
    if not now and not before:
        return ""
    return (
        f"row(s) without a databox_id or record_id: {now:,} in this harvest, {before:,} in "
        "the baseline; not compared, as no two of them are known to be one record (listed as "
        "unkeyed: give every row its ids to follow it)"
    )


def _repeats_note(now: int, before: int, differing: int) -> str:
    if not now and not before:
        return ""
    note = (
        f"record(s) listed more than once: {now:,} in this harvest, {before:,} in the "
        "baseline; each compared once"
    )
    if differing:
        note += f" ({differing:,} with differing checksums: the latest updated copy's)"
    return note
