"""Feeds, feed entries and baskets of the synthetic catalogue (small, kept as plain rows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mediaframe.emulator.catalogue import RecordTable

# (feed_id, title, subtitle, public, owner user id).  Feed 4 is private to its owner.
FEEDS = (
    (1, "Press releases", "Latest pictures for journalists", True, 2),
    (2, "Nature highlights", "Our best landscapes", True, 2),
    (3, "Event coverage", "", True, 1),
    (4, "Board news", "Internal only", False, 2),
)
AUTHORS = (
    ("Claire Dubois", "claire.dubois@example.org"),
    ("Lukas Weber", "lukas.weber@example.org"),
)
# (owner, name, description, pusher or None, validation basket)
BASKETS = (
    (1, "Selection for the spring campaign", "Pictures shortlisted by the agency", None, False),
    (1, "To review", "", 2, True),
    (1, "Press kit 2024", "Pushed by the communication team", 2, False),
    (2, "Legal check", "Documents to verify", None, False),
    (3, "Favourites", "", None, False),
)


@dataclass
class Entry:
    """One feed entry with its items (record rows)."""

    id: int
    feed_id: int
    author_name: str
    author_email: str
    created: int
    updated: int
    title: str
    subtitle: str
    items: list[tuple[int, int]] = field(default_factory=list)  # (item_id, record row)


@dataclass
class Basket:
    """One basket of a user."""

    id: int
    owner: int
    name: str
    description: str
    pusher: int | None
    validation: bool
    unread: bool
    created: int
    updated: int


class Feeds:
    """Feeds with entries (newest first) and baskets, generated from the record table."""

    def __init__(self, records: RecordTable, rng: np.random.Generator) -> None:
        self.feeds = {f[0]: f for f in FEEDS}
        self.entries: list[Entry] = []
        self.baskets: list[Basket] = []
        if records.size == 0:
            return
        # Public feeds show records of the demo user's collections only (base ids 1-6).
        public_rows = np.flatnonzero(records.base_index < 6)
        all_rows = np.arange(records.size)
        start, end = int(records.created.min()), int(records.created.max())
        item_id = 0
        drafts = []
        for feed_id, _, _, public, _ in FEEDS:
            for _ in range(int(rng.integers(3, 13))):
                pool = public_rows if public else all_rows
                count = int(rng.integers(0, 6)) if len(pool) else 0
                picked = rng.choice(pool, size=min(count, len(pool)), replace=False)
                created = int(rng.integers(start, end + 1))
                drafts.append((created, feed_id, [int(r) for r in picked]))
        drafts.sort(key=lambda d: d[0])
        for entry_id, (created, feed_id, rows) in enumerate(drafts, start=1):
            author = AUTHORS[entry_id % len(AUTHORS)]
            items = []
            for row in rows:
                item_id += 1
                items.append((item_id, row))
            self.entries.append(
                Entry(
                    id=entry_id,
                    feed_id=feed_id,
                    author_name=author[0],
                    author_email=author[1],
                    created=created,
                    updated=created + int(rng.integers(0, 86_400)),
                    title=f"{self.feeds[feed_id][1]} #{entry_id}",
                    subtitle=f"Entry {entry_id} of feed {feed_id}",
                    items=items,
                )
            )
        self.entries.reverse()  # newest first, as the service lists them
        for basket_id, (owner, name, description, pusher, validation) in enumerate(BASKETS, 1):
            created = int(rng.integers(start, end + 1))
            self.baskets.append(
                Basket(basket_id, owner, name, description, pusher, validation,
                       bool(rng.random() < 0.5), created, created + int(rng.integers(0, 864_000)))
            )  # fmt: skip

    def readable(self, feed_id: int, user_id: int, *, is_admin: bool) -> bool:
        """Whether the user may read the feed: public ones, or the owner, or an admin."""
        feed = self.feeds.get(feed_id)
        return feed is not None and (feed[3] or feed[4] == user_id or is_admin)
