"""Client.feed_entries()/feed_items() read every feed entry once, from servers whose paging does
not hold: offsets ignored, totals as strings, entries published or deleted while paging."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_service import BASE, Answer, FakeService, envelope, query

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.exceptions import IncompleteResultError, MalformedItemError, ResponseFormatError

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

    @staticmethod
    def entry(sample: dict, ident: int) -> dict:
        entry = copy.deepcopy(sample)
        entry["id"] = ident
        return entry

    def __call__(self, request) -> Answer:
        if self.served >= _RUNAWAY:
            pytest.fail(f"more than {_RUNAWAY} requests for {len(self.entries)} entries")
        params = dict(query(request))
        start = 0 if self.ignore_offset else int(params.get("offset_start", 0))
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
    assert feeds.served == 3


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
    assert feeds.served == 2


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
        (60, {2: 25}, 6),  # more published than a page holds: a whole page of repeats
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
    assert feeds.served == 2 + 3  # the first read given up at its second page, then one whole


def test_feeds_growing_faster_than_they_are_read_fail_in_few_requests(settings):
    feeds = Feeds(45)
    feeds.after_page = lambda feeds: [
        feeds.entries.insert(0, feeds.entry(feeds.sample, 20000 + 100 * feeds.served + i))
        for i in range(21)
    ]
    with pytest.raises(IncompleteResultError, match="grew"):
        client_of(feeds, settings).feed_entries()
    assert feeds.served <= 9
