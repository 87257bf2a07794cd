"""Search: parameter validation, hit sets cached per search, the cap, facets and suggestions."""

from __future__ import annotations

import difflib
import functools
import re
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any

import numpy as np

from mediaframe.emulator import vocabulary as vocab
from mediaframe.emulator.accounts import User
from mediaframe.emulator.captions import Captions
from mediaframe.emulator.catalogue import MEDIA_CODES, RECORD_FIELDS, STORY_FIELDS, Catalogue
from mediaframe.emulator.envelope import ApiError
from mediaframe.emulator.flavours import Flavour, Rendering
from mediaframe.emulator.query import (
    MAX_ID_DIGITS,
    CaptionField,
    Evaluator,
    QueryError,
    date_interval,
    parse,
    words_of,
)
from mediaframe.emulator.structures import STRUCTURES, business_bases

SORTS = ("relevance", "created_on", "updated_on", "random")
DATE_FIELDS = ("created_on", "updated_on", "Date")
STATUS_KEY = re.compile(r"status\[(\d+)\]\[(on|off)\]\[\d*\]")
CACHE_SIZE = 32
FACET_VALUES = 10  # values kept per metadata facet, most frequent first


@dataclass(frozen=True)
class SearchParams:
    """Validated search parameters; everything but paging identifies the hit set."""

    query: str = ""
    bases: tuple[int, ...] | None = None
    offset_start: int = 0
    per_page: int = 10
    record_type: str | None = None
    search_type: int = 0
    date_field: str | None = None
    date_min: str | None = None
    date_max: str | None = None
    status: tuple[tuple[int, str, int], ...] = ()
    fields: tuple[str, ...] = ()
    sort: str = "relevance"
    ord: str = "desc"
    stemme: bool = False

    @property
    def kind(self) -> str:
        return "stories" if self.search_type else "records"

    def hit_key(self) -> SearchParams:
        return replace(self, offset_start=0, per_page=0)


@dataclass
class Hits:
    """Every hit of one search, sorted, with facets computed on first use."""

    rows: np.ndarray
    tree: Any
    facets: list | None = None
    suggestions: list | None = None


def parse_params(params: Mapping[str, list[str]]) -> SearchParams:
    """Validate raw parameters (lists of strings per name) into SearchParams; 400 on bad input."""

    def last(name: str) -> str:
        values = params.get(name) or [""]
        return values[-1].strip()

    search_type = _choice("search_type", last("search_type") or "0", {"0": 0, "1": 1, "2": 1})
    record_type = last("record_type").lower() or None
    if record_type is not None and record_type not in vocab.MEDIA_TYPES:
        raise ApiError(
            400,
            f"record_type {record_type!r} is unknown; use one of {', '.join(vocab.MEDIA_TYPES)}",
        )
    date_field = last("date_field") or None
    if date_field is not None:
        date_field = _choice("date_field", date_field, {d.lower(): d for d in DATE_FIELDS})
    return SearchParams(
        query=last("query"),
        bases=_bases(params),
        offset_start=_paging(last("offset_start"), "offset_start", default=0),
        per_page=_paging(last("per_page"), "per_page", default=10),
        record_type=record_type,
        search_type=search_type,
        date_field=date_field,
        date_min=_date(last("date_min"), "date_min"),
        date_max=_date(last("date_max"), "date_max"),
        status=_status(params),
        fields=_fields(params, search_type),
        sort=_choice("sort", last("sort") or "relevance", {s: s for s in SORTS}),
        ord=_choice("ord", last("ord") or "desc", {"asc": "asc", "desc": "desc"}),
        stemme=_choice("stemme", last("stemme") or "0", {"0": False, "1": True}),
    )


def _choice(name: str, value: str, allowed: dict[str, Any]) -> Any:
    try:
        return allowed[value.lower()]
    except KeyError:
        raise ApiError(
            400, f"{name} {value!r} is not allowed; use one of {', '.join(allowed)}"
        ) from None


def _paging(value: str, name: str, *, default: int) -> int:
    try:
        number = int(value)
    except ValueError:
        return default  # missing or not a number: the servers' default
    if number < 0:
        raise ApiError(400, f"{name} must be zero or more, got {number}")
    return number or default


def _listed(params: Mapping[str, list[str]], name: str) -> list[str]:
    """Values of a list parameter sent as name, name[] or name[<index>] (PHP's forms)."""
    pattern = re.compile(rf"{name}(\[\d*\])?")
    return [
        v.strip()
        for key, values in params.items()
        if pattern.fullmatch(key)
        for v in values
        if v.strip()
    ]


