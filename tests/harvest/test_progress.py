"""What a running harvest shows: from before the first request to the total, named, in records."""

from __future__ import annotations

import itertools
import sys
import types
import warnings

import pytest

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.exceptions import InvalidParameterError, MediaframeWarning
from mediaframe.harvest import Snapshot
from mediaframe.harvest import progress as progress_module
from mediaframe.harvest.progress import Progress


@pytest.fixture(scope="module")
def capped():
    from mediaframe.emulator import Emulator

    with Emulator(records=3000, seed=11, cap=200) as emu:
        yield emu


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False, backoff=0.01
    )


def connect(emu, settings):
    return mf.connect(emu.base_url, token=emu.token, settings=settings)


def test_a_callback_sees_the_harvest_from_before_its_first_request_to_its_total(capped, settings):
    seen: list[Snapshot] = []
    frame = connect(capped, settings).records(progress=seen.append)
    first, last = seen[0], seen[-1]
    # drawn before any request: nothing counted yet, the total unknown
    assert (first.phase, first.counts, first.total, first.done) == ("planning", 0, None, 0)
    assert (last.phase, last.done, last.total) == ("done", len(frame), len(frame))
    assert last.shards == len(mf.HarvestReport.from_frame(frame).shards) > 1
    # named for what the call does once it knows (it first asks who the user is)
    assert [s.name for s in seen[:1]] == ["fetching records"]
    assert {s.name for s in seen} == {"fetching records", "harvesting records"}
    assert {s.unit for s in seen} == {"records"}
    for before, after in itertools.pairwise(seen):
        assert after.done >= before.done and after.counts >= before.counts
        assert after.elapsed >= before.elapsed
    phases = [s.phase for s in seen]
    assert phases == sorted(phases, key=["planning", "paging", "writing", "done"].index)


def test_rows_are_shown_while_the_plan_is_still_being_made(capped, settings, monkeypatch):
    """Counts bring whole shards while planning: their rows count at once, not after the plan."""
    events: list[tuple[str, int, int | None]] = []

    class Recording(Progress):
        def fetched(self, shard_id: str, rows: int) -> None:
            super().fetched(shard_id, rows)
            snapshot = self.snapshot()
            events.append((snapshot.phase, snapshot.done, snapshot.total))

    def recording(display, doing):
        return Recording("harvesting records", "records", [])

    monkeypatch.setattr("mediaframe.harvest.engine.shown_while", recording)
    frame = connect(capped, settings).records(progress=True)
    planning = [done for phase, done, _ in events if phase == "planning"]
    assert planning and planning[-1] > 0, events
    assert all(total == len(frame) for _, _, total in events)  # against the known total
    assert events[-1][1] == len(frame)


def test_a_sync_shows_two_passes_by_name_and_stories_are_counted_as_stories(capped, settings):
    client = connect(capped, settings)
    client.records()
    seen: list[Snapshot] = []
    client.records(ttl=0, progress=seen.append)
    names = list(dict.fromkeys(s.name for s in seen))
    assert names == ["fetching records", "syncing records: changed", "syncing records: keys"]
    stories: list[Snapshot] = []
    frame = client.stories(progress=stories.append)
    assert {s.unit for s in stories} == {"stories"}
    assert {s.name for s in stories} == {"fetching stories", "harvesting stories"}
    assert stories[-1].done == stories[-1].total == len(frame)


def test_the_text_bar_names_its_unit_and_phase(capped, settings, capfd):
    connect(capped, settings).stories(progress=True)
    err = capfd.readouterr().err
    assert "fetching stories (planning)" in err and "harvesting stories (done)" in err
    assert "stories/s" in err and "storie/s" not in err and "storie " not in err
    assert "100%" in err


def test_progress_false_shows_nothing(capped, settings, capfd):
    connect(capped, settings.replace(progress=True)).records(progress=False)
    assert capfd.readouterr().err == ""


