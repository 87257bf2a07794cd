"""The core-ipywidgets view of a FacetFilter: every user action goes through its public methods."""

from __future__ import annotations

import datetime as dt
import html
import io
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from mediaframe.exceptions import MediaframeError
from mediaframe.widgets.selection import DATE_FIELDS, Selection

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from mediaframe.widgets.facet_filter import Answer, FacetFilter

__all__ = ["View"]

#: A facet with more values than this gets a box to search its values.
SEARCHABLE = 20
#: Columns the preview shows, those the server sent.
PREVIEW_COLUMNS = ("databox_id", "record_id", "title", "media_type", "created_on", "original_name")
_INSTALL = 'pip install -e ".[notebook]" in the mediaframe folder'


# --- the ipywidgets binding -------------------------------------------------------------------


class View:
    """The widgets of one FacetFilter; every change goes through the filter's public methods."""

    def __init__(self, picker: FacetFilter) -> None:
        try:
            import ipywidgets as w
        except ImportError as err:
            raise ImportError(f"FacetFilter's display needs ipywidgets: {_INSTALL}") from err
        self.w = w
        self.picker = picker
        # Set while the view writes values, so the observers ignore those echoes. Per thread: a
        # refresh is shown from the debounce timer's thread while the kernel's own thread may be
        # handling a click, and that click is the user's, never to be dropped.
        self._writing = threading.local()
        selection = picker.selection
        self.search = w.Text(
            value=selection.query,
            placeholder="search…",
            description="query",
            continuous_update=False,
        )
        self.search.add_class("mf-search")
        self.search.observe(lambda change: self._user(picker.search, change["new"]), "value")
        self.date_field = w.Dropdown(
            options=DATE_FIELDS, value=selection.date_field, description="dates"
        )
        self.date_min = w.DatePicker(description="from")
        self.date_max = w.DatePicker(description="to")
        for box in (self.date_field, self.date_min, self.date_max):
            box.observe(self._dates_changed, "value")
        self.total = w.HTML().add_class("mf-total")
        self.harvest_button = w.Button(description="harvest all", icon="download")
        self.harvest_button.add_class("mf-harvest")
        self.harvest_button.on_click(self._harvest)
        self.clear_all = w.Button(description="clear all").add_class("mf-clear-all")
        self.clear_all.on_click(lambda _: self._user(picker.clear))
        # shown while the server's last answer is an error: asks again for the same selection
        self.retry = w.Button(description="retry", icon="refresh").add_class("mf-retry")
        self.retry.layout.display = "none"
        self.retry.on_click(lambda _: self._user(picker.refresh))
        self.facets = w.HBox(layout=w.Layout(flex_flow="row wrap", align_items="flex-start"))
        self.preview = w.HTML().add_class("mf-preview")
        self.plot = w.Image(format="png").add_class("mf-plot")
        self.code = w.HTML().add_class("mf-code")
        self.error = w.HTML().add_class("mf-error")
        self.out = w.Output()
        self._plotted: tuple | None = None  # what the plot shows
        self.boxes: dict[str, Any] = {}  # facet -> its box
        self.rows: dict[tuple[str, str], Any] = {}  # (facet, value) -> its checkbox and count
        self._clicked: dict[tuple[str, str], bool] = {}  # boxes clicked, not yet applied
        self.box = w.VBox(
            [
                w.HBox([self.search, self.clear_all]),
                w.HBox([self.date_field, self.date_min, self.date_max]),
                w.HBox([self.total, self.harvest_button]),
                w.HBox([self.error, self.retry]),
                self.facets,
                w.HBox([self.preview, self.plot]),
                self.code,
                self.out,
            ]
        ).add_class("mf-facet-filter")

    # -- from the user --------------------------------------------------------------------------

    def _user(self, action: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        if getattr(self._writing, "active", False):
            return
        try:
            action(*args, **kwargs)
        except MediaframeError as err:  # bad input: say so in the widget, keep the state
            self.error.value = _error_html(err)

    def _dates_changed(self, _change: Any) -> None:
        low, high = self.date_min.value, self.date_max.value
        self._user(self.picker.dates, low, high, field=self.date_field.value)

    def _toggle(self, facet: str, value: str, change: Any) -> None:
        if getattr(self._writing, "active", False):
            return
        # Until the filter has it, a refresh being shown leaves this box as the user set it
        # (else a click during a refresh would flicker: unticked by that refresh, ticked again).
        self._clicked[(facet, value)] = change["new"]
        try:
            action = self.picker.select if change["new"] else self.picker.deselect
            self._user(action, facet, value)
        finally:
            self._clicked.pop((facet, value), None)

    def _harvest(self, _button: Any) -> None:
        self.out.clear_output()
        with self.out:  # the progress bar shows here
            try:
                frame = self.picker.harvest()
            except MediaframeError as err:
                self.error.value = _error_html(err)
                return
        self.picker.harvested = frame
        report = frame.attrs.get("harvest", {})
        self.total.value += (
            f" — harvested {len(frame):,} records "
            f"({'complete' if report.get('complete') else 'INCOMPLETE'}): "
            "<code>picker.harvested</code>"
        )

    # -- to the user ----------------------------------------------------------------------------

    def pending(self, picker: FacetFilter) -> None:
        self.code.value = _code_html(picker.code)
        self.total.value = "<span class='mf-count'>…</span> records (asking the server)"

    def show(self, answer: Answer | None, error: str | None) -> None:
        picker = self.picker
        self._writing.active = True
        try:
            self.error.value = _error_html(error) if error else ""
            self.retry.layout.display = None if error else "none"
            if answer is None:  # nothing answered yet: the error says why, retry asks again
                self.code.value = _code_html(picker.code)
                self.harvest_button.layout.display = "none"
                self.total.value = "<span class='mf-count'>?</span> records (no answer)"
                return
            self.preview.value = _preview_html(answer.page)
            self._show_plot(answer.facets, picker.plot_facet)
            self._show_facets(answer.facets, picker.selection)
            selection = picker.selection
            self.search.value = selection.query
            self.date_field.value = selection.date_field
            self.date_min.value = _date(selection.date_min)
            self.date_max.value = _date(selection.date_max)
            self.code.value = _code_html(picker.code)
            self.harvest_button.layout.display = None if answer.capped else "none"
            # last, replacing "asking the server": once it shows, all of the answer is on screen
            self.total.value = _total_html(answer)
        finally:
            self._writing.active = False

    def _show_plot(self, facets: pd.DataFrame, facet: str | None) -> None:
        names = list(facets["facet"].dropna().unique())
        preferred = [facet, "Collection_Name", "_collection", "Type_Name", "_doctype"]
        name = next((n for n in preferred if n in names), names[0] if names else None)
        counts = facets.loc[facets["facet"] == name, ["value", "count"]]
        key = (name, tuple(counts.itertuples(index=False)))
        if key != self._plotted:  # drawing costs more than the rest of a refresh: only on change
            self.plot.value = _plot_png(facets, name)
            self._plotted = key

    def _show_facets(self, facets: pd.DataFrame, selection: Selection) -> None:
        # Widgets are kept per facet and per value and updated in place: a refresh rebuilds
        # nothing the user already sees, so it stays quick and keeps focus and scroll.
        shown = set()
        for facet, rows in facets.groupby("facet", observed=True, sort=False):
            name = str(facet)
            chosen = selection.values.get(name, {})
            box = self.boxes.get(name) or self._facet_box(name)
            self.boxes[name] = box
            header, find, values = box.children
            header.children[1].disabled = not chosen
            items = [self._value_row(name, row, chosen) for row in rows.itertuples(index=False)]
            values.children = items
            find.layout.display = None if len(items) > SEARCHABLE else "none"
            find.placeholder = f"find among {len(items)} values"
            _filter_rows(items, find.value)
            shown.add(name)
        # in the order they first appeared: the server lists a facet with selected values
        # last, and a list that jumps away from the value just clicked loses the user
        self.facets.children = [box for name, box in self.boxes.items() if name in shown]

    def _facet_box(self, facet: str) -> Any:
        w = self.w
        clear = w.Button(description="clear", layout=w.Layout(width="auto")).add_class("mf-clear")
        clear.on_click(lambda _: self._user(self.picker.clear, facet))
        header = w.HBox([w.HTML(f"<b>{html.escape(facet)}</b>"), clear])
        values = w.VBox(layout=w.Layout(max_height="16em", overflow="auto"))
        find = w.Text(continuous_update=True).add_class("mf-find")
        find.observe(lambda change: _filter_rows(values.children, change["new"]), "value")
        box = w.VBox(
            [header, find, values], layout=w.Layout(margin="0 1em 1em 0", min_width="14em")
        )
        return box.add_class(f"mf-facet-{_css_name(facet)}")

    def _value_row(self, facet: str, row: Any, chosen: Mapping[str, str]) -> Any:
        w = self.w
        value = "" if pd.isna(row.value) else str(row.value)
        count = f"{int(row.count):,}" if pd.notna(row.count) else ""
        item = self.rows.get((facet, value))
        if item is None:
            box = w.Checkbox(description=value, indent=False)
            box.observe(lambda change: self._toggle(facet, value, change), "value")
            # flex 0 0 auto: in the value list's scrolling box (a flex column) a row keeps its
            # height and the box scrolls; by default rows shrink until their labels are cut
            item = w.HBox(
                [box, w.HTML().add_class("mf-count")], layout=w.Layout(flex="0 0 auto")
            ).add_class("mf-value")
            self.rows[(facet, value)] = item
        if (facet, value) not in self._clicked:
            item.children[0].value = value in chosen
        item.children[1].value = count
        return item


def _filter_rows(rows: Sequence[Any], text: str) -> None:
    needle = text.strip().casefold()
    for row in rows:
        label = row.children[0].description.casefold()
        row.layout.display = None if needle in label else "none"


def _css_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", name)


def _date(value: str | None) -> dt.date | None:
    return None if value is None else dt.datetime.strptime(value, "%Y/%m/%d").date()


def _error_html(err: Exception | str) -> str:
    return f"<span style='color:#b00'>{html.escape(str(err))}</span>"


def _code_html(code: str) -> str:
    return f"<pre style='margin:0'><code>{html.escape(code)}</code></pre>"


def _total_html(answer: Answer) -> str:
    text = f"<span class='mf-count'>{answer.total:,}</span> records"
    if answer.capped:
        text += (
            f" — more than the {answer.available:,} one search hands out: "
            "<b>harvest all</b> (or <code>.harvest()</code>) fetches every one"
        )
    return text


def _preview_html(page: pd.DataFrame) -> str:
    columns = [c for c in PREVIEW_COLUMNS if c in page.columns]
    if page.empty:
        return "<i>no records</i>"
    table = page[columns].to_html(index=False, escape=True, border=0, na_rep="")
    return f"<div style='max-height:22em;overflow:auto'>{table}</div>"


def _plot_png(facets: pd.DataFrame, name: str | None) -> bytes:
    buffer = io.BytesIO()
    _plot_figure(facets, name).savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()


def _plot_figure(facets: pd.DataFrame, name: str | None) -> Figure:
    from matplotlib.figure import Figure  # no pyplot: nothing is shown or kept but this image

    from mediaframe.plots import facet_counts

    figure = Figure(figsize=(4.5, 3), layout="constrained")
    axes = figure.subplots()
    if name is not None:
        facet_counts(facets, name, ax=axes)
        # The axes sit right of long value labels: their own title would run off this small
        # figure. The figure's title is centred on all of it, and the layout makes room for it.
        figure.suptitle(axes.get_title(), fontsize="medium")
        axes.set_title("")
    return figure
