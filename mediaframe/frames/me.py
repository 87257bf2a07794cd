"""Frames of the ``/me/`` route: the user, collection rights, status definitions, databox rights."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import pandas as pd

from mediaframe.frames.arrays import Label, text, to_array, warn_unreadable
from mediaframe.frames.flatten import assemble, flatten
from mediaframe.frames.normalise import as_items, labeller
from mediaframe.frames.schema import (
    COLLECTION_RIGHTS,
    COLLECTIONS,
    DATABOX_RIGHTS,
    DATABOXES,
    STATUSES,
    USER,
)

__all__ = [
    "collections",
    "databoxes",
    "describe",
    "describe_html",
    "statuses",
    "user",
    "with_base_ids",
]


def user(user: dict[str, Any]) -> pd.Series:
    """The user as a Series indexed by member name; dates as ``pd.Timestamp``, unset as NA.

    Examples
    --------
    >>> user({"id": 3, "login": "ada", "created_on": "-0001-11-30T00:00:00+00:09"})[
    ...     ["id", "login", "created_on"]]
    id               3
    login          ada
    created_on     NaT
    Name: ada, dtype: object
    """
    frame = flatten(as_items([user], "user"), USER)
    series = frame.astype(object).iloc[0]
    series.name = series["login"] if isinstance(series["login"], str) else None
    return series


def collections(items: list[dict[str, Any]] | dict[str, Any]) -> pd.DataFrame:
    """The user's collections with one ``boolean`` column per right of the contract's list.

    Rights outside that list become extra ``boolean`` columns; a collection without a ``rights``
    member has NA rights. Accepts a list or an object keyed by id; reads ``coll_id`` as
    ``collection_id``.
    """
    items = as_items(items, "collection", id_member="base_id")
    label = labeller(items, COLLECTIONS.row, COLLECTIONS.key)
    known, unknown = _rights(items, COLLECTION_RIGHTS, label)
    return flatten(
        items, COLLECTIONS, given=known, extra=unknown, clash_prefix="right_", label=label
    )


#: What a legacy record's base id is read from: its databox and collection, in /me/'s pairs.
_PAIR_IDS = ["databox_id", "collection_id", "base_id"]


def with_base_ids(frame: pd.DataFrame, collections: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (records or stories) with a missing ``base_id`` read from its ``databox_id``
    and ``collection_id`` in ``collections`` (:func:`collections` of ``/me/``).

    Servers older than ``base_id`` on records (the legacy generation) still name each record's
    databox and collection, and ``/me/`` maps those pairs to base ids; a pair it does not list
    stays missing. A frame with every ``base_id`` is returned as it is.

    Examples
    --------
    >>> mine = collections([{"databox_id": 1, "base_id": 4, "collection_id": 2}])
    >>> old = pd.DataFrame({"databox_id": [1, 1], "collection_id": [2, 3],
    ...                     "base_id": pd.array([None, None], dtype="Int64")})
    >>> with_base_ids(old, mine)["base_id"].tolist()
    [4, <NA>]
    """
    if not _lacks_base_ids(frame):
        return frame
    return filled_base_ids(frame, base_id_lookup(collections))


def base_id_lookup(collections: pd.DataFrame) -> pd.Series:
    """The ``base_id`` of each ``(databox_id, collection_id)`` pair ``collections`` (of
    ``/me/``) lists: built once per ``/me/`` read, it fills every page after
    (:func:`filled_base_ids`)."""
    pairs = collections[_PAIR_IDS].dropna().drop_duplicates(_PAIR_IDS[:2])
    return pd.Series(
        pairs["base_id"].to_numpy(dtype="int64"),
        index=pd.MultiIndex.from_frame(pairs[_PAIR_IDS[:2]].astype("int64")),
    )


def filled_base_ids(frame: pd.DataFrame, lookup: pd.Series) -> pd.DataFrame:
    """:func:`with_base_ids` from a :func:`base_id_lookup` already built."""
    if not _lacks_base_ids(frame):
        return frame
    keys = frame[_PAIR_IDS[:2]].astype("Int64").fillna(-1).astype("int64")
    found = pd.array(lookup.reindex(pd.MultiIndex.from_frame(keys)).to_numpy(), dtype="Int64")
    filled = frame["base_id"].array.copy()
    missing = filled.isna()
    filled[missing] = found[missing]
    return frame.assign(base_id=filled)


