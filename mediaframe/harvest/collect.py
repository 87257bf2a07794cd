"""What ``client.records()`` and ``client.stories()`` do: the cache first, then a sync or a harvest.

The policy, in order:

1. a finished cached harvest younger than the TTL (or any, offline) is read back as it is;
2. an older one is brought up to date by an incremental sync;
3. otherwise the search is harvested — resuming an interrupted harvest of the same search.

A cached result that is incomplete (fetched with ``allow_incomplete=True``) is read back only by
a call that allows one too: for another it is a miss online, and an error offline.

``refresh=True`` skips 1 and 2. Offline mode never touches the network: no cache, no answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import posixpath
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mediaframe import frames
from mediaframe.cache import HarvestStore, age, dataset_key, proven_complete
from mediaframe.exceptions import (
    CacheCorruptError,
    CacheError,
    CacheMissError,
    CacheWarning,
    ConfigurationError,
    IncompleteResultError,
    NoHitsWarning,
    SearchWarning,
)
from mediaframe.harvest.assemble import concat_frames
from mediaframe.harvest.counter import CountRoute
from mediaframe.harvest.engine import EngineOptions
from mediaframe.harvest.paging import Combine
from mediaframe.harvest.progress import Bars, ProgressOption, bars
from mediaframe.harvest.report import HarvestReport
from mediaframe.harvest.service import Rights, SearchService
from mediaframe.harvest.spec import Page, Shard, Spec
from mediaframe.harvest.sync import sync
from mediaframe.harvest.verify import check_status_applied
from mediaframe.normalise import search_rights

if TYPE_CHECKING:
    from mediaframe.client import Client
    from mediaframe.config import Settings

__all__ = ["ClientService", "Options", "cache_path", "collect"]

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


class ClientService:
    """The client as a harvest sees it (:class:`~mediaframe.harvest.service.SearchService`).

    Threads share the client's transport; with Dask, pages go through a picklable route of
    their own (``client.remote_search``).
    """

    def __init__(self, client: Client, *, dask: Any = None) -> None:
        self._client, self._remote = client, dask is not None

    @property
    def server(self) -> str:
        return self._client.base_url

    @property
    def user(self) -> str:
        return self._client.user_key

    def rights(self) -> Rights:
        return search_rights(self._client.me_raw())

    def pages(self, kind: str) -> Page:
        return self._route("search_records_frame" if kind == "records" else "search_stories_frame")

    def keys(self, kind: str) -> Page:
        return self._route("search_v2_frame")

    @property
    def has_keys(self) -> bool:
        """Whether :meth:`keys` may serve: not once the server answered 404 on ``/api/v2/``
        (remembered by the client's API, for the rest of its session)."""
        return self._client.api.has_v2 is not False

    def counts(self, kind: str) -> CountRoute:
        count: CountRoute = self._client.api.search  # planning runs here, even with Dask
        return count

    def item(self, kind: str, *, extended: bool = False) -> Callable[[int, int], Mapping[str, Any]]:
        api = self._client.api
        if kind == "records":
            return lambda databox_id, record_id: api.record(
                databox_id, record_id, extended=extended
            )["record"]
        return lambda databox_id, story_id: api.story(databox_id, story_id)["story"]

    def _route(self, name: str) -> Page:
        if self._remote:
            return self._client.remote_search(name)
        page: Page = getattr(self._client.api, name)
        return page


def cache_path(service: SearchService, spec: Spec, cache_dir: str | Path) -> str:
    """Where the harvest of ``spec`` by ``service``'s user is cached (never names the token)."""
    key = dataset_key(server=service.server, user=service.user, **spec.identity())
    return posixpath.join(str(cache_dir).rstrip("/"), spec.kind, key)


def collect(client: Client, spec: Spec, options: Options) -> pd.DataFrame:
    """Every hit of ``spec`` as a frame, with its report in ``frame.attrs["harvest"]``."""
    if spec.kind not in KINDS:
        raise ConfigurationError(f"kind must be one of {KINDS}, not {spec.kind!r}")
    settings = client.settings
    offline = settings.offline if options.offline is None else options.offline
    progress = settings.progress if options.progress is None else options.progress
    display = None if offline else bars(spec.kind, progress)
    # Shown from before the call's first request (who the user is names the cache), and taken
    # over by the harvest or sync; a call answered from the cache removes it.
    with display.started() if display is not None else contextlib.nullcontext():
        return _collected(client, spec, options, offline, display)


def _collected(
    client: Client, spec: Spec, options: Options, offline: bool, display: Bars | None
) -> pd.DataFrame:
    settings = client.settings
    service = ClientService(client, dask=options.dask)
    store = HarvestStore(cache_path(service, spec, options.cache_dir or settings.cache_dir))
    refresh = options.refresh
    # A writer that publishes while this call waits for the lock names another version; a
    # date would not tell (another machine's clock, or this one stepped back)
    seen = store.published()
    if not refresh:
        cached = _read_cached(store, spec, offline)
        if cached is _DAMAGED:
            refresh = True  # nothing to sync from: harvest afresh
        elif cached is not None:
            frame, provenance = cached
            if not (options.allow_incomplete or proven_complete(provenance)):
                if offline:
                    raise _cached_incomplete(spec, store, provenance)
                refresh = True  # a partial result is no answer to this call: harvest again
            elif offline or age(provenance) < _ttl(options, settings):
                found = _with_report(frame, provenance.get("report"), spec, from_cache=True)
                return found if offline else _suggested(client, spec, found)
    if offline:
        raise CacheMissError(
            f"offline mode, and no finished harvest of this {spec.kind} search is cached under "
            f"{store.url}: run it once online, or drop offline=True / MEDIAFRAME_OFFLINE"
        )
    try:
        with store.writing():  # one writer per harvest folder: a second one waits here
            # ... and takes the first one's result if it was published while this one waited
            published = _published_since(store, spec, seen)
            if published is not None and (
                options.allow_incomplete or proven_complete(published[1])
            ):
                frame, provenance = published
                return _with_report(frame, provenance.get("report"), spec, from_cache=True)
            fetched = _fetch(client, service, settings, spec, options, store, refresh, display)
    except BaseException:
        # A call that failed before keeping anything (a refused search, a wrong token) leaves
        # no empty folder for `cache ls` to list; one with finished work keeps it to resume.
        with contextlib.suppress(OSError, CacheError):
            store.remove_if_empty()
        raise
    return _suggested(client, spec, fetched)


def _fetch(
    client: Client,
    service: ClientService,
    settings: Settings,
    spec: Spec,
    options: Options,
    store: HarvestStore,
    refresh: bool,
    display: Bars | None,
) -> pd.DataFrame:
    """Sync the cached harvest, or harvest afresh; under the harvest folder's writer lock.
    What the server warned of meanwhile is told once, even when the result is refused."""
    engine = _engine_options(client, service, settings, spec, options, display)
    page = service.pages(spec.kind)
    # before a harvest or a sync whose rows could not show it (a sync's rows fetched by key
    # carry no status bits either); its searches are counted with the call's
    checked = check_status_applied(page, service.counts(spec.kind), service.rights(), spec)
    try:
        frame, report = _synced_or_harvested(
            client, service, settings, spec, options, store, refresh, engine, page
        )
    except IncompleteResultError as err:
        _warn_heard(err.report, spec)
        raise
    report.requests = (report.requests or 0) + checked
    _warn_heard(report, spec)
    return _with_report(frame, report, spec)


def _synced_or_harvested(
    client: Client,
    service: ClientService,
    settings: Settings,
    spec: Spec,
    options: Options,
    store: HarvestStore,
    refresh: bool,
    engine: EngineOptions,
    page: Page,
) -> tuple[pd.DataFrame, HarvestReport]:
    if not refresh and service.has_keys:
        synced = sync(
            page,
            service.keys(spec.kind),
            service.item(spec.kind, extended=bool(spec.filters.get("extended"))),
            spec,
            store,
            flatten=_flatten(client, spec),
            lag=dt.timedelta(seconds=settings.sync_lag),
            options=engine,
        )
        if synced is not None:
            return synced
    # refresh means "as the server is now": an interrupted harvest is not resumed either
    return engine.harvest(page, spec, store, resume=not options.refresh)


def _warn_heard(report: object, spec: Spec) -> None:
    """Tell once what the server warned of while this call harvested (or synced)."""
    if not isinstance(report, HarvestReport) or not report.server_warnings:
        return
    said = [text for text in report.server_warnings if text]
    texts = "; ".join(repr(text) for text in said[:3]) + ("; ..." if len(said) > 3 else "")
    warnings.warn(
        f"the search engine warned in its answers to this {spec.kind} search: "
        f"{texts or 'of several things'}. Its hits were kept as it answered, and its words in "
        "the harvest report's notes: check the query (a part of it may have been ignored), or "
        "ask the service's administrators",
        SearchWarning,
        # _warn_heard, _fetch, _collected, collect, Client._collect, Client.records: the caller's
        stacklevel=7,
    )


def _suggested(client: Client, spec: Spec, frame: pd.DataFrame) -> pd.DataFrame:
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
            stacklevel=6,  # _suggested, _collected, collect, Client._collect, Client.records
        )
    return frame


