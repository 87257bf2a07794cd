"""How each server generation shapes its answers: the one place that tells them apart.

The catalogue renders every record, story, user and facet in one canonical form (the
contract's, as the emulator has always written it). A :class:`Flavour` reshapes that form the
way a generation of deployed servers writes it (the table "Server generations" in
``docs/emulator.md`` lists every difference):

``contract``
    The canonical form as it is (the default).
``current``
    A current server: records carry ``resource_id`` and ``base_id`` and spell their type
    ``phrasea_type``, thumbnails add ``substituted, created_on, updated_on, url, url_ttl``;
    facets carry ``field`` and ``raw_value`` under the newer names (``_base``, ``_collection``,
    ``_doctype``); ``query_time`` is integer milliseconds; ``available_results`` is the number of
    hits *in the page* and nothing is capped.
``legacy``
    A 3.x server: records spell ``updated-on`` and ``phrasea_type`` and lack ``base_id``;
    permalinks end in ``&download``; facets lack ``field`` and ``raw_value``; suggestions lack
    ``suggestion``; ``/me/`` lists collections (with ``coll_id``) and databoxes as objects keyed
    by id, without the newer rights flags; a user's ``geoname_id`` is a numeric string; feed
    icons are paths and entries lack ``feed_title``; ``query_time`` is float seconds under the cap;
    bodies are pretty-printed.

Every method takes the canonical form and returns the generation's, members in the order that
generation writes them. Steps that add to a record (extended records) run after this shaping.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from mediaframe.emulator.catalogue import Catalogue

__all__ = ["FLAVOURS", "Flavour", "Rendering", "by_name"]

FLAVOURS = ("contract", "current", "legacy")
INSTANCE = "emulator"  # the instance name newer servers put in front of a resource_id
URL_TTL = 7200  # seconds a subdefinition's direct URL stays valid on current servers


class Flavour:
    """The contract's shape: the canonical form as it is; the base of the other generations."""

    name = "contract"
    api_version = "2.0.0"
    #: Bodies written with indentation (PHP's ``JSON_PRETTY_PRINT``) rather than compact.
    pretty = False

    def __repr__(self) -> str:
        return f"Flavour({self.name!r})"

    # ------------------------------------------------------------------ records

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        """One record (search result, record route, feed item, story member)."""
        return record

    def records(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Several records, each as :meth:`record` shapes it."""
        return [self.record(record) for record in records]

    def story(self, story: dict[str, Any]) -> dict[str, Any]:
        """One story with its member records."""
        return {**story, "records": self.records(story["records"])}

    # ------------------------------------------------------------------- search

    def retrievable(self, total: int, cap: int) -> int:
        """How many of ``total`` hits can be paged through (``cap``: the configured cap)."""
        return min(total, cap)

    def search_head(self, head: dict[str, Any], *, page_count: int) -> dict[str, Any]:
        """The counting members of a search answer (``available_results``, ``query_time``…)."""
        return head

    def facets(self, facets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return facets

    def suggestions(self, suggestions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return suggestions

    # --------------------------------------------------------- users and feeds

    def user(self, user: dict[str, Any]) -> dict[str, Any]:
        """A user (``/me/``, basket owners and pushers)."""
        return user

    def me(self, collections: list[dict[str, Any]], databoxes: list[dict[str, Any]]) -> Any:
        """The ``collections`` and ``databoxes`` members of ``/me/``."""
        return collections, databoxes

    def feed(self, feed: dict[str, Any]) -> dict[str, Any]:
        return feed

    def entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        """A feed entry with its items' records."""
        items = [{**item, "record": self.record(item["record"])} for item in entry["items"]]
        return {**entry, "items": items}


class Current(Flavour):
    """A current server (4.x): more members, newer names, counts per page, no cap."""

    name = "current"

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        db, rid = record["databox_id"], record["record_id"]
        return {
            "databox_id": db,
            "record_id": rid,
            "resource_id": f"{INSTANCE}_{db}_{rid}",
            "mime_type": record["mime_type"],
            "title": record["title"],
            "original_name": record["original_name"],
            "updated_on": record["updated_on"],
            "created_on": record["created_on"],
            "collection_id": record["collection_id"],
            "base_id": record["base_id"],
            "sha256": record["sha256"],
            "thumbnail": _subdef_extras(record["thumbnail"]),
            "technical_informations": record["technical_informations"],
            "phrasea_type": record["media_type"],
            "uuid": record["uuid"],
        }

    def retrievable(self, total: int, cap: int) -> int:
        return total  # the newer engines have no cap

    def search_head(self, head: dict[str, Any], *, page_count: int) -> dict[str, Any]:
        return {
            **head,
            "available_results": page_count,  # the hits in this page, not a retrievable total
            "query_time": round(head["query_time"] * 1000),
        }

    def facets(self, facets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        renamed = {"Base_Name": "_base", "Collection_Name": "_collection", "Type_Name": "_doctype"}
        return [{**facet, "name": renamed.get(facet["name"], facet["name"])} for facet in facets]


class Legacy(Flavour):
    """A 3.x server: older spellings, keyed objects, float seconds, pretty-printed bodies."""

    name = "legacy"
    api_version = "1.3"
    pretty = True

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        return {
            "databox_id": record["databox_id"],
            "record_id": record["record_id"],
            "mime_type": record["mime_type"],
            "title": record["title"],
            "original_name": record["original_name"],
            "updated-on": record["updated_on"],
            "created_on": record["created_on"],
            "collection_id": record["collection_id"],
            "sha256": record["sha256"],
            "thumbnail": _old_permalink(record["thumbnail"]),
            "technical_informations": record["technical_informations"],
            "phrasea_type": record["media_type"],
            "uuid": record["uuid"],
        }

    def story(self, story: dict[str, Any]) -> dict[str, Any]:
        metadatas = {k: v for k, v in story["metadatas"].items() if k != "@entity@"}
        return {
            "databox_id": story["databox_id"],
            "story_id": story["story_id"],
            "updated_on": story["updated_on"],
            "created_on": story["created_on"],
            "collection_id": story["collection_id"],
            "thumbnail": _old_permalink(story["thumbnail"]),
            "uuid": story["uuid"],
            "metadatas": metadatas,
            "records": self.records(story["records"]),
        }

    def facets(self, facets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {
                "name": facet["name"],
                "values": [
                    {"value": v["value"], "count": v["count"], "query": v["query"]}
                    for v in facet["values"]
                ],
            }
            for facet in facets
        ]

    def suggestions(self, suggestions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"query": s["query"], "hits": s["hits"]} for s in suggestions]

    def user(self, user: dict[str, Any]) -> dict[str, Any]:
        geoname = user.get("geoname_id")
        # As a 3.8 server sends it: the number as a string.
        return {**user, "geoname_id": None if geoname is None else str(geoname)}

    def me(self, collections: list[dict[str, Any]], databoxes: list[dict[str, Any]]) -> Any:
        keyed_collections = {
            str(c["base_id"]): {
                "base_id": c["base_id"],
                "databox_id": c["databox_id"],
                "coll_id": c["collection_id"],
                "name": c["name"],
                "rights": c["rights"],
                "statuses": c["statuses"],
            }
            for c in collections
        }
        keyed_databoxes = {str(d["databox_id"]): d for d in databoxes}
        return keyed_collections, keyed_databoxes

    def feed(self, feed: dict[str, Any]) -> dict[str, Any]:
        return {**feed, "icon": f"/custom/feed_{feed['id']}.jpg"}  # a path, not a boolean

    def entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in super().entry(entry).items() if k != "feed_title"}


