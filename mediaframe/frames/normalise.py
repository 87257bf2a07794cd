"""Input shapes and spellings of servers of every age, brought to the contract's form."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any, cast

import numpy as np

from mediaframe.exceptions import MalformedItemError

__all__ = [
    "as_items",
    "children",
    "labeller",
    "nested_records",
    "preferred",
    "query_time_seconds",
]


def as_items(data: Any, what: str, *, id_member: str | None = None) -> list[dict[str, Any]]:
    """Return ``data`` as a list of dicts, refusing anything else with an error naming the item.

    Parameters
    ----------
    data : a list of objects; or, when ``id_member`` is given, also an object keyed by id (some
        servers send ``databoxes`` and ``collections`` that way). A value without ``id_member``
        takes it from its key when the key is an integer.
    what : what one item is (``record``, ``collection``), for messages.
    """
    if isinstance(data, Mapping) and id_member is not None:
        data = [_with_id(value, key, id_member) for key, value in data.items()]
    if not isinstance(data, list | tuple):
        raise MalformedItemError(
            f"expected a list of {what}s, got {type(data).__name__}; pass the list found in the "
            "response (e.g. response['results']['records'])",
        )
    if set(map(type, data)) - {dict}:
        index = next(i for i, item in enumerate(data) if type(item) is not dict)
        raise MalformedItemError(
            f"{what} #{index} is {type(data[index]).__name__}, expected an object; the server's "
            "answer does not follow the API contract (report the payload)",
            item=index,
        )
    return list(data)


def _with_id(value: Any, key: Any, id_member: str) -> Any:
    if isinstance(value, dict) and value.get(id_member) is None and str(key).isdigit():
        return {id_member: int(key), **value}
    return value


def children(
    items: Sequence[Mapping[str, Any]], member: str, *, what: str, label: Callable[[int], str]
) -> tuple[list[dict[str, Any]], np.ndarray, Callable[[int], str]]:
    """The objects in the array ``member`` of every item, flattened.

    Returns the children, the position of the item owning each, and a label naming a child by
    its container, e.g. ``story #2 (story_id=9), record #0``.
    """
    lists = [item.get(member) or [] for item in items]
    for index, values in enumerate(lists):
        if type(values) is not list or any(type(value) is not dict for value in values):
            raise MalformedItemError(
                f"{label(index)}: member {member!r} is not an array of objects; the server's "
                "answer does not follow the API contract (report the payload)",
                item=index,
            )
    counts = np.array([len(values) for values in lists], dtype=np.int64)
    owners = np.repeat(np.arange(len(lists)), counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)

    def child_label(index: int) -> str:
        return f"{label(int(owners[index]))}, {what} #{index - int(starts[index])}"

    return list(chain.from_iterable(lists)), owners, child_label


def nested_records(
    parents: Sequence[Mapping[str, Any]], *, label: Callable[[int], str]
) -> list[dict[str, Any]]:
    """The ``record`` object of each parent (a feed item, a basket element).

    Raises
    ------
    MalformedItemError
        A parent's ``record`` is not an object; ``label`` names the parent.
    """
    records = [parent.get("record") for parent in parents]
    for index, record in enumerate(records):
        if type(record) is not dict:
            raise MalformedItemError(
                f"{label(index)}: member 'record' is not an object (report the payload)",
                item=index,
            )
    return cast(list[dict[str, Any]], records)  # checked above


def labeller(
    items: Sequence[Mapping[str, Any]], what: str, key: Sequence[str]
) -> Callable[[int], str]:
    """Return a function naming item ``i`` by position and key, e.g. ``record #3 (record_id=7)``."""

    def label(index: int) -> str:
        item = items[index]
        ident = ", ".join(f"{k}={item[k]!r}" for k in key if k in item)
        return f"{what} #{index}" + (f" ({ident})" if ident else "")

    return label


def preferred(
    columns: Mapping[str, Sequence[Any]], member: str, aliases: Sequence[str], n: int
) -> Sequence[Any]:
    """The values of ``member``, falling back row by row to its older spellings ``aliases``."""
    values = columns.get(member)
    for alias in aliases:
        older = columns.get(alias)
        if older is not None:
            values = (
                older
                if values is None
                else [
                    old if value is None else value
                    for value, old in zip(values, older, strict=True)
                ]
            )
    return [None] * n if values is None else values


def query_time_seconds(value: Any) -> float | None:
    """Normalise ``query_time`` to seconds.

    Older servers send float seconds (``0.0123``), newer ones integer milliseconds (``12``): the
    JSON type tells them apart, so an integer is divided by 1000 and a float is kept.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedItemError(
            f"search response: member 'query_time' is {value!r}, expected a number; the server's "
            "answer does not follow the API contract (report the payload)"
        )
    return value / 1000 if isinstance(value, int) else float(value)
