"""Servers that answer 200 yet do not answer the search: an engine error, a count that lies,
filters ignored, a missing route. A harvest raises for each, and never keeps what it read as
a complete result."""

from __future__ import annotations

import copy
import datetime as dt
import warnings
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest
from rewriting import Envelope, Rewriting

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.exceptions import (
    FilterIgnoredError,
    IncompleteResultError,
    MediaframeWarning,
    ResponseFormatError,
    SearchWarning,
    ServerError,
)
from mediaframe.harvest import Spec, planning
from mediaframe.harvest.verify import check_filters

ENGINE_DOWN = "Unable to connect to the search engine"


@pytest.fixture
def emu() -> Emulator:
    return Emulator(records=300, seed=3)


@pytest.fixture
def front(emu: Emulator) -> Rewriting:
    return Rewriting(emu)


@pytest.fixture
def client(emu: Emulator, front: Rewriting, tmp_path) -> Iterator[mf.Client]:
    settings = Settings.from_env().replace(
        config_dir=tmp_path, cache_dir=tmp_path / "cache", progress=False, retries=1, backoff=0
    )
    with mf.connect(
        emu.inprocess_url, token=emu.token, settings=settings, session=front.session()
    ) as c:
        yield c


def engine_down(path: str, envelope: Envelope) -> None:
    """The engine's failure as real servers report it: 200, ``error`` set, nothing found."""
    if "/search/" not in path:
        return
    answer = envelope["response"]
    answer.update(error=ENGINE_DOWN, total_results=0, available_results=0)
    answer["results"] = {"records": [], "stories": []} if "/v1/" in path else []
    answer["facets"] = []


# --- 4: the engine's error member -------------------------------------------------------------


def test_an_engine_error_is_retried_then_raised_quoting_the_server(client, front):
    front.answer = engine_down
    with pytest.raises(ServerError, match=f"the server says '{ENGINE_DOWN}'") as raised:
        client.records("", progress=False)
    assert raised.value.error_message == ENGINE_DOWN and raised.value.status_code == 200
    assert front.searches() == 2, "asked again once (retries=1), then raised"
    with pytest.raises(ServerError, match="search engine failed"):
        client.stories("")
    with pytest.raises(ServerError, match="search engine failed on POST /api/v2/search/"):
        client.api.search_v2("", per_page=1)
    with pytest.raises(ServerError, match="search engine failed on POST /api/v1/search/"):
        client.api.search("", per_page=1)  # the decoded answer, as the planner counts with
    with pytest.raises(ServerError, match=ENGINE_DOWN):
        client.api.search_records_frame("", per_page=5)  # read natively from its bytes


def test_an_engine_error_that_persists_says_to_check_the_query(client, front):
    # a malformed query is told the same way as an engine that is down: 200, error, no hits
    front.answer = engine_down
    with pytest.raises(ServerError, match="check the query") as raised:
        client.api.search("sunset", per_page=1)
    assert "try again later" in str(raised.value)


def test_an_engine_error_beside_hits_keeps_the_hits_and_warns(client, front, emu):
    notice = "index 'main' is being rebuilt"

    def notice_with_hits(path: str, envelope: Envelope) -> None:
        if "/search/" in path:
            envelope["response"]["error"] = notice  # the hits are left as they are

    front.answer = notice_with_hits
    with pytest.warns(MediaframeWarning, match=notice):
        answer = client.api.search("", per_page=5)
    assert len(answer["results"]["records"]) == 5 and front.searches() == 1, "not asked again"
    with pytest.warns(MediaframeWarning, match=notice):
        _, frame = client.api.search_records_frame("", per_page=5)
    assert len(frame) == 5 and front.searches() == 2
    with pytest.warns(MediaframeWarning, match=notice):
        harvested = client.records("")
    assert len(harvested) == len(emu.ground_truth()) and harvested.attrs["harvest"]["complete"]


