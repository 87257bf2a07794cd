"""Bringing a cached harvest up to date by fetching only what changed.

Three passes, each complete under the cap like any harvest:

1. *changed* — the same search narrowed to ``updated_on`` since the last high-water mark minus a
   safety lag (clocks and slow indexing), fetched whole;
2. *keys* — a keys-only pass over v2 references (a few bytes a hit): what is no longer there was
   deleted or left the user's rights;
3. *stragglers* — keys present on the server but neither cached nor changed (a collection newly
   granted to the user keeps its old dates) are fetched one by one.

The cached rows are then merged by key, and the dataset rewritten.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from mediaframe import frames
from mediaframe.cache import HarvestStore, proven_complete
from mediaframe.cache.manifest import Manifest
from mediaframe.exceptions import FilterIgnoredError, NotFoundError
from mediaframe.harvest.assemble import concat_frames, in_row_order
from mediaframe.harvest.engine import EngineOptions
from mediaframe.harvest.paging import Combine
from mediaframe.harvest.report import HarvestReport
from mediaframe.harvest.spec import Page, Spec
from mediaframe.harvest.verify import breaking_rows, check_filters
from mediaframe.harvest.warned import ServerWarnings

__all__ = ["can_sync", "sync"]

#: Above this many stragglers one request each costs more than a full harvest: refetch instead.
MAX_STRAGGLERS = 500


def can_sync(spec: Spec, manifest: Manifest | None) -> bool:
    """Whether ``spec``'s cached harvest can be synced rather than fetched again."""
    return bool(
        manifest
        and manifest.high_water
        and manifest.spec == spec.identity()
        # the changed pass filters on updated_on, which a user's own date filter would fight
        and not spec.filters.get("date_field")
    )


def sync(
    page: Page,
    page_keys: Page,
    fetch_item: Callable[[int, int], Mapping[str, Any]],
    spec: Spec,
    store: HarvestStore,
    *,
    flatten: Callable[[list[dict[str, Any]]], pd.DataFrame],
    lag: dt.timedelta,
    options: EngineOptions,
) -> tuple[pd.DataFrame, HarvestReport] | None:
    """Update the harvest cached in ``store``; ``None`` when a full harvest is the better way
    (many stragglers, a server that cannot narrow by date, or one without ``/api/v2/``).

    Parameters
    ----------
    page : one page of the v1 search as ``(response, frame)``, as the harvest reads it.
    page_keys : one page of v2 references as ``(response, frame)``: the key columns and
        ``version`` (``updated_on`` as a Unix time).
    fetch_item : ``fetch_item(databox_id, item_id)`` reads one record (or story) by key;
        ``flatten`` makes a frame of those.
    lag : how far before the high-water mark the changed pass starts.
    options : how each pass is harvested (its ``combine`` joins the passes too).
    """
    with store.writing():
        manifest = store.manifest()
        if manifest is None or not can_sync(spec, manifest):
            return None
        # the passes' own stores, under this one's writer lock: gone once the sync ends, however
        changed_store, keys_store = store.scratch("changed"), store.scratch("keys")
        try:
            cached, provenance = store.read_data(manifest)
            key = list(spec.key_columns)
            assert manifest.high_water is not None
            since = pd.Timestamp(manifest.high_water) - pd.Timedelta(lag)
            changed_spec = dataclasses.replace(
                spec, filters={**spec.filters, "date_field": "updated_on", "date_min": since.date()}
            )
            try:
                changed, changed_report = dataclasses.replace(options, changed_pass=True).harvest(
                    page, changed_spec, changed_store, doing="syncing: changed"
                )
            except FilterIgnoredError:
                # a server that ignores the date bounds cannot say what changed; one that
                # ignores the user's filters is told so by the full harvest
                return None
            # pages through v2: counted through it too (a decoded count is a v1 search)
            keys_options = dataclasses.replace(options, combine=_concat_keys(spec), count=None)
            try:
                keys, keys_report = keys_options.harvest(
                    page_keys, spec, keys_store, doing="syncing: keys"
                )
            except NotFoundError:
                return None  # a server without /api/v2/ (v1 only): the search is fetched again
            present = _key_index(keys, key)
            kept = cached[_key_index(cached, key).isin(present)]
            # The keys pass decides membership for the changed rows too: one it did not list
            # was deleted (or left the search) after the changed pass read it.
            changed = changed[_key_index(changed, key).isin(present)]
            stragglers = keys[
                ~present.isin(_key_index(changed, key)) & _needs_fetch(keys, kept, key)
            ]
            if len(stragglers) > MAX_STRAGGLERS:
                return None
            fetched, deleted = _fetched_by_key(fetch_item, stragglers[key])
            by_key = flatten(fetched) if fetched else None
            # a straggler deleted since the keys pass listed it has left the result, and its
            # cached version with it
            left = len(deleted)
            if left:
                kept = kept[~_key_index(kept, key).isin(pd.MultiIndex.from_tuples(deleted))]
            if by_key is not None:
                # Fetched by key, not by a search: one edited out of the filters since the keys
                # pass listed it has left the result (the server filters what it lists; the keys
                # pass decides membership), like a deletion. Its cached version goes too.
                gone = breaking_rows(by_key, spec)
                left += int(gone.sum())
                if gone.any():
                    gone_keys = _key_index(by_key[gone], key)
                    kept = kept[~_key_index(kept, key).isin(gone_keys)]
                    by_key = by_key[~gone]
            parts = [kept, changed] + ([by_key] if by_key is not None else [])
            merged = in_row_order(
                [options.combine(parts).drop_duplicates(key, keep="last")], list(spec.row_order)
            )

            check_filters(merged, spec)  # the changed pass's and the cache's rows, as searched
            report = HarvestReport.from_dict(provenance.get("report") or {}, kind=spec.kind)
            report.fetched = len(merged)
            # the server's count, as the keys pass judged it, less those fetched by key that
            # have left the search since: not the merged frame counting itself
            report.total_results = keys_report.total_results - left
            report.requests = (
                changed_report.requests + keys_report.requests + len(fetched) + len(deleted)
            )
            # rows merged into an incomplete cached result are still short of its missing hits
            report.complete = (
                proven_complete(provenance)
                and changed_report.complete
                and keys_report.complete
                and _holds_every_key(merged, keys_report, left)
            )
            # what the passes heard: the keys pass listed every row kept, so what the harvest
            # synced from heard is not the result's any more
            heard = ServerWarnings()
            heard.merge(changed_report.server_warnings)
            heard.merge(keys_report.server_warnings)
            report.heard(heard.counts())
            report.synced = {
                "changed": len(changed),
                "removed": len(cached) - len(kept),  # gone from the keys, or left by key
                "added_by_key": len(fetched) + len(deleted) - left,
                "since": since.isoformat(),
            }
            _write(store, provenance, merged, report, spec)
            return merged, report
        finally:
            _remove_scratch(store, changed_store, keys_store)


