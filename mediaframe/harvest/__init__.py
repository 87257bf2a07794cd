"""Complete retrieval under the server's cap: plan shards, page them, prove nothing was lost.

A search on the service retrieves at most ``cap`` hits (1000 by default). A harvest counts the
hits with one ``per_page=1`` request and, when they are not all retrievable, splits the search
into shards that partition it (:mod:`~mediaframe.harvest.plan`), pages every shard on a stable
sort, several at once, and proves that the shard totals add up
(:mod:`~mediaframe.harvest.engine`). A cached harvest is later brought up to date by fetching
only what changed (:mod:`~mediaframe.harvest.sync`).

The engine knows nothing of HTTP: it calls ``page(**params) -> (response, frame)`` (the client
binds it to a search route that reads the answer straight into a frame).
"""

from mediaframe.harvest.counter import Count
from mediaframe.harvest.engine import EngineOptions, harvest
from mediaframe.harvest.plan import RECORD_TYPES, plan
from mediaframe.harvest.progress import Snapshot
from mediaframe.harvest.report import HarvestReport
from mediaframe.harvest.service import SearchService
from mediaframe.harvest.spec import Shard, Spec
from mediaframe.harvest.sync import can_sync, sync

__all__ = [
    "RECORD_TYPES",
    "Count",
    "EngineOptions",
    "HarvestReport",
    "SearchService",
    "Shard",
    "Snapshot",
    "Spec",
    "can_sync",
    "harvest",
    "plan",
    "sync",
]
