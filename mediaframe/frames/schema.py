"""The one declaration of every frame's columns, dtypes and meanings; renders docs/frame-schema.md.

Run ``python -m mediaframe.frames > docs/frame-schema.md`` after changing a declaration.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from mediaframe.frames.arrays import TIMESTAMP
from mediaframe.frames.declare import (
    BOOL,
    CATEGORY,
    FLOAT,
    INT,
    OBJECT,
    RULE,
    TEXT,
    UNKNOWN,
    Column,
    Frame,
)

__all__ = ["FRAMES", "Column", "Frame", "render_markdown"]


def _thumbnail(prefix: str, path: str) -> tuple[Column, ...]:
    """Thumbnail (subdefinition) and permalink columns, shared by records and stories."""
    p, m, pl, ml = prefix, path, f"{prefix}permalink_", f"{path}.permalink"
    return (
        Column(f"{p}name", TEXT, "subdefinition name, e.g. `thumbnail`", f"{m}.name"),
        Column(f"{p}width", INT, "pixels", f"{m}.width"),
        Column(f"{p}height", INT, "pixels", f"{m}.height"),
        Column(f"{p}filesize", INT, "bytes", f"{m}.filesize"),
        Column(
            f"{p}devices",
            CATEGORY,
            "target devices joined with `,` (e.g. `screen`); empty string for an empty list",
            f"{m}.devices",
            joined=True,
        ),
        Column(f"{p}player_type", CATEGORY, "e.g. `IMAGE`", f"{m}.player_type"),
        Column(f"{p}mime_type", CATEGORY, "MIME type of the thumbnail file", f"{m}.mime_type"),
        Column(f"{p}substituted", BOOL, "a stand-in image (newer servers)", f"{m}.substituted"),
        Column(f"{p}created_on", TIMESTAMP, "newer servers", f"{m}.created_on"),
        Column(f"{p}updated_on", TIMESTAMP, "newer servers", f"{m}.updated_on"),
        Column(f"{p}url", TEXT, "direct URL (newer servers)", f"{m}.url"),
        Column(f"{p}url_ttl", INT, "seconds the URL stays valid (newer servers)", f"{m}.url_ttl"),
        Column(f"{pl}id", INT, "permalink id", f"{ml}.id"),
        Column(f"{pl}label", TEXT, "permalink label", f"{ml}.label"),
        Column(f"{pl}is_activated", BOOL, "permalink active", f"{ml}.is_activated"),
        Column(f"{pl}created_on", TIMESTAMP, "", f"{ml}.created_on"),
        Column(f"{pl}updated_on", TIMESTAMP, "", f"{ml}.updated_on"),
        Column(
            f"{pl}page_url", TEXT, "preview page (carries the permalink's token)", f"{ml}.page_url"
        ),
        Column(f"{pl}url", TEXT, "file URL (carries the permalink's token)", f"{ml}.url"),
        Column(f"{pl}download_url", TEXT, "download URL", f"{ml}.download_url"),
    )


#: The story metadata keys of the contract, each read from ``metadatas["dc:<name>"]``.
DUBLIN_CORE = (
    *("contributor", "coverage", "creator", "date", "description", "format", "identifier"),
    *("language", "publisher", "relation", "rights", "source", "subject", "title", "type"),
)

_THUMBNAIL_NESTED = {"thumbnail": "thumbnail_", "thumbnail.permalink": "thumbnail_permalink_"}

#: The technical names the contract lists, always columns of the records frame, each in one
#: dtype: numbers that can be fractional are ``Float64`` everywhere (``Aperture`` 5 and 2.8);
#: ``ShutterSpeed`` is text because servers write fractions such as ``1/250``.
TECHNICAL = MappingProxyType(
    {
        "Aperture": FLOAT,
        "CameraModel": TEXT,
        "Channels": INT,
        "ColorDepth": INT,
        "ColorSpace": TEXT,
        "FileSize": INT,
        "FlashFired": INT,
        "FocalLength": FLOAT,
        "Height": INT,
        "HyperfocalDistance": FLOAT,
        "ISO": INT,
        "Latitude": FLOAT,
        "LightValue": FLOAT,
        "Longitude": FLOAT,
        "MimeType": TEXT,
        "ShutterSpeed": TEXT,
        "Width": INT,
    }
)

RECORDS = Frame(
    name="records",
    summary="One row per record, keyed by `(databox_id, record_id)` (ordinary columns, no index).",
    row="record",
    key=("databox_id", "record_id"),
    columns=(
        Column(
            "databox_id", INT, "databox (record database) of the record; key part 1", required=True
        ),
        Column("record_id", INT, "record id within the databox; key part 2", required=True),
        Column(
            "base_id",
            INT,
            "instance-wide id of the (databox, collection) pair; NA on older servers",
        ),
        Column("collection_id", INT, "collection id, local to the databox"),
        Column("resource_id", TEXT, "`<instance>_<databox>_<record>` (newer servers)"),
        Column("uuid", TEXT, "record UUID"),
        Column("sha256", TEXT, "hex digest of the document"),
        Column("title", TEXT, "record title"),
        Column("original_name", TEXT, "file name at upload"),
        Column("mime_type", CATEGORY, "MIME type of the document"),
        Column("media_type", CATEGORY, "image, video, audio, document, flash, unknown"),
        Column("created_on", TIMESTAMP, "UTC; placeholder dates (year < 1) → NaT"),
        Column("updated_on", TIMESTAMP, "UTC; placeholder dates (year < 1) → NaT"),
        *_thumbnail("thumbnail_", "thumbnail"),
    ),
    nested=_THUMBNAIL_NESTED,
    aliases={"updated-on": "updated_on", "phrasea_type": "media_type"},
    ignored=("technical_informations",),
    extras=(
        "Extended records (`extended=True`) add one `caption_<Field>` column per caption field "
        "of the databoxes' structure (see `fields`): `date` fields as UTC timestamps, `number` "
        "fields as `Float64`, others as `string` (multi-valued fields hold the server's joined "
        "text, `a ; b`; `mediaframe.frames.split_values` splits it), and one `boolean` "
        "`status_<bit>` column per status bit of the user's collections (NA where the record's "
        "databox does not define it). These columns come from the structure, so every query of "
        "a server has them, hits or not; their members `caption`, `metadata`, `status` and "
        "`subdefs` are not kept as such. "
        "`technical_informations` is pivoted: one column per technical name as the API spells it "
        "(`ISO`, `Aperture`, `CameraModel`, …). The 17 names the contract lists are always "
        "columns, whatever the input holds, each in one dtype: "
        + ", ".join(f"`{name}` `{dtype}`" for name, dtype in TECHNICAL.items())
        + ' (numeric text such as `"-3"` is read as a number; a value that does not fit leaves '
        "that column to the rule below, so nothing is lost, its numeric texts then written as "
        'the numbers they are, `"00"` as `0`). Other names follow the rule; a '
        "name equal to a declared column or to an unknown "
        "member is prefixed `technical_` until it is free (so `title` → `technical_title`). "
        + UNKNOWN
        + " Dynamic columns (technical names and unknown members) follow the declared ones in "
        "sorted order, so the layout does not depend on which page saw a name first."
    ),
    notes="Read `updated-on` as `updated_on` and `phrasea_type` as `media_type`.",
    stable=TECHNICAL,
)

STORIES = Frame(
    name="stories",
    summary="One row per story, with its `dc:*` metadata as columns.",
    row="story",
    key=("databox_id", "story_id"),
    columns=(
        Column("databox_id", INT, "databox of the story; key part 1", required=True),
        Column("story_id", INT, "story id within the databox; key part 2", required=True),
        Column("base_id", INT, "instance-wide collection id; NA on older servers"),
        Column("collection_id", INT, "collection id, local to the databox"),
        Column("uuid", TEXT, "story UUID"),
        Column("record_count", INT, "records in the story as the server counts them"),
        Column("created_on", TIMESTAMP, "UTC (in search results servers repeat `updated_on` here)"),
        Column("updated_on", TIMESTAMP, "UTC"),
        *(
            Column(f"dc:{name}", TEXT, f"Dublin Core {name}", f"metadatas.dc:{name}")
            for name in DUBLIN_CORE
        ),
        *_thumbnail("thumbnail_", "thumbnail"),
    ),
    nested={"metadatas": "", **_THUMBNAIL_NESTED},
    aliases={"updated-on": "updated_on"},
    ignored=("@entity@", "metadatas.@entity@", "records"),
    extras=UNKNOWN + " Unknown `metadatas` keys become columns under their own name.",
    notes="`@entity@` (a constant type URL) is not kept; `records` go to the story frames below.",
)

STORY_RECORDS = Frame(
    name="story_records",
    summary="Links each story to its records, in the story's order.",
    row="story",
    key=("databox_id", "story_id"),
    columns=(
        Column("databox_id", INT, "databox of the story", required=True),
        Column("story_id", INT, "story id", required=True),
        Column("position", INT, "0-based place of the record in the story", ""),
        Column("record_databox_id", INT, "databox of the record", ""),
        Column("record_id", INT, "record id", ""),
    ),
    notes="`story_record_frame(items)` gives the records themselves as a `records` frame.",
)

V2_RESULTS = Frame(
    name="v2_results",
    summary="The flat `results` of a v2 search: one row per record (or story) reference.",
    row="result",
    key=("databox_id", "record_id"),
    columns=(
        Column("databox_id", INT, "databox", required=True),
        Column("record_id", INT, "record id (the story id when searching stories)", required=True),
        Column("collection_id", INT, "collection id, local to the databox"),
        Column("version", INT, "the record's `updated_on` as a Unix timestamp"),
    ),
    extras=UNKNOWN,
)

FACETS = Frame(
    name="facets",
    summary="Facets in long form: one row per facet value (facets with no values have no row).",
    row="facet value",
    columns=(
        Column("facet", CATEGORY, "facet name (`Keywords`, `Base_Name`, `_iso`, …)", ""),
        Column("field", CATEGORY, "field behind the facet; NA on older servers", ""),
        Column("value", TEXT, "the value as shown", "value"),
        Column("raw_value", TEXT, "the value as stored, numbers as text; NA on older servers", ""),
        Column("count", INT, "records with that value", "count"),
        Column("query", TEXT, "ready search query selecting the value", "query"),
    ),
    ignored=("raw_value",),
    extras="Unknown members of a value are kept as extra columns, typed by the rule.",
)

SUGGESTIONS = Frame(
    name="suggestions",
    summary="Query suggestions of a v1 search (older servers send no `suggestion`).",
    row="suggestion",
    columns=(
        Column("suggestion", TEXT, "suggested word; NA on older servers"),
        Column("query", TEXT, "query to run for it"),
        Column("hits", INT, "hits of that query"),
    ),
    extras=UNKNOWN,
)

SEARCH_INFO = Frame(
    name="search_info",
    summary="A Series summing up one search response (v1 or v2), for harvest reports.",
    row="search response",
    columns=(
        Column("offset_start", INT, "offset of the first result"),
        Column("per_page", INT, "page size the server applied"),
        Column(
            "available_results", INT, "retrievable hits (or hits in this page on newer engines)"
        ),
        Column("total_results", INT, "hits in total"),
        Column(
            "query_time",
            FLOAT,
            "seconds: a JSON float is seconds (older servers), a JSON integer is milliseconds "
            "(newer servers) and is divided by 1000",
        ),
        Column("error", TEXT, "empty string when none"),
        Column("warning", TEXT, "empty string when none"),
        Column("search_indexes", TEXT, "engine indexes searched"),
        Column("query", TEXT, "query as sent to the engine (v1 only)"),
        Column("search_type", INT, "0 records, 1 stories (v2 only)"),
        Column("suggestion_count", INT, "number of suggestions (v1 only)", ""),
        Column("facet_count", INT, "number of facets", ""),
        Column("result_count", INT, "records plus stories (v1) or results (v2) in this page", ""),
    ),
)

USER = Frame(
    name="user",
    summary="The authenticated user (`/me/` member `user`) as a Series; unknown members kept.",
    row="user",
    key=("id",),
    columns=(
        Column("id", INT, "user id", required=True),
        Column("login", TEXT, ""),
        Column("email", TEXT, ""),
        Column("display_name", TEXT, ""),
        Column("first_name", TEXT, ""),
        Column("last_name", TEXT, ""),
        Column("gender", TEXT, "Mr, Mrs or Miss"),
        Column("company", TEXT, ""),
        Column("job", TEXT, ""),
        Column("position", TEXT, ""),
        Column("address", TEXT, ""),
        Column("zip_code", TEXT, ""),
        Column("city", TEXT, ""),
        Column("country", TEXT, ""),
        Column("phone", TEXT, ""),
        Column("fax", TEXT, ""),
        Column("geoname_id", INT, ""),
        Column("locale", TEXT, "e.g. `fr` or `en_GB`"),
        Column("last_connection", TIMESTAMP, "placeholder dates → NaT"),
        Column("created_on", TIMESTAMP, "placeholder dates → NaT"),
        Column("updated_on", TIMESTAMP, "placeholder dates → NaT"),
    ),
    ignored=("@entity@",),
    notes="Series values are Python scalars, `pd.Timestamp`/`NaT` for dates, `pd.NA` when unset.",
)


def _person(prefix: str, path: str) -> tuple[Column, ...]:
    """A basket's owner or pusher: the user members of ``/me/``, typed the same way."""
    return tuple(
        Column(f"{prefix}{column.name}", column.dtype, column.doc, f"{path}.{column.name}")
        for column in USER.columns
    )


