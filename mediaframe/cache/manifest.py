"""What a cached harvest stores beside its data, as dataclasses read back with their shape checked.

Three documents, each JSON on disk:

* :class:`Manifest` (``manifest.json``) — the published dataset: which ``data-<version>/``
  folder holds it, its files' checks, its high-water mark. Replacing it is the one step that
  publishes a new dataset.
* :class:`PlanFile` (``plan.json``) — a harvest in progress: its plan, so that a resume pages
  only what is unfinished, and the splits proven so far while it was still planning.
* :class:`ShardBatch` (``shards/<batch>.json``) — finished shards kept together, each a
  :class:`ShardEntry`: its rows' place in the batch's file, that file's checksum, its facts.
* :class:`PageEntry` (``shards/<id>.pages/<offset>.json``) — one page of a shard still being
  paged: a resume goes on from the pages it finds, so a shard is never paged twice whole.

A document of the wrong shape (a list, a missing member, a member of the wrong type) is damage,
and so is a member of the right type whose value no reader can use (a file check that is not
``<size>:<crc32>``, a time that is not ISO 8601): :func:`decode` raises
:class:`~mediaframe.exceptions.CacheCorruptError` naming the member, never a bare ``KeyError``,
``TypeError`` or ``ValueError``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

import orjson

from mediaframe.exceptions import CacheCorruptError

__all__ = [
    "DayBounds",
    "Manifest",
    "PageEntry",
    "PlanFile",
    "PlannedShard",
    "ProvenSplit",
    "ShardBatch",
    "ShardEntry",
    "decode",
    "encode",
]

#: Bumped whenever these documents change incompatibly; older caches are then fetched again.
SCHEMA_VERSION = 2

_FILE_CHECK = re.compile(r"[0-9]+:[0-9a-f]{8}")


def _are_file_checks(value: dict[str, str]) -> bool:
    return all(_FILE_CHECK.fullmatch(check) for check in value.values())


def _is_timestamp(value: str, *, zoned: bool = False) -> bool:
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        return False
    return when.tzinfo is not None or not zoned


def _is_zoned_timestamp(value: str) -> bool:
    return _is_timestamp(value, zoned=True)


def _valid(test: Any, what: str) -> dict[str, Any]:
    """Field metadata: a value of the right type is damage still unless ``test(value)``; ``what``
    says what it should be."""
    return {"valid": (test, what)}


@dataclasses.dataclass(frozen=True)
class ShardEntry:
    """One finished shard: its rows, where they are kept, and what is known of it.

    Written (in its :class:`ShardBatch`) after its file, so its presence means the file is
    whole. A shard finished in memory and not kept yet has no ``file``.
    """

    id: str
    rows: int
    total: int
    #: The checkpoint file holding its rows (``shards/<batch>.arrow``), from row ``start``;
    #: empty while it is held in memory only.
    file: str = ""
    start: int = 0
    #: CRC-32 of that whole file: damage, not tampering, is what it guards against.
    crc32: str = ""
    requests: int = 0
    seconds: float = 0.0
    worker: str | None = None
    #: Every hit came with the planner's count: no request of its own.
    probed: bool = False
    #: The shard grew past the cap while it waited and was split again into this many leaves.
    replanned: int = 0
    #: Leaves of such a split that stayed above the cap (fetched partially).
    stuck: list[str] = dataclasses.field(default_factory=list)
    #: Why its pages could not be trusted, if they could not: never reused by a resume.
    fault: str | None = None
    #: An offset window of a search (no cap): the key of the hit just before its first, as its
    #: first page served it (``None`` for the search's first window), and the key of its last
    #: hit. A window meets the one before it when its ``before`` is that one's ``last``.
    before: list[int] | None = None
    last: list[int] | None = None
    #: Pages of it were kept while it was paged: they go once the shard itself is kept.
    paged: bool = False
    #: How its pages were read, when it was paged in another process (a Dask worker):
    #: ``{"native": n, "decoded": m, "reasons": {...}}``, added to the report's ``page_reads``.
    page_reads: dict[str, Any] | None = None
    #: What the server warned of in those pages, ``{text: answers}``, added to the report's
    #: ``server_warnings``.
    warned: dict[str, int] | None = None
    #: The latest ``updated_on`` among its rows (ISO 8601), if one has any: a resume's check of
    #: what changed reads the rows back only when it is later than the interrupted run's start.
    updated_last: str | None = dataclasses.field(
        default=None, metadata=_valid(_is_timestamp, "an ISO 8601 time")
    )
    schema_version: int = SCHEMA_VERSION


@dataclasses.dataclass(frozen=True)
class ShardBatch:
    """Finished shards kept together (``shards/<batch>.json``): their rows fill one Arrow file,
    one after another. Written after that file, so its presence means the file is whole.

    Shards are kept in batches because a file costs more than its bytes: on a virtual disk,
    creating and renaming a small file took about 1 ms of CPU, as much as writing 300 kB.
    """

    shards: list[ShardEntry]
    schema_version: int = SCHEMA_VERSION


@dataclasses.dataclass(frozen=True)
class PageEntry:
    """One page of an unfinished shard, at ``offset`` of its sorted hits: written after its
    file, so its presence means the file is whole."""

    shard: str
    offset: int
    rows: int
    #: The shard's ``total_results`` on this page: pages of one shard agree, or are dropped.
    total: int
    crc32: str
    #: The first page of an offset window after the search's first: the key of the hit just
    #: before the window, as the page served it (it proves the window meets the one before).
    before: list[int] | None = None
    schema_version: int = SCHEMA_VERSION


@dataclasses.dataclass(frozen=True)
class PlannedShard:
    """A shard of the plan: its id, its bounds (:meth:`Shard.to_dict`) and its counted hits."""

    id: str
    shard: dict[str, Any]
    expected: int
    #: Above the cap and unsplittable: fetched for what the cap lets through.
    stuck: bool = False


@dataclasses.dataclass(frozen=True)
class ProvenSplit:
    """A shard proven to be partitioned by its children: their counts add up to its own."""

    #: The dimension the split was made on (bases, dates, type, status: 0 to 3).
    level: int
    total: int
    children: list[PlannedShard]


@dataclasses.dataclass(frozen=True)
class DayBounds:
    """The first and last day (ISO dates) a shard's hits fall on, as sorting by date found
    them; ``None`` where the hit there had no date."""

    first: str | None
    last: str | None


@dataclasses.dataclass(frozen=True)
class PlanFile:
    """A harvest in progress, saved as soon as its root is counted and updated as it plans."""

    spec: dict[str, Any]
    provenance: dict[str, Any]
    total: int
    cap: int | None
    capped_engine: bool
    #: Leaves proven so far (all of them once ``planned``), stuck shards included.
    leaves: list[PlannedShard] = dataclasses.field(default_factory=list)
    #: Splits proven so far, by the id of the shard split: a resume replays them for free.
    splits: dict[str, ProvenSplit] = dataclasses.field(default_factory=dict)
    #: Every shard counted so far, by id: a resume asks none of them again.
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    #: The days of every shard split by date so far, by id: a resume asks none of them again.
    days: dict[str, DayBounds] = dataclasses.field(default_factory=dict)
    #: Planning finished: ``leaves`` is the whole plan.
    planned: bool = False
    #: The dataset the manifest named when this harvest began (``Manifest.data``), if any: a
    #: plan under a manifest that names another is a published harvest's, never resumed.
    over: str | None = None
    #: When the run that made or last resumed this plan began (ISO 8601, UTC, this machine's
    #: clock): what it kept is as of then, so a record updated since may have changed a
    #: finished shard. ``None`` (a plan of an older version): nothing kept can be checked.
    started: str | None = dataclasses.field(
        default=None, metadata=_valid(_is_zoned_timestamp, "an ISO 8601 time with its time zone")
    )
    #: Shards cut into parts whose counts did not add up to theirs, even counted again: those
    #: left stuck were stuck by the server's counts disagreeing, not by its cap alone.
    disagreed: list[str] = dataclasses.field(default_factory=list)
    schema_version: int = SCHEMA_VERSION

    @property
    def plan(self) -> list[PlannedShard]:
        return [leaf for leaf in self.leaves if not leaf.stuck]

    @property
    def stuck(self) -> list[PlannedShard]:
        return [leaf for leaf in self.leaves if leaf.stuck]


@dataclasses.dataclass(frozen=True)
class Manifest:
    """The published dataset of a harvest folder."""

    spec: dict[str, Any]
    #: The folder of the dataset, relative to the harvest folder: ``data-<version>``.
    data: str
    #: Size and CRC-32 of every file of the dataset, by path relative to ``data``.
    data_files: dict[str, str] = dataclasses.field(
        metadata=_valid(_are_file_checks, "'<size>:<crc32 in 8 hex digits>' for every file")
    )
    #: When it was published (ISO 8601, UTC, microseconds), for people and the inventory: a
    #: writer that waited for the lock tells another's publication by ``data``, not by clocks.
    published_at: str = dataclasses.field(
        metadata=_valid(_is_zoned_timestamp, "an ISO 8601 time with its time zone")
    )
    #: The latest ``updated_on`` fetched: the next incremental sync starts from it.
    high_water: str | None = dataclasses.field(
        default=None, metadata=_valid(_is_timestamp, "an ISO 8601 time")
    )
    #: Whether the harvest proved complete (``allow_incomplete`` publishes partial results).
    complete: bool = True
    rows: int = 0
    #: Who fetched it from where: server, user, kind, query, filters (never a token).
    provenance: dict[str, Any] = dataclasses.field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION


D = TypeVar("D")


def encode(document: Any) -> bytes:
    """A document as JSON (orjson writes dataclasses natively: no copy into dicts first)."""
    return orjson.dumps(document)


def decode(cls: type[D], data: bytes | Mapping[str, Any], where: str) -> D:
    """The document ``cls`` from JSON bytes (or a decoded mapping), its shape checked.

    Raises
    ------
    CacheCorruptError
        ``data`` is not JSON, not an object, lacks a member or holds one of the wrong type.
    """
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            data = orjson.loads(data)
        except orjson.JSONDecodeError as err:
            raise CacheCorruptError(f"{where} is not valid JSON ({err})") from None
    return _build(cls, data, where)


def another_version(data: bytes) -> str | None:
    """What another version of mediaframe wrote ``data`` in (``"schema version 3"``), when a
    stored document is one of its; ``None`` when it is of this version's schema, or damaged
    (which :func:`decode` tells)."""
    try:
        loaded = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(loaded, dict) or loaded.get("schema_version") == SCHEMA_VERSION:
        return None
    found = loaded.get("schema_version")
    return f"schema version {found!r:.20}" if found is not None else "no schema version"


def _build(cls: Any, data: Any, where: str) -> Any:
    if not isinstance(data, Mapping):
        raise CacheCorruptError(f"{where} should be an object, not {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    values = {}
    for field in dataclasses.fields(cls):
        if field.name not in data:
            required = field.default is dataclasses.MISSING
            if required and field.default_factory is dataclasses.MISSING:
                raise CacheCorruptError(f"{where} lacks its member {field.name!r}")
            continue
        value = _check(hints[field.name], data[field.name], f"{where}: {field.name}")
        if "valid" in field.metadata and value is not None:
            test, what = field.metadata["valid"]
            if not test(value):
                shown = f"{value!r:.60}"
                raise CacheCorruptError(f"{where}: {field.name} should be {what}, not {shown}")
        values[field.name] = value
    return cls(**values)


def _check(hint: Any, value: Any, where: str) -> Any:
    """``value`` as of type ``hint`` (dataclasses built, containers checked member by member)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        hint = next(arg for arg in args if arg is not type(None))
        return _check(hint, value, where)
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, where)
    if origin is list:
        if not isinstance(value, list):
            raise CacheCorruptError(f"{where} should be a list, not {type(value).__name__}")
        return [_check(args[0], item, where) for item in value]
    if origin is dict:
        if not isinstance(value, dict):
            raise CacheCorruptError(f"{where} should be an object, not {type(value).__name__}")
        return {key: _check(args[1], item, f"{where}.{key}") for key, item in value.items()}
    if hint is Any:
        return value
    expected = (int, float) if hint is float else hint
    if not isinstance(value, expected) or (isinstance(value, bool) and hint is not bool):
        raise CacheCorruptError(f"{where} should be {hint.__name__}, not {value!r:.40}")
    return value