def _bases(params: Mapping[str, list[str]]) -> tuple[int, ...] | None:
    raw = _listed(params, "bases")
    if not raw:
        return None
    try:
        return tuple(sorted({int(v) for v in raw}))
    except ValueError:
        raise ApiError(400, f"bases[] takes base ids (integers), got {raw[:5]}"[:200]) from None


def _date(value: str, name: str) -> str | None:
    if not value:
        return None
    try:
        datetime.strptime(value, "%Y/%m/%d")
    except ValueError:
        raise ApiError(400, f"{name} {value!r} is not a date; use the format YYYY/MM/DD") from None
    if not re.fullmatch(r"\d{4}/\d{1,2}/\d{1,2}", value):
        raise ApiError(400, f"{name} {value!r} is not a date; use the format YYYY/MM/DD")
    return value


def _status(params: Mapping[str, list[str]]) -> tuple[tuple[int, str, int], ...]:
    out = set()
    for name, values in params.items():
        if not name.startswith("status"):
            continue
        match = STATUS_KEY.fullmatch(name)
        if match is None or int(match[1]) > 31:
            raise ApiError(
                400, f"{name} is not a status filter; use status[<bit 0-31>][on|off][]=<databox_id>"
            )
        for value in values:
            digits = value.strip()
            if not (digits.isascii() and digits.isdigit()) or len(digits) > MAX_ID_DIGITS:
                raise ApiError(400, f"{name} takes databox ids (integers), got {value[:40]!r}")
            out.add((int(match[1]), match[2], int(digits)))
    return tuple(sorted(out))


def _fields(params: Mapping[str, list[str]], search_type: int) -> tuple[str, ...]:
    known = STORY_FIELDS if search_type else RECORD_FIELDS
    lookup = {f.lower(): f for f in known}
    out = []
    for value in _listed(params, "fields"):
        name = value.removeprefix("field.").lower()
        if name not in lookup:
            raise ApiError(
                400, f"fields[] {value!r} is unknown; searchable fields are {', '.join(known)}"
            )
        out.append(lookup[name])
    return tuple(dict.fromkeys(out))


