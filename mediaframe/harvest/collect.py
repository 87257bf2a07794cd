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
)
from mediaframe.harvest.engine import concat_frames, harvest
from mediaframe.harvest.plan import Page, Spec, without
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
    progress: bool | None = None
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
    called = dt.datetime.now(dt.UTC)
    if not refresh:
        cached = _read_cached(store, spec, offline)
        if cached is _DAMAGED:
            refresh = True  # nothing to sync from: harvest afresh
        elif cached is not None:
            frame, provenance = cached
            if offline or age(provenance) < _ttl(options, settings):
                return _with_report(frame, provenance.get("report"), spec, from_cache=True)
    if offline:
        raise CacheMissError(
            f"offline mode, and no finished harvest of this {spec.kind} search is cached under "
            f"{store.url}: run it once online, or drop offline=True / MEDIAFRAME_OFFLINE"
        )
    with store.writing():  # one writer per harvest folder: a second one waits here
        # ... and takes the first one's result if it was published while this one waited
        published = _published_since(store, spec, called)
        if published is not None:
            frame, provenance = published
            return _with_report(frame, provenance.get("report"), spec, from_cache=True)
        return _fetch(client, spec, options, store, refresh)


def _fetch(
    client: Any, spec: Spec, options: Options, store: HarvestStore, refresh: bool
) -> pd.DataFrame:
    """Sync the cached harvest, or harvest afresh; under the harvest folder's writer lock."""
    settings = client.settings
    bases, statuses = _rights(client)
    common = _engine_options(client, spec, options, bases, statuses)
    if not refresh:
        synced = sync(
            common["page"],
            _page(client, options, "search_v2_frame"),
            _fetch_item(client, spec),
            spec,
            store,
            flatten=frames.records if spec.kind == "records" else frames.stories,
            lag=dt.timedelta(seconds=settings.sync_lag),
            **without(common, "page"),
        )
        if synced is not None:
            return _with_report(*synced, spec)
    # refresh means "as the server is now": an interrupted harvest is not resumed either
    frame, report = harvest(spec=spec, store=store, resume=not options.refresh, **common)
    return _with_report(frame, report, spec)


_DAMAGED = object()


def _read_cached(store: HarvestStore, spec: Spec, offline: bool) -> Any:
    """The cached frame and provenance; ``None`` if there is none; ``_DAMAGED`` if unusable."""
    try:
        with store.reading():
            manifest = store.manifest()
            if manifest is None:
                return None
            if manifest.spec != spec.identity():
                raise CacheCorruptError(f"the cache at {store.url} holds another search")
            return store.read_data(manifest)
    except CacheCorruptError as err:
        if offline:
            raise
        warnings.warn(f"{err}; fetching it again", CacheWarning, stacklevel=4)
        return _DAMAGED


def _published_since(
    store: HarvestStore, spec: Spec, since: dt.datetime
) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """The dataset another writer published after ``since``, if any and readable."""
    try:
        with store.reading():
            manifest = store.manifest()
            if manifest is None or manifest.spec != spec.identity():
                return None
            if dt.datetime.fromisoformat(manifest.published_at) <= since:
                return None
            return store.read_data(manifest)
    except (CacheCorruptError, ValueError):
        return None


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
        combine: Combine = functools.partial(frames.concat_records, consume=True)
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
        "progress": _progress_bar(spec) if progress else None,
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
    if spec.kind == "records":
        return lambda databox_id, record_id: client.api.record(databox_id, record_id)["record"]
    return lambda databox_id, story_id: client.api.story(databox_id, story_id)["story"]


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


def _progress_bar(spec: Spec) -> Callable[[int], Any]:
    def start(total: int) -> Any:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=f"harvesting {spec.kind}", unit=spec.kind[:-1])

    return start


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
