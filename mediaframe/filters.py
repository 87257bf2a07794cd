"""The filters and options of a complete search, checked and turned into a harvest's Spec."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from mediaframe import validate
from mediaframe.exceptions import InvalidParameterError
from mediaframe.harvest import Spec
from mediaframe.harvest.collect import Options
from mediaframe.parameters import search_params, to_ymd

__all__ = ["RESULT_SORTS", "collect_options", "ordered_result", "search_spec", "split_filters"]

#: Orders the complete result of records() and stories() can be given in (key order otherwise).
RESULT_SORTS = ("created_on", "updated_on")

_OPTION_NAMES = {field.name for field in dataclasses.fields(Options)}
#: What a search filter may be called: search_params' options, less those mediaframe chooses.
_FILTER_NAMES = set(inspect.signature(search_params).parameters) - {"query"}
_CHOSEN = ("offset_start", "search_type")
#: Filters of records()/stories() that the client turns into the service's own.
_CLIENT_FILTERS = {"extended", "status_only"}


def split_filters(filters: Mapping[str, Any], *, where: str) -> tuple[Options, dict[str, Any]]:
    for name in _CHOSEN:
        if name in filters:
            raise InvalidParameterError(
                f"{name}= is chosen by mediaframe for a complete result; use client.api.search "
                "for single pages"
            )
    allowed = (_FILTER_NAMES - set(_CHOSEN)) | _OPTION_NAMES | _CLIENT_FILTERS
    validate.check_keywords(filters, allowed, where=where)
    given = {k: v for k, v in filters.items() if k in _OPTION_NAMES}
    search = {k: v for k, v in filters.items() if k not in _OPTION_NAMES}
    return collect_options(given), search


def collect_options(given: Mapping[str, Any]) -> Options:
    """How to collect, each knob checked where the user passed it (``None``: the setting)."""
    checked = {name: value for name, value in given.items() if value is not None}
    for name in ("refresh", "allow_incomplete", "offline", "progress"):
        if name in checked and not (name == "progress" and callable(checked[name])):
            checked[name] = validate.flag(checked[name], name)
    if "ttl" in checked:
        checked["ttl"] = validate.duration(checked["ttl"], "ttl")
    if "concurrency" in checked:
        checked["concurrency"] = validate.count(checked["concurrency"], "concurrency", minimum=1)
    if "per_page" in checked:
        checked["per_page"] = validate.count(checked["per_page"], "per_page", minimum=1)
    if "cache_dir" in checked:
        checked["cache_dir"] = validate.path(checked["cache_dir"], "cache_dir")
    return Options(**checked)


def search_spec(
    kind: str, query: str, filters: Mapping[str, Any], date_fields: Iterable[str]
) -> Spec:
    """A validated search, with filters in a plain form that names one cache entry.

    Iterables are read once, first: a generator given as ``bases`` must filter, not be consumed
    by the check and then found empty. ``extended`` stays among the filters only when true, so
    it names its own cache entry and plain harvests keep theirs.
    """
    filters = {k: v for k, v in filters.items() if v is not None}
    extended = validate.flag(filters.pop("extended", False), "extended")
    for name in ("bases", "fields"):
        if name in filters:
            filters[name] = validate.items(filters[name], name)
    if "status" in filters:  # one cache entry whatever the order it was written in
        status = validate.status(filters["status"])
        filters["status"] = {
            bit: {state: sorted(ids) for state, ids in sorted(status[bit].items())}
            for bit in sorted(status)
        }
    if "date_field" in filters:
        validate.date_field(filters["date_field"], date_fields)
    search_params(query, **filters)  # raises InvalidParameterError with what to send instead
    if extended:
        filters["extended"] = True
    for name in ("date_min", "date_max"):
        if name in filters:
            filters[name] = to_ymd(filters[name], name=name)
    if "bases" in filters:
        filters["bases"] = sorted(set(filters["bases"]))
    return Spec(kind, query, filters)


def ordered_result(frame: pd.DataFrame, sort: str | None, order: str | None) -> pd.DataFrame:
    if sort is None:
        return frame
    attrs = dict(frame.attrs)
    ordered = frame.sort_values(
        [sort, *frame.columns[:2]], ascending=order != "desc", kind="stable", na_position="last"
    ).reset_index(drop=True)
    ordered.attrs.update(attrs)
    return ordered
