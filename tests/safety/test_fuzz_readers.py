"""Fuzzing everything that reads server output: only mediaframe's own errors may escape.

Each target gets the loaded hypothesis profile's budget (``ci``: 2,000 examples; see
tests/conftest.py). Inputs are valid answers with a few values replaced by JSON of any type
(the likeliest failure of a real server), and JSON of any shape with the members mediaframe
reads; the byte readers also get truncated and corrupted bodies.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_service import golden
from hypothesis import given
from hypothesis import strategies as st

from mediaframe import frames
from mediaframe.exceptions import MediaframeError, MediaframeWarning
from mediaframe.harvest.answers import int_member
from mediaframe.harvest.counter import ShardCounter
from mediaframe.harvest.spec import Shard, Spec
from mediaframe.http import decode_envelope
from mediaframe.routes import normalise_me, normalise_search, search_rights

from .strategies import ITEM_LISTS, JSON, OBJECT, mutated


def dumps(doc: Any) -> bytes:
    """JSON as a server may write it: integers of any size, NaN and Infinity included."""
    return json.dumps(doc).encode()


def survives(read: Callable[..., Any], *args: Any) -> None:
    """Run ``read``: it returns, or raises a MediaframeError; anything else fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", MediaframeWarning)
        with contextlib.suppress(MediaframeError):
            read(*args)


def body(name: str) -> dict[str, Any]:
    return json.loads(golden(name).body)


SEARCH = body("search_v1_old")
SEARCH_V2 = body("search_v2")
ME = body("me")
FEEDS = body("feeds_content")


def yaml_of(value: Any) -> bytes:
    import yaml

    return yaml.safe_dump(value).encode()


def corrupted(data: bytes) -> st.SearchStrategy[bytes]:
    """``data`` cut short, with a byte changed, or with bytes inserted."""
    size = max(len(data), 1)
    return st.one_of(
        st.integers(0, size).map(lambda n: data[:n]),
        st.tuples(st.integers(0, size - 1), st.integers(0, 255)).map(
            lambda p: data[: p[0]] + bytes([p[1]]) + data[p[0] + 1 :]
        ),
        st.tuples(st.integers(0, size), st.binary(max_size=8)).map(
            lambda p: data[: p[0]] + p[1] + data[p[0] :]
        ),
    )


# --- envelopes ---------------------------------------------------------------------------------


@given(st.one_of(st.binary(max_size=200), corrupted(dumps(SEARCH))))
def test_json_envelopes(data):
    survives(decode_envelope, data, "json")


@given(st.one_of(mutated(ME), JSON).map(lambda doc: b"/**/cb(" + dumps(doc) + b");"))
def test_jsonp_envelopes(data):
    survives(decode_envelope, data, "jsonp")


@given(
    st.one_of(
        st.binary(max_size=200), corrupted(yaml_of(ME)), st.text(max_size=200).map(str.encode)
    )
)
def test_yaml_envelopes(data):
    survives(decode_envelope, data, "yaml")


# --- the records byte reader ---------------------------------------------------------------------


@given(st.one_of(mutated(SEARCH, changes=4).map(dumps), corrupted(dumps(SEARCH))))
def test_records_byte_reader(data):
    survives(frames.records_json, data)


def extended_search() -> dict[str, Any]:
    """The golden answer with every record extended: caption, metadata, status and subdefs."""
    document = json.loads(json.dumps(SEARCH))
    for index, record in enumerate(document["response"]["results"]["records"]):
        caption = [
            {"meta_structure_id": 1, "name": "Title", "value": f"title {index}"},
            {"meta_structure_id": 7, "name": "Date", "value": "2024/06/26"},
            {"meta_structure_id": 10, "name": "Rating", "value": str(index)},
        ]
        record["caption"] = caption
        record["metadata"] = [{**entry, "labels": {"en": entry["name"]}} for entry in caption]
        record["status"] = [{"bit": 4, "state": bool(index % 2)}, {"bit": 5, "state": None}]
        record["subdefs"] = [record["thumbnail"]] if record.get("thumbnail") else []
    return document


EXTENDED_SEARCH = extended_search()
STRUCTURE = frames.Structure({"Date": "date", "Rating": "number", "Title": "string"}, (4, 5))


@given(st.one_of(mutated(EXTENDED_SEARCH, changes=4).map(dumps), corrupted(dumps(EXTENDED_SEARCH))))
def test_extended_records_byte_reader(data):
    survives(frames.read_records, data, STRUCTURE)


# --- flatteners --------------------------------------------------------------------------------

