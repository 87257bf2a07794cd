"""One method per route of the service: typed parameters in, the decoded ``response`` out.

Parameters are built and validated before anything is sent (:mod:`mediaframe.parameters`);
answers are normalised for the spellings of older servers (:mod:`mediaframe.normalise`). Both
modules' public names are importable from here too.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pandas as pd

from mediaframe import frames, validate
from mediaframe.exceptions import (
    InvalidParameterError,
    MediaframeWarning,
    MetadataWarning,
    NotFoundError,
    PermissionDeniedError,
    ResponseFormatError,
    ServerError,
)
from mediaframe.frames import RecordsPage, read_records
from mediaframe.frames.fastjson import READ, is_described
from mediaframe.frames.me import base_id_lookup, filled_base_ids
from mediaframe.http import Transport
from mediaframe.inert import neutralised
from mediaframe.normalise import (
    _dicts,
    _normalise_entry,
    as_list,
    normalise_me,
    normalise_record,
    normalise_search,
    search_rights,
    search_warning,
)
from mediaframe.parameters import (
    ORDERS,
    RECORD_TYPES,
    SEARCH_TYPES,
    SORTS,
    _paging,
    search_params,
    to_ymd,
)
from mediaframe.tokens import redact

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
    "search_error",
    "search_params",
    "search_rights",
    "search_warning",
    "to_ymd",
]

_count = validate.count
_Answer = TypeVar("_Answer")


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
        #: The base ids of the last ``/me/`` read, by databox and collection (fill_base_ids()).
        self._base_ids: pd.Series | None = None
        self._base_ids_lock = threading.Lock()
        #: False once ``/api/v2/search/`` answered 404: a server of the v1-only generation,
        #: whose cached harvests are fetched again rather than synced (the sync reads v2).
        self.has_v2: bool | None = None

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
        path = f"/api/v{version}/search/"
        try:
            response = self._searched(
                path,
                lambda: self.transport.post(path, params, extended=extended and version == 1),
                lambda answer: answer,
            )
        except NotFoundError:
            if version == 2:
                self.has_v2 = False
            raise
        return normalise_search(response) if version == 1 else response

    def _searched(
        self,
        path: str,
        send: Callable[[], _Answer],
        info: Callable[[_Answer], Any],
    ) -> _Answer:
        """``send()``'s answer, asked again while the search engine says it failed.

        A search answer's ``error`` is "empty when none": set, the server answered 200 but its
        engine did not search (it is down, timed out, or could not read the query), and the
        empty results that come with it are no answer. It is retried like a 5xx, then raised:
        never read as zero hits.

        An answer that holds hits beside its ``error`` did search: the engine's words are a
        notice (an index being rebuilt), not a failure. Its hits are kept and the error is told
        as a :class:`~mediaframe.exceptions.MediaframeWarning`, where a caller of this route
        sees it; asking again would not make it go. No hit is taken on trust by it: a harvest
        still proves its pages whole by their counts and keys, and refuses a short one.
        """
        for attempt in itertools.count():
            answer = send()
            error = search_error(info(answer))
            if error is None:
                return answer
            if _holds_hits(answer):
                warnings.warn(
                    f"the search engine answered POST {path} with hits and the error "
                    f"{error!r}: the hits were kept (a harvest still checks they are whole)",
                    MediaframeWarning,
                    stacklevel=4,
                )
                return answer
            if attempt >= self.transport.settings.retries:
                raise ServerError(
                    f"the search engine failed on POST {path}: the server says {error!r} "
                    f"(HTTP 200, tried {attempt + 1} time(s)); nothing it answered was kept. "
                    "If it persists, check the query (an engine that cannot read it answers "
                    "so too); else try again later",
                    status_code=200,
                    error_message=error,
                    request=f"POST {path}",
                )
            delay = self.transport.backoff(attempt)
            log.debug(
                "POST %s: the engine says %r; retry %d in %.2f s", path, error, attempt + 1, delay
            )
            time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

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
        answer = self._searched(
            "/api/v1/search/",
            lambda: self.transport.request(
                "POST",
                "/api/v1/search/",
                params,
                decode=functools.partial(read_records, structure=structure),
                extended=extended,
            ),
            lambda answer: answer.info if isinstance(answer, RecordsPage) else answer,
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
        stories = results.get("stories") if isinstance(results, dict) else None
        if not stories and isinstance(results, dict) and results.get("records"):
            raise ResponseFormatError(
                "the answers to this story search held records, not stories: the server may "
                "ignore search_type. Search records instead (client.records), or ask the "
                "service's administrators."
            )
        return answer, self.fill_base_ids(frames.stories(stories or []))

    def fill_base_ids(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (records, stories, or frames holding their columns) with each missing
        ``base_id`` read from its databox and collection in ``/me/`` (asked once, then kept):
        servers of the legacy generation send no ``base_id``, and filters, plots and reports
        go by it (:func:`mediaframe.frames.with_base_ids`). The last ``/me/`` this API read
        serves, so a harvest, which reads the user's rights first, asks nothing more."""
        if "base_id" not in frame.columns or not frame["base_id"].isna().any():
            return frame
        with self._base_ids_lock:
            lookup = self._base_ids
        if lookup is None:  # not asked yet: once, then kept (me() keeps what it read)
            self.me()
            with self._base_ids_lock:
                lookup = self._base_ids
        if lookup is None:  # the answer named no user: not kept, and nothing to fill from
            raise ResponseFormatError(
                "the /me/ answer names no user, so the base_id of records from a server that "
                "sends none cannot be read from it; try again, and if it persists the service "
                "(or a proxy before it) is failing"
            )
        return filled_base_ids(frame, lookup)

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
        if not answer.get("user"):
            return answer  # names no user: nothing of it is kept (the client refuses it)
        # what fill_base_ids() reads, without asking again: built once, not once per page
        lookup = base_id_lookup(frames.collections(answer.get("collections") or []))
        with self._base_ids_lock:
            self._base_ids = lookup
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
        _keyed_as_list(response, "entries", key="id")
        for entry in _dicts(response.get("entries")):
            _normalise_entry(entry)
        return response

    def feeds_list(self) -> dict[str, Any]:
        """``GET /api/v1/feeds/list/``: ``{feeds: [...]}``."""
        response = self.transport.get("/api/v1/feeds/list/")
        _keyed_as_list(response, "feeds", key="id")
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
        _keyed_as_list(response, "entries", key="id")
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
        """``GET /api/v1/baskets/list/``: ``{baskets: [...]}`` (no paging; a list, even if keyed
        by id)."""
        response = self.transport.get("/api/v1/baskets/list/")
        _keyed_as_list(response, "baskets", key="basket_id")
        return response

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
        _keyed_as_list(response, "databoxes", key="databox_id")
        return response

    # -- descriptive metadata ------------------------------------------------------------------

    def me_structures(self) -> dict[str, Any]:
        """``GET /api/v1/me/structures/``: ``{meta_fields, aggregable_fields, technical_fields}``
        (business fields only for users allowed to see them)."""
        response = self.transport.get("/api/v1/me/structures/")
        for name in ("meta_fields", "aggregable_fields", "technical_fields"):
            _keyed_as_list(response, name, key="id")
        return response

    def databox_metadatas(self, databox_id: int) -> dict[str, Any]:
        """``GET /api/v1/databoxes/<databox_id>/metadatas/`` (needs ``bas_modify_struct``):
        ``{document_metadatas: [...]}``, a list even where the server keys it by field id."""
        databox_id = _count(databox_id, "databox_id", minimum=1)
        response = self.transport.get(f"/api/v1/databoxes/{databox_id}/metadatas/")
        _keyed_as_list(response, "document_metadatas", key="id")
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
        _keyed_as_list(response, "basket_elements", key="basket_element_id")
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