def test_an_engine_error_that_echoes_the_token_is_quoted_redacted(client, front, emu):
    # engines that echo the request they failed on quote its query string, token and all; the
    # bare token lands across the 500-character cut, so it must be hidden before the cut
    token = emu.token

    def echoing(path: str, envelope: Envelope) -> None:
        engine_down(path, envelope)
        if "/search/" in path:
            head = f"syntax error in POST {path}?oauth_token={token}&query=x; (session "
            head += "x" * (500 - len(head) - 16)  # half the token before the cut, half after
            envelope["response"]["error"] = f"{head}{token})"

    front.answer = echoing
    calls = [
        lambda: client.records("", progress=False),
        lambda: client.api.search("", per_page=1),
        lambda: client.api.search_v2("", per_page=1),
        lambda: client.api.search_records_frame("", per_page=5),
    ]
    for call in calls:
        with pytest.raises(ServerError, match="syntax error") as raised:
            call()
        error = raised.value
        shown = f"{error} {error!r} {error.error_message!r} {error.args!r}"
        assert "oauth_token=***" in shown
        assert token not in shown and token[:12] not in shown and token[-12:] not in shown


def test_an_engine_error_is_never_kept_as_an_empty_complete_result(client, front, emu):
    front.answer = engine_down
    with pytest.raises(ServerError):
        client.records("")
    front.answer = None  # the engine is back: the same session, the default TTL
    assert len(client.records("")) == len(emu.ground_truth())


def test_an_engine_that_fails_once_is_asked_again(client, front, emu):
    failed: list[str] = []

    def once(path: str, envelope: Envelope) -> None:
        if "/search/" in path and not failed:
            failed.append(path)
            engine_down(path, envelope)

    front.answer = once
    frame = client.records("")
    assert failed and len(frame) == len(emu.ground_truth())
    assert frame.attrs["harvest"]["complete"]


@pytest.mark.parametrize("empty", ["", "  ", None, False, 0, [], {}])
def test_an_error_member_that_reports_nothing_is_no_error(client, front, emu, empty):
    def quiet(path: str, envelope: Envelope) -> None:
        if "/search/" in path:
            envelope["response"]["error"] = empty

    front.answer = quiet
    assert client.api.search("", per_page=1)["total_results"] == len(emu.ground_truth())
    assert len(client.api.search_records_frame("", per_page=5)[1]) == 5


# --- 4: the engine's warning member -----------------------------------------------------------

DEGRADED = "the part 'foo:bar' of the query was ignored"


def warning(text: str):
    """Answers whose engine searched but warns (v1 and v2): the hits are left as they are."""

    def warned(path: str, envelope: Envelope) -> None:
        if "/search/" in path:
            envelope["response"]["warning"] = text

    return warned


def only_warnings(caught) -> list[str]:
    said = [str(w.message) for w in caught if issubclass(w.category, SearchWarning)]
    others = [w for w in caught if not issubclass(w.category, SearchWarning)]
    assert not others, others
    return said


@pytest.mark.parametrize("kind", ["records", "stories"])
def test_a_warning_beside_the_hits_reaches_the_report_and_is_warned_once(client, front, kind):
    front.answer = warning(DEGRADED)
    with pytest.warns(SearchWarning) as caught:
        frame = getattr(client, kind)("", per_page=2)
    (said,) = only_warnings(caught)
    assert DEGRADED in said and "report" in said
    report = mf.HarvestReport.from_frame(frame)
    assert report.complete and len(frame) == report.total_results > 2
    searches = front.searches()
    assert report.server_warnings == {DEGRADED: searches} and searches > 2
    assert f"the server warned in {searches} answer(s): {DEGRADED!r}" in report.notes
    assert "ignored" in repr(report) and "ignored" in report._repr_html_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # read back from the cache: no request, no new warning
        cached = getattr(client, kind)("", per_page=2)
    assert mf.HarvestReport.from_frame(cached).notes == report.notes


