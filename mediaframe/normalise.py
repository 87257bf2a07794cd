"""The service's answers normalised: older servers' spellings given their canonical names.

Answers keep every member the server sent; a few spellings of older servers are normalised here
so that every consumer (frames, harvest, cache) sees one shape:

==============================  ===================================  ==========================
variation                       normalised to                        where
==============================  ===================================  ==========================
``updated-on`` on records       ``updated_on`` (if absent)           :func:`normalise_record`
``phrasea_type``                ``media_type`` (if absent)           :func:`normalise_record`
``coll_id``                     ``collection_id`` (if absent)        :func:`normalise_record`,
                                                                     :func:`normalise_me`
objects keyed by id             lists, the key kept as ``*_id``      :func:`as_list`,
                                                                     :func:`listed`
``response: []``                ``{}``                               ``http.decode_envelope``
==============================  ===================================  ==========================

The original key is kept beside the canonical one, so nothing is lost. Left to ``frames``
(values, not names): placeholder dates such as ``-0001-11-30T00:00:00+00:09``, ``query_time`` in
seconds or milliseconds, feed ``icon`` as boolean or path. Left to ``harvest``: the two meanings
of ``available_results``. ``api_version`` is informational and never checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mediaframe.exceptions import MalformedItemError, ResponseFormatError
from mediaframe.inert import neutralised
from mediaframe.tokens import redact

__all__ = [
    "as_list",
    "listed",
    "normalise_me",
    "normalise_record",
    "normalise_search",
    "search_rights",
    "search_warning",
]

_RENAMES = (
    ("updated-on", "updated_on"),
    ("phrasea_type", "media_type"),
    ("coll_id", "collection_id"),
)


def normalise_record(item: dict[str, Any]) -> dict[str, Any]:
    """Add the canonical name beside an older spelling (``updated-on``, ``phrasea_type``, ...).

    Works on records and stories (and the records inside a story), in place; returns ``item``.
    """
    if not isinstance(item, dict):
        return item
    for old, new in _RENAMES:
        if old in item and new not in item:
            item[new] = item[old]
    if isinstance(item.get("records"), list):
        for record in item["records"]:
            normalise_record(record)
    return item


def as_list(value: Any, *, key: str) -> Any:
    """A list from an object keyed by id (``{"1": {...}}``), the id kept as ``key``.

    Lists and anything else come back unchanged.

    Examples
    --------
    >>> as_list({"7": {"name": "Press"}}, key="databox_id")
    [{'name': 'Press', 'databox_id': 7}]
    """
    if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
        return value
    items = []
    for ident, item in value.items():
        item = dict(item)
        if key not in item:
            item[key] = int(ident) if str(ident).isdigit() else ident
        items.append(item)
    return items


def listed(response: Mapping[str, Any], member: str, *, key: str, what: str) -> list[Any]:
    """The list an answer's ``member`` stands for: a list as it is, an object keyed by id as
    its values (the id kept as ``key``, :func:`as_list`), nothing when absent or null. ``what``
    names the items in the plural, for the message.

    Raises
    ------
    MalformedItemError
        The member is anything else (a string, a number, an object of non-objects): it never
        counts as nothing.

    Examples
    --------
    >>> listed({"baskets": {"3": {"name": "Picks"}}}, "baskets", key="basket_id", what="baskets")
    [{'name': 'Picks', 'basket_id': 3}]
    """
    value = as_list(response.get(member), key=key)
    if value is None:
        return []
    if not isinstance(value, list):
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise MalformedItemError(
            f"the answer's {member} is {shown}, not a list of {what}; the server's answer does "
            "not follow the API contract (report the payload)"
        )
    return value


def normalise_search(response: dict[str, Any]) -> dict[str, Any]:
    """Normalise the records and stories of a v1 search answer, in place."""
    results = response.get("results") if isinstance(response, dict) else None
    if isinstance(results, dict):
        for kind in ("records", "stories"):
            if isinstance(results.get(kind), list):
                for item in results[kind]:
                    normalise_record(item)
    return response


def search_warning(response: Any) -> str | None:
    """What a search answer's ``warning`` member says, or ``None`` when it says nothing.

    The contract's ``warning`` is a string, empty when none: set, the engine searched but says
    something degraded (a part of the query ignored, results approximate). Told as one line,
    each control and format character shown as U+FFFD as the command line shows server text
    (an escape sequence or a bidi control could rewrite what a terminal or a report shows),
    redacted (:func:`~mediaframe.tokens.redact`: an engine may echo the request, token and all)
    and cut to 500 characters. A null, ``false``, 0 or empty one says nothing; anything else
    set (another age's object or list) is told as the server wrote it.
    """
    said = response.get("warning") if isinstance(response, Mapping) else None
    if not said or (isinstance(said, str) and not said.strip()):
        return None
    return redact(neutralised(" ".join(str(said).split())))[:500]


def normalise_me(response: dict[str, Any]) -> dict[str, Any]:
    """Lists for ``collections``/``databoxes`` keyed by id, ``collection_id`` for ``coll_id``."""
    if not isinstance(response, dict):
        return response
    if "collections" in response:
        response["collections"] = as_list(response["collections"], key="base_id")
        for collection in _dicts(response["collections"]):
            normalise_record(collection)
    if "databoxes" in response:
        response["databoxes"] = as_list(response["databoxes"], key="databox_id")
    return response


def search_rights(
    me: Mapping[str, Any],
) -> tuple[tuple[int, ...], dict[int, tuple[int, list[int]]]]:
    """What a harvest plans with, from a normalised ``/me/`` answer: the base ids the user may
    search (``actif``), and ``{base_id: (databox_id, status bits defined)}``.

    Raises
    ------
    ResponseFormatError
        A member is not what ``/me/`` says it is; the message names it.
    """
    bases, statuses = [], {}
    collections = me.get("collections") or []
    if not isinstance(collections, list):
        raise _odd("collections", collections, "a list of collections")
    for index, entry in enumerate(collections):
        where = f"collections[{index}]"
        if not isinstance(entry, Mapping):
            raise _odd(where, entry, "an object")
        rights = entry.get("rights") or []
        if not isinstance(rights, list | Mapping):
            raise _odd(f"{where}.rights", rights, "a list of rights")
        if "actif" not in rights or entry.get("base_id") is None:
            continue
        base = _member_int(entry["base_id"], f"{where}.base_id")
        bases.append(base)
        defined = entry.get("statuses") or []
        if not isinstance(defined, list):
            raise _odd(f"{where}.statuses", defined, "a list of status bits")
        bits = set()
        for position, bit in enumerate(defined):
            if not isinstance(bit, Mapping):
                raise _odd(f"{where}.statuses[{position}]", bit, "an object")
            if "position" in bit:
                name = f"{where}.statuses[{position}].position"
                bits.add(_member_int(bit["position"], name, maximum=31))
        if entry.get("databox_id") is not None and bits:
            statuses[base] = (_member_int(entry["databox_id"], f"{where}.databox_id"), sorted(bits))
    return tuple(sorted(set(bases))), statuses


def _member_int(value: Any, where: str, *, maximum: int | None = None) -> int:
    """An id or bit number of an answer: an integer, or a string of digits (older servers)."""
    if isinstance(value, str) and value.strip().isdecimal() and len(value.strip()) <= 18:
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _odd(where, value, "a non-negative integer")
    if maximum is not None and value > maximum:
        raise _odd(where, value, f"an integer up to {maximum}")
    return value


def _odd(where: str, value: Any, expected: str) -> ResponseFormatError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return ResponseFormatError(
        f"the /me/ answer's {where} is {shown}, not {expected}: the service (or a proxy) "
        "answered in a shape mediaframe cannot plan with; please report it"
    )


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _normalise_entry(entry: Any) -> Any:
    for item in _dicts(entry.get("items") if isinstance(entry, dict) else None):
        normalise_record(item.get("record"))  # type: ignore[arg-type]
    return entry