def _lacks_base_ids(frame: pd.DataFrame) -> bool:
    return set(_PAIR_IDS) <= set(frame.columns) and bool(frame["base_id"].isna().any())


def databoxes(items: list[dict[str, Any]] | dict[str, Any]) -> pd.DataFrame:
    """Databox rights with one ``boolean`` column per right of the contract's list.

    Accepts a list or an object keyed by databox id (the key fills a missing ``databox_id``).
    """
    items = as_items(items, "databox", id_member="databox_id")
    label = labeller(items, DATABOXES.row, DATABOXES.key)
    known, unknown = _rights(items, DATABOX_RIGHTS, label)
    return flatten(items, DATABOXES, given=known, extra=unknown, clash_prefix="right_", label=label)


def statuses(collections: list[dict[str, Any]] | dict[str, Any]) -> pd.DataFrame:
    """Status-bit definitions: one row per (collection, bit) with labels per language.

    Columns ``label_on_<lang>``/``label_off_<lang>`` exist for de, en, fr and nl, and for any
    other language a server sends.
    """
    items = as_items(collections, "collection", id_member="base_id")
    label = labeller(items, "collection", ("base_id",))
    lists = [item.get("statuses") or [] for item in items]
    odd = [index for index, value in enumerate(lists) if type(value) is not list]
    warn_unreadable("statuses", odd, len(items), label, lists)
    rows, owners = [], []
    unreadable: list[int] = []
    for index, listed in enumerate(lists):
        for status in listed if type(listed) is list else ():
            row = _status(status)
            if row is None:
                unreadable.append(index)
                continue
            rows.append(row)
            owners.append(index)
    warn_unreadable("statuses[]", unreadable, len(items), label, lists)
    owning = [items[owner] for owner in owners]
    ids = {
        "databox_id": [item.get("databox_id") for item in owning],
        "base_id": [item.get("base_id") for item in owning],
        "collection_id": [_collection_id(item) for item in owning],
    }
    labels = sorted({key for row in rows for key in row if key.startswith("label_")})
    extra_labels = [key for key in labels if key not in STATUSES.names]

    def row_label(index: int) -> str:
        return label(owners[index])

    columns = {
        name: to_array(values, "Int64", member=name, label=row_label, strict=False)
        for name, values in ids.items()
    }
    columns["position"] = to_array(
        [row.get("position") for row in rows],
        "Int64",
        member="position",
        label=row_label,
        strict=False,
    )
    for name in [*STATUSES.names[4:-2], *extra_labels]:
        columns[name] = text([row.get(name) for row in rows])
    for name in ("restricted", "restriction_flag"):
        columns[name] = to_array(
            [row.get(name) for row in rows], "boolean", member=name, label=row_label, strict=False
        )
    dynamic = {name: columns.pop(name) for name in extra_labels}
    return assemble(STATUSES, columns, dynamic)


def _collection_id(item: dict[str, Any]) -> Any:
    """``collection_id``, or ``coll_id`` as old samples spell it."""
    value = item.get("collection_id")
    return item.get("coll_id") if value is None else value


def _status(status: Any) -> dict[str, Any] | None:
    """One status definition as a row; ``None`` when it is not an object or its labels are not
    objects of strings (minor: the caller warns once and goes on)."""
    if type(status) is not dict:
        return None
    row = {key: status.get(key) for key in ("position", "restricted", "restriction_flag")}
    labels = status.get("labels") or {}
    if type(labels) is not dict:
        return None  # labels that are not an object: the definition is unreadable, warned once
    for state in ("on", "off"):
        texts = (labels.get(state) or {}) if type(labels) is dict else None
        if type(texts) is not dict or any(type(t) not in (str, type(None)) for t in texts.values()):
            return None
        row.update({f"label_{state}_{lang}": value for lang, value in texts.items()})
    return row


