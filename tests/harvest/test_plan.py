"""Shards narrow the user's filters without widening any of them."""

import datetime as dt
import threading
from concurrent.futures import ThreadPoolExecutor

from mediaframe.harvest import Shard, Spec
from mediaframe.harvest.counter import ShardCounter
from mediaframe.harvest.plan import plan

from .fake import FakeService


def test_shard_narrows_dates_bases_type_and_status():
    spec = Spec(
        "records",
        "sunset",
        {
            "date_min": "2021/03/01",
            "record_type": None,
            "status": {4: {"on": [1]}},
            "fields": ["Title"],
        },
    )
    shard = Shard(
        bases=(7,),
        date_min=dt.date(2021, 1, 1),
        date_max=dt.date(2021, 6, 30),
        record_type="image",
        status=((5, "off", 1), (4, "on", 2)),
    )
    params = spec.params(shard)
    assert params["query"] == "sunset" and params["fields"] == ["Title"]
    assert params["bases"] == [7] and params["search_type"] == 0
    assert params["date_field"] == "created_on"
    assert params["date_min"] == dt.date(2021, 3, 1), "the user's later bound wins"
    assert params["date_max"] == dt.date(2021, 6, 30)
    assert params["record_type"] == "image"
    assert params["status"] == {4: {"on": [1, 2]}, 5: {"off": [1]}}
    assert "record_type" not in Spec("records").params(Shard())


def test_stories_search_type_and_key():
    spec = Spec("stories", filters={"date_field": "updated_on"})
    assert spec.params(Shard())["search_type"] == 1
    assert spec.key_columns == ("databox_id", "story_id")
    assert spec.params(Shard(date_min=dt.date(2020, 1, 1)))["date_field"] == "updated_on"


def test_shard_ids_are_stable_and_round_trip():
    shard = Shard(bases=(3,), date_min=dt.date(2020, 1, 1), date_max=dt.date(2020, 1, 31))
    assert shard.id == "b3_d20200101-20200131"
    assert Shard.from_dict(shard.to_dict()) == shard
    assert Shard().id == "all"


def plan_two_bases(count, counter, **options):
    """Plan a search of bases 1 and 2 under a cap of 100, counting through ``count``."""
    options.setdefault("cap", 100)
    options.setdefault("bounds", counter.bounds)
    return plan(
        count, root=Shard(), root_count=counter(Shard()), spec=counter.spec, bases=(1, 2), **options
    )


def test_a_leaf_is_told_while_the_rest_of_its_round_is_still_counted():
    # Two bases over the cap are cut by dates round after round; the first leaves of both come
    # in the same round. Base 1's must be told as soon as its own counts are in, before base
    # 2's are counted (so its shard starts at once), not with every leaf once the round is in.
    service = FakeService.build(400, cap=100, bases=(1, 2))
    spec = Spec("records")
    counter = ShardCounter(service, spec, page_size=100)
    events = []

    def count(shard, expected=None):
        events.append(("count", shard.bases))
        return counter(shard, expected)

    def on_leaf(shard, total, frame):
        events.append(("leaf", shard.bases))

    # no pool: counts run one by one, as the planner reads them
    leaves, stuck = plan_two_bases(count, counter, on_leaf=on_leaf)
    assert not stuck and sum(total for _, total in leaves) == 400
    first = {bases: events.index(("leaf", bases)) for bases in [(1,), (2,)]}
    between = events[first[(1,)] + 1 : first[(2,)]]
    assert ("count", (2,)) in between, "base 1's leaf waited for base 2's counts"


def test_counts_read_decoded_find_what_counts_read_as_frames_find(fresh_emulator, tmp_path):
    """A count is one hit: read as decoded JSON (a fifth of the CPU of a frame of one record),
    it gives the same totals and the same first and last days, on every server generation."""
    import mediaframe as mf
    from mediaframe.config import Settings

    emu = fresh_emulator(records=600, seed=3, cap=50)
    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(progress=False)
    api = mf.connect(emu.base_url, token=emu.token, settings=settings).api
    spec = Spec("records")
    as_frames = ShardCounter(api.search_records_frame, spec, page_size=50)
    decoded = ShardCounter(api.search_records_frame, spec, page_size=50, count=api.search)
    shards = [Shard(), *(Shard(bases=(base,)) for base in range(1, 7)), Shard(bases=(99,))]
    for shard in shards[:-1]:
        assert decoded(shard) == as_frames(shard), shard.id
        days = decoded.days(shard)
        assert days == as_frames.days(shard) and None not in days, shard.id
    assert decoded.requests == as_frames.requests
    assert decoded.capped_engine == as_frames.capped_engine