#: The contract's collection rights, in its fixed order.
COLLECTION_RIGHTS = (
    *("actif", "canaddrecord", "canadmin", "cancmd", "candeleterecord", "candwnldhd"),
    *("candwnldpreview", "canmodifrecord", "canpush", "canputinalbum", "canreport", "chgstatus"),
    *("imgtools", "manage", "modify_struct", "nowatermark"),
)

#: The contract's databox rights, in its fixed order.
DATABOX_RIGHTS = ("bas_modify_struct", "bas_manage", "bas_chupub", "bas_modif_th")

COLLECTIONS = Frame(
    name="collections",
    summary="The user's collections (`/me/` member `collections`) with one boolean per right.",
    row="collection",
    key=("base_id",),
    columns=(
        Column("databox_id", INT, "databox", required=True),
        Column("base_id", INT, "instance-wide collection id (what `bases[]` takes)"),
        Column("collection_id", INT, "collection id, local to the databox"),
        *(Column(right, BOOL, "the user holds this right", "") for right in COLLECTION_RIGHTS),
    ),
    aliases={"coll_id": "collection_id"},
    ignored=("rights", "statuses"),
    extras="Rights outside the contract's list become extra boolean columns (prefixed `right_` "
    "where a member has the name). " + UNKNOWN,
    notes="Accepts a list or an object keyed by id; `coll_id` is read as `collection_id`.",
)