_DAMAGED = object()


def _cached_incomplete(
    spec: Spec, store: HarvestStore, provenance: Mapping[str, Any]
) -> IncompleteResultError:
    report = HarvestReport.from_dict(provenance.get("report") or {}, kind=spec.kind)
    return IncompleteResultError(
        f"offline mode, and the {spec.kind} search cached under {store.url} is incomplete "
        f"({report.fetched} of {report.total_results} hits; it was fetched with "
        "allow_incomplete=True): pass allow_incomplete=True to read that partial result, or "
        "drop offline=True to harvest the search again",
        shards=report.incomplete,
        report=report,
    )


def _read_cached(store: HarvestStore, spec: Spec, offline: bool) -> Any:
    """The cached frame and provenance; ``None`` if there is none; ``_DAMAGED`` if unusable."""
    try:
        with store.reading() as manifest:
            if manifest is None:
                return None
            if manifest.spec != spec.identity():
                raise CacheCorruptError(f"the cache at {store.url} holds another search")
            return store.read_data(manifest)
    except CacheCorruptError as err:
        if offline:
            raise
        warnings.warn(f"{err}; fetching it again", CacheWarning, stacklevel=5)
        return _DAMAGED


def _published_since(
    store: HarvestStore, spec: Spec, seen: str | None
) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """The dataset another writer published since the manifest named ``seen``, if readable."""
    try:
        with store.reading() as manifest:
            if manifest is None or manifest.data == seen or manifest.spec != spec.identity():
                return None
            return store.read_data(manifest)
    except CacheCorruptError:
        return None


