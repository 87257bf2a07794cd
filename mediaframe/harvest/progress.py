"""What a running harvest shows: records in against the search's total, from the first request.

A harvest does most of its work while it plans (a count that brings a shard's whole page *is*
that shard), so a display made once the plan is known would stay blank for most of the run and
then jump to the end. A :class:`Progress` is made before the first request instead: the engine
tells it, from any thread, of each count sent, each shard found and each shard's rows, and a
thread of its own draws the state at a steady pace (at least once a second, whether or not
anything moved) to a tqdm bar or to a callback of the user's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import sys
import threading
import time
import warnings
from collections.abc import Callable, Collection, Iterator
from typing import Any, Protocol, TypeVar

from mediaframe.exceptions import InvalidParameterError, MediaframeWarning

__all__ = ["Bars", "Progress", "Snapshot", "bars", "shown_while"]

R = TypeVar("R")

#: Seconds between two drawings of the state.
_PACE = 0.25
#: Seconds after the last drawing past which the harvest's own threads draw, as they tell of
#: progress: the drawing thread is then late (starved of the GIL on a loaded machine).
_LATE = 0.5


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """The state of one harvest as drawn: what a progress callback receives."""

    #: What the harvest is, e.g. ``"harvesting records"`` or ``"syncing records: changed"``.
    name: str
    #: What is counted: ``"records"`` or ``"stories"``.
    unit: str
    #: ``"planning"`` (counting shards, most of whose pages come with their counts),
    #: ``"paging"`` (the plan is made; the rest is paged), ``"writing"`` (every row is in; the
    #: result is assembled and written to the cache), then ``"done"``.
    phase: str
    #: Rows of the shards finished so far.
    done: int
    #: The search's total, once counted (``None`` before the first answer).
    total: int | None
    #: Shards proven so far (each under the server's cap).
    shards: int
    #: Requests the planner has sent (counts).
    counts: int
    #: Seconds since the display was started.
    elapsed: float
    #: Rows written to the cache so far, while ``"writing"`` (they move there, not ``done``).
    written: int = 0


class View(Protocol):
    """Where snapshots are drawn."""

    def draw(self, snapshot: Snapshot) -> None: ...

    def close(self, *, erase: bool = False) -> None: ...


class Progress:
    """The live state of one harvest, drawn by a thread of its own while the harvest runs.

    Use it as a context manager around the harvest: it is drawn at once on entering (before
    the first request), then every quarter of a second, and a last time on leaving. The
    ``counting``/``found``/``fetched``/``written`` calls are cheap and thread-safe; when the
    drawing thread is late (a loaded machine can keep a thread from the GIL for a second and
    more), the harvest thread that tells of progress draws instead, so the display keeps up
    with the work. Drawings never overlap. A view that raises is warned about once and drawn
    no more: a display's failure never stops the harvest nor loses its result.

    Rows count once their shard is both written and proven a leaf: a shard written under a
    split the planner then gives up (its parts did not add up) never counts, so ``done`` only
    grows, and reaches the total once.
    """

    def __init__(self, name: str, unit: str, views: list[View]) -> None:
        self.name, self.unit = name, unit
        self._views = views
        self._lock = threading.Lock()
        self._state = {"done": 0, "shards": 0, "counts": 0, "written": 0}
        self._rows: dict[str, int] = {}  # by shard id: a shard told twice counts once
        self._proven: set[str] = set()  # shards proven leaves: their rows count
        self._drawing = threading.Lock()
        self._drawn_at = 0.0
        self._total: int | None = None
        self._phase = "planning"
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self._thread is not None or self._stop.is_set():
            return self  # started early, by the call (before who the user is was asked)
        self._started = time.monotonic()
        self._draw()
        if self._views:
            self._thread = threading.Thread(
                target=self._run, name="mediaframe-progress", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close(done=exc_info[0] is None)

    def close(self, *, done: bool, erase: bool = False) -> None:
        """Stop drawing, after a last drawing (``done``: in the phase ``"done"``); ``erase``:
        with no last drawing, and the bar removed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if done:
            self._phase = "done"
        if not erase:
            self._draw()
        for view in self._views:
            view.close(erase=erase)

    # ---------------------------------------------------------------- told by the harvest

    def counting(self, route: Callable[..., R]) -> Callable[..., R]:
        """``route`` (pages or counts), telling this display of each request sent through it."""

        def counted(**params: Any) -> R:
            answer = route(**params)
            self._add("counts", 1)
            return answer

        return counted

    def planning(self, total: int) -> None:
        """The search's total is known: records are now counted against it."""
        self._total = total

    def paging(self, total: int, *, shards: Collection[str]) -> None:
        """The plan is made (or read back from an interrupted run): these shards, by id.

        Rows of shards fetched under a split the planner then gave up (its parts did not add
        up) stop counting: they are not part of the result.
        """
        with self._lock:
            for shard_id in set(shards) - self._proven:
                self._prove(shard_id)
            self._state["shards"] = len(shards)
        self._total, self._phase = total, "paging"
        self._keep_up()

    def writing(self) -> None:
        """Every row is in: the result is now assembled and written (``written`` moves)."""
        self._phase = "writing"
        self._keep_up()

    def written(self, rows: int) -> None:
        """``rows`` more rows are written to the cache."""
        self._add("written", rows)

    def found(self, shard_id: str) -> None:
        """Shard ``shard_id`` is proven a leaf of the plan: its rows count (now, or once in)."""
        with self._lock:
            if shard_id not in self._proven:
                self._prove(shard_id)
                self._state["shards"] += 1
        self._keep_up()

    def fetched(self, shard_id: str, rows: int) -> None:
        """Shard ``shard_id`` is in with ``rows`` rows (as soon as written, while planning too)."""
        with self._lock:
            if shard_id in self._proven:
                self._state["done"] += rows - self._rows.get(shard_id, 0)
            self._rows[shard_id] = rows
        self._keep_up()

    def _prove(self, shard_id: str) -> None:  # under the lock
        self._proven.add(shard_id)
        self._state["done"] += self._rows.get(shard_id, 0)

    def _add(self, name: str, amount: int) -> None:
        with self._lock:
            self._state[name] += amount
        self._keep_up()

    def _keep_up(self) -> None:
        """Draw from the calling thread if the drawing thread is late (and nobody draws)."""
        if self._thread is None or time.monotonic() - self._drawn_at < _LATE:
            return
        if self._drawing.acquire(blocking=False):
            try:
                if not self._stop.is_set():
                    self._draw_now()
            finally:
                self._drawing.release()

    # ---------------------------------------------------------------- drawn

    def snapshot(self) -> Snapshot:
        with self._lock:
            state = dict(self._state)
        return Snapshot(
            name=self.name,
            unit=self.unit,
            phase=self._phase,
            total=self._total,
            elapsed=time.monotonic() - self._started,
            **state,
        )

    def _run(self) -> None:
        while not self._stop.wait(_PACE):
            self._draw()

    def _draw(self) -> None:
        with self._drawing:
            self._draw_now()

    def _draw_now(self) -> None:
        self._drawn_at = time.monotonic()
        snapshot = self.snapshot()
        for view in self._views:
            try:
                view.draw(snapshot)
            except Exception as err:  # a user's function: anything may come, but not ^C
                self._views = [other for other in self._views if other is not view]
                warnings.warn(
                    f"{view} failed and is no longer called (the harvest goes on): "
                    f"{type(err).__name__}: {err}",
                    MediaframeWarning,
                    stacklevel=2,
                )