class Search:
    """Runs searches over a catalogue for a user, keeping recent hit sets in a small LRU.

    Parameters
    ----------
    catalogue
        The ground truth.
    cap
        How many hits can be retrieved (``available_results = min(total_results, cap)``).
    render
        How records and stories are written (the server generation); the contract's by default.
    """

    def __init__(
        self, catalogue: Catalogue, *, cap: int = 1000, render: Rendering | None = None
    ) -> None:
        self.catalogue = catalogue
        self.cap = cap
        self.render = render or Rendering(catalogue, Flavour())
        self.generation = 0  # bumped by every catalogue change, so cached hits go stale
        #: What every answer's ``warning`` says: the engine searched, but something degraded.
        self.warning = ""
        self._cache: OrderedDict[tuple, Hits] = OrderedDict()
        #: caption_fields() by business bases: few sets (one per user and base filter)
        self._caption_fields: dict[frozenset[int], Mapping[str, CaptionField]] = {}
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        """Forget cached hit sets (after a catalogue change)."""
        with self._lock:
            self.generation += 1
            self._cache.clear()

    def answer(self, raw: Mapping[str, list[str]], user: User, *, version: int) -> dict:
        """The ``response`` member of a v1 or v2 search."""
        started = time.perf_counter()
        params = parse_params(raw)
        hits = self.hits(params, user)
        flavour = self.render.flavour
        total = len(hits.rows)
        available = flavour.retrievable(total, self.cap)
        end = min(params.offset_start + params.per_page, available)
        page = hits.rows[params.offset_start : end] if params.offset_start < end else hits.rows[:0]
        facets = flavour.facets(self.facets(params, hits))
        head = {
            "offset_start": params.offset_start,
            "per_page": params.per_page,
            "available_results": available,
            "total_results": total,
            "error": "",
            "warning": self.warning,
            "query_time": round(time.perf_counter() - started, 6),
            "search_indexes": "emulator",
        }
        head = flavour.search_head(head, page_count=len(page))
        if version == 2:
            return {
                **head,
                "facets": facets,
                "search_type": params.search_type,
                "results": self._refs(params, page),
            }
        results: dict[str, list] = {"records": [], "stories": []}
        if params.search_type:
            results["stories"] = [self.render.story(r) for r in page.tolist()]
        else:
            results["records"] = self.render.records(page)
        suggestions = flavour.suggestions(self.suggestions(params, hits, user))
        return {
            **head,
            "suggestions": suggestions,
            "facets": facets,
            "query": params.query,
            "results": results,
        }

    def _refs(self, params: SearchParams, page: np.ndarray) -> list[dict]:
        table = self.catalogue.stories if params.search_type else self.catalogue.records
        return [
            {"databox_id": d, "record_id": i, "collection_id": c, "version": v}
            for d, i, c, v in zip(
                table.databox_id[page].tolist(), table.ident[page].tolist(),
                table.collection_id[page].tolist(), table.updated[page].tolist(), strict=True,
            )
        ]  # fmt: skip

    # ------------------------------------------------------------------ hits

    def hits(self, params: SearchParams, user: User) -> Hits:
        """Sorted rows matching ``params`` for ``user`` (cached per search, paging aside)."""
        bases = _allowed_bases(params, user)
        business = business_bases(user.bases) & bases  # where business fields are searched
        key = (params.hit_key(), bases, business, self.generation)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        hits = self._evaluate(params, bases, business)
        with self._lock:
            self._cache[key] = hits
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return hits

    def _evaluate(
        self, params: SearchParams, bases: frozenset[int], business: frozenset[int]
    ) -> Hits:
        table: Any = self.catalogue.stories if params.search_type else self.catalogue.records
        # records' captions hold the structures' fields; stories carry only their metadatas
        captions = None if params.search_type else self.caption_fields(business)
        try:
            tree = parse(params.query)
            evaluator = Evaluator(
                table, fields=params.fields, stemme=params.stemme, captions=captions
            )
            mask = evaluator.mask(tree)
        except QueryError as err:
            raise ApiError(400, f"query {params.query!r} cannot be understood: {err}") from None
        allowed = [i for i, c in enumerate(vocab.COLLECTIONS) if c[0] in bases]
        mask &= table.alive & np.isin(table.base_index, allowed)
        if params.record_type and not params.search_type:
            mask &= table.media == MEDIA_CODES[params.record_type]
        if params.date_field:
            mask &= _date_window(table, params)
        if not params.search_type:
            for bit, state, databox in params.status:
                on = (table.status >> bit) & 1 == 1
                mask &= (table.databox_id != databox) | (on if state == "on" else ~on)
        return Hits(rows=_sorted(table, np.flatnonzero(mask), params), tree=tree)

    @functools.cached_property
    def captions(self) -> Captions:
        """The records' caption values (drawn once, on first use)."""
        return Captions(self.catalogue)

    def caption_fields(self, business: frozenset[int]) -> Mapping[str, CaptionField]:
        """The structures' fields that are not the catalogue's own texts, searchable as
        ``Field:value`` (``business``: bases where the user may search business fields).

        Made once per ``business`` set and kept: they hang on the structures and on the
        captions, drawn once, and on nothing a catalogue change touches (so, unlike hit sets,
        no change makes them stale).
        """
        with self._lock:
            found = self._caption_fields.get(business)
        if found is None:
            found = MappingProxyType(self._caption_fields_for(business))
            with self._lock:
                self._caption_fields[business] = found
        return found

    def _caption_fields_for(self, business: frozenset[int]) -> dict[str, CaptionField]:
        found: dict[str, CaptionField] = {}
        for name, text in self.captions.drawn.items():
            holders = {d: f for d, fields in STRUCTURES.items() for f in fields if f.name == name}
            if not holders:
                continue
            field = next(iter(holders.values()))
            found[name] = CaptionField(
                text,
                frozenset(holders),
                numeric=field.type == "number",
                bases=business if field.business else None,
            )
        return found

    # ---------------------------------------------------------------- facets

    def facets(self, params: SearchParams, hits: Hits) -> list[dict]:
        """Facets over the whole hit set (not only the retrievable part)."""
        if hits.facets is None:
            hits.facets = _facets(self.catalogue, params, hits.rows)
        return hits.facets

    def suggestions(self, params: SearchParams, hits: Hits, user: User) -> list[dict]:
        """Close vocabulary words for free words the catalogue does not know."""
        if hits.suggestions is not None:
            return hits.suggestions
        words = [w for w in dict.fromkeys(words_of(hits.tree)) if not w.endswith("*")]
        out: list[dict] = []
        if not words:  # nothing to suggest for: the vocabulary (7 ms at 100,000 records) unread
            hits.suggestions = out
            return out
        table = self.catalogue.stories if params.search_type else self.catalogue.records
        vocabulary = {w for f in table.texts.values() for v in f.normalised for w in v.split()}
        known = sorted(vocabulary)
        for word in words:
            if word.lower() in vocabulary:
                continue
            for candidate in difflib.get_close_matches(word.lower(), known, n=3, cutoff=0.75):
                query = re.sub(
                    rf"(?<![\w\"]){re.escape(word)}(?![\w\"])", candidate, params.query, count=1
                )
                count = len(self.hits(replace(params, query=query), user).rows)
                if count:
                    out.append({"suggestion": candidate, "query": query, "hits": count})
        hits.suggestions = out
        return out