LANGUAGES = ("de", "en", "fr", "nl")

STATUSES = Frame(
    name="statuses",
    summary="Status-bit definitions: one row per (collection, bit).",
    row="collection",
    key=("base_id",),
    columns=(
        Column("databox_id", INT, "databox", ""),
        Column("base_id", INT, "instance-wide collection id", ""),
        Column("collection_id", INT, "collection id, local to the databox", ""),
        Column("position", INT, "status bit number (0-31)", ""),
        *(Column(f"label_on_{lang}", TEXT, f"label when on ({lang})", "") for lang in LANGUAGES),
        *(Column(f"label_off_{lang}", TEXT, f"label when off ({lang})", "") for lang in LANGUAGES),
        Column("restricted", BOOL, "", ""),
        Column("restriction_flag", BOOL, "", ""),
    ),
    extras="Labels in other languages become `label_on_<lang>`/`label_off_<lang>` columns.",
)

DATABOXES = Frame(
    name="databoxes",
    summary="Databox rights (`/me/` member `databoxes`) with one boolean per right.",
    row="databox",
    key=("databox_id",),
    columns=(
        Column("databox_id", INT, "databox", required=True),
        *(Column(right, BOOL, "the user holds this right", "") for right in DATABOX_RIGHTS),
    ),
    ignored=("rights",),
    extras="Rights outside the contract's list become extra boolean columns (prefixed `right_` "
    "where a member has the name). " + UNKNOWN,
    notes="Accepts a list or an object keyed by databox id (the key fills a missing `databox_id`).",
)

