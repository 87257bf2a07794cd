"""What ``client.records()`` and ``client.stories()`` do: the cache first, then a sync or a harvest.

The policy, in order:

1. a finished cached harvest younger than the TTL (or any, offline) is read back as it is;
2. an older one is brought up to date by an incremental sync;
3. otherwise the search is harvested — resuming an interrupted harvest of the same search.

``refresh=True`` skips 1 and 2. Offline mode never touches the network: no cache, no answer.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import posixpath
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from mediaframe import frames
from mediaframe.cache import HarvestStore, age, dataset_key
from mediaframe.exceptions import (
    CacheCorruptError,
    CacheMissError,
    CacheWarning,
    ConfigurationError,
    NoHitsWarning,
)
from mediaframe.harvest.engine import concat_frames, harvest
from mediaframe.harvest.plan import Page, Shard, Spec, without
from mediaframe.harvest.progress import ProgressOption, bars, shown_while
from mediaframe.harvest.report import HarvestReport
from mediaframe.harvest.shards import Combine
from mediaframe.harvest.sync import sync
from mediaframe.routes import search_rights

__all__ = ["Options", "cache_path", "collect"]

#: The kinds a harvest collects, with their frames.
KINDS = ("records", "stories")


@dataclasses.dataclass(frozen=True)
class Options:
    """How one call collects: the knobs of ``client.records()`` beyond the search itself."""

    refresh: bool = False
    offline: bool | None = None
    ttl: dt.timedelta | float | None = None
    allow_incomplete: bool = False
    progress: ProgressOption = None
    concurrency: int | None = None
    per_page: int | None = None
    dask: Any = None
    cache_dir: str | None = None


def cache_path(client: Any, spec: Spec, cache_dir: str | None = None) -> str:
    """Where the harvest of ``spec`` by ``client``'s user is cached (never names the token)."""
    root = str(cache_dir or client.settings.cache_dir)
    key = dataset_key(server=client.base_url, user=client.user_key, **spec.identity())
    return posixpath.join(root.rstrip("/"), spec.kind, key)


def collect(client: Any, spec: Spec, options: Options) -> pd.DataFrame:
    """Every hit of ``spec`` as a frame, with its report in ``frame.attrs["harvest"]``."""
    if spec.kind not in KINDS:
        raise ConfigurationError(f"kind must be one of {KINDS}, not {spec.kind!r}")
    settings = client.settings
    offline = settings.offline if options.offline is None else options.offline
    store = HarvestStore(cache_path(client, spec, options.cache_dir))
    refresh = options.refresh
    if not refresh:
        cached = _read_cached(store, spec, offline)
        if cached is _DAMAGED:
            refresh = True  # nothing to sync from: harvest afresh
        elif cached is not None:
            frame, provenance = cached
            if offline or age(provenance) < _ttl(options, settings):
                found = _with_report(frame, provenance.get("report"), spec, from_cache=True)
                return found if offline else _suggested(client, spec, found)
    if offline:
        raise CacheMissError(
            f"offline mode, and no finished harvest of this {spec.kind} search is cached under "
            f"{store.url}: run it once online, or drop offline=True / MEDIAFRAME_OFFLINE"
        )
    bases, statuses = _rights(client)
    common = _engine_options(client, spec, options, bases, statuses)
    if not refresh:
        synced = sync(
            common["page"],
            _page(client, options, "search_v2_frame"),
            _fetch_item(client, spec),
            spec,
            store,
            flatten=_flatten(client, spec),
            lag=dt.timedelta(seconds=settings.sync_lag),
            **without(common, "page"),
        )
        if synced is not None:
            return _suggested(client, spec, _with_report(*synced, spec))
    # refresh means "as the server is now": an interrupted harvest is not resumed either
    display = common.pop("progress")
    with shown_while(display, "harvesting") as shown:
        frame, report = harvest(
            spec=spec, store=store, resume=not options.refresh, progress=shown, **common
        )
    return _suggested(client, spec, _with_report(frame, report, spec))


def _suggested(client: Any, spec: Spec, frame: pd.DataFrame) -> pd.DataFrame:
    """When nothing matched, ask once for the server's suggestions: warn naming them, and keep
    them in the report."""
    if len(frame):
        return frame
    answer = client.api.search(**{**spec.params(Shard()), "per_page": 1})
    found = [s for s in answer.get("suggestions") or [] if isinstance(s, dict) and s.get("query")]
    frame.attrs["harvest"]["suggestions"] = found
    if found:
        noun = spec.kind[:-3] + "y" if spec.kind == "stories" else spec.kind[:-1]
        offers = ", ".join(
            f"{s.get('suggestion') or s['query']!r}"
            + (f" ({s['hits']:,} hits)" if isinstance(s.get("hits"), int) else "")
            for s in found
        )
        warnings.warn(
            f"no {noun} matches {spec.query!r}; the server suggests {offers}",
            NoHitsWarning,
            stacklevel=5,  # _suggested, collect, Client._collect, Client.records: the caller
        )
    return frame


