"""Records held by something else: a story's members, a basket's elements, one row each.

Both frames put what holds the record first, then every column of :func:`records` for it (with
``caption_*``/``status_*`` columns when a structure is given for extended records).
"""

from __future__ import annotations

from typing import Any, cast

import pandas as pd

from mediaframe.exceptions import MalformedItemError
from mediaframe.frames.arrays import text, to_array
from mediaframe.frames.captions import Structure
from mediaframe.frames.flatten import UNKNOWN_PREFIX, column_names
from mediaframe.frames.normalise import as_items, children, labeller, nested_records
from mediaframe.frames.records import flatten_records
from mediaframe.frames.schema import BASKET_RECORDS, STORIES, STORY_MEMBERS

__all__ = ["basket_records", "prepend", "story_members"]


def story_members(
    stories: list[dict[str, Any]], structure: Structure | None = None
) -> pd.DataFrame:
    """One row per (story, record): ``story_databox_id, story_id, position``, then the record.

    Parameters
    ----------
    stories : stories with their ``records`` (the story route gives every child).
    structure : read extended records' captions and status bits into columns.

    Examples
    --------
    >>> story_members([{"databox_id": 1, "story_id": 9, "records": [
    ...     {"databox_id": 1, "record_id": 4}]}])[["story_id", "position", "record_id"]]
       story_id  position  record_id
    0         9         0          4
    """
    stories = as_items(stories, "story")
    label = labeller(stories, STORIES.row, STORIES.key)
    members, owners, member_label = children(stories, "records", what="record", label=label)
    keys = {
        name: to_array([s.get(name) for s in stories], "Int64", member=name, label=label)
        for name in ("databox_id", "story_id")
    }
    first: dict[int, int] = {}
    for position, owner in enumerate(owners.tolist()):
        first.setdefault(owner, position)
    positions = [position - first[owner] for position, owner in enumerate(owners.tolist())]
    frame = flatten_records(members, label=member_label, structure=structure)
    head = {
        "story_databox_id": keys["databox_id"].take(owners),
        "story_id": keys["story_id"].take(owners),
        "position": pd.array(positions, dtype="Int64"),
    }
    return prepend(frame, head, STORY_MEMBERS.names)


def basket_records(
    contents: list[dict[str, Any]], structure: Structure | None = None
) -> pd.DataFrame:
    """One row per basket element: ``basket_id, basket_element_id, order``, the validation
    members, then the record.

    For validation baskets ``agreement`` and ``note`` are the reader's own say, and every
    participant's is in ``agreement_<login>`` / ``note_<login>`` (``user<id>`` when the server
    gives no login). Other baskets have NA there.

    Parameters
    ----------
    contents : answers of ``/baskets/<id>/content/``: ``{basket, basket_elements}`` each.
    structure : read extended records' captions and status bits into columns.
    """
    contents = as_items(contents, "basket content")
    elements: list[dict[str, Any]] = []
    basket_ids: list[Any] = []
    for index, content in enumerate(contents):
        basket = content.get("basket") if isinstance(content.get("basket"), dict) else {}
        found = content.get("basket_elements") or []
        if type(found) is not list or any(type(e) is not dict for e in found):
            raise MalformedItemError(
                f"basket content #{index}: basket_elements is not an array of objects "
                "(report the payload)",
                item=index,
            )
        elements.extend(found)
        basket_ids.extend([cast(dict, basket).get("basket_id")] * len(found))
    label = labeller(elements, "basket element", ("basket_element_id",))
    records = nested_records(elements, label=label)
    frame = flatten_records(records, label=label, structure=structure)
    head: dict[str, Any] = {
        "basket_id": to_array(basket_ids, "Int64", member="basket_id", label=label),
    }
    for column in BASKET_RECORDS.columns[1:]:
        values = [element.get(column.name) for element in elements]
        head[column.name] = to_array(values, column.dtype, member=column.name, label=label)
    for name, values in _choices(elements).items():
        head[name] = (
            pd.array(values, dtype="boolean") if name.startswith("agreement_") else text(values)
        )
    return prepend(
        frame, head, (*BASKET_RECORDS.names, *sorted(set(head) - set(BASKET_RECORDS.names)))
    )


def _choices(elements: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Each participant's agreement and note, as ``agreement_<login>`` / ``note_<login>``."""
    columns: dict[str, list[Any]] = {}
    n = len(elements)
    for index, element in enumerate(elements):
        for choice in element.get("validation_choices") or []:
            if not isinstance(choice, dict):
                continue
            user = choice.get("validation_user")
            user = user if isinstance(user, dict) else {}
            who = user.get("login") or f"user{user.get('id', '')}"
            agreement = choice.get("agreement")
            columns.setdefault(f"agreement_{who}", [None] * n)[index] = (
                agreement if agreement is None or isinstance(agreement, bool) else bool(agreement)
            )
            note = choice.get("note")
            columns.setdefault(f"note_{who}", [None] * n)[index] = (
                None if note is None else str(note)
            )
    return columns


def prepend(frame: pd.DataFrame, head: dict[str, Any], order: tuple[str, ...]) -> pd.DataFrame:
    """The ``head`` columns in ``order``, then every column of ``frame``.

    A record column named like a head column (a record member ``order`` or ``position`` from a
    newer server) is prefixed ``unknown_`` until it is free, the rule of every frame, so no
    value takes another's place.
    """
    columns = {name: head[name] for name in order}
    names = column_names([(str(name), UNKNOWN_PREFIX) for name in frame.columns], set(order))
    columns.update(zip(names, (frame.iloc[:, i].array for i in range(frame.shape[1])), strict=True))
    return pd.DataFrame(columns, copy=False)