FEED_ENTRIES = Frame(
    name="feed_entries",
    summary="Feed entries: one row per entry.",
    row="feed entry",
    key=("id",),
    columns=(
        Column("id", INT, "entry id", required=True),
        Column("feed_id", INT, "feed id"),
        Column("feed_title", TEXT, "feed title (newer servers)"),
        Column("title", TEXT, ""),
        Column("subtitle", TEXT, ""),
        Column("author_name", TEXT, ""),
        Column("author_email", TEXT, ""),
        Column("created_on", TIMESTAMP, ""),
        Column("updated_on", TIMESTAMP, ""),
        Column("feed_url", TEXT, "`/feeds/<feed_id>/content/`"),
        Column("url", TEXT, "`/feeds/entry/<entry_id>/`"),
        Column("item_count", INT, "number of items", ""),
    ),
    ignored=("items",),
    extras=UNKNOWN,
)

#: How the frames that put a container's columns before a record's keep both.
_RECORD_CLASH = (
    " A record column named like one of the columns before it (a record member `order` or "
    "`position` from a newer server) is prefixed `unknown_` until it is free, so no value takes "
    "another's place."
)

FEED_ITEMS = Frame(
    name="feed_items",
    summary="Feed items: `entry_id`, `item_id`, then the columns of `records`.",
    row="feed entry",
    key=("id",),
    columns=(
        Column("entry_id", INT, "feed entry id", ""),
        Column("item_id", INT, "item id within the entry", ""),
    ),
    extras="Followed by every column of `records` for the item's record." + _RECORD_CLASH,
)