def test_a_bad_progress_option_is_refused_with_what_to_pass(capped, settings):
    with pytest.raises(InvalidParameterError, match="progress must be True or False"):
        connect(capped, settings).records(progress="yes")
    with pytest.raises(InvalidParameterError, match="progress= must be True, False or a func"):
        progress_module.bars("records", "yes")


def _kernel(monkeypatch):
    """Pretend to run inside a Jupyter kernel."""
    shell = types.SimpleNamespace(config={"IPKernelApp": {}})
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake)


def test_outside_a_kernel_the_bar_is_text():
    from tqdm import std

    assert progress_module.tqdm_class() is std.tqdm


def test_a_kernel_without_ipywidgets_gets_text_and_no_tqdm_warning(monkeypatch):
    from tqdm import std

    _kernel(monkeypatch)
    real = progress_module.importlib.util.find_spec
    monkeypatch.setattr(
        progress_module.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "ipywidgets" else real(name, *a),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chosen = progress_module.tqdm_class()
        bar = progress_module.Bar("harvesting records", "records")
        bar.close()
    assert chosen is std.tqdm


def test_a_kernel_with_ipywidgets_gets_the_widget(monkeypatch):
    pytest.importorskip("ipywidgets")
    from tqdm import notebook

    _kernel(monkeypatch)
    assert progress_module.tqdm_class() is notebook.tqdm


def test_a_shard_counts_once_proven_and_a_shard_of_an_abandoned_split_never():
    shown = Progress("harvesting records", "records", [])
    shown.fetched("a", 10)
    assert shown.snapshot().done == 0, "written, not yet proven a leaf"
    shown.found("a")
    shown.fetched("a", 10)  # written while planning, then delivered: one shard
    shown.fetched("b", 5)  # counted under a split the planner then gave up
    shown.found("c")
    assert (shown.snapshot().done, shown.snapshot().shards) == (10, 2)
    shown.paging(100, shards=["a", "c"])
    shown.fetched("c", 7)
    snapshot = shown.snapshot()
    assert (snapshot.done, snapshot.shards, snapshot.phase, snapshot.total) == (
        17,
        2,
        "paging",
        100,
    )


def test_the_display_starts_before_the_call_asks_who_the_user_is(capped, settings, monkeypatch):
    events: list[str] = []
    client = connect(capped, settings)
    me_raw = client.me_raw

    def asked() -> object:
        events.append("who the user is")
        return me_raw()

    monkeypatch.setattr(client, "me_raw", asked)
    client.records(progress=lambda snapshot: events.append(snapshot.phase))
    assert events[0] == "planning" and "who the user is" in events, events[:3]
    assert events[-1] == "done"


class Recorded(Progress):
    """Records the state after every change the harvest tells it of (no drawing, no clock)."""

    def __init__(self) -> None:
        super().__init__("harvesting records", "records", [])
        self.updates: list[Snapshot] = []

    def _record(self) -> None:
        self.updates.append(self.snapshot())

    def _add(self, name: str, amount: int) -> None:
        super()._add(name, amount)
        self._record()

    def fetched(self, shard_id: str, rows: int) -> None:
        super().fetched(shard_id, rows)
        self._record()

    def writing(self) -> None:
        super().writing()
        self._record()

    def found(self, shard_id: str) -> None:
        super().found(shard_id)
        self._record()


def harvested(tmp_path, shown: Progress):
    """The frame of an engine harvest of 3,000 fake records under a cap of 100, shown."""
    from .fake import FakeService, combine
    from .test_engine import STATUSES

    frame, _ = mf.harvest.harvest(
        FakeService.build(3000, cap=100),
        mf.harvest.Spec("records"),
        mf.cache.HarvestStore(str(tmp_path / "h")),
        combine=combine,
        bases=(1, 2, 3),
        statuses=STATUSES,
        per_page=100,
        progress=shown,
    )
    return frame


def test_the_bar_moves_through_planning_and_the_cache_write_and_ends_whole_once(tmp_path):
    shown = Recorded()
    frame = harvested(tmp_path, shown)
    updates = shown.updates
    total = len(frame)
    done = [u.done for u in updates]
    assert done == sorted(done) and max(done) == total, "monotonic, up to the total"
    reached = done.index(total)
    assert all(u.done == total for u in updates[reached:]), "reaches its total once, stays"
    planning = [u for u in updates if u.phase == "planning"]
    assert len({(u.counts, u.done) for u in planning}) > 5, "moves while planning"
    writing = [u for u in updates if u.phase == "writing"]
    written = [u.written for u in writing]
    assert len(set(written)) >= 3 and written == sorted(written), "moves while writing"
    assert written[-1] == total and all(u.total == total for u in updates if u.counts > 1)


def test_a_call_answered_from_the_cache_leaves_no_bar(capped, settings, capfd):
    client = connect(capped, settings)
    client.stories(progress=False)
    client.stories(progress=True)
    err = capfd.readouterr().err
    # shown while the cache was looked up, then wiped: the line ends blank, nothing left
    assert "fetching stories" in err and "harvesting" not in err
    assert err.endswith("\r") and not err.rsplit("\r", 2)[-2].strip()


def test_a_callback_that_is_an_empty_collection_is_still_called(capped, settings, capfd):
    class Stamps(list):
        def __call__(self, snapshot: Snapshot) -> None:
            self.append(snapshot)

    stamps = Stamps()  # empty, so falsy, until its first snapshot
    connect(capped, settings).stories(progress=stamps)
    assert stamps and stamps[-1].phase == "done" and capfd.readouterr().err == ""


@pytest.mark.parametrize("failing", ["first", "second", "done"])
def test_a_callback_that_raises_is_dropped_with_one_warning_and_the_harvest_goes_on(
    capped, settings, failing
):
    """Raising on the first drawing (by the call), a later one (the drawing thread or a late
    harvest thread) or the last (after the harvest): warned once, called no more, and the
    frame still comes back whole."""
    calls: list[Snapshot] = []

    def draw(snapshot: Snapshot) -> None:
        calls.append(snapshot)
        at = {"first": len(calls) == 1, "second": len(calls) == 2, "done": snapshot.phase == "done"}
        if at[failing]:
            raise RuntimeError("the view is broken")

    with pytest.warns(MediaframeWarning) as warned:
        frame = connect(capped, settings).records(progress=draw)
    assert [str(w.message) for w in warned] == [
        f"the progress callback {draw.__qualname__} failed and is no longer called (the "
        "harvest goes on): RuntimeError: the view is broken"
    ]
    assert mf.HarvestReport.from_frame(frame).complete and len(frame) > 200  # past the cap
    failed = {"first": 1, "second": 2, "done": len(calls)}[failing]
    assert len(calls) == failed and (failing != "done" or calls[-1].phase == "done")


def test_an_interrupt_in_a_callback_is_not_swallowed():
    def draw(snapshot: Snapshot) -> None:
        raise KeyboardInterrupt

    shown = Progress("harvesting records", "records", [progress_module.Callback(draw)])
    with pytest.raises(KeyboardInterrupt), shown:
        pass


def test_a_starved_drawing_thread_is_stood_in_for_by_the_harvest(tmp_path, monkeypatch):
    """On a loaded machine the drawing thread may not get the GIL for a second and more: the
    harvest's threads then draw as they tell of progress, while planning and writing alike."""
    monkeypatch.setattr(Progress, "_run", lambda self: self._stop.wait())  # never draws
    monkeypatch.setattr(progress_module, "_LATE", 0.0)  # "late" at once: no clock involved
    seen: list[Snapshot] = []
    shown = Progress("harvesting records", "records", [progress_module.Callback(seen.append)])
    with shown:
        frame = harvested(tmp_path, shown)
    phases = [s.phase for s in seen]
    assert phases.count("planning") > 10 and phases.count("writing") >= 2, phases
    assert seen[-1].phase == "done" and seen[-1].done == len(frame)
    done = [s.done for s in seen]
    assert done == sorted(done)