def _rights(
    items: list[dict[str, Any]], declared: Sequence[str], label: Label
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One boolean array per right: the declared ones, then any other right the server lists.

    A ``rights`` member that is not an array of strings leaves that item's rights NA (one
    :class:`MalformedItemWarning`): the rights are minor members, the item is still read.
    """
    raw = [item.get("rights") for item in items]
    odd = [
        index
        for index, rights in enumerate(raw)
        if rights is not None
        and (type(rights) is not list or any(type(right) is not str for right in rights))
    ]
    warn_unreadable("rights", odd, len(items), label, raw)
    unreadable = set(odd)
    held = [None if i in unreadable else rights for i, rights in enumerate(raw)]
    missing = [rights is None for rights in held]
    sets = [set(rights or ()) for rights in held]
    others = sorted(set().union(*sets) - set(declared))

    def column(right: str) -> Any:
        values = [None if gone else right in s for s, gone in zip(sets, missing, strict=True)]
        return pd.array(values, dtype="boolean")

    return {right: column(right) for right in declared}, {right: column(right) for right in others}


def describe(
    user: pd.Series, collections: pd.DataFrame, statuses: pd.DataFrame, databoxes: pd.DataFrame
) -> str:
    """A few lines about a user and their rights: what ``Me`` shows as its repr."""
    lines = [f"<Me {_who(user)}>"]
    lines.append("  " + _collections_line(collections, databoxes))
    held = _rights_held(collections)
    if held:
        shown = ", ".join(f"{right} {count}" for right, count in held[:6])
        lines.append(
            f"  rights (collections granting each): {shown}{', ...' if len(held) > 6 else ''}"
        )
    lines.append("  status bits: " + _statuses_line(statuses))
    lines.append("  frames: .user .collections .statuses .databoxes")
    return "\n".join(lines)


def describe_html(
    user: pd.Series, collections: pd.DataFrame, statuses: pd.DataFrame, databoxes: pd.DataFrame
) -> str:
    """The same as a small HTML table; every value escaped."""
    rows = [("user", _who(user))]
    for member in ("email", "company", "locale", "last_connection"):
        value = user.get(member)
        if value is not None and not pd.isna(value):
            rows.append((member.replace("_", " "), str(value)))
    rows.append(("collections", _collections_line(collections, databoxes)))
    held = _rights_held(collections)
    if held:
        rows.append(("rights", ", ".join(f"{right} ({count})" for right, count in held)))
    rows.append(("status bits", _statuses_line(statuses)))
    body = "".join(
        f"<tr><th style='text-align:left'>{_e(key)}</th><td>{_e(value)}</td></tr>"
        for key, value in rows
    )
    return (
        f"<div><table>{body}</table><p><small>frames: <code>.user</code> "
        "<code>.collections</code> <code>.statuses</code> <code>.databoxes</code></small></p></div>"
    )


def _who(user: pd.Series) -> str:
    login = _text(user.get("login")) or "(no login)"
    name = _text(user.get("display_name"))
    ident = _text(user.get("id"))
    details = ", ".join(part for part in (name, f"id {ident}" if ident else "") if part)
    return f"{login} ({details})" if details else login


def _collections_line(collections: pd.DataFrame, databoxes: pd.DataFrame) -> str:
    boxes = collections["databox_id"].nunique() if "databox_id" in collections else 0
    line = f"{len(collections)} collection(s) in {boxes} databox(es)"
    if "actif" in collections:
        line += f", {int(collections['actif'].fillna(False).sum())} searchable (actif)"
    return line + f"; rights on {len(databoxes)} databox(es)"


def _rights_held(collections: pd.DataFrame) -> list[tuple[str, int]]:
    """Each right held somewhere, with how many collections grant it, most granted first."""
    counts = [
        (str(name), int(column.fillna(False).sum()))
        for name, column in collections.items()
        if str(column.dtype) == "boolean"
    ]
    return sorted(((n, c) for n, c in counts if c), key=lambda pair: (-pair[1], pair[0]))


def _statuses_line(statuses: pd.DataFrame) -> str:
    where = statuses["base_id"].nunique() if "base_id" in statuses else 0
    return f"{len(statuses)} defined in {where} collection(s)"


def _text(value: Any) -> str:
    return "" if value is None or pd.isna(value) else str(value)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)