def _keyed_as_list(response: dict[str, Any], member: str, *, key: str) -> None:
    """Make ``response[member]``, where present, a list even where the server keys it by id
    (:func:`~mediaframe.normalise.as_list`), in place."""
    if member in response:
        response[member] = as_list(response[member], key=key)


def search_error(response: Any) -> str | None:
    """The failure a search answer's ``error`` member reports, or ``None`` when it reports none.

    The contract's ``error`` is a string, empty when none; a missing or null one, or one of
    blanks, reports nothing. Anything else set (a server of another age may send an object or a
    list) is a failure, told as the server wrote it; a null, ``false``, 0 or empty one is not.
    Told inert (:func:`~mediaframe.inert.neutralised`: it reaches exception messages) and
    redacted (:func:`~mediaframe.tokens.redact`): engines that echo the request they
    failed on quote its query string, token and all. Redacted before it is cut to 500
    characters, so that no part of a token straddling the cut is left.
    """
    error = response.get("error") if isinstance(response, Mapping) else None
    if isinstance(error, str):
        return redact(neutralised(error.strip()))[:500] or None
    return redact(neutralised(str(error)))[:500] if error else None  # null, false, 0, {}, []: none


def _holds_hits(answer: object) -> bool:
    """Whether a search answer (the decoded ``response``, or a page read natively) holds hits:
    records or stories (v1), references (v2)."""
    if isinstance(answer, RecordsPage):
        return len(answer.frame) > 0
    results = answer.get("results") if isinstance(answer, Mapping) else None
    if isinstance(results, Mapping):
        return any(results.get(kind) for kind in ("records", "stories"))
    return bool(results) and isinstance(results, list)


def _read_as(frame: pd.DataFrame, kind: str, detail: str) -> pd.DataFrame:
    """Mark a records page read through the decoded route, and why (see ``frame.attrs[READ]``)."""
    frame.attrs[READ] = {"native": False, "kind": kind, "detail": detail}
    return frame


def _check_extended(items: list[Any]) -> None:
    """Warn when a server answered an extended search with plain records: it ignored the vendor
    media type, and the caption and status columns would read as missing rather than unknown.
    Judged as the native reader judges (:func:`~mediaframe.frames.fastjson.is_described`)."""
    if items and not is_described(items):
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