def _allowed_bases(params: SearchParams, user: User) -> frozenset[int]:
    bases = user.visible_bases
    if params.bases is not None:
        bases = bases & frozenset(params.bases)
        if not bases:
            raise ApiError(400, "No collections match your criteria")
    return bases


def _date_window(table: Any, params: SearchParams) -> np.ndarray:
    if params.date_field == "Date":
        values, unit = table.dates["Date"], 86_400
    else:
        values, unit = getattr(table, str(params.date_field).removesuffix("_on")), 1
    mask = np.ones(table.size, dtype=bool)
    if params.date_min:
        mask &= values >= date_interval(params.date_min)[0] // unit
    if params.date_max:
        mask &= values < date_interval(params.date_max)[1] // unit
    return mask


def _sorted(table: Any, rows: np.ndarray, params: SearchParams) -> np.ndarray:
    if params.sort == "random":
        # Seeded by the search itself, so paging through a random order stays consistent.
        seed = zlib.crc32(repr(params.hit_key()).encode())
        return rows[np.random.default_rng(seed).permutation(len(rows))]
    if params.sort == "relevance":
        ordered = rows  # rows are in creation order, the emulator's notion of relevance
    else:
        primary = getattr(table, params.sort.removesuffix("_on"))[rows]
        # Record id (within its databox) breaks ties, so the order is stable.
        ordered = rows[np.lexsort((table.ident[rows], table.databox_id[rows], primary))]
    return ordered[::-1] if params.ord == "desc" else ordered


def _facets(catalogue: Catalogue, params: SearchParams, rows: np.ndarray) -> list[dict]:
    table = catalogue.stories if params.search_type else catalogue.records
    out = []
    databox_names = dict(vocab.DATABOXES)
    counts = np.bincount(table.databox_id[rows], minlength=len(vocab.DATABOXES) + 1)
    out.append(_facet("Base_Name", "database", [
        (databox_names[d], c, f'database:"{databox_names[d]}"') for d, c in enumerate(counts) if c
    ]))  # fmt: skip
    counts = np.bincount(table.base_index[rows], minlength=len(vocab.COLLECTIONS))
    names = [c[3] for c in vocab.COLLECTIONS]
    out.append(_facet("Collection_Name", "collection", [
        (names[k], c, f'collection:"{names[k]}"') for k, c in enumerate(counts) if c
    ]))  # fmt: skip
    if not params.search_type:
        counts = np.bincount(table.media[rows], minlength=len(vocab.MEDIA_TYPES))
        out.append(_facet("Type_Name", "type", [
            (t, n, f"type:{t}") for t, n in zip(vocab.MEDIA_TYPES, counts, strict=False) if n
        ]))  # fmt: skip
    for name in ("Keywords", "Creator", "Country"):
        text = table.texts.get(name)
        if text is None:
            continue
        codes = text.codes[rows].ravel()
        counts = np.bincount(codes[codes >= 0], minlength=len(text.categories))
        top = sorted((-c, text.categories[k]) for k, c in enumerate(counts) if c)[:FACET_VALUES]
        out.append(_facet(name, name, [(v, -c, f'field.{name}="{v}"') for c, v in top]))
    return [f for f in out if f["values"]]


def _facet(name: str, field_name: str, values: list[tuple[str, Any, str]]) -> dict:
    values = sorted(values, key=lambda v: (-v[1], v[0]))
    return {
        "name": name,
        "field": field_name,
        "values": [{"value": v, "raw_value": v, "count": int(c), "query": q} for v, c, q in values],
    }