def test_a_warning_is_kept_with_its_controls_made_visible_and_any_token_hidden(client, front, emu):
    front.answer = warning(f"\x1b[2J\x1b[31mapproximate\u202e for oauth_token={emu.token}\n!")
    with pytest.warns(SearchWarning) as caught:
        frame = client.records("")
    report = mf.HarvestReport.from_frame(frame)
    (text,) = report.server_warnings
    assert text == "\ufffd[2J\ufffd[31mapproximate\ufffd for oauth_token=*** !"
    for shown in (*only_warnings(caught), *report.notes, repr(report), report._repr_html_()):
        assert "\x1b" not in shown and "\u202e" not in shown and emu.token not in shown


def test_a_sync_keeps_what_the_server_warned_while_it_synced(client, front, emu):
    front.answer = warning("an earlier notice")
    with pytest.warns(SearchWarning):
        client.records("")
    front.answer = warning(DEGRADED)
    with pytest.warns(SearchWarning) as caught:
        synced = client.records("", ttl=0)
    (said,) = only_warnings(caught)  # one for the sync's passes together
    report = mf.HarvestReport.from_frame(synced)
    assert report.synced is not None and DEGRADED in said
    # the keys pass listed every row again: the earlier harvest's notice no longer applies
    assert list(report.server_warnings) == [DEGRADED]
    assert [note for note in report.notes if "warned" in note] == [
        f"the server warned in {report.server_warnings[DEGRADED]} answer(s): {DEGRADED!r}"
    ]
    front.answer = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = client.records("", ttl=0)
    assert mf.HarvestReport.from_frame(quiet).server_warnings == {}


# --- 10 with 4: a sync to zero hits, and a sync while the engine is down ------------------------


def test_a_sync_while_the_engine_is_down_keeps_the_cached_rows(client, front, emu):
    cached = client.records("")
    front.answer = engine_down
    with pytest.raises(ServerError, match=ENGINE_DOWN):
        client.records("", ttl=0)
    front.answer = None
    kept = client.records("", offline=True)
    assert len(kept) == len(cached) == len(emu.ground_truth())


def test_a_sync_where_every_hit_is_gone_gives_the_empty_frame(client, emu):
    first = emu.ground_truth().iloc[0]
    query = f"recordid:{int(first['record_id'])}"
    cached = client.records(query)
    assert len(cached) >= 1
    for databox_id, record_id in cached[["databox_id", "record_id"]].to_numpy().tolist():
        emu.delete_record(int(databox_id), int(record_id))
    synced = client.records(query, ttl=0)
    assert len(synced) == 0 and list(synced.columns) == list(cached.columns)
    assert synced.attrs["harvest"]["complete"] and synced.attrs["harvest"]["synced"]["removed"]
    assert len(client.records(query, offline=True)) == 0, "the empty dataset was published"


# --- 5: filters the server ignores --------------------------------------------------------------


@pytest.mark.parametrize(
    ("dropped", "filters", "named"),
    [
        (("record_type",), {"record_type": "video"}, "record_type"),
        (("bases[]",), {"bases": [1]}, "bases"),
        (("date_",), {"date_field": "created_on", "date_min": "2024/06/01"}, "date_min/date_max"),
        (
            ("status[",),
            {"status": {4: {"on": [1]}}, "status_only": True, "extended": True},
            "status",
        ),
        # records that carry no status bits: one extended page of the search shows it
        (("status[",), {"status": {4: {"on": [1]}}, "status_only": True}, "status"),
        (("status[",), {"status": {4: {"off": [1]}}}, "status"),
    ],
)
def test_a_filter_the_server_ignores_is_named_and_nothing_is_kept(
    client, front, emu, dropped, filters, named
):
    honoured = client.records("", refresh=True, **filters)
    assert 0 < len(honoured) < len(emu.ground_truth())
    front.drop = {"/api/v1/search/": dropped}
    with pytest.raises(FilterIgnoredError, match=f"the server ignored the {named} filter") as err:
        client.records("", refresh=True, **filters)
    assert err.value.filter_name == named and err.value.rows > 0
    front.drop = {}
    again = client.records("", **filters)  # the wrong answer was not published
    assert not again.attrs["harvest"]["from_cache"] or len(again) == len(honoured)
    assert len(again) == len(honoured)


