"""The user's search as the service takes it: ``status_only`` read as the bases it means,
date bounds without a field filtered on ``created_on``, and the date fields ``date_field`` may
name. What it needs to know of the user or the databoxes it asks for, only when needed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from mediaframe import validate
from mediaframe.exceptions import InvalidParameterError

__all__ = ["date_fields", "narrowed", "status_bases"]


def date_fields(search: Mapping[str, Any], fields: Callable[[], pd.DataFrame]) -> tuple[str, ...]:
    """The fields ``date_field`` may name: every record's dates, and the databoxes' date
    fields (``fields()``, the caption fields, asked only when another name is given)."""
    wanted = search.get("date_field")
    known = validate.RECORD_DATE_FIELDS
    # a near miss of created_on/updated_on is a typo: refused before anything is sent
    if not isinstance(wanted, str) or wanted in known or validate.suggest(wanted, known):
        return known
    caption_fields = fields()
    dates = caption_fields.loc[caption_fields["type"] == "date", "name"].dropna()
    return (*validate.RECORD_DATE_FIELDS, *sorted(set(dates)))


def narrowed(
    search: Mapping[str, Any], collections: Callable[[], Iterable[Any]]
) -> tuple[dict[str, Any], list[str]]:
    """The search as the service takes it, and notes for the report on what was filled in:
    ``status_only`` becomes ``bases`` (the collections of the databoxes ``status`` names, from
    ``collections()``, the ``/me/`` answer's), and date bounds without ``date_field`` filter on
    ``created_on``."""
    search, notes = dict(search), []
    if validate.flag(search.pop("status_only", False), "status_only"):
        search["bases"] = status_bases(search, collections)
        notes.append(
            "status_only=True: searched only the collections of the databoxes named in "
            f"status (bases {search['bases']})"
        )
    bounded = any(search.get(name) is not None for name in ("date_min", "date_max"))
    if bounded and search.get("date_field") is None:
        search["date_field"] = "created_on"
        notes.append("date_min/date_max given without date_field: filtered on created_on")
    return search, notes


def status_bases(search: Mapping[str, Any], collections: Callable[[], Iterable[Any]]) -> list[int]:
    """The bases of the databoxes ``search["status"]`` names that the user may search (among
    ``search["bases"]`` when given)."""
    if search.get("status") is None:
        raise InvalidParameterError(
            "status_only=True keeps the databoxes named in status=: give status= too, "
            "e.g. status={4: {'on': [1]}}"
        )
    named = {
        databox
        for states in validate.status(search["status"]).values()
        for databoxes in states.values()
        for databox in databoxes
    }
    wanted = set(validate.items(search["bases"], "bases")) if search.get("bases") else None
    bases = sorted(
        int(entry["base_id"])
        for entry in collections()
        if isinstance(entry, dict)
        and "actif" in (entry.get("rights") or [])
        and entry.get("databox_id") in named
        and entry.get("base_id") is not None
        and (wanted is None or int(entry["base_id"]) in wanted)
    )
    if not bases:
        raise InvalidParameterError(
            f"status_only=True: you can search no collection of databox(es) "
            f"{sorted(named)}{' among bases ' + str(sorted(wanted)) if wanted else ''}; "
            "check the databox ids in status= (client.me().collections lists yours)"
        )
    return bases