def _fetched_by_key(
    fetch_item: Callable[[int, int], Mapping[str, Any]], keys: pd.DataFrame
) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """The items of ``keys`` read one by one, and the keys the server no longer has (a 404:
    deleted since the keys pass listed them)."""
    fetched, deleted = [], []
    for databox_id, item_id in keys.itertuples(False):
        try:
            fetched.append(dict(fetch_item(int(databox_id), int(item_id))))
        except NotFoundError:
            deleted.append((int(databox_id), int(item_id)))
    return fetched, deleted


def _holds_every_key(merged: pd.DataFrame, keys_report: HarvestReport, left: int) -> bool:
    """Whether the merged frame has a row for each key the keys pass listed that is still in
    the search. A complete keys pass listed as many keys as the server counts (more when some
    were deleted after it read them, which its notes say); the merge must keep them all."""
    return len(merged) == keys_report.fetched - left >= keys_report.total_results - left


def _concat_keys(spec: Spec) -> Combine:
    """Joins the keys pass's pages; none (every hit gone) is the references frame without a
    row, its id column named as the search's key (``story_id`` for stories)."""
    empty = frames.v2_results([]).rename(columns={"record_id": spec.key_columns[-1]})
    return functools.partial(concat_frames, empty=empty)


def _needs_fetch(keys: pd.DataFrame, cached: pd.DataFrame, key: list[str]) -> pd.Series:
    """Keys the cache lacks, or holds in an older version than the server's references say."""
    on_server = keys.set_index(key)
    if "version" not in keys.columns or "updated_on" not in cached.columns:
        return pd.Series(~_key_index(keys, key).isin(_key_index(cached, key)), index=keys.index)
    seconds = (cached["updated_on"] - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
    ours = pd.Series(seconds.to_numpy(dtype="float64"), index=_key_index(cached, key))
    theirs = pd.Series(on_server["version"].to_numpy(), index=_key_index(keys, key))
    known = ours.reindex(theirs.index)
    stale = known.isna().to_numpy() | (theirs.to_numpy(dtype="float64") > known.to_numpy("float64"))
    return pd.Series(stale, index=keys.index)


def _remove_scratch(store: HarvestStore, *passes: HarvestStore) -> None:
    """Remove the passes' stores (``sync/``), once their shards' removers are done. Best effort:
    what stays (a failure to remove, a kill) goes with the next writer's sweep."""
    for scratch in passes:
        scratch.settle()
    with contextlib.suppress(OSError):
        store.scratch().remove()


def _key_index(frame: pd.DataFrame, key: list[str]) -> pd.MultiIndex:
    return pd.MultiIndex.from_frame(frame[key].astype("int64"))


def _write(
    store: HarvestStore,
    provenance: Mapping[str, Any],
    merged: pd.DataFrame,
    report: HarvestReport,
    spec: Spec,
) -> None:
    fetched_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    provenance = {
        **provenance,
        "fetched_at": fetched_at,
        "complete": report.complete,
        "report": report.to_dict(),
    }
    high_water = None
    if "updated_on" in merged.columns and merged["updated_on"].notna().any():
        high_water = pd.Timestamp(merged["updated_on"].max()).isoformat()
    store.publish(
        merged, provenance, spec=spec.identity(), sort_by=spec.row_order, high_water=high_water
    )
