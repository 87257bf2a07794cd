"""Frames of the ``/me/`` route: the user, collection rights, status definitions, databox rights."""

from __future__ import annotations

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

__all__ = ["collections", "databoxes", "statuses", "user"]


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
    return flatten(items, COLLECTIONS, given=known, extra=unknown, label=label)


def databoxes(items: list[dict[str, Any]] | dict[str, Any]) -> pd.DataFrame:
    """Databox rights with one ``boolean`` column per right of the contract's list.

    Accepts a list or an object keyed by databox id (the key fills a missing ``databox_id``).
    """
    items = as_items(items, "databox", id_member="databox_id")
    label = labeller(items, DATABOXES.row, DATABOXES.key)
    known, unknown = _rights(items, DATABOX_RIGHTS, label)
    return flatten(items, DATABOXES, given=known, extra=unknown, label=label)


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