class Callback:
    """Snapshots handed to a function of the user's: called on the drawing thread (or on a
    harvest thread when that one is late), never twice at once."""

    def __init__(self, function: Callable[[Snapshot], object]) -> None:
        self._function = function

    def __str__(self) -> str:
        name = getattr(self._function, "__qualname__", type(self._function).__qualname__)
        return f"the progress callback {name}"

    def draw(self, snapshot: Snapshot) -> None:
        self._function(snapshot)

    def close(self, *, erase: bool = False) -> None:
        pass


class Bar:
    """A tqdm bar: a widget in a notebook that has ipywidgets, text anywhere else."""

    def __init__(self, name: str, unit: str) -> None:
        self._bar = tqdm_class()(
            total=None,
            desc=name,
            unit=f" {unit}",
            unit_scale=True,
            dynamic_ncols=True,
            mininterval=0,
            miniters=1,
        )
        self._total: int | None = None

    def __str__(self) -> str:
        return "the progress bar"

    def draw(self, snapshot: Snapshot) -> None:
        bar = self._bar
        if snapshot.total is not None and snapshot.total != self._total:
            started = bar.start_t
            bar.reset(total=snapshot.total)  # the notebook widget learns its maximum here
            bar.start_t = started
            self._total = snapshot.total
        bar.n = snapshot.done
        bar.set_description_str(f"{snapshot.name} ({snapshot.phase})", refresh=False)
        postfix = f"{snapshot.shards} shards, {snapshot.counts} counts"
        if snapshot.phase in ("writing", "done") and snapshot.total:
            postfix += f", {snapshot.written / snapshot.total:.0%} written"
        bar.set_postfix_str(postfix, refresh=False)
        bar.refresh()

    def close(self, *, erase: bool = False) -> None:
        if erase:
            self._bar.leave = False  # tqdm clears the line of a bar it does not leave
        self._bar.close()


