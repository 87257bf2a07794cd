"""One method per route of the service: typed parameters in, the decoded ``response`` out.

Parameters are validated before anything is sent (:class:`InvalidParameterError` says what to
change). Answers keep every member the server sent; a few spellings of older servers are
normalised here so that every consumer (frames, harvest, cache) sees one shape:

==============================  ===================================  ==========================
variation                       normalised to                        where
==============================  ===================================  ==========================
``updated-on`` on records       ``updated_on`` (if absent)           :func:`normalise_record`
``phrasea_type``                ``media_type`` (if absent)           :func:`normalise_record`
``coll_id``                     ``collection_id`` (if absent)        :func:`normalise_record`,
                                                                     :func:`normalise_me`
objects keyed by id             lists, the key kept as ``*_id``      :func:`as_list`
``response: []``                ``{}``                               ``http.decode_envelope``
==============================  ===================================  ==========================

The original key is kept beside the canonical one, so nothing is lost. Left to ``frames``
(values, not names): placeholder dates such as ``-0001-11-30T00:00:00+00:09``, ``query_time`` in
seconds or milliseconds, feed ``icon`` as boolean or path. Left to ``harvest``: the two meanings
of ``available_results``. ``api_version`` is informational and never checked.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import re
import threading
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from mediaframe import frames, validate
from mediaframe.exceptions import (
    InvalidParameterError,
    MetadataWarning,
    NotFoundError,
    PermissionDeniedError,
    ResponseFormatError,
)
from mediaframe.frames import RecordsPage, read_records
from mediaframe.frames.fastjson import READ
from mediaframe.http import Transport

log = logging.getLogger(__name__)

__all__ = [
    "API",
    "ORDERS",
    "RECORD_TYPES",
    "SEARCH_TYPES",
    "SORTS",
    "as_list",
    "normalise_me",
    "normalise_record",
    "normalise_search",
    "search_params",
    "search_rights",
    "to_ymd",
]

RECORD_TYPES = ("image", "video", "audio", "document", "flash", "unknown")
SORTS = ("relevance", "created_on", "updated_on", "random")
ORDERS = ("asc", "desc")
#: ``search_type`` by name; the service takes 0 (records) or 1 (stories).
SEARCH_TYPES = {"records": 0, "stories": 1}

_YMD = re.compile(r"^(\d{4})[/-](\d{1,2})[/-](\d{1,2})$")
_RENAMES = (
    ("updated-on", "updated_on"),
    ("phrasea_type", "media_type"),
    ("coll_id", "collection_id"),
)


# --- parameters ---------------------------------------------------------------------------------


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


# --- answers ------------------------------------------------------------------------------------


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


def normalise_search(response: dict[str, Any]) -> dict[str, Any]:
    """Normalise the records and stories of a v1 search answer, in place."""
    results = response.get("results") if isinstance(response, dict) else None
    if isinstance(results, dict):
        for kind in ("records", "stories"):
            if isinstance(results.get(kind), list):
                for item in results[kind]:
                    normalise_record(item)
    return response


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


# --- the routes ---------------------------------------------------------------------------------


class API:
    """The service's routes as methods, each returning the decoded ``response`` member.

    Parameters
    ----------
    transport : the :class:`~mediaframe.http.Transport` that sends every request.

    Examples
    --------
    >>> api = API(Transport("https://assets.example.org", token="..."))  # doctest: +SKIP
    >>> api.search("sunset", per_page=5)["total_results"]                 # doctest: +SKIP
    42
    """

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._structure: tuple[pd.DataFrame, frames.Structure] | None = None
        self._structure_lock = threading.Lock()
        self._collections: pd.DataFrame | None = None
        self._collections_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"API({self.transport!r})"

    def root(self) -> dict[str, Any]:
        """``GET /api/``: what the service says about itself."""
        return self.transport.get("/api/")

    def search(self, query: str = "", *, extended: bool = False, **filters: Any) -> dict[str, Any]:
        """``POST /api/v1/search/``: one page of records or stories; filters as in
        :func:`search_params`; ``extended`` asks for records with their captions and status."""
        return self.search_with(search_params(query, **filters), extended=extended)

    def search_v2(
        self, query: str = "", *, extended: bool = False, **filters: Any
    ) -> dict[str, Any]:
        """``POST /api/v2/search/``: one page of facets and flat record references
        (``extended`` is accepted and ignored: references carry no captions)."""
        return self.search_with(search_params(query, **filters), version=2)

    def search_with(
        self, params: list[tuple[str, str]], *, version: int = 1, extended: bool = False
    ) -> dict[str, Any]:
        """Search with pairs already built by :func:`search_params` (``version`` 1 or 2)."""
        if version not in (1, 2):
            raise InvalidParameterError(f"version must be 1 or 2, not {version!r}")
        response = self.transport.post(
            f"/api/v{version}/search/", params, extended=extended and version == 1
        )
        return normalise_search(response) if version == 1 else response

    def search_records_frame(
        self, query: str = "", *, extended: bool = False, **filters: Any
    ) -> tuple[dict[str, Any], pd.DataFrame]:
        """``POST /api/v1/search/`` read straight into the records frame.

        Returns the ``response`` members other than ``results`` and the records as
        :func:`mediaframe.frames.records` would build them; a JSON answer is parsed natively
        from its bytes (:func:`mediaframe.frames.read_records`), never as Python dicts.
        ``extended`` adds the ``caption_*`` and ``status_*`` columns of :meth:`structure`. How the
        page was read is in ``frame.attrs["read"]`` (``{"native": True}``, or ``{"native":
        False, "kind": ..., "detail": ...}`` saying why it was decoded), and in a DEBUG line of
        the ``mediaframe.routes`` logger.
        """
        params = search_params(query, **filters)
        structure = self.structure() if extended else None
        answer = self.transport.request(
            "POST",
            "/api/v1/search/",
            params,
            decode=functools.partial(read_records, structure=structure),
            extended=extended,
        )
        if isinstance(answer, RecordsPage):
            info, frame = answer.info, answer.frame
            if extended and len(frame) and not answer.described:
                _warn_not_extended()
        else:  # YAML or JSONP: read the decoded envelope
            info = normalise_search(answer)
            results = info.pop("results", None) or {}
            items = results.get("records") or []
            if extended:
                _check_extended(items)
            frame = frames.records(items, structure)
            _read_as(frame, "representation", "the answer is YAML or JSONP, not JSON")
        read = frame.attrs[READ]
        if read["native"]:
            log.debug("search page of %d records read natively", len(frame))
        else:
            log.debug(
                "search page of %d records decoded, not read natively (%s: %s)",
                len(frame), read["kind"], read["detail"],
            )  # fmt: skip
        return info, self.fill_base_ids(frame)

    def search_stories_frame(
        self, query: str = "", *, extended: bool = False, **filters: Any
    ) -> tuple[dict[str, Any], pd.DataFrame]:
        """``POST /api/v1/search/`` for stories: the other ``response`` members and the stories
        frame (:func:`mediaframe.frames.stories`; ``extended`` reaches only their records,
        which this frame does not hold)."""
        answer = self.search(query, extended=extended, **{**filters, "search_type": 1})
        results = answer.pop("results", None) or {}
        return answer, self.fill_base_ids(frames.stories(results.get("stories") or []))

    def fill_base_ids(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (records, stories, or frames holding their columns) with each missing
        ``base_id`` read from its databox and collection in ``/me/`` (asked once, then kept):
        servers of the legacy generation send no ``base_id``, and filters, plots and reports
        go by it (:func:`mediaframe.frames.with_base_ids`). The last ``/me/`` this API read
        serves, so a harvest, which reads the user's rights first, asks nothing more."""
        if "base_id" not in frame.columns or not frame["base_id"].isna().any():
            return frame
        with self._collections_lock:
            collections = self._collections
        if collections is None:  # not asked yet: once, then kept (me() keeps what it read)
            self.me()
            with self._collections_lock:
                collections = self._collections
        assert collections is not None
        return frames.with_base_ids(frame, collections)

    def search_v2_frame(
        self, query: str = "", *, extended: bool = False, **filters: Any
    ) -> tuple[dict[str, Any], pd.DataFrame]:
        """``POST /api/v2/search/`` references as a frame (:func:`mediaframe.frames.v2_results`);
        in a story search the id column is named ``story_id``, as the service means it."""
        answer = self.search_v2(query, **filters)
        results = answer.pop("results", None) or []
        frame = frames.v2_results(results)
        if str(filters.get("search_type", 0)) in ("1", "2", "stories"):
            frame = frame.rename(columns={"record_id": "story_id"})
        return answer, frame

    def me(self) -> dict[str, Any]:
        """``GET /api/v1/me/``: ``{user, collections, databoxes}`` of the token's user."""
        answer = normalise_me(self.transport.get("/api/v1/me/"))
        with self._collections_lock:  # what fill_base_ids() reads, without asking again
            self._collections = frames.collections(answer.get("collections") or [])
        return answer

    def feeds_content(
        self,
        *,
        offset_start: int | None = None,
        per_page: int | None = None,
        extended: bool = False,
    ) -> dict[str, Any]:
        """``GET /api/v1/feeds/content/``: entries of every feed (``per_page`` at most 20)."""
        response = self.transport.get(
            "/api/v1/feeds/content/", _feed_paging(offset_start, per_page, 20), extended=extended
        )
        for entry in _dicts(response.get("entries")):
            _normalise_entry(entry)
        return response

    def feeds_list(self) -> dict[str, Any]:
        """``GET /api/v1/feeds/list/``: ``{feeds: [...]}``."""
        response = self.transport.get("/api/v1/feeds/list/")
        if "feeds" in response:
            response["feeds"] = as_list(response["feeds"], key="id")
        return response

    def feed_content(
        self, feed_id: int, *, offset_start: int | None = None, per_page: int | None = None
    ) -> dict[str, Any]:
        """``GET /api/v1/feeds/<feed_id>/content/``: one feed's entries (``per_page`` <= 100).

        An inaccessible feed answers ``{}``.
        """
        feed_id = _count(feed_id, "feed_id", minimum=1)
        params = _feed_paging(offset_start, per_page, 100)
        response = self.transport.get(f"/api/v1/feeds/{feed_id}/content/", params)
        for entry in _dicts(response.get("entries")):
            _normalise_entry(entry)
        return response

    def feed_entry(self, entry_id: int) -> dict[str, Any]:
        """``GET /api/v1/feeds/entry/<entry_id>/``: ``{entry}``."""
        entry_id = _count(entry_id, "entry_id", minimum=1)
        response = self.transport.get(f"/api/v1/feeds/entry/{entry_id}/")
        _normalise_entry(response.get("entry"))
        return response

    def baskets_list(self) -> dict[str, Any]:
        """``GET /api/v1/baskets/list/``: ``{baskets: [...]}`` (no paging)."""
        return self.transport.get("/api/v1/baskets/list/")

    def record(self, databox_id: int, record_id: int, *, extended: bool = False) -> dict[str, Any]:
        """``GET /api/v1/records/<databox_id>/<record_id>/``: ``{record}``."""
        path = f"/api/v1/records/{_ids(databox_id, record_id, 'record_id')}/"
        response = self.transport.get(path, extended=extended)
        normalise_record(response.get("record"))  # type: ignore[arg-type]
        return response

    def story(self, databox_id: int, story_id: int, *, extended: bool = False) -> dict[str, Any]:
        """``GET /api/v1/stories/<databox_id>/<story_id>/``: ``{story}`` with every record."""
        path = f"/api/v1/stories/{_ids(databox_id, story_id, 'story_id')}/"
        response = self.transport.get(path, extended=extended)
        normalise_record(response.get("story"))  # type: ignore[arg-type]
        return response

    def databoxes_list(self) -> dict[str, Any]:
        """``GET /api/v1/databoxes/list/``: ``{databoxes: [...]}`` (a list, even if keyed by id)."""
        response = self.transport.get("/api/v1/databoxes/list/")
        if "databoxes" in response:
            response["databoxes"] = as_list(response["databoxes"], key="databox_id")
        return response

    # -- descriptive metadata ------------------------------------------------------------------

    def me_structures(self) -> dict[str, Any]:
        """``GET /api/v1/me/structures/``: ``{meta_fields, aggregable_fields, technical_fields}``
        (business fields only for users allowed to see them)."""
        response = self.transport.get("/api/v1/me/structures/")
        for name in ("meta_fields", "aggregable_fields", "technical_fields"):
            if name in response:
                response[name] = as_list(response[name], key="id")
        return response

    def databox_metadatas(self, databox_id: int) -> dict[str, Any]:
        """``GET /api/v1/databoxes/<databox_id>/metadatas/`` (needs ``bas_modify_struct``):
        ``{document_metadatas: [...]}``, a list even where the server keys it by field id."""
        databox_id = _count(databox_id, "databox_id", minimum=1)
        response = self.transport.get(f"/api/v1/databoxes/{databox_id}/metadatas/")
        if "document_metadatas" in response:
            response["document_metadatas"] = as_list(response["document_metadatas"], key="id")
        return response

    def record_caption(self, databox_id: int, record_id: int) -> dict[str, Any]:
        """``GET /api/v1/records/<d>/<r>/caption/``: ``{caption_metadatas}`` (no business
        fields)."""
        return self.transport.get(
            f"/api/v1/records/{_ids(databox_id, record_id, 'record_id')}/caption/"
        )

    def record_metadatas(self, databox_id: int, record_id: int) -> dict[str, Any]:
        """``GET /api/v1/records/<d>/<r>/metadatas/``: ``{record_metadatas}``, one per value."""
        ids = _ids(databox_id, record_id, "record_id")
        return self.transport.get(f"/api/v1/records/{ids}/metadatas/")

    def record_status(self, databox_id: int, record_id: int) -> dict[str, Any]:
        """``GET /api/v1/records/<d>/<r>/status/``: ``{status: [{bit, state}]}``."""
        return self.transport.get(
            f"/api/v1/records/{_ids(databox_id, record_id, 'record_id')}/status/"
        )

    def record_related(self, databox_id: int, record_id: int) -> dict[str, Any]:
        """``GET /api/v1/records/<d>/<r>/related/``: ``{baskets, stories}`` holding it."""
        response = self.transport.get(
            f"/api/v1/records/{_ids(databox_id, record_id, 'record_id')}/related/"
        )
        for story in _dicts(response.get("stories")):
            normalise_record(story)
        return response

    def basket_content(self, basket_id: int, *, extended: bool = False) -> dict[str, Any]:
        """``GET /api/v1/baskets/<basket_id>/content/``: ``{basket, basket_elements}``."""
        basket_id = _count(basket_id, "basket_id", minimum=1)
        response = self.transport.get(f"/api/v1/baskets/{basket_id}/content/", extended=extended)
        for element in _dicts(response.get("basket_elements")):
            normalise_record(element.get("record"))  # type: ignore[arg-type]
        return response

    def fields(self, *, refresh: bool = False) -> pd.DataFrame:
        """The caption fields of every readable databox (:func:`mediaframe.frames.fields`),
        asked once per API and kept.

        ``/me/structures/`` lists them; where it does not say a field's type or whether it is
        required (older servers), the administrators' route of each databox the user may
        administer (``bas_modify_struct``) completes it. Fields of other databoxes keep NA
        there, and their captions are read as text.
        """
        return self._kept_structure(refresh)[0]

    def structure(self, *, refresh: bool = False) -> frames.Structure:
        """The extended columns of this server for this user: caption fields and status bits."""
        return self._kept_structure(refresh)[1]

    def _kept_structure(self, refresh: bool) -> tuple[pd.DataFrame, frames.Structure]:
        with self._structure_lock:
            if self._structure is None or refresh:
                try:
                    meta = self.me_structures().get("meta_fields") or []
                except NotFoundError:
                    warnings.warn(
                        "this server has no /api/v1/me/structures/ route: extended frames get "
                        "a caption_<Field> text column for each field the records carry, and "
                        "fields() is empty",
                        MetadataWarning,
                        stacklevel=4,
                    )
                    meta = []
                me = self.me()
                admin = {}
                incomplete = {
                    f.get("databox_id")
                    for f in _dicts(meta)
                    if f.get("type") is None or f.get("required") is None
                }
                for entry in _dicts(me.get("databoxes")):
                    databox_id = entry.get("databox_id")
                    rights = entry.get("rights") or []
                    if databox_id is None or databox_id not in incomplete:
                        continue
                    if "bas_modify_struct" in rights:
                        try:
                            found = self.databox_metadatas(int(databox_id))
                        except (PermissionDeniedError, NotFoundError):
                            continue
                        admin[int(databox_id)] = _dicts(found.get("document_metadatas"))
                fields = frames.fields(meta, admin)
                bits = frames.statuses(me.get("collections") or [])["position"].dropna()
                self._structure = (fields, frames.structure(fields, bits.astype(int)))
            return self._structure