_DAMAGED = object()


def _read_cached(store: HarvestStore, spec: Spec, offline: bool) -> Any:
    """The cached frame and provenance; ``None`` if there is none; ``_DAMAGED`` if unusable."""
    manifest = store.load_manifest()
    if not (manifest and manifest.get("complete") and store.has_data()):
        return None
    try:
        if manifest.get("spec") != spec.identity():
            raise CacheCorruptError(f"the cache at {store.url} holds another search")
        return store.read_data(manifest.get("data_files", {}))
    except CacheCorruptError as err:
        if offline:
            raise
        warnings.warn(f"{err}; fetching it again", CacheWarning, stacklevel=4)
        return _DAMAGED


def _ttl(options: Options, settings: Any) -> dt.timedelta:
    ttl = settings.cache_ttl if options.ttl is None else options.ttl
    return ttl if isinstance(ttl, dt.timedelta) else dt.timedelta(seconds=float(ttl))


def _engine_options(
    client: Any,
    spec: Spec,
    options: Options,
    bases: tuple[int, ...],
    statuses: dict[int, tuple[int, list[int]]],
) -> dict[str, Any]:
    settings = client.settings
    progress = settings.progress if options.progress is None else options.progress
    if spec.kind == "records":
        # the engine joins frames it owns and drops: let the join release them column by column
        structure = client.api.structure() if spec.filters.get("extended") else None
        combine: Combine = functools.partial(
            frames.concat_records, consume=True, structure=structure
        )
        page = _page(client, options, "search_records_frame")
    else:
        # story columns are all declared (no per-result typing): a plain concat keeps dtypes
        page, combine = _page(client, options, "search_stories_frame"), concat_frames
    return {
        "page": page,
        "combine": combine,
        "bases": bases,
        "statuses": statuses,
        "per_page": options.per_page or settings.per_page,
        "concurrency": options.concurrency or settings.concurrency,
        "executor": _executor(options.dask),
        "allow_incomplete": options.allow_incomplete,
        "progress": bars(spec.kind, progress),
        "provenance": {
            "server": client.base_url,
            "user": client.user_key,
            **spec.identity(),
        },
    }


def _page(client: Any, options: Options, route: str) -> Page:
    """One page of a search route as ``(response, frame)``, e.g. ``search_records_frame``."""
    # Threads share the client's transport; Dask workers need a picklable route of their own.
    if options.dask is not None:
        return client.remote_search(route)
    return getattr(client.api, route)


def _fetch_item(client: Any, spec: Spec) -> Callable[[int, int], Mapping[str, Any]]:
    extended = bool(spec.filters.get("extended"))
    if spec.kind == "records":
        return lambda databox_id, record_id: client.api.record(
            databox_id, record_id, extended=extended
        )["record"]
    return lambda databox_id, story_id: client.api.story(databox_id, story_id)["story"]


def _flatten(client: Any, spec: Spec) -> Callable[[list[dict[str, Any]]], pd.DataFrame]:
    """How fetched items become a frame: extended records with their caption and status columns."""
    if spec.kind != "records":
        return frames.stories
    if spec.filters.get("extended"):
        return functools.partial(frames.records, structure=client.api.structure())
    return frames.records


def _rights(client: Any) -> tuple[tuple[int, ...], dict[int, tuple[int, list[int]]]]:
    """Base ids the user may search, and the status bits defined in each (for planning)."""
    return search_rights(client.me_raw())


def _executor(dask: Any) -> Any:
    """A ``concurrent.futures`` executor on a Dask cluster, from a client or an address."""
    if dask is None:
        return None
    try:
        import distributed
    except ImportError as err:
        raise ConfigurationError(
            "running shards on Dask needs dask.distributed: pip install 'mediaframe[dask]'"
        ) from err
    dask_client = distributed.Client(dask) if isinstance(dask, str) else dask
    return dask_client.get_executor()


def _with_report(
    frame: pd.DataFrame, report: Any, spec: Spec, *, from_cache: bool = False
) -> pd.DataFrame:
    if isinstance(report, HarvestReport):
        data = report.to_dict()
    else:
        data = dict(report or {}, kind=spec.kind)
    data["from_cache"] = from_cache
    frame.attrs["harvest"] = data
    return frame