_FLAVOURS: dict[str, Flavour] = {
    "contract": Flavour(),
    "current": Current(),
    "legacy": Legacy(),
}


def by_name(name: str) -> Flavour:
    """The flavour called ``name``; ValueError naming the choices otherwise."""
    try:
        return _FLAVOURS[name]
    except (KeyError, TypeError):
        raise ValueError(f"flavour must be one of {', '.join(FLAVOURS)}; got {name!r}") from None


def _subdef_extras(thumbnail: dict[str, Any] | None) -> dict[str, Any] | None:
    """A subdefinition with the members current servers add after ``mime_type``."""
    if thumbnail is None:
        return None
    permalink = thumbnail["permalink"]
    return {
        **thumbnail,
        "substituted": False,
        "created_on": permalink["created_on"],
        "updated_on": permalink["updated_on"],
        "url": permalink["url"],
        "url_ttl": URL_TTL,
    }


def _old_permalink(thumbnail: dict[str, Any] | None) -> dict[str, Any] | None:
    """A subdefinition whose download URL ends in ``&download``, as older servers wrote it."""
    if thumbnail is None:
        return None
    permalink = thumbnail["permalink"]
    download = permalink["download_url"].removesuffix("=1")
    return {**thumbnail, "permalink": {**permalink, "download_url": download}}


class Rendering:
    """Records and stories of a catalogue as one generation writes them.

    The one door through which routes and searches get records: a step that adds members to
    records (extended answers) wraps these methods and runs after the flavour's shaping.
    """

    def __init__(self, catalogue: Catalogue, flavour: Flavour) -> None:
        self.catalogue = catalogue
        self.flavour = flavour

    def records(self, rows: Iterable[int] | np.ndarray) -> list[dict[str, Any]]:
        """Records at catalogue ``rows``, shaped."""
        return self.flavour.records(self.catalogue.record_dicts(rows))

    def record(self, row: int) -> dict[str, Any]:
        return self.records([row])[0]

    def story(self, row: int) -> dict[str, Any]:
        """Story ``row`` with its live member records, shaped."""
        return self.flavour.story(self.catalogue.story_dict(row))
