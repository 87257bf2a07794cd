"""Search frames: v2 results, facets in long form, suggestions and a one-line search summary."""

from __future__ import annotations

from typing import Any

import pandas as pd

from mediaframe.exceptions import MalformedItemError
from mediaframe.frames.arrays import categorical, render_text, to_array, warn_unreadable
from mediaframe.frames.flatten import flatten
from mediaframe.frames.normalise import as_items, children, labeller, query_time_seconds
from mediaframe.frames.schema import FACETS, SEARCH_INFO, SUGGESTIONS, V2_RESULTS

__all__ = ["facets", "search_info", "suggestions", "v2_results"]

_COUNTS = ("offset_start", "per_page", "available_results", "total_results", "search_type")


def v2_results(items: list[dict[str, Any]]) -> pd.DataFrame:
    """The ``results`` of a v2 search: ``databox_id, record_id, collection_id, version``.

    ``version`` is the record's ``updated_on`` as a Unix timestamp; when stories were searched
    ``record_id`` holds the story id.
    """
    return flatten(as_items(items, "result"), V2_RESULTS)


def facets(items: list[dict[str, Any]]) -> pd.DataFrame:
    """Facets in long form: ``facet, field, value, raw_value, count, query``, one row per value.

    Older servers send no ``field`` and no ``raw_value``: those columns are then NA.
    ``raw_value`` is text even when the server sends a number (``200`` → ``"200"``).

    Examples
    --------
    >>> facets([{"name": "Type_Name", "values": [
    ...     {"value": "image", "count": 3, "query": "type:image"}]}])[["facet", "value", "count"]]
           facet  value  count
    0  Type_Name  image      3
    """
    items = as_items(items, "facet")
    label = labeller(items, "facet", ("name",))
    values, owners, label = children(items, "values", what="value", label=label)

    def facet_member(member: str) -> Any:
        names = [items[owner].get(member) for owner in owners]
        to_array(names, "string", member=member, label=label)  # refuses non-strings, naming them
        return categorical(names)

    raw = [value.get("raw_value") for value in values]
    odd = [i for i, v in enumerate(raw) if v is not None and type(v) not in (str, int, float, bool)]
    warn_unreadable("raw_value", odd, len(raw), label, raw)  # not a scalar: missing
    unreadable = set(odd)
    raw = [None if i in unreadable else v for i, v in enumerate(raw)]
    given = {
        "facet": facet_member("name"),
        "field": facet_member("field"),
        "raw_value": to_array(
            [None if v is None else render_text(v) for v in raw],
            "string",
            member="raw_value",
            label=label,
        ),
    }
    return flatten(values, FACETS, given=given, label=label)


def suggestions(items: list[dict[str, Any]]) -> pd.DataFrame:
    """Suggestions of a v1 search: ``suggestion, query, hits`` (``suggestion`` NA when old)."""
    return flatten(as_items(items, "suggestion"), SUGGESTIONS)


def search_info(response: dict[str, Any]) -> pd.Series:
    """Sum up one search response (v1 or v2) as a Series, e.g. for a harvest report.

    ``query_time`` is in seconds: a JSON float is taken as seconds (older servers), a JSON integer
    as milliseconds (newer servers). ``result_count`` counts what this page holds.

    Parameters
    ----------
    response : the envelope's ``response`` member.

    Examples
    --------
    >>> search_info({"total_results": 12, "query_time": 37})[["total_results", "query_time"]]
    total_results       12
    query_time       0.037
    Name: search, dtype: object
    """
    if not isinstance(response, dict):
        raise MalformedItemError(
            f"search response is {type(response).__name__}, expected an object; pass the "
            "envelope's 'response' member"
        )
    info: dict[str, Any] = {name: response.get(name) for name in SEARCH_INFO.names}
    for name in _COUNTS:
        _expect(info[name], int, name)
    for name in ("error", "warning", "search_indexes", "query"):
        _expect(info[name], str, name)
    info["query_time"] = query_time_seconds(response.get("query_time"))
    info["suggestion_count"] = _length(response.get("suggestions"))
    info["facet_count"] = _length(response.get("facets"))
    results = response.get("results")
    if isinstance(results, dict):
        info["result_count"] = sum(_length(results.get(kind)) or 0 for kind in results)
    else:
        info["result_count"] = _length(results)
    series = pd.Series(info, dtype=object, name="search")
    return series.where(series.notna(), pd.NA)


def _expect(value: Any, kind: type, name: str) -> None:
    if value is not None and (type(value) is not kind):
        raise MalformedItemError(
            f"search response: member {name!r} is {value!r}, expected {kind.__name__}; the "
            "server's answer does not follow the API contract (report the payload)"
        )


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, list | dict) else None
