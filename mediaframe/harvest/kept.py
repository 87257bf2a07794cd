"""What a resumed harvest keeps of an interrupted run's finished shards."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor

from mediaframe.cache import HarvestStore
from mediaframe.cache.manifest import PlanFile, PlannedShard, ShardEntry
from mediaframe.harvest.plan import ShardCounter
from mediaframe.harvest.spec import Shard

__all__ = ["intact_shards", "kept_shards", "still_valid"]


def intact_shards(store: HarvestStore) -> dict[str, ShardEntry]:
    """The finished shards in ``store`` whose files match their checksums, by id."""
    return {
        shard_id: entry
        for shard_id, entry in store.finished_shards().items()
        if entry.fault is None and store.has_shard(entry)
    }


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


def still_valid(
    store: HarvestStore, the_plan: PlanFile, counter: ShardCounter, pool: Executor
) -> dict[str, ShardEntry]:
    """Finished shards of an interrupted run that can be kept: intact and not changed since.

    A damaged file is fetched again, and so is a shard whose count moved (records added,
    deleted or re-filed while the harvest was down): one count each is far cheaper than paging.
    """
    planned = {leaf.id: leaf for leaf in the_plan.leaves}
    found = list(_kept(store, planned).values())
    shards = [Shard.from_dict(planned[entry.id].shard) for entry in found]
    totals = list(pool.map(lambda shard: counter(shard).total, shards))
    return {
        entry.id: entry for entry, total in zip(found, totals, strict=True) if total == entry.total
    }
