"""What a resumed harvest keeps of an interrupted run's finished shards."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from concurrent.futures import Executor, Future, ThreadPoolExecutor

import pandas as pd

from mediaframe.cache import HarvestStore
from mediaframe.cache.manifest import PlanFile, PlannedShard, ShardEntry
from mediaframe.exceptions import CacheError
from mediaframe.harvest.answers import int_member
from mediaframe.harvest.counter import ShardCounter
from mediaframe.harvest.spec import Shard

__all__ = [
    "CLOCK_SLACK",
    "KeptFrames",
    "changed_after",
    "changed_since",
    "intact_shards",
    "kept_shards",
    "needs_rows",
    "still_valid",
    "unchanged",
]


def intact_shards(store: HarvestStore) -> dict[str, ShardEntry]:
    """The finished shards in ``store`` whose files match their checksums, by id (each file,
    which holds a batch of shards, checked once)."""
    intact: dict[tuple[str, str], bool] = {}
    found = {}
    for shard_id, entry in store.finished_shards().items():
        if entry.fault is not None:
            continue
        checked = (entry.file, entry.crc32)
        if checked not in intact:
            intact[checked] = store.has_shard(entry)
        if intact[checked]:
            found[shard_id] = entry
    return found


def kept_shards(store: HarvestStore, the_plan: PlanFile) -> dict[str, ShardEntry]:
    """The intact finished shards of a plan, kept without a request (the whole did not move)."""
    return _kept(store, {leaf.id: leaf for leaf in the_plan.leaves})


def _kept(store: HarvestStore, planned: Mapping[str, PlannedShard]) -> dict[str, ShardEntry]:
    """:func:`kept_shards` of the plan whose leaves are ``planned``, by id."""
    return {
        shard_id: entry
        for shard_id, entry in intact_shards(store).items()
        if shard_id in planned and not planned[shard_id].stuck
    }


# How long before a resumed plan's start a record's update still counts as a change, unless
# told: the default of the lag a sync allows for the server's clock against this machine's and
# for slow indexing (MEDIAFRAME_SYNC_LAG), which the client passes as ``lag``.
CLOCK_SLACK: dt.timedelta = dt.timedelta(seconds=300)


def changed_after(the_plan: PlanFile, lag: dt.timedelta = CLOCK_SLACK) -> pd.Timestamp | None:
    """The time after which an update may have changed what ``the_plan``'s run kept: its start
    less ``lag``; ``None`` where that start is not known (nothing can be checked)."""
    if the_plan.started is None:
        return None
    return pd.Timestamp(the_plan.started).tz_convert("UTC") - lag


def changed_since(counter: ShardCounter, cut: pd.Timestamp | None) -> bool:
    """Whether a record of the search was added or edited after ``cut`` (one request: its hit
    updated last), or that cannot be told (no ``updated_on`` on the server's hits).

    An addition, an edit or a re-filing bumps ``updated_on``; a pure deletion moves the total,
    which the caller compares. A deletion and an addition together leave the total as it was
    and are seen here, by the addition.
    """
    if cut is None:
        return True
    response, frame = counter.latest(Shard(), 1)
    if int_member(response, "total_results") == 0:
        return False
    stamps = frame.get("updated_on")
    if not len(frame) or stamps is None or not pd.api.types.is_datetime64_any_dtype(stamps):
        return True
    latest = stamps.iloc[0]
    return bool(pd.isna(latest) or latest > cut)


def unchanged(
    counter: ShardCounter,
    shard: Shard,
    entry: ShardEntry,
    rows: pd.DataFrame | None,
    cut: pd.Timestamp | None,
) -> tuple[bool, int]:
    """Whether the finished shard ``entry`` (its ``rows`` as kept) is what the server holds
    now, and the shard's count now: one request, its hits updated last.

    Unchanged means the same count, and the same records updated after ``cut`` in the same
    versions. Anything added or re-filed into the shard, or edited, since it was read was
    updated after ``cut``; anything deleted or re-filed out of it is either among the records
    updated after ``cut`` that the kept rows hold, or lowers the count unless an addition (seen
    above) makes up for it. Where that cannot be told — no ``updated_on`` kept or served, a
    server not sorting by it — the shard is taken as changed, and paged again.
    """
    key = list(counter.spec.key_columns)
    ours: set[tuple[int, ...]] | None = None  # the rows kept updated after the cut
    if cut is not None and rows is not None:
        ours = _updated_after(rows, key, cut)
    elif cut is not None and not needs_rows(entry, cut):
        ours = set()  # its entry says none was
    if ours is None:
        return False, counter(shard).total
    response, frame = counter.latest(shard, len(ours) + 1)
    total = int_member(response, "total_results")
    if total != entry.total:
        return False, total
    if len(frame) == 0:
        return total == 0, total
    stamps = frame.get("updated_on")
    if stamps is None or not pd.api.types.is_datetime64_any_dtype(stamps):
        return False, total
    dated = stamps.notna().to_numpy()
    # latest first, the undated last: else the server did not sort by updated_on
    if not dated[0] or (dated[1:] > dated[:-1]).any():
        return False, total
    if not stamps[dated].is_monotonic_decreasing:
        return False, total
    seen_all = len(frame) >= total or not dated.all() or stamps.iloc[-1] <= cut
    theirs = _updated_after(frame, key, cut)
    return seen_all and theirs == ours, total


def needs_rows(entry: ShardEntry, cut: pd.Timestamp | None) -> bool:
    """Whether :func:`unchanged` needs the rows kept of ``entry``: some may have been updated
    after ``cut`` (or its entry does not say when its rows were updated last)."""
    if cut is None:
        return False
    try:
        return entry.updated_last is None or bool(pd.Timestamp(entry.updated_last) > cut)
    except (TypeError, ValueError):  # a time without its zone: the rows say
        return True


def _updated_after(
    frame: pd.DataFrame, key: list[str], cut: pd.Timestamp
) -> set[tuple[int, ...]] | None:
    """The keys and versions (ns) of the rows updated after ``cut``; ``None`` if the rows have
    no ``updated_on`` to tell by."""
    if not set(key) <= set(frame.columns) or "updated_on" not in frame.columns:
        return None
    stamps = frame["updated_on"]
    if not pd.api.types.is_datetime64_any_dtype(stamps) or (len(frame) and stamps.isna().all()):
        return None
    late = (stamps > cut).fillna(False).to_numpy(dtype=bool)
    columns = [frame[name][late].to_numpy("int64") for name in key]
    versions = pd.DatetimeIndex(stamps[late]).as_unit("ns").asi8
    return set(zip(*columns, versions, strict=True))


def still_valid(
    store: HarvestStore,
    the_plan: PlanFile,
    counter: ShardCounter,
    pool: Executor,
    total: int,
    lag: dt.timedelta = CLOCK_SLACK,
) -> tuple[dict[str, ShardEntry], bool]:
    """Finished shards of an interrupted run that can be kept: intact and unchanged since (see
    :func:`unchanged`); and whether the plan's leaves still partition the search of ``total``
    hits (their counts now add up to it: a record added past every shard's dates would not).

    A damaged file is fetched again, and so is a changed shard: one request each is far cheaper
    than paging. Every leaf not kept is counted (one request each). ``lag``: as for
    :func:`changed_after`.
    """
    planned = {leaf.id: leaf for leaf in the_plan.leaves}
    found = list(_kept(store, planned).values())
    cut = changed_after(the_plan, lag)
    try:
        rows = store.read_shards([entry for entry in found if needs_rows(entry, cut)])
    except CacheError:
        rows = {}

    def check(entry: ShardEntry) -> tuple[bool, int]:
        shard = Shard.from_dict(planned[entry.id].shard)
        return unchanged(counter, shard, entry, rows.get(entry.id), cut)

    checked = list(pool.map(check, found))
    others = [leaf for leaf in the_plan.leaves if leaf.id not in {e.id for e in found}]
    counts = list(pool.map(lambda leaf: counter(Shard.from_dict(leaf.shard)).total, others))
    covered = sum(count for _, count in checked) + sum(counts) == total
    valid = {entry.id: entry for entry, (same, _) in zip(found, checked, strict=True) if same}
    return valid, covered


class KeptFrames:
    """The frames of an interrupted run's finished shards, read back from the store on a
    thread of their own while the rest of the harvest is planned and paged.

    Read at the end instead, the 61 shards a resume kept of 120 took most of its tail (restoring
    each frame from its file, then joining them): the resume cost 0.6–0.7 of a fresh run's time
    for half its requests. A frame is taken only for the entry it was read from; one that could
    not be read is left for the store to read again at the end, which then says why.
    """

    def __init__(self, store: HarvestStore) -> None:
        self.store = store
        self._reading: dict[str, tuple[ShardEntry, Future[dict[str, pd.DataFrame]]]] = {}
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mediaframe-kept")

    def __enter__(self) -> KeptFrames:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._thread.shutdown(cancel_futures=True)
        self._reading.clear()

    def read(self, entries: Mapping[str, ShardEntry]) -> None:
        """Start reading these shards' frames (those not asked for already), each file once."""
        by_file: dict[str, list[ShardEntry]] = {}
        for shard_id, entry in entries.items():
            if shard_id not in self._reading:
                by_file.setdefault(entry.file, []).append(entry)
        for batch in by_file.values():
            future = self._thread.submit(self.store.read_shards, batch)
            for entry in batch:
                self._reading[entry.id] = (entry, future)

    def take(self, shard_id: str, entry: ShardEntry) -> pd.DataFrame | None:
        """The frame read for ``entry``; ``None`` if it was not asked for, was asked for another
        entry, or could not be read."""
        reading = self._reading.pop(shard_id, None)
        if reading is None or reading[0] != entry:
            return None
        try:
            return reading[1].result()[shard_id]
        except CacheError:
            return None

    def taken(self, kept: Mapping[str, ShardEntry]) -> dict[str, pd.DataFrame]:
        """The frames read for the ``kept`` entries, by id; the frames of shards the plan did
        not keep are let go (cancelled when not read yet), not held to the end."""
        frames = {shard_id: self.take(shard_id, entry) for shard_id, entry in kept.items()}
        for _, future in self._reading.values():
            future.cancel()
        self._reading.clear()
        return {shard_id: frame for shard_id, frame in frames.items() if frame is not None}