RECORDS = SEARCH["response"]["results"]["records"]
STORIES = [{"story_id": 1, "databox_id": 1, "records": RECORDS[:2], "metadatas": {"dc:title": "x"}}]
FLATTENERS = {
    "records": (frames.records, RECORDS),
    "technical_long": (frames.technical_long, RECORDS),
    "stories": (frames.stories, STORIES),
    "story_records": (frames.story_records, STORIES),
    "v2_results": (frames.v2_results, SEARCH_V2["response"]["results"]),
    "facets": (frames.facets, SEARCH_V2["response"].get("facets") or []),
    "suggestions": (frames.suggestions, [{"suggestion": "a", "query": "a", "hits": 2}]),
    "feed_entries": (frames.feed_entries, FEEDS["response"]["entries"]),
    "feed_items": (frames.feed_items, FEEDS["response"]["entries"]),
    "feeds": (frames.feeds, [{"id": 1, "title": "t", "icon": False, "public": True}]),
    "baskets": (frames.baskets, [{"basket_id": 1, "name": "b", "created_on": "2024-01-01"}]),
    "collections": (frames.collections, ME["response"]["collections"]),
    "statuses": (frames.statuses, ME["response"]["collections"]),
    "databoxes": (frames.databoxes, ME["response"]["databoxes"]),
}


@pytest.mark.parametrize("name", sorted(FLATTENERS))
@given(data=st.data())
def test_flatteners(name, data):
    flatten, valid = FLATTENERS[name]
    items = data.draw(st.one_of(mutated(valid), ITEM_LISTS), label="items")
    survives(flatten, items)


@given(st.one_of(mutated(ME["response"]["user"]), OBJECT, JSON))
def test_user_frame(user):
    survives(frames.user, user)


def objects(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Only objects: the envelope decoder guarantees ``response`` is one."""
    return strategy.filter(lambda doc: isinstance(doc, dict))


@given(st.one_of(objects(mutated(SEARCH["response"])), OBJECT))
def test_search_info_and_normalisers(response):
    survives(frames.search_info, response)
    survives(normalise_search, response)


# --- /me/ rights, planner counts ---------------------------------------------------------------


@given(st.one_of(objects(mutated(ME["response"], changes=4)), OBJECT))
def test_me_rights(me):
    def rights(answer: Any) -> None:
        search_rights(normalise_me(answer))

    survives(rights, me)


@given(st.one_of(JSON, OBJECT), st.sampled_from(["total_results", "available_results"]))
def test_planner_counts(response, member):
    survives(int_member, response if isinstance(response, dict) else {member: response}, member)


COUNTS = {"total_results": 5, "available_results": 5}


@given(st.lists(objects(mutated(COUNTS)), min_size=2, max_size=2))
def test_planner_counter(answers):
    pages = iter(answers)

    def page(**params: Any) -> tuple[Any, Any]:
        return next(pages, answers[-1]), frames.records([])

    survives(ShardCounter(page, Spec("records")), Shard())


# --- the readers of captions, field structures, stories' members and baskets' contents ---------
# (tests/safety/data/metadata.json: answers of the emulator's /me/structures/ and
# /baskets/{id}/content/, one validation basket and one plain, trimmed)

METADATA = json.loads((Path(__file__).parent / "data" / "metadata.json").read_text())
META_FIELDS = METADATA["meta_fields"]
CONTENTS = METADATA["basket_contents"]
STRUCTURE = frames.structure(frames.fields(META_FIELDS), [0, 4])


# the administrators' fields: per databox id, the objects of its answer (routes keeps those)
ADMIN = st.dictionaries(
    st.integers(0, 3),
    st.lists(st.one_of(mutated(META_FIELDS[0]), OBJECT).filter(lambda d: isinstance(d, dict))),
)


@given(st.one_of(mutated(META_FIELDS), ITEM_LISTS), st.one_of(st.none(), ADMIN))
def test_fields(meta, admin):
    survives(frames.fields, meta, admin)


@given(st.one_of(mutated(CONTENTS), ITEM_LISTS), st.booleans())
def test_basket_records(contents, extended):
    survives(frames.basket_records, contents, STRUCTURE if extended else None)


@given(st.one_of(mutated(STORIES), ITEM_LISTS), st.booleans())
def test_story_members(stories, extended):
    survives(frames.story_members, stories, STRUCTURE if extended else None)


@given(st.one_of(mutated(STORIES), ITEM_LISTS), st.booleans())
def test_story_record_frame(stories, extended):
    survives(frames.story_record_frame, stories, STRUCTURE if extended else None)