def _read_as(frame: pd.DataFrame, kind: str, detail: str) -> pd.DataFrame:
    """Mark a records page read through the decoded route, and why (see ``frame.attrs[READ]``)."""
    frame.attrs[READ] = {"native": False, "kind": kind, "detail": detail}
    return frame


def _check_extended(items: list[Any]) -> None:
    """Warn when a server answered an extended search with plain records: it ignored the vendor
    media type, and the caption and status columns would read as missing rather than unknown."""
    if items and not any(
        isinstance(item, dict) and ("caption" in item or "status" in item) for item in items
    ):
        _warn_not_extended(stacklevel=4)


def _warn_not_extended(*, stacklevel: int = 3) -> None:
    warnings.warn(
        "extended records were asked for, but the server sent records without caption or "
        "status: it does not support extended records, so caption_*/status_* columns are "
        "all missing",
        MetadataWarning,
        stacklevel=stacklevel,
    )


def _feed_paging(
    offset_start: int | None, per_page: int | None, most: int
) -> list[tuple[str, str]]:
    # The service silently turns a per_page above its maximum into the maximum; refuse instead,
    # so that a pager never skips entries.
    if per_page is not None:
        _count(per_page, "per_page", minimum=1, maximum=most)
    return _paging(offset_start, per_page)


def _ids(databox_id: int, item_id: int, name: str) -> str:
    return f"{_count(databox_id, 'databox_id', minimum=1)}/{_count(item_id, name, minimum=1)}"