def _ttl(options: Options, settings: Settings) -> dt.timedelta:
    ttl = settings.cache_ttl if options.ttl is None else options.ttl
    return ttl if isinstance(ttl, dt.timedelta) else dt.timedelta(seconds=float(ttl))


def _engine_options(
    client: Client,
    service: SearchService,
    settings: Settings,
    spec: Spec,
    options: Options,
    display: Bars | None,
) -> EngineOptions:
    if spec.kind == "records":
        # the engine joins frames it owns and drops: let the join release them column by column
        structure = client.api.structure() if spec.filters.get("extended") else None
        combine: Combine = functools.partial(
            frames.concat_records, consume=True, structure=structure
        )
    else:
        combine = _concat_stories
    bases, statuses = service.rights()
    return EngineOptions(
        combine=combine,
        count=service.counts(spec.kind),
        bases=bases,
        statuses=statuses,
        per_page=options.per_page or settings.per_page,
        concurrency=options.concurrency or settings.concurrency,
        executor=_executor(options.dask),
        allow_incomplete=options.allow_incomplete,
        progress=display,
        provenance={"server": service.server, "user": service.user, **spec.identity()},
        # how far back a resume looks for updates, as a sync does: one setting for both
        lag=dt.timedelta(seconds=settings.sync_lag),
    )


def _concat_stories(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Story frames joined: their columns are all declared (no per-result typing), so a plain
    concat keeps dtypes; no part at all (a search that matches nothing) is the declared frame
    without a row, as for records."""
    return concat_frames(parts) if parts else frames.stories([])


def _flatten(client: Client, spec: Spec) -> Callable[[list[dict[str, Any]]], pd.DataFrame]:
    """How fetched items become a frame: extended records with their caption and status columns."""
    if spec.kind != "records":
        return frames.stories
    if spec.filters.get("extended"):
        return functools.partial(frames.records, structure=client.api.structure())
    return frames.records


def _executor(dask: Any) -> Any:
    """A ``concurrent.futures`` executor on a Dask cluster, from a client or an address."""
    if dask is None:
        return None
    try:
        import distributed
    except ImportError as err:
        raise ConfigurationError(
            "running shards on Dask needs dask.distributed: "
            "pip install -e '.[dask]' in the mediaframe folder"
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