FEEDS = Frame(
    name="feeds",
    summary="The feeds list (`/feeds/list/`).",
    row="feed",
    key=("id",),
    columns=(
        Column("id", INT, "feed id", required=True),
        Column("title", TEXT, ""),
        Column("subtitle", TEXT, ""),
        Column("total_entries", INT, ""),
        Column("has_icon", BOOL, "the feed has an icon (from `icon`, a boolean or a path)", ""),
        Column("icon", TEXT, "icon path when the server gives one (older servers), else NA", ""),
        Column("public", BOOL, ""),
        Column("readonly", BOOL, ""),
        Column("deletable", BOOL, ""),
        Column("created_on", TIMESTAMP, ""),
        Column("updated_on", TIMESTAMP, ""),
    ),
    ignored=("icon",),
    extras=UNKNOWN,
)

BASKETS = Frame(
    name="baskets",
    summary="Baskets (`/baskets/list/`), with owner and pusher flattened.",
    row="basket",
    key=("basket_id",),
    columns=(
        Column("basket_id", INT, "", required=True),
        Column("name", TEXT, ""),
        Column("description", TEXT, ""),
        Column("created_on", TIMESTAMP, ""),
        Column("updated_on", TIMESTAMP, ""),
        Column("unread", BOOL, ""),
        Column("validation_basket", BOOL, ""),
        Column("pusher_usr_id", INT, "user who pushed the basket"),
        *_person("owner_", "owner"),
        *_person("pusher_", "pusher"),
    ),
    nested={"owner": "owner_", "pusher": "pusher_"},
    ignored=("owner.@entity@", "pusher.@entity@"),
    extras="Unknown user members appear as further `owner_*`/`pusher_*` columns. " + UNKNOWN,
)

TECHNICAL_LONG = Frame(
    name="technical_long",
    summary="`technical_informations` in long form: one row per (record, name).",
    row="record",
    key=("databox_id", "record_id"),
    columns=(
        Column("databox_id", INT, "databox", ""),
        Column("record_id", INT, "record id", ""),
        Column("name", TEXT, "technical name as the API spells it", ""),
        Column(
            "value", OBJECT, "the raw JSON value (int, float or str), so the way back types it", ""
        ),
    ),
    notes="`technical_wide(long_df)` pivots it back to one column per name, typed by the rule.",
)

