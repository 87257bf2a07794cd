"""Typed pandas DataFrames from decoded Media Asset Service data: dicts in, frames out, no I/O.

Every function takes what the API returned (already decoded from JSON) and returns a frame whose
columns and dtypes are declared once in :mod:`mediaframe.frames.schema` and documented in
``docs/frame-schema.md``; :func:`records_json` reads a search answer's raw bytes into the same
records frame, natively. Malformed input raises :class:`~mediaframe.MalformedItemError`
naming the item.
"""

from mediaframe.frames.captions import Structure, fields, split_values, structure
from mediaframe.frames.fastjson import RecordsPage, read_records, records_json
from mediaframe.frames.feeds import baskets, feed_entries, feed_items, feeds
from mediaframe.frames.me import collections, databoxes, statuses, user, with_base_ids
from mediaframe.frames.members import basket_records, story_members
from mediaframe.frames.records import concat_records, records
from mediaframe.frames.schema import COLLECTION_RIGHTS, DATABOX_RIGHTS, render_markdown
from mediaframe.frames.search import facets, search_info, suggestions, v2_results
from mediaframe.frames.stories import stories, story_record_frame, story_records
from mediaframe.frames.technical import technical_long, technical_wide

__all__ = [
    "COLLECTION_RIGHTS",
    "DATABOX_RIGHTS",
    "RecordsPage",
    "Structure",
    "basket_records",
    "baskets",
    "collections",
    "concat_records",
    "databoxes",
    "facets",
    "feed_entries",
    "feed_items",
    "feeds",
    "fields",
    "read_records",
    "records",
    "records_json",
    "render_markdown",
    "search_info",
    "split_values",
    "statuses",
    "stories",
    "story_members",
    "story_record_frame",
    "story_records",
    "structure",
    "suggestions",
    "technical_long",
    "technical_wide",
    "user",
    "v2_results",
    "with_base_ids",
]
