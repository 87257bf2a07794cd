"""FacetFilter: a selection, the server's answer to it (debounced, never stale) and its view."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import html
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from mediaframe import frames
from mediaframe.exceptions import InvalidParameterError, MediaframeError
from mediaframe.widgets.selection import Selection

if TYPE_CHECKING:
    from mediaframe.client import Client
    from mediaframe.widgets.view import View

__all__ = ["PREVIEW_ROWS", "Answer", "FacetFilter", "ask"]

#: Rows of the preview table (the first page of the selection).
PREVIEW_ROWS = 10


# --- what the server said -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Answer:
    """The server's view of one selection: total, cap state, facets and the first page."""

    total: int
    available: int | None
    facets: pd.DataFrame
    page: pd.DataFrame

    @property
    def capped(self) -> bool:
        """More hits than one search may hand out (the retrieval cap of capped engines)."""
        # Newer engines say in available_results how many hits this page holds (<= per_page):
        # only a number above the page size is a cap.
        return self.available is not None and PREVIEW_ROWS < self.available < self.total


def ask(client: Client, selection: Selection) -> Answer:
    """Ask the server about ``selection``: its total, facet counts and first page.

    One v2 search for the selection, one per facet with selected values (without that facet's
    own values, so its other values keep their counts and can be added with OR), one v1 page
    for the preview.
    """
    filters = selection.search_filters()
    answer = client.api.search_v2(selection.full_query(), per_page=1, **filters)
    facets = frames.facets(answer.get("facets") or [])
    for facet, chosen in selection.values.items():
        own = client.api.search_v2(selection.full_query(without=facet), per_page=1, **filters)
        theirs = frames.facets(own.get("facets") or [])
        theirs = theirs[theirs["facet"] == facet]
        lost = [v for v in chosen if v not in set(theirs["value"].dropna())]
        parts = [facets[facets["facet"] != facet], theirs]
        parts += [_zero_rows(facet, lost, chosen)] if lost else []
        facets = pd.concat([p for p in parts if not p.empty] or [facets.iloc[0:0]])
    meta, page = client.api.search_records_frame(
        selection.full_query(), per_page=PREVIEW_ROWS, **filters
    )
    total = answer.get("total_results")
    available = meta.get("available_results")
    return Answer(
        total=int(total) if isinstance(total, int) else len(page),
        available=available if isinstance(available, int) else None,
        facets=facets.reset_index(drop=True),
        page=page,
    )


def _zero_rows(facet: str, values: list[str], queries: Mapping[str, str]) -> pd.DataFrame:
    """Selected values the server no longer lists (e.g. outside the dates): kept, counted 0."""
    rows = [{"value": v, "count": 0, "query": queries[v]} for v in values]
    return frames.facets([{"name": facet, "values": rows}])


# --- the filter -----------------------------------------------------------------------------


