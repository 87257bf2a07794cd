"""Client.feed_entries()/feed_items() read every feed entry once, from servers whose paging does
not hold: offsets ignored, totals as strings, entries published or deleted while paging,
or both between two pages (the total unchanged)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_service import BASE, Answer, FakeService, envelope, query
from hypothesis import given
from hypothesis import strategies as st

import mediaframe as mf
from mediaframe.client.feeds import every_entry
from mediaframe.config import Settings
from mediaframe.exceptions import (
    IncompleteResultError,
    InvalidParameterError,
    MalformedItemError,
    ResponseFormatError,
)

SECRET = "0123456789abcdef0123456789abcdef"
_GOLDEN = Path(__file__).parent / "data" / "frames" / "feeds_content.json"
#: More requests than any bounded read of these feeds takes: past it, the paging runs away.
_RUNAWAY = 60


@pytest.fixture
def settings(tmp_path):
    return Settings(config_dir=tmp_path / "config", cache_dir=tmp_path / "cache", backoff=0)


class Feeds:
    """``/feeds/content/`` over a list of entries, newest first, as a server of the contract
    pages it; ``after_page`` (called with the number of pages served) changes the feeds or the
    answer between pages, as publications and lying servers do."""

    def __init__(self, count: int) -> None:
        sample = json.loads(_GOLDEN.read_text(encoding="utf-8"))["response"]["entries"][0]
        self.entries = [self.entry(sample, 100 + i) for i in range(count)]
        self.sample = sample
        self.served = 0
        self.after_page: Callable[[Feeds], None] = lambda feeds: None
        self.ignore_offset = False
        self.total_as_text = False
        self.claimed_total: int | None = None
        self.asked: list[int] = []  # the offset_start of each request

    @staticmethod
    def entry(sample: dict, ident: int) -> dict:
        entry = copy.deepcopy(sample)
        entry["id"] = ident
        return entry

    def __call__(self, request) -> Answer:
        if self.served >= _RUNAWAY:
            pytest.fail(f"more than {_RUNAWAY} requests for {len(self.entries)} entries")
        params = dict(query(request))
        self.asked.append(int(params.get("offset_start", 0)))
        start = 0 if self.ignore_offset else self.asked[-1]
        size = int(params.get("per_page", 5))
        total = len(self.entries) if self.claimed_total is None else self.claimed_total
        response = {
            "total_entries": str(total) if self.total_as_text else total,
            "offset_start": start,
            "per_page": size,
            "entries": copy.deepcopy(self.entries[start : start + size]),
        }
        self.served += 1
        self.after_page(self)
        return envelope(response, path="/api/v1/feeds/content/")


def client_of(feeds: Feeds, settings) -> mf.Client:
    session = FakeService(feeds).session()
    return mf.connect(BASE, token=SECRET, settings=settings, session=session)


def test_every_entry_once_across_pages(settings):
    feeds = Feeds(45)
    frame = client_of(feeds, settings).feed_entries()
    assert frame["id"].tolist() == [e["id"] for e in feeds.entries]
    assert feeds.asked == [0, 19, 38, 0]  # pages that overlap by one, then the head again


def test_an_entry_published_while_paging_is_read_once(settings):
    feeds = Feeds(24)

    def publish(feeds: Feeds) -> None:
        if feeds.served == 1:  # newest first: every entry moves down by one
            feeds.entries.insert(0, feeds.entry(feeds.sample, 999))

    feeds.after_page = publish
    frame = client_of(feeds, settings).feed_entries()
    assert frame["id"].tolist() == [e["id"] for e in feeds.entries]
    assert len(frame) == 25 and frame["id"].is_unique


def test_an_entry_deleted_while_paging_loses_no_other(settings):
    feeds = Feeds(24)

    def delete(feeds: Feeds) -> None:
        if feeds.served == 1:
            del feeds.entries[3]

    feeds.after_page = delete
    items = client_of(feeds, settings).feed_items()
    assert sorted(set(items["entry_id"])) == sorted(e["id"] for e in feeds.entries)


@pytest.mark.parametrize("total_as_text", [False, True])
def test_a_server_ignoring_offsets_is_refused_in_few_requests(settings, total_as_text):
    feeds = Feeds(24)
    feeds.ignore_offset, feeds.total_as_text = True, total_as_text
    with pytest.raises(IncompleteResultError, match="repeated entries 100, 101"):
        client_of(feeds, settings).feed_entries()
    assert feeds.served <= 6  # three reads of two pages


def test_a_total_as_text_is_read_as_a_number(settings):
    feeds = Feeds(24)
    feeds.total_as_text = True
    assert len(client_of(feeds, settings).feed_entries()) == 24
    assert feeds.served == 3


def test_a_page_empty_before_the_total_is_refused(settings):
    feeds = Feeds(20)
    feeds.claimed_total = 24  # the total counts entries the pages never give
    with pytest.raises(IncompleteResultError, match="offset 20 of 24 came back empty"):
        client_of(feeds, settings).feed_entries()
    assert feeds.served == 6


@pytest.mark.parametrize("total", [None, "many", [24]])
def test_a_total_that_is_no_number_is_named(settings, total):
    page = {"total_entries": total, "entries": []}
    session = FakeService(envelope(page, path="/api/v1/feeds/content/")).session()
    client = mf.connect(BASE, token=SECRET, settings=settings, session=session)
    with pytest.raises(ResponseFormatError, match="total_entries"):
        client.feed_entries()


def test_entries_keyed_by_id_are_the_list_they_stand_for(settings):
    feeds = Feeds(3)
    keyed = {str(e["id"]): {k: v for k, v in e.items() if k != "id"} for e in feeds.entries}
    page = {"total_entries": 3, "entries": keyed}
    session = FakeService(envelope(page, path="/api/v1/feeds/content/")).session()
    client = mf.connect(BASE, token=SECRET, settings=settings, session=session)
    assert client.feed_entries()["id"].tolist() == [100, 101, 102]
    assert client.feed_entries(per_page=3)["id"].tolist() == [100, 101, 102]


@pytest.mark.parametrize("entries", ["24 entries", 24, [1, 2]])
def test_entries_that_are_no_list_raise(settings, entries):
    page = {"total_entries": 2, "entries": entries}
    session = FakeService(envelope(page, path="/api/v1/feeds/content/")).session()
    client = mf.connect(BASE, token=SECRET, settings=settings, session=session)
    with pytest.raises(MalformedItemError, match="entr"):
        client.feed_entries()


@pytest.mark.parametrize("page", [{}, {"entries": None}, {"entries": []}, {"entries": {}}])
def test_an_answer_with_no_entries_and_no_total_is_no_entries(settings, page):
    # the answer deployed servers give for feeds the user cannot read
    session = FakeService(envelope(page, path="/api/v1/feeds/content/")).session()
    client = mf.connect(BASE, token=SECRET, settings=settings, session=session)
    assert client.feed_entries().empty
    assert client.feed_items().empty


@pytest.mark.parametrize(
    "page",
    [
        {"entries": [{"id": 1}]},  # entries, but no total to page them by
        {"total_entries": None},  # a total that is there but no number
        {"total_entries": 2},  # a total with nothing to back it
        {"offset_start": 0, "per_page": 5},  # paging members, but no total
    ],
)
def test_an_answer_with_entries_or_a_claim_but_no_total_still_raises(settings, page):
    session = FakeService(envelope(page, path="/api/v1/feeds/content/")).session()
    client = mf.connect(BASE, token=SECRET, settings=settings, session=session)
    with pytest.raises((ResponseFormatError, IncompleteResultError), match=r"total_entries|empty"):
        client.feed_entries()


def publisher(schedule: dict[int, int]) -> Callable[[Feeds], None]:
    """Publish ``schedule[n]`` entries at the head (newest first) after the n-th page served."""
    fresh = iter(range(5000, 6000))

    def publish(feeds: Feeds) -> None:
        for _ in range(schedule.get(feeds.served, 0)):
            feeds.entries.insert(0, feeds.entry(feeds.sample, next(fresh)))

    return publish


@pytest.mark.parametrize(
    ("count", "schedule", "most_requests"),
    [
        (45, {1: 1}, 4),  # one entry published: the next page repeats the last one read
        (45, {1: 3, 2: 2}, 4),  # k entries: exactly k repeated, skipped, then read at the head
        # more published than a page holds: a whole page of repeats, two pages of head, and one
        # page of head again, to see the head as the last page
        (60, {2: 25}, 8),
        (45, {1: 1, 2: 1, 3: 1}, 6),  # published between the pages of the head's read as well
    ],
    ids=["one", "several", "more-than-a-page", "during-the-head"],
)
def test_entries_published_while_paging_are_read_once_without_reading_again(
    settings, count, schedule, most_requests
):
    # review 14b, finding 5: a growing total restarted the read, three times, then failed
    feeds = Feeds(count)
    feeds.after_page = publisher(schedule)
    frame = client_of(feeds, settings).feed_entries()
    assert frame["id"].tolist() == [e["id"] for e in feeds.entries]
    assert frame["id"].is_unique and feeds.served <= most_requests


def test_feeds_published_to_on_every_page_give_the_feeds_as_of_the_last_page(settings):
    feeds = Feeds(45)
    feeds.after_page = lambda feeds: feeds.entries.insert(
        0, feeds.entry(feeds.sample, 9000 + feeds.served)
    )
    frame = client_of(feeds, settings).feed_entries()
    # the entry published after the last page is for the next read
    assert frame["id"].tolist() == [e["id"] for e in feeds.entries][1:]
    assert frame["id"].is_unique


def test_a_growth_the_repeats_do_not_explain_reads_again(settings):
    feeds = Feeds(45)

    def insert_further_down(feeds: Feeds) -> None:
        if feeds.served == 1:  # not at the head: the next page repeats nothing
            feeds.entries.insert(30, feeds.entry(feeds.sample, 777))

    feeds.after_page = insert_further_down
    frame = client_of(feeds, settings).feed_entries()
    assert frame["id"].tolist() == [e["id"] for e in feeds.entries]
    assert feeds.served == 2 + 4  # the first read given up at its second page, then one whole


def test_feeds_growing_faster_than_they_are_read_fail_in_few_requests(settings):
    feeds = Feeds(45)
    feeds.after_page = lambda feeds: [
        feeds.entries.insert(0, feeds.entry(feeds.sample, 20000 + 100 * feeds.served + i))
        for i in range(21)
    ]
    with pytest.raises(IncompleteResultError, match="grew"):
        client_of(feeds, settings).feed_entries()
    assert feeds.served <= 9


def deleted_and_published(delete_at: int, publish_at: int, *, after: int = 1):
    """After the ``after``-th page: delete the entry at ``delete_at``, then publish one at
    ``publish_at`` (0 is the head, where the feeds publish) -- the total is unchanged."""
    fresh = iter(range(7000, 8000))

    def change(feeds: Feeds) -> None:
        if feeds.served == after:
            del feeds.entries[delete_at]
            feeds.entries.insert(publish_at, feeds.entry(feeds.sample, next(fresh)))

    return change


@pytest.mark.parametrize(
    ("delete_at", "publish_at", "given_up_after"),
    [
        # an entry of the page read deleted, one published: the pages follow on, but the head
        # read at the end shows the new entry and counts one entry fewer than were read
        (3, 0, 4),
        (19, 0, 2),  # the entry read last deleted, one published: the next page lacks it
        (3, 20, 2),  # one entry late below the boundary: the entry at offset 20 moves to 19
        (30, 0, 2),  # an entry not yet read deleted, one published: the page repeats the last
    ],
    ids=["read-entry", "entry-read-last", "across-the-boundary", "unread-entry"],
)
def test_a_deletion_and_a_publication_between_pages_are_not_missed(
    settings, delete_at, publish_at, given_up_after
):
    # the total is the same on both pages, yet the offsets moved: the read sees it and reads again
    feeds = Feeds(45)
    feeds.after_page = deleted_and_published(delete_at, publish_at)
    frame = client_of(feeds, settings).feed_entries()
    assert frame["id"].tolist() == [e["id"] for e in feeds.entries]
    assert feeds.served == given_up_after + 4  # the read given up, then one whole read


def test_a_deletion_and_a_publication_after_the_last_page_are_seen_by_the_head(settings):
    feeds = Feeds(45)
    feeds.after_page = deleted_and_published(10, 0, after=3)  # after the last page of the pass
    frame = client_of(feeds, settings).feed_entries()
    assert frame["id"].tolist() == [e["id"] for e in feeds.entries]
    assert feeds.served == 4 + 4


def test_feeds_deleted_from_and_published_to_on_every_page_raise(settings):
    feeds = Feeds(45)
    fresh = iter(range(7000, 8000))

    def change(feeds: Feeds) -> None:
        del feeds.entries[5]
        feeds.entries.insert(0, feeds.entry(feeds.sample, next(fresh)))

    feeds.after_page = change
    with pytest.raises(IncompleteResultError, match="deleted"):
        client_of(feeds, settings).feed_entries()
    assert feeds.served == 3 * 4


@pytest.mark.parametrize(
    ("count", "asked"),
    [
        (0, [0]),
        (20, [0]),  # one page is the feeds as that page saw them: nothing to prove
        (21, [0, 19, 0]),
        (39, [0, 19, 0]),
        (40, [0, 19, 38, 0]),
        (45, [0, 19, 38, 0]),
        (1000, [0, *range(19, 1000 - 1, 19), 0]),  # 54 requests, 50 without the overlap
    ],
)
def test_feeds_that_do_not_change_cost_one_page_in_nineteen_and_the_head(settings, count, asked):
    feeds = Feeds(count)
    frame = client_of(feeds, settings).feed_entries()
    assert frame["id"].tolist() == [e["id"] for e in feeds.entries]
    assert feeds.asked == asked


@pytest.mark.parametrize("count", [21, 45])
@pytest.mark.parametrize("skew", ["ignored", "one-past"])
def test_a_server_whose_offsets_do_not_hold_is_refused_in_few_requests(settings, count, skew):
    feeds = Feeds(count)
    if skew == "ignored":
        feeds.ignore_offset = True
    else:  # the page of offset_start=n starts with the entry at n + 1
        feeds.entries = feeds.entries[1:]
        feeds.claimed_total = count
    with pytest.raises(IncompleteResultError, match="the feed entries could not be read whole"):
        client_of(feeds, settings).feed_entries()
    assert feeds.served <= 3 * (2 if count == 21 else 4)  # three reads, none longer than whole


class Timeline:
    """Feeds of ``count`` entries, newest first, as ``every_entry`` fetches them: after the
    n-th page served, ``moves[n]`` publish entries at the head, delete entries anywhere, or
    both at once (``"replace"``: the total stays as it was)."""

    def __init__(self, count: int, moves: dict[int, list[tuple[str, float]]]) -> None:
        self.ids = list(range(100, 100 + count))
        self.moves = moves
        self.fresh = iter(range(5000, 6000))
        self.served = 0
        self.seen: list[int] = []  # the feeds as the last page saw them

    def __call__(self, offset: int, size: int) -> dict:
        assert self.served < 1000, "the paging runs away"  # pages of 2 take 20 times 40
        page = {"total_entries": len(self.ids), "entries": self.ids[offset : offset + size]}
        self.seen, self.served = list(self.ids), self.served + 1
        for move, where in self.moves.get(self.served, []):
            if move != "publish" and self.ids:
                del self.ids[int(where * len(self.ids)) % len(self.ids)]
            if move != "delete":
                self.ids.insert(0, next(self.fresh))
        return {**page, "entries": [{"id": ident} for ident in page["entries"]]}


_MOVE = st.sampled_from(["publish", "delete", "replace"])
_MOVES = st.lists(st.tuples(_MOVE, st.floats(0, 1)), min_size=1, max_size=3)


@given(
    count=st.integers(0, 40),
    per_page=st.integers(2, 8),
    moves=st.dictionaries(st.integers(1, 8), _MOVES, max_size=4),
)
def test_feeds_changing_between_pages_are_read_as_the_last_page_saw_them_or_raise(
    count, per_page, moves
):
    # entries deleted anywhere and published at the head, alone or together, in any order: the
    # read never loses or keeps an entry in silence
    timeline = Timeline(count, moves)
    try:
        entries = every_entry(timeline, per_page=per_page)
    except IncompleteResultError:
        return
    assert [entry["id"] for entry in entries] == timeline.seen


def test_pages_of_one_entry_cannot_overlap_and_are_refused():
    timeline = Timeline(3, {})
    with pytest.raises(InvalidParameterError, match="per_page=1"):
        every_entry(timeline, per_page=1)
    assert timeline.served == 0