def test_a_sync_from_a_server_that_ignores_date_bounds_harvests_again(client, front, emu):
    cached = client.records("", record_type="image")
    front.drop = {"/api/v1/search/": ("date_",)}  # the changed pass cannot narrow by date
    synced = client.records("", record_type="image", ttl=0)
    assert len(synced) == len(cached) and synced.attrs["harvest"]["complete"]
    assert "synced" not in synced.attrs["harvest"] or not synced.attrs["harvest"]["synced"]


def test_filter_checks_count_no_missing_value_against_the_server():
    nat = pd.NaT
    frame = pd.DataFrame(
        {
            "databox_id": [1, 1, 2],
            "record_id": [1, 2, 3],
            "media_type": pd.array(["video", None, "video"], dtype="string"),
            "base_id": pd.array([1, None, 1], dtype="Int64"),
            # 12 hours before the first day: the server's day, in its own zone
            "created_on": pd.to_datetime(["2024-05-31T12:00Z", nat, "2024-06-30T23:00Z"]),
            "status_4": pd.array([True, None, False], dtype="boolean"),  # databox 2 unconstrained
        }
    )
    spec = Spec(
        "records",
        filters={
            "record_type": "video",
            "bases": [1],
            "date_field": "created_on",
            "date_min": "2024/06/01",
            "date_max": dt.date(2024, 6, 30),
            "status": {4: {"on": [1]}},
        },
    )
    check_filters(frame, spec)
    frame.loc[2, "created_on"] = pd.Timestamp("2024-07-02T00:00Z")
    with pytest.raises(FilterIgnoredError, match=r"1 of the 3 records .* record_id 3"):
        check_filters(frame, spec)
    frame.loc[2, "created_on"] = nat
    frame.loc[0, "status_4"] = False
    with pytest.raises(FilterIgnoredError, match="status filter"):
        check_filters(frame, spec)


def shows_story_created_on_as_updated_on(path: str, envelope: Envelope) -> None:
    """A known bug of deployed servers: in search results a story's created_on equals its
    updated_on. The server still filters on the real created_on."""
    if "/v1/search/" in path:
        for story in envelope["response"]["results"]["stories"]:
            story["created_on"] = story["updated_on"]


