"""Story frames: the stories, the links to their records, and those records as a records frame."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from mediaframe.exceptions import MalformedItemError
from mediaframe.frames.arrays import to_array
from mediaframe.frames.captions import Structure
from mediaframe.frames.flatten import assemble, flatten
from mediaframe.frames.normalise import as_items, children, labeller
from mediaframe.frames.records import flatten_records
from mediaframe.frames.schema import RECORDS, STORIES, STORY_RECORDS

__all__ = ["stories", "story_record_frame", "story_records"]


def stories(items: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per story, its ``dc:*`` metadata as columns (``dc:title``, ``dc:creator``, …).

    Parameters
    ----------
    items : stories as decoded (``response["results"]["stories"]``).

    Examples
    --------
    >>> stories([{"databox_id": 1, "story_id": 9, "metadatas": {"dc:title": "Harbour"}}])[
    ...     ["databox_id", "story_id", "dc:title"]]
       databox_id  story_id dc:title
    0           1         9  Harbour
    """
    return flatten(as_items(items, "story"), STORIES)


def story_records(items: list[dict[str, Any]]) -> pd.DataFrame:
    """Link each story to its records: ``databox_id, story_id, position, record_databox_id,
    record_id``, one row per (story, record) in the story's order."""
    items = as_items(items, "story")
    label = labeller(items, STORIES.row, STORIES.key)
    members, owners, member_label = children(items, "records", what="record", label=label)
    starts = np.arange(len(owners)) - np.searchsorted(owners, owners)
    keys = {
        name: to_array([item.get(name) for item in items], "Int64", member=name, label=label)
        for name in ("databox_id", "story_id")
    }
    columns = {
        "databox_id": keys["databox_id"].take(owners),
        "story_id": keys["story_id"].take(owners),
        "position": pd.array(starts, dtype="Int64"),
        "record_databox_id": _ids(members, "databox_id", member_label),
        "record_id": _ids(members, "record_id", member_label),
    }
    return assemble(STORY_RECORDS, columns, {})


def story_record_frame(
    items: list[dict[str, Any]], structure: Structure | None = None, *, unique: bool = True
) -> pd.DataFrame:
    """The records of all stories as one :func:`records` frame, each record once.

    A record in several stories appears once (its first occurrence); :func:`story_records` says
    which stories hold it. With ``unique=False`` every member is kept, in the order of
    :func:`story_records` (one row per (story, record)). ``structure`` reads extended records'
    captions and status bits (see :func:`records`).
    """
    items = as_items(items, "story")
    label = labeller(items, STORIES.row, STORIES.key)
    members, _, member_label = children(items, "records", what="record", label=label)
    frame = flatten_records(members, label=member_label, structure=structure)
    if not unique:
        return frame
    return frame.drop_duplicates(subset=list(RECORDS.key)).reset_index(drop=True)


def _ids(members: list[dict[str, Any]], name: str, label: Any) -> Any:
    values = [member.get(name) for member in members]
    if None in values:
        index = values.index(None)
        raise MalformedItemError(
            f"{label(index)}: member {name!r} is missing or null; every record needs it "
            "(report the payload)",
            item=index,
        )
    return to_array(values, "Int64", member=name, label=label)