def tqdm_class() -> type:
    """tqdm's notebook widget inside a Jupyter kernel with ipywidgets, its text bar otherwise.

    ``tqdm.auto`` would pick the widget in any kernel and, without ipywidgets (the plain
    install), warn with ``TqdmWarning`` before falling back to text; asking first avoids both.
    """
    if _in_kernel() and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm import notebook

        if getattr(notebook, "IProgress", None) is not None:
            return notebook.tqdm
    from tqdm import std

    return std.tqdm


def _in_kernel() -> bool:
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


#: What ``progress=`` of ``client.records()`` may be.
ProgressOption = bool | Callable[[Snapshot], object] | None


@dataclasses.dataclass
class Bars:
    """Makes the displays of one call, each harvest's named (a sync runs two harvests).

    The display of the call's first harvest is started by the call itself (:meth:`started`),
    before its first request — who the user is, asked to plan — and the harvest takes it over.
    """

    kind: str
    callback: Callable[[Snapshot], object] | None = None
    #: The display :meth:`started` shows until a harvest takes it over.
    _early: Progress | None = dataclasses.field(default=None, init=False, compare=False, repr=False)

    def __call__(self, doing: str) -> Progress:
        """A display for ``doing`` the kind's search: ``"harvesting"``, ``"syncing: keys"``."""
        name = self._name(doing)
        early, self._early = self._early, None
        if early is not None:
            early.name = name
            return early
        view: View = Callback(self.callback) if self.callback is not None else Bar(name, self.kind)
        return Progress(name, self.kind, [view])

    def _name(self, doing: str) -> str:
        verb, _, step = doing.partition(":")
        return f"{verb} {self.kind}" + (f":{step}" if step else "")

    @contextlib.contextmanager
    def started(self) -> Iterator[None]:
        """Show a display from now on, named ``fetching <kind>`` until a harvest takes it over.

        The call starts it before its first request; the first harvest or sync pass it runs
        takes it over, under its own name. One not taken over (the call was answered from the
        cache, or failed first) is removed on leaving, without a last drawing.
        """
        shown = self("fetching")
        shown.__enter__()
        self._early = shown
        try:
            yield
        finally:
            if self._early is shown:
                self._early = None
                shown.close(done=False, erase=True)


def shown_while(display: Bars | None, doing: str) -> contextlib.AbstractContextManager[Any]:
    """The display of one harvest, named for what it does, or nothing: enter it around the run."""
    return display(doing) if display is not None else contextlib.nullcontext()


def bars(kind: str, option: object) -> Bars | None:
    """The displays ``progress=`` asks for: tqdm bars (``True``), a callback, or none."""
    if option is None or option is False:
        return None
    if option is True:
        return Bars(kind)
    if callable(option):
        return Bars(kind, option)
    raise InvalidParameterError(
        f"progress= must be True, False or a function taking a mediaframe.harvest.Snapshot, "
        f"not {option!r}"
    )