@pytest.mark.parametrize("flavour", ["contract", "legacy"])
def test_stories_by_created_on_from_a_server_that_shows_updated_on_are_kept(tmp_path, flavour):
    emu = Emulator(records=3000, seed=4, flavour=flavour)
    front = Rewriting(emu)
    front.answer = shows_story_created_on_as_updated_on
    truth = emu.ground_truth("stories")
    middle = truth["created_on"].sort_values().iloc[len(truth) // 2].date()
    settings = Settings.from_env().replace(
        config_dir=tmp_path, cache_dir=tmp_path / "cache", progress=False, retries=0
    )
    with mf.connect(
        emu.inprocess_url, token=emu.token, settings=settings, session=front.session()
    ) as c:
        frame = c.stories("", date_field="created_on", date_max=middle)
        wanted = truth["created_on"].dt.date <= middle
        assert len(frame) == int(wanted.sum()) and frame.attrs["harvest"]["complete"]
        assert (frame["created_on"] == frame["updated_on"]).all(), "the bug was in the answers"
        later = c.stories("", date_field="created_on", date_min=middle)
        assert len(later) == int((truth["created_on"].dt.date >= middle).sum())


def test_a_story_date_min_is_still_checked_on_the_created_on_shown():
    # a shown created_on (updated_on on buggy servers) is never earlier than the real one: a
    # story shown before date_min was never created after it
    frame = pd.DataFrame(
        {
            "databox_id": [1, 1],
            "story_id": [1, 2],
            "created_on": pd.to_datetime(["2024-06-10T00:00Z", "2024-05-01T00:00Z"]),
            "updated_on": pd.to_datetime(["2024-06-10T00:00Z", "2024-05-01T00:00Z"]),
        }
    )
    spec = Spec("stories", filters={"date_field": "created_on", "date_min": "2024/06/01"})
    with pytest.raises(FilterIgnoredError, match=r"1 of the 2 stories .* story_id 2"):
        check_filters(frame, spec)
    # a story shown after date_max may be one updated since: not counted against the server
    check_filters(frame, Spec("stories", filters={"date_max": "2024/05/15"}))
    updated = Spec("stories", filters={"date_field": "updated_on", "date_max": "2024/05/15"})
    with pytest.raises(FilterIgnoredError, match="story_id 1"):  # updated_on is shown truly
        check_filters(frame, updated)


def test_a_sync_straggler_edited_out_of_the_filter_after_the_keys_pass_has_left(tmp_path):
    # records back in the user's view with old dates are fetched one by one as stragglers; the
    # keys pass listed them, then they were edited out of the filter before their fetch
    emu = Emulator(records=800, seed=7, cap=1000)
    table = emu.catalogue.records
    in_filter = (table.databox_id == 1) & ((table.status >> 4) & 1 == 1) & table.alive
    rows = np.flatnonzero(in_filter)
    hidden = [int(row) for row in rows[np.argsort(table.updated[rows])][:3]]
    keys = {(1, int(table.ident[row])): row for row in hidden}
    table.alive[hidden] = False
    emu.search.invalidate()
    front = Rewriting(emu)
    settings = Settings.from_env().replace(
        config_dir=tmp_path, cache_dir=tmp_path / "cache", progress=False, retries=0
    )
    filters = {"status": {4: {"on": [1]}}, "extended": True}
    with mf.connect(
        emu.inprocess_url, token=emu.token, settings=settings, session=front.session()
    ) as c:
        cached = c.records("", **filters)
        table.alive[hidden] = True
        emu.search.invalidate()
        edited: list[tuple[int, int]] = []

        def edit_once_listed(path: str, envelope: Envelope) -> None:
            if path != "/api/v2/search/" or edited:
                return
            listed = {(r["databox_id"], r["record_id"]) for r in envelope["response"]["results"]}
            if keys.keys() <= listed:
                for (databox_id, record_id), row in sorted(keys.items()):
                    emu.update_record(databox_id, record_id, status=int(table.status[row]) & ~16)
                    edited.append((databox_id, record_id))

        front.answer = edit_once_listed
        synced = c.records("", ttl=0, **filters)
        assert edited, "the keys pass listed the stragglers, then they were edited"
        assert synced.attrs["harvest"]["complete"]
        assert synced.attrs["harvest"]["synced"]["added_by_key"] == 0, "all three left"
        front.answer = None
        fresh = c.records("", refresh=True, **filters)
    shown = set(zip(synced.databox_id, synced.record_id, strict=True))
    assert not shown & keys.keys(), "the edited records left the result"
    assert shown == set(zip(fresh.databox_id, fresh.record_id, strict=True))
    assert len(synced) == len(cached)


# --- 9: counts that contradict themselves, or never add up -------------------------------------


def test_a_count_whose_first_page_is_empty_yet_claims_hits_is_refused(client, front):
    def huge(path: str, envelope: Envelope) -> None:
        if path == "/api/v1/search/":
            answer = envelope["response"]
            answer.update(total_results=10**12, available_results=1000)
            answer["results"] = {"records": [], "stories": []}

    front.answer = huge
    with pytest.raises(
        ResponseFormatError, match="contradicts itself: total_results 1000000000000"
    ):
        client.records("")
    assert front.searches() <= 3


def test_planning_stops_at_its_budget_when_the_counts_never_add_up(client, front, emu, monkeypatch):
    monkeypatch.setattr(planning, "_BUDGET_MOST", 300)
    emu.set_cap(50)
    honest = client.records("")  # under the same budget
    assert len(honest) == len(emu.ground_truth())

    def inflated(path: str, envelope: Envelope) -> None:
        # totals its shards never reach: every search with a hit claims a million more
        answer = envelope["response"]
        if path == "/api/v1/search/" and answer["results"]["records"]:
            answer.update(total_results=answer["total_results"] + 10**6, available_results=50)

    front.answer = inflated
    before = front.searches()
    with pytest.raises(IncompleteResultError, match="the server's counts do not add up"):
        client.records("", refresh=True)
    assert front.searches() - before <= 300 + 10


# --- 11: a server without /api/v2/ ----------------------------------------------------------------


def test_a_server_without_v2_has_its_cache_harvested_again_and_remembers(client, front, emu):
    cached = client.records("")
    front.missing = ("/api/v2/",)
    emu.delete_record(*(int(v) for v in cached[["databox_id", "record_id"]].iloc[0]))
    again = client.records("", ttl=0)
    assert len(again) == len(cached) - 1 and again.attrs["harvest"]["complete"]
    assert not again.attrs["harvest"].get("synced")
    asked = front.searches("/api/v2/")
    assert asked == 1 and client.api.has_v2 is False
    client.records("", ttl=0)
    assert front.searches("/api/v2/") == asked, "v2 is not asked again in this session"


# --- 7: an engine with no cap whose total counts only so far -----------------------------------


def test_a_total_that_stops_counting_is_caught_by_one_hit_past_it(tmp_path):
    emu = Emulator(records=300, seed=3, flavour="current")  # no cap: every hit retrievable
    front = Rewriting(emu)
    settings = Settings.from_env().replace(
        config_dir=tmp_path, cache_dir=tmp_path / "cache", progress=False, retries=0
    )
    with mf.connect(
        emu.inprocess_url, token=emu.token, settings=settings, session=front.session()
    ) as c:
        honest = c.records("", per_page=50)
        assert len(honest) == len(emu.ground_truth()) and honest.attrs["harvest"]["complete"]

        def counts_to_100(path: str, envelope: Envelope) -> None:
            if "/search/" in path:
                answer = envelope["response"]
                answer["total_results"] = min(answer["total_results"], 100)

        front.answer = counts_to_100
        with pytest.raises(IncompleteResultError, match="serves hits past its total_results"):
            c.records("", refresh=True, per_page=50)


def test_a_record_added_once_the_search_is_paged_is_no_total_that_stopped_counting(tmp_path):
    # the hit past the total comes with a larger total: the catalogue grew after the last page
    emu = Emulator(records=300, seed=3, flavour="current")
    front = Rewriting(emu)
    settings = Settings.from_env().replace(
        config_dir=tmp_path, cache_dir=tmp_path / "cache", progress=False, retries=0
    )
    seen: list[dict] = []

    def grows_after_the_last_page(path: str, envelope: Envelope) -> None:
        if "/search/" not in path:
            return
        answer = envelope["response"]
        records = answer["results"]["records"]
        asked = dict(front.seen[-1][1])
        if records:
            seen.append(copy.deepcopy(records[-1]))
        elif asked.get("offset_start") == str(answer["total_results"]) and seen:
            newcomer = {**seen[-1], "record_id": 10**6, "created_on": "2099-01-01T00:00:00+00:00"}
            records.append(newcomer)
            answer["total_results"] += 1

    front.answer = grows_after_the_last_page
    with mf.connect(
        emu.inprocess_url, token=emu.token, settings=settings, session=front.session()
    ) as c:
        frame = c.records("", per_page=50)
    assert len(frame) == len(emu.ground_truth()) and frame.attrs["harvest"]["complete"]


# --- 14: messages that point the right way, and a missing available_results --------------------


@pytest.mark.parametrize("cap", [1000, 100])
@pytest.mark.parametrize("how", ["missing", "null"])
def test_a_missing_available_results_means_no_cap_known(client, front, emu, cap, how):
    emu.set_cap(cap)

    def unsent(path: str, envelope: Envelope) -> None:
        if "/search/" in path:
            if how == "missing":
                del envelope["response"]["available_results"]
            else:
                envelope["response"]["available_results"] = None

    front.answer = unsent
    frame = client.records("", per_page=50)
    assert len(frame) == len(emu.ground_truth()) and frame.attrs["harvest"]["complete"]


def test_a_story_search_answered_with_records_says_search_type_was_ignored(client, front):
    front.drop = {"/api/v1/search/": ("search_type",)}
    with pytest.raises(ResponseFormatError, match="held records, not stories"):
        client.stories("")
    with pytest.raises(ResponseFormatError, match="held records, not stories"):
        client.api.search_stories_frame("", per_page=5)


def test_pages_that_repeat_keys_across_shards_are_told_so(tmp_path):
    emu = Emulator(records=300, seed=3, flavour="current")  # paged in windows of one page
    front = Rewriting(emu)
    front.drop = {"/api/v1/search/": ("offset_start",)}  # every page is the first
    settings = Settings.from_env().replace(
        config_dir=tmp_path, cache_dir=tmp_path / "cache", progress=False, retries=0
    )
    with (
        mf.connect(
            emu.inprocess_url, token=emu.token, settings=settings, session=front.session()
        ) as c,
        # the windows do not meet, and the search paged as one shard repeats its first page
        pytest.raises(IncompleteResultError, match=r"served \d+ key\(s\) twice \(is offset_start"),
    ):
        c.records("", per_page=100)


def test_a_cap_of_one_names_the_generations_it_may_come_from():
    from mediaframe.cache.manifest import PlanFile, PlannedShard
    from mediaframe.harvest.judge import stuck_message

    stuck = PlannedShard(id="b1", shard={}, expected=5, stuck=True)
    the_plan = PlanFile(spec={}, provenance={}, total=5, cap=1, capped_engine=True, leaves=[stuck])
    assert "nodes of two generations" in stuck_message(the_plan, Spec("records"))
    the_plan = PlanFile(spec={}, provenance={}, total=5, cap=2, capped_engine=True, leaves=[stuck])
    assert "generations" not in stuck_message(the_plan, Spec("records"))


def test_two_generations_behind_one_address_are_read_by_the_cap_the_second_count_tells(
    client, front, emu
):
    def rolling_upgrade(path: str, envelope: Envelope) -> None:
        # one-hit searches reach a node counting the hits of its page; the others a capped one
        answer = envelope["response"]
        if path == "/api/v1/search/" and int(answer["per_page"]) == 1:
            answer["available_results"] = len(answer["results"]["records"])

    front.answer = rolling_upgrade
    frame = client.records("", per_page=50)
    assert len(frame) == len(emu.ground_truth()) and frame.attrs["harvest"]["complete"]
    # the capped node's cap (1,000, above the total), not a cap of 1 cut down to 1-hit shards
    assert frame.attrs["harvest"]["cap"] is None and frame.attrs["harvest"]["requests"] < 12


def deep_member(levels: int):
    """A member nested ``levels`` deep in front of every search record's title (review 15s,
    finding 1: orjson reads 1,024 levels, the cache's ``json`` overflowed near 981)."""
    member = b'"extra_member": ' + b"[" * levels + b'"x"' + b"]" * levels + b', "title":'

    def rewrite(path: str, body: bytes) -> bytes:
        return body.replace(b'"title":', member) if "/search/" in path else body

    return rewrite


@pytest.mark.parametrize("levels", [1_000, 200])
def test_a_record_member_nested_too_deep_is_refused_when_read_not_a_crash_when_cached(
    client, front, levels
):
    front.body = deep_member(levels)
    with pytest.raises(ResponseFormatError, match="levels deep, deeper than the 128") as caught:
        client.records("")
    assert "narrow the query" in str(caught.value)


def test_a_record_member_nested_within_the_limit_is_harvested_and_cached(client, front):
    front.body = deep_member(100)
    frame = client.records("")
    assert frame["extra_member"].iloc[0] == eval("[" * 100 + "'x'" + "]" * 100)
    again = client.records("", offline=True)
    assert again["extra_member"].iloc[0] == frame["extra_member"].iloc[0]


def test_a_keys_pass_whose_offsets_are_ignored_says_its_pages_repeated_keys(tmp_path):
    emu = Emulator(records=300, seed=3, flavour="current")
    front = Rewriting(emu)
    settings = Settings.from_env().replace(
        config_dir=tmp_path, cache_dir=tmp_path / "cache", progress=False, retries=0, per_page=100
    )
    with mf.connect(
        emu.inprocess_url, token=emu.token, settings=settings, session=front.session()
    ) as c:
        cached = c.records("")
        front.drop = {"/api/v2/search/": ("offset_start",)}  # v2 references: every page the first
        with pytest.raises(IncompleteResultError, match=r"served \d+ key\(s\) twice"):
            c.records("", ttl=0)
        assert len(c.records("", offline=True)) == len(cached)


def test_the_status_probe_asks_one_extended_page_and_takes_no_bits_as_no_proof():
    from mediaframe.harvest.spec import Spec
    from mediaframe.harvest.verify import check_status_applied

    asked, counted = [], []

    def page(**params):
        asked.append(params)
        return {}, pd.DataFrame({"databox_id": [1, 1], "record_id": [1, 2]})  # no status bits

    def count(**params):  # a server that applies the filter: the hits split between states
        counted.append(params)
        state = next(iter(params["status"][4])) if "status" in params else None
        return {"total_results": {None: 10, "on": 6, "off": 4}[state]}

    rights = ((1, 2), {1: (1, [4]), 2: (2, [4])})
    spec = Spec("records", "", {"status": {4: {"on": [1]}}})
    assert check_status_applied(page, count, rights, spec) == 4  # three counts, one page
    assert len(asked) == 1 and asked[0]["extended"] is True and asked[0]["per_page"] == 100
    assert all(params["bases"] == [1] for params in counted), "the databox's bases alone"
    status = {"status": {4: {"on": [1]}}}
    for needless in (
        Spec("records", "", {**status, "extended": True}),
        Spec("records"),
        Spec("stories", "", status),
    ):
        assert check_status_applied(page, count, rights, needless) == 0
    assert len(asked) == 1, "rows that show status bits, or no status filter: no probe"


def test_three_equal_counts_prove_a_status_filter_ignored_whatever_the_first_page_shows():
    # review 15b: the first 100 hits of the probe all met the filter, the harvest did not
    from mediaframe.harvest.spec import Spec
    from mediaframe.harvest.verify import check_status_applied

    def page(**params):
        return {}, pd.DataFrame(
            {"databox_id": [2], "record_id": [1], "status_4": pd.array([True], "boolean")}
        )

    def count(**params):
        return {"total_results": 262}

    spec = Spec("records", "", {"status": {4: {"on": [2]}}, "record_type": "document"})
    with pytest.raises(FilterIgnoredError, match="each count the 262 hits") as err:
        check_status_applied(page, count, ((1, 2), {1: (1, [4]), 2: (2, [4])}), spec)
    assert err.value.filter_name == "status"


@pytest.mark.parametrize("total", [None, "missing", 12.5], ids=["null", "missing", "float"])
def test_a_status_count_without_an_integer_total_is_refused_never_read_as_zero(
    client, front, total
):
    # a count that says no number proves nothing: read as 0, three such counts passed the check
    def no_total_in_the_status_counts(path: str, envelope: Envelope) -> None:
        if "/search/" in path and front.searches() <= 3:  # one condition: three one-hit counts
            answer = envelope["response"]
            if total == "missing":
                del answer["total_results"]
            else:
                answer["total_results"] = total

    front.answer = no_total_in_the_status_counts
    with pytest.raises(ResponseFormatError, match="integer total_results") as err:
        client.records("", status={4: {"on": [1]}})
    message = str(err.value)
    assert "status filter" in message and "Nothing was harvested" in message
    assert "try again" in message.lower() and "drop status" in message.lower()
    assert front.searches() == 1, "refused at its first count, before any page"


def test_a_sync_from_a_server_that_stopped_applying_status_is_refused(client, front, emu):
    # review 15b: the sync merged rows that break the filter, fetched by key without status bits
    filters = {"status": {4: {"on": [1]}}}
    cached = client.records("", **filters)
    assert 0 < len(cached) < len(emu.ground_truth())
    front.drop = {"/api/v1/search/": ("status[",)}
    with pytest.raises(FilterIgnoredError, match="status filter"):
        client.records("", ttl=0, **filters)
    front.drop = {}
    assert len(client.records("", offline=True, **filters)) == len(cached)  # nothing published