def test_a_count_whose_hit_has_no_readable_date_leaves_the_bounds_wide():
    service = FakeService.build(300, cap=100, undated=300)
    spec = Spec("records")
    counter = ShardCounter(service, spec, page_size=100, count=service.search)
    assert counter(Shard()).total == 300
    assert counter.days(Shard()) == (None, None)
    service.records[0]["created_on"] = "not a date"
    service.records[0]["updated_on"] = "not a date"
    counter = ShardCounter(service, spec, page_size=100, count=service.search)
    assert counter(Shard()).total == 300 and counter.days(Shard()) == (None, None)


def test_only_a_shard_of_more_than_a_page_keeps_its_first_day_for_a_split():
    service = FakeService.build(300, cap=100, bases=(1, 2, 3))
    counter = ShardCounter(service, Spec("records"), page_size=100, count=service.search)
    counter(Shard())
    for base in (1, 2, 3):
        counter(Shard(bases=(base,)), expected=100)  # 100 hits each: no split can follow
    assert list(counter._first_days) == ["all"]


def test_a_cap_of_zero_leaves_the_whole_search_stuck_not_divided_by():
    """A server finding hits but letting none be retrieved: no split can get under its cap."""
    service = FakeService.build(400, cap=100, bases=(1, 2))
    spec = Spec("records")
    counter = ShardCounter(service, spec, page_size=100)
    leaves, stuck = plan_two_bases(counter, counter, cap=0)
    assert (leaves, stuck) == ([], [(Shard(), 400)])


def test_a_shard_is_cut_further_without_waiting_for_the_rest_of_its_level():
    """Base 2's days are still being asked for (a slow answer) while base 1's day windows are
    counted: planning goes level by level per shard, not in rounds that wait for the slowest
    shard (a server a network away idled connections at every level)."""
    service = FakeService.build(400, cap=100, bases=(1, 2))
    spec = Spec("records")
    counter = ShardCounter(service, spec, page_size=100)
    base_one_cut = threading.Event()
    waited: list[bool] = []

    def count(shard, expected=None):
        if shard.bases == (1,) and shard.date_min is not None:
            base_one_cut.set()
        return counter(shard, expected)

    def bounds(shard):
        if shard.bases == (2,):  # held until base 1's windows are counted (or it is too late)
            waited.append(base_one_cut.wait(timeout=10))
        return counter.bounds(shard)

    with ThreadPoolExecutor(max_workers=4) as pool:
        leaves, stuck = plan_two_bases(count, counter, bounds=bounds, pool=pool)
    assert not stuck and sum(total for _, total in leaves) == 400
    assert waited == [True], "base 1's windows waited for base 2's days"
    assert [shard.bases for shard, _ in leaves] == sorted(shard.bases for shard, _ in leaves)
    days = [shard.date_min for shard, _ in leaves if shard.bases == (1,)]
    assert days == sorted(days), "leaves come out in the order of their cuts"


def test_a_cut_whose_parent_grew_meanwhile_is_kept_once_the_parent_is_counted_again():
    """Records arrive between a base's count and its day windows' counts (paging runs beside
    planning): the windows add up to more than the base. Counted again, the base agrees with
    them, and the cut stands; given up, the base fell through every dimension and was stuck."""
    service = FakeService.build(400, cap=100, bases=(1, 2))
    spec = Spec("records")
    counter = ShardCounter(service, spec, page_size=100)
    arrived = []

    def count(shard, expected=None):
        if shard.bases == (1,) and shard.date_min is not None and not arrived:
            service.grow(20, seed=4, bases=(1,))
            arrived.append(20)
        return counter(shard, expected)

    leaves, stuck = plan_two_bases(count, counter)
    assert arrived and not stuck
    assert sum(total for shard, total in leaves if shard.bases == (1,)) == 220
