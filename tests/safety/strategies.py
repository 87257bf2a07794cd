"""Hypothesis strategies for what a hostile or broken server may answer: JSON of any shape,
with the member names mediaframe reads, so that type confusion is reached quickly."""

from __future__ import annotations

from hypothesis import strategies as st

#: Member names the readers look for; drawn often, so that wrong types land where they hurt.
MEMBERS = (
    "databox_id", "record_id", "story_id", "base_id", "collection_id", "coll_id", "mime_type",
    "title", "original_name", "updated_on", "updated-on", "created_on", "sha256", "thumbnail",
    "technical_informations", "media_type", "phrasea_type", "uuid", "resource_id", "records",
    "metadatas", "@entity@", "record_count", "name", "field", "values", "value", "raw_value",
    "count", "query", "user", "login", "id", "email", "rights", "statuses", "position",
    "labels", "labelon", "labeloff", "searchable", "printable", "items", "entries", "feed",
    "feed_id", "feed_title", "icon", "public", "results", "stories", "facets", "suggestions",
    "hits", "suggestion", "total_results", "available_results", "offset_start", "per_page",
    "query_time", "permalink", "url", "height", "width", "filesize", "devices", "basket_id",
    "owner", "description", "databoxes", "collections", "version", "subtitle", "total_entries",
    "item_id", "record", "gender", "first_name", "last_name", "created_on_timestamp",
)  # fmt: skip

DATES = st.sampled_from(
    [
        "2024-03-01T10:00:00+01:00",
        "-0001-11-30T00:00:00+00:09",
        "2024-13-45T99:99:99+00:00",
        "1900-01-01T00:00:00+00:00",
        "",
        "yesterday",
        "9999-12-31T23:59:59+14:00",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**63), 2**64),
    st.floats(),
    st.text(max_size=6),
    st.sampled_from(["1", "-3", "2.8", "1e309", "nan", "0x10", "true", "actif", "image"]),
    DATES,
)
KEYS = st.one_of(st.sampled_from(MEMBERS), st.sampled_from(MEMBERS), st.text(max_size=4))


def _objects(values: st.SearchStrategy[object], size: int) -> st.SearchStrategy[dict]:
    # pairs made into a dict (a repeated key keeps its last value): no filtering for unique
    # keys, which made drawing the slowest part of a fuzz run
    return st.lists(st.tuples(KEYS, values), max_size=size).map(dict)


def _containers(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.lists(inner, max_size=3) | _objects(inner, 4)


JSON = st.recursive(SCALARS, _containers, max_leaves=5)
#: An object with known members of any type: the common shape of a wrong answer.
OBJECT = _objects(JSON, 5)
ITEMS = st.lists(OBJECT, max_size=2)
#: What a list of items may be instead: a list of objects mostly, anything sometimes.
ITEM_LISTS = st.one_of(ITEMS, ITEMS, ITEMS, JSON)


_PATHS: dict[int, list[tuple]] = {}


def _paths_of(doc: object) -> list[tuple]:
    """The paths of ``doc``, computed once per document (the valid answers are constants)."""
    if id(doc) not in _PATHS:
        _PATHS[id(doc)] = _paths(doc)
    return _PATHS[id(doc)]


def _paths(doc: object, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside ``doc`` (keys and indices)."""
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += _paths(value, (*prefix, index))
    return found


def _replaced(doc: object, path: tuple, value: object) -> object:
    """``doc`` with the value at ``path`` replaced (or dropped); unchanged if the path is gone."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict) and head in doc:
        copy = dict(doc)
        if value is _DELETE and not rest:
            del copy[head]
        else:
            copy[head] = _replaced(doc[head], rest, value)
        return copy
    if isinstance(doc, list) and isinstance(head, int) and head < len(doc):
        items = list(doc)
        items[head] = _replaced(doc[head], rest, None if value is _DELETE and not rest else value)
        return items
    return doc


_DELETE = object()


@st.composite
def mutated(draw: st.DrawFn, doc: object, changes: int = 3) -> object:
    """``doc`` (a valid answer) with a few values replaced by anything, or members dropped."""
    original = doc
    for _ in range(draw(st.integers(1, changes))):
        path = draw(st.sampled_from(_paths_of(original)))
        value = draw(st.one_of(JSON, st.just(_DELETE)) if path else JSON)
        doc = _replaced(doc, path, value)
    return doc