FIELDS = Frame(
    name="fields",
    summary=(
        "Caption fields of every databox the user can read (`/me/structures/`, completed by "
        "`/databoxes/<id>/metadatas/` for administrators): one row per (databox, field)."
    ),
    row="field",
    key=("databox_id", "id"),
    columns=(
        Column("databox_id", INT, "databox", required=True),
        Column("id", INT, "`meta_structure_id`: the field's id within its databox"),
        Column("name", TEXT, "field name; its records column is `caption_<name>`", required=True),
        Column(
            "type",
            CATEGORY,
            "`string`, `date` or `number`; NA when the server does not say (read as text)",
        ),
        Column("multivalue", BOOL, "several values, joined with `separator` in captions"),
        Column("required", BOOL, "the field must have a value; NA when the server does not say"),
        Column("business", BOOL, "a business field (shown only to users allowed to see them)"),
        Column("readonly", BOOL, ""),
        Column("indexable", BOOL, ""),
        Column("source", TEXT, "metadata tag the field is read from, e.g. `IPTC:Keywords`"),
        Column("separator", TEXT, "separator of the stored values (administrators' route)"),
        *(Column(f"label_{lang}", TEXT, f"label ({lang})", "") for lang in LANGUAGES),
    ),
    ignored=("labels",),
    extras="Labels in other languages become `label_<lang>` columns. " + UNKNOWN,
)

STORY_MEMBERS = Frame(
    name="story_members",
    summary=(
        "One row per (story, record) with the record's columns: what `client.story_records()` "
        "returns."
    ),
    row="story",
    key=("story_databox_id", "story_id"),
    columns=(
        Column("story_databox_id", INT, "databox of the story", ""),
        Column("story_id", INT, "story id", ""),
        Column("position", INT, "0-based place of the record in the story", ""),
    ),
    extras="Followed by every column of `records` for the member record (the record's own "
    "`databox_id`, `record_id`, …, and `caption_*`/`status_*` for extended records)."
    + _RECORD_CLASH,
)

BASKET_RECORDS = Frame(
    name="basket_records",
    summary="One row per basket element with its record's columns: `client.basket_records()`.",
    row="basket element",
    key=("basket_id", "basket_element_id"),
    columns=(
        Column("basket_id", INT, "basket holding the element", ""),
        Column("basket_element_id", INT, "element id"),
        Column("order", INT, "place of the element in the basket"),
        Column("validation_item", BOOL, "the element belongs to a validation basket"),
        Column("agreement", BOOL, "validation baskets: the reader's own agreement (NA: none yet)"),
        Column("note", TEXT, "validation baskets: the reader's own note"),
    ),
    extras="Then, for validation baskets, every participant's say in `agreement_<login>` "
    "(`boolean`) and `note_<login>` (`string`), sorted by name; then every column of `records` "
    "for the element's record." + _RECORD_CLASH,
)

#: Every frame, in the order the documentation shows them.
FRAMES: Mapping[str, Frame] = MappingProxyType(
    {
        frame.name: frame
        for frame in (
            RECORDS,
            TECHNICAL_LONG,
            STORIES,
            STORY_RECORDS,
            V2_RESULTS,
            FACETS,
            SUGGESTIONS,
            SEARCH_INFO,
            USER,
            COLLECTIONS,
            STATUSES,
            DATABOXES,
            FEED_ENTRIES,
            FEED_ITEMS,
            FEEDS,
            BASKETS,
            BASKET_RECORDS,
            STORY_MEMBERS,
            FIELDS,
        )
    }
)


def render_markdown() -> str:
    """Render the schema of every frame as the Markdown page ``docs/frame-schema.md``."""
    lines = [
        "# Frame schema",
        "",
        "<!-- Generated by `python -m mediaframe.frames > docs/frame-schema.md`; do not edit. -->",
        "",
        "Every function of `mediaframe.frames` returns these columns, in this order, with these "
        "dtypes (`string` is `pd.StringDtype()` with `pd.NA`; timestamps are UTC).",
        "",
        RULE,
        "",
    ]
    for frame in FRAMES.values():
        lines += [f"## `{frame.name}`", "", frame.summary, ""]
        lines += ["| column | dtype | API member | meaning |", "|---|---|---|---|"]
        for column in frame.columns:
            member = f"`{column.path}`" if column.path else "(computed)"
            required = " (required)" if column.required else ""
            doc = f"{column.doc}{required}".replace("|", "\\|")
            lines.append(f"| `{column.name}` | `{column.dtype}` | {member} | {doc} |")
        lines.append("")
        for text in (frame.extras, frame.notes):
            if text:
                lines += [text, ""]
    return "\n".join(lines)
