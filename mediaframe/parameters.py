"""The search's parameters: filters validated and encoded as the service's ``(name, value)``.

Pure: nothing here sends a request. :class:`InvalidParameterError` says what to change before
anything reaches the service.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping

from mediaframe import validate
from mediaframe.exceptions import InvalidParameterError

__all__ = [
    "ORDERS",
    "RECORD_TYPES",
    "SEARCH_TYPES",
    "SORTS",
    "search_params",
    "to_ymd",
]

RECORD_TYPES = ("image", "video", "audio", "document", "flash", "unknown")
SORTS = ("relevance", "created_on", "updated_on", "random")
ORDERS = ("asc", "desc")
#: ``search_type`` by name; the service takes 0 (records) or 1 (stories).
SEARCH_TYPES = {"records": 0, "stories": 1}

_YMD = re.compile(r"^(\d{4})[/-](\d{1,2})[/-](\d{1,2})$")


@validate.keywords_checked
def search_params(
    query: str = "",
    *,
    bases: Iterable[int] | None = None,
    offset_start: int | None = None,
    per_page: int | None = None,
    ord: str | None = None,
    sort: str | None = None,
    record_type: str | None = None,
    search_type: int | str | None = None,
    stemme: bool | int | None = None,
    date_field: str | None = None,
    date_min: dt.date | str | None = None,
    date_max: dt.date | str | None = None,
    status: Mapping[int, Mapping[str, Iterable[int] | int]] | None = None,
    fields: Iterable[str] | None = None,
) -> list[tuple[str, str]]:
    """Validate search filters and encode them as the service's ``(name, value)`` pairs.

    Pure: sends nothing. ``None`` leaves a parameter out (the service's default applies).

    Parameters
    ----------
    query : the search query in the service's syntax; ``""`` matches everything.
    bases : base ids (instance-wide collection ids), sent as ``bases[]``.
    offset_start, per_page : paging; ``offset_start >= 0``, ``per_page >= 1``.
    ord, sort : ``asc``/``desc``; ``relevance``, ``created_on``, ``updated_on`` or ``random``.
    record_type : ``image``, ``video``, ``audio``, ``document``, ``flash`` or ``unknown``.
    search_type : ``0``/``"records"`` or ``1``/``"stories"``.
    stemme : stemmed search (sent as ``1``/``0``).
    date_field, date_min, date_max : dates as ``date``, ``datetime`` or ``"Y/m/d"``, inclusive,
        sent as ``Y/m/d``; ``date_field`` is required with either bound.
    status : ``{bit: {"on": [databox_id, ...], "off": [...]}}``, sent in the contract's nested
        form ``status[<bit>][on|off][]=<databox_id>``. Each condition constrains only the
        databox it names: ``{4: {"on": [1]}}`` keeps databox 1's records with bit 4 on and every
        record of the other databoxes (``client.records(..., status_only=True)`` keeps only the
        named databoxes).
    fields : field names the query is searched in, sent as ``fields[]``.

    Returns
    -------
    list of (str, str)

    Raises
    ------
    InvalidParameterError
        A value the service would refuse or misread, with what to send instead.

    Examples
    --------
    >>> search_params("sunset", bases=[1, 2], per_page=10, date_field="created_on",
    ...               date_min="2024/01/01")
    [('query', 'sunset'), ('bases[]', '1'), ('bases[]', '2'), ('per_page', '10'), \
('date_field', 'created_on'), ('date_min', '2024/01/01')]
    """
    if not isinstance(query, str):
        raise InvalidParameterError(f"query must be a string, not {type(query).__name__}")
    pairs = [("query", query)]
    base_ids = _items(bases, "bases")
    if bases is not None and not base_ids:
        raise InvalidParameterError(
            "bases is empty, which the service reads as every collection: leave it out for "
            "every collection, or name at least one base id"
        )
    pairs += [("bases[]", str(_count(b, "bases", minimum=0))) for b in base_ids]
    pairs += _paging(offset_start, per_page)
    pairs += _choice("ord", ord, ORDERS) + _choice("sort", sort, SORTS)
    pairs += _choice("record_type", record_type, RECORD_TYPES)
    if search_type is not None:
        pairs.append(("search_type", str(_search_type(search_type))))
    if stemme is not None:
        pairs.append(("stemme", "1" if validate.flag(stemme, "stemme") else "0"))
    pairs += _dates(date_field, date_min, date_max)
    pairs += _status(status)
    pairs += [("fields[]", _name(f, "fields")) for f in _items(fields, "fields")]
    return pairs


def to_ymd(value: dt.date | str, *, name: str = "date") -> str:
    """A ``date``, ``datetime`` or ``"Y/m/d"`` (or ``"Y-m-d"``) string as ``Y/m/d``.

    Examples
    --------
    >>> to_ymd(dt.date(2024, 3, 1)), to_ymd("2024-3-1")
    ('2024/03/01', '2024/03/01')
    """
    if isinstance(value, dt.date):  # datetime is a date too
        day = value.date() if isinstance(value, dt.datetime) else value
    elif isinstance(value, str) and (match := _YMD.match(value.strip())):
        try:
            day = dt.date(*map(int, match.groups()))
        except ValueError:
            raise InvalidParameterError(f"{name}={value!r} is not a real day") from None
    else:
        raise InvalidParameterError(
            f"{name}={value!r} is not a date: give a datetime.date, a datetime or 'Y/m/d'"
        )
    return f"{day.year:04d}/{day.month:02d}/{day.day:02d}"


def _paging(offset_start: int | None, per_page: int | None) -> list[tuple[str, str]]:
    pairs = []
    if offset_start is not None:
        pairs.append(("offset_start", str(_count(offset_start, "offset_start", minimum=0))))
    if per_page is not None:
        # The service reads 0 as "the default (10)": refuse it rather than surprise.
        pairs.append(("per_page", str(_count(per_page, "per_page", minimum=1))))
    return pairs


_count = validate.count
_items = validate.items
_name = validate.name


def _choice(name: str, value: str | None, allowed: Iterable[str]) -> list[tuple[str, str]]:
    return [] if value is None else [(name, validate.choice(value, name, allowed))]


def _search_type(value: int | str) -> int:
    if isinstance(value, str) and value in SEARCH_TYPES:
        return SEARCH_TYPES[value]
    if value in (0, 1) and not isinstance(value, bool):
        return int(value)
    raise InvalidParameterError(
        f"search_type must be 0 or 'records', 1 or 'stories'; not {value!r}"
    )


def _dates(
    field: str | None, low: dt.date | str | None, high: dt.date | str | None
) -> list[tuple[str, str]]:
    if field is None:
        if low is not None or high is not None:
            raise InvalidParameterError(
                "date_min/date_max need date_field (e.g. date_field='created_on'): the service "
                "ignores them without it"
            )
        return []
    pairs = [("date_field", _name(field, "date_field"))]
    if low is not None:
        pairs.append(("date_min", to_ymd(low, name="date_min")))
    if high is not None:
        pairs.append(("date_max", to_ymd(high, name="date_max")))
    if low is not None and high is not None and pairs[1][1] > pairs[2][1]:
        raise InvalidParameterError(f"date_min {pairs[1][1]} is after date_max {pairs[2][1]}")
    return pairs


def _status(
    status: Mapping[int, Mapping[str, Iterable[int] | int]] | None,
) -> list[tuple[str, str]]:
    if status is None:
        return []
    return [
        (f"status[{bit}][{state}][]", str(databox_id))
        for bit, states in validate.status(status).items()
        for state, databoxes in states.items()
        for databox_id in databoxes
    ]