class FacetFilter:
    """Facets of a search as an interactive filter; the state is public and drivable in code.

    Parameters
    ----------
    client : a connected :class:`~mediaframe.Client`.
    query : the initial search query.
    debounce : seconds to wait after a change before asking the server, so that a burst of
        clicks costs one refresh; ``0`` asks at once (and is what tests use).
    plot_facet : the facet whose counts the plot shows (default: collections, else the first).
    **filters : fixed search filters (``bases``, ``record_type``, ``status``, ``fields``,
        ``stemme``) and an initial ``date_field``/``date_min``/``date_max``.

    Attributes
    ----------
    query : the full query string sent (user query AND the selected facets).
    filters : the filters sent with it (fixed filters and the date range).
    total : the server's total for the selection.
    code : a ``client.records(...)`` statement that harvests the selection.
    frame : the preview, the first page of the selection.
    facets : the facet counts of the selection in long form.
    error : the last error the server or the inputs gave, or ``None``.

    Examples
    --------
    >>> picker = FacetFilter(client, "sunset", record_type="image")    # doctest: +SKIP
    >>> picker.select("Keywords", "city"); picker.select("Keywords", "night")  # doctest: +SKIP
    >>> df = picker.harvest()                                          # doctest: +SKIP
    """

    def __init__(
        self,
        client: Client,
        query: str = "",
        *,
        debounce: float = 0.3,
        plot_facet: str | None = None,
        **filters: Any,
    ) -> None:
        dates = {k: filters.pop(k) for k in ("date_field", "date_min", "date_max") if k in filters}
        if debounce < 0:
            raise InvalidParameterError(f"debounce={debounce!r}: give seconds, 0 or more")
        self.client = client
        self.selection = Selection(
            query=query,
            filters=filters,
            date_field=dates.get("date_field") or "created_on",
            date_min=dates.get("date_min"),
            date_max=dates.get("date_max"),
        )
        self.debounce = debounce
        self.plot_facet = plot_facet
        self.error: str | None = None
        self._answer: Answer | None = None
        self._lock = threading.RLock()
        self._generation = 0
        self._timer: threading.Timer | None = None
        self._known: dict[tuple[str, str], str] = {}  # (facet, value) -> the value's query
        self._view: View | None = None
        #: The last complete harvest the widget's button made.
        self.harvested: pd.DataFrame | None = None
        self._refresh(self._generation)

    def __repr__(self) -> str:
        total = "?" if self._answer is None else f"{self._answer.total:,}"
        return f"<FacetFilter {self.query or '(everything)'!r}: {total} records>"

    # -- public state ---------------------------------------------------------------------------

    @property
    def query(self) -> str:
        return self.selection.full_query()

    @property
    def filters(self) -> dict[str, Any]:
        return self.selection.search_filters()

    @property
    def code(self) -> str:
        return self.selection.code()

    @property
    def total(self) -> int:
        return self._settled().total

    @property
    def capped(self) -> bool:
        """The selection has more hits than one search hands out: use :meth:`harvest`."""
        return self._settled().capped

    @property
    def frame(self) -> pd.DataFrame:
        return self._settled().page

    @property
    def facets(self) -> pd.DataFrame:
        return self._settled().facets

    # -- changes -----------------------------------------------------------------------------------

    def select(self, facet: str, value: str) -> None:
        """Add ``value`` of ``facet`` (as the server lists it) to the selection."""
        self._change(self.selection.select(facet, value, self._value_query(facet, value)))

    def deselect(self, facet: str, value: str) -> None:
        self._change(self.selection.deselect(facet, value))

    def clear(self, facet: str | None = None) -> None:
        """Drop the values of ``facet``, or every value and the date range."""
        self._change(self.selection.clear(facet))

    def search(self, query: str) -> None:
        """Replace the user's query (the facet values stay selected)."""
        self._change(self.selection.with_query(query))

    def dates(
        self,
        date_min: dt.date | str | None = None,
        date_max: dt.date | str | None = None,
        *,
        field: str | None = None,
    ) -> None:
        """Keep records whose ``field`` (``created_on`` or ``updated_on``) is in the range."""
        field = field or self.selection.date_field
        self._change(self.selection.with_dates(field, date_min, date_max))

    def refresh(self) -> None:
        """Ask the server again about the current selection (after it failed or the data moved)."""
        self._change(self.selection)

    def harvest(self, **options: Any) -> pd.DataFrame:
        """Every record of the selection — the complete harvest, cap-proof, with progress.

        ``options`` are those of :meth:`Client.records` (``progress``, ``refresh`` …).
        """
        return self.client.records(self.query, **self.filters, **options)

    def wait(self) -> None:
        """Block until the refresh of the last change has been applied."""
        while True:
            with self._lock:
                timer = self._timer
            if timer is None or timer is threading.current_thread():
                return
            timer.join()
            with self._lock:
                if self._timer is timer:
                    self._timer = None

    # -- display -----------------------------------------------------------------------------------

    @property
    def widget(self) -> Any:
        """The ipywidgets box (built on first use)."""
        # Waited for outside the lock: the refresh it waits for takes the lock to apply its
        # answer, so waiting under it would hang for ever (the first display right after a change).
        self.wait()
        with self._lock:
            if self._view is None:
                from mediaframe.widgets.view import View  # imports ipywidgets

                self._view = View(self)
                # no answer yet (the server refused or is down): the widget shows why and retries;
                # a refresh still to come (a change since the wait) shows its answer here itself
                self._view.show(self._answer, self.error)
                if self._timer is not None:
                    self._view.pending(self)
            return self._view.box

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = {}
        # without ipywidgets the state as HTML is still worth showing
        with contextlib.suppress(ImportError):
            bundle.update(self.widget._repr_mimebundle_(**kwargs) or {})
        # ours over the widget's "VBox(children=(HBox(…" where widgets cannot show (a terminal,
        # a notebook saved without widget state, as code hosts render it)
        return {**bundle, "text/plain": repr(self), "text/html": self._state_html()}

    def _state_html(self) -> str:
        self.wait()
        answer = self._answer
        if answer is None:
            total = f"no answer from the server: {self.error} (.refresh() asks again)"
        else:
            total = f"{answer.total:,}" + (" (over the retrieval cap)" if answer.capped else "")
        rows = [
            ("query", self.query or "(everything)"),
            ("filters", ", ".join(f"{k}={v!r}" for k, v in self.filters.items()) or "none"),
            ("total", total),
            ("code", self.code),
        ]
        cells = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td style='text-align:left'><code>{html.escape(v)}</code></td></tr>"
            for k, v in rows
        )
        return f"<table class='mf-state'>{cells}</table>"

    # -- machinery ---------------------------------------------------------------------------------

    def _value_query(self, facet: str, value: str) -> str:
        # Values shown before (by any answer) are known without waiting for a pending refresh.
        with self._lock:
            query = self._known.get((facet, value))
        if query is not None:
            return query
        facets = self._settled().facets
        rows = facets[(facets["facet"] == facet) & (facets["value"] == value)]
        if not rows.empty:
            return str(rows["query"].iloc[0])
        known = facets["facet"].dropna().unique().tolist()
        if facet not in known:
            raise InvalidParameterError(f"no facet {facet!r}; facets are {', '.join(known)}")
        values = facets.loc[facets["facet"] == facet, "value"].head(10).tolist()
        raise InvalidParameterError(
            f"facet {facet!r} has no value {value!r} in this selection; it has "
            f"{', '.join(map(repr, values))}"
        )

    def _change(self, selection: Selection) -> None:
        with self._lock:
            self.selection = selection
            self._generation += 1
            generation = self._generation
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self.debounce:
                self._timer = threading.Timer(self.debounce, self._refresh, (generation,))
                self._timer.daemon = True
                self._timer.start()
        if self._view is not None:
            self._view.pending(self)
        if not self.debounce:
            self._refresh(generation)

    def _refresh(self, generation: int) -> None:
        selection = self.selection
        try:
            answer: Answer | None = ask(self.client, selection)
            error = None
        except MediaframeError as err:
            answer, error = None, f"{type(err).__name__}: {err}"
        # Under the lock to the end: a newer answer cannot be applied (or shown) in between.
        with self._lock:
            if generation != self._generation:
                return  # a newer change is on its way: this answer is stale
            if self._timer is threading.current_thread():
                self._timer = None
            if answer is not None:
                self._answer = answer
                rows = answer.facets[["facet", "value", "query"]].dropna()
                self._known.update(
                    ((str(f), str(v)), str(q)) for f, v, q in rows.itertuples(index=False)
                )
            self.error = error
            if self._view is not None:
                self._view.show(self._answer, error)

    def _settled(self) -> Answer:
        self.wait()
        if self._answer is None:
            raise MediaframeError(
                f"the server has not answered for this filter: {self.error}; "
                "fix the cause, then .refresh() asks again"
            )
        return self._answer
