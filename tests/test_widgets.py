"""The facet filter: its pure state, its server round trips and its widgets, without a kernel."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator

import pandas as pd
import pytest

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.widgets import FacetFilter, Selection
from mediaframe.widgets import facet_filter as facet_filter_module


@pytest.fixture(scope="module")
def emu() -> Emulator:
    return Emulator(records=2000, seed=7, cap=1000)


@pytest.fixture
def searches(emu: Emulator) -> list[str]:
    """Paths of the search requests the client sends, in order."""
    return []


@pytest.fixture
def client(emu: Emulator, searches: list[str], tmp_path) -> Iterator[mf.Client]:
    session = emu.requests_session()

    def note(response, *args, **kwargs):
        if "/search/" in response.request.path_url:
            searches.append(response.request.path_url.split("?")[0])

    session.hooks["response"].append(note)
    settings = Settings.from_env().replace(cache_dir=tmp_path, progress=False)
    with mf.connect(emu.base_url, token=emu.token, settings=settings, session=session) as c:
        yield c


def _facet(client: mf.Client, name: str, query: str = "", **filters) -> pd.Series:
    facets = client.facets(query, **filters)
    return facets[facets["facet"] == name].set_index("value")["count"]


# --- Selection: pure ---------------------------------------------------------------------------


def test_selection_ors_within_a_facet_and_ands_across_in_parentheses() -> None:
    selection = (
        Selection("sunset OR dawn")
        .select("Type_Name", "image", "type:image")
        .select("Type_Name", "video", "type:video")
        .select("Keywords", "city", 'field.Keywords="city"')
    )
    assert selection.full_query() == (
        '(sunset OR dawn) AND ((type:image) OR (type:video)) AND (field.Keywords="city")'
    )
    without = selection.full_query(without="Type_Name")
    assert without == '(sunset OR dawn) AND (field.Keywords="city")'


def test_selection_keeps_a_value_query_with_except_whole() -> None:
    # EXCEPT binds loosest: unwrapped, "a EXCEPT b AND c" would drop c from the exception
    selection = Selection().select("X", "a", "a EXCEPT b").select("Y", "c", "c")
    assert selection.full_query() == "(a EXCEPT b) AND (c)"


def test_deselect_and_clear() -> None:
    selection = Selection().select("T", "a", "qa").select("T", "b", "qb").select("K", "c", "qc")
    assert selection.deselect("T", "a").full_query() == "(qb) AND (qc)"
    assert "T" not in selection.deselect("T", "a").deselect("T", "b").values
    assert selection.clear("T").full_query() == "(qc)"
    dated = selection.with_dates("updated_on", dt.date(2024, 1, 2), None)
    assert dated.clear().full_query() == "" and dated.clear().search_filters() == {}


def test_dates_are_sent_as_ymd_with_their_field_and_checked() -> None:
    selection = Selection(filters={"record_type": "image"}).with_dates(
        "updated_on", dt.date(2024, 1, 2), "2024-3-4"
    )
    assert selection.search_filters() == {
        "record_type": "image",
        "date_field": "updated_on",
        "date_min": "2024/01/02",
        "date_max": "2024/03/04",
    }
    with pytest.raises(mf.InvalidParameterError, match="after date_max"):
        Selection().with_dates("created_on", "2024/05/01", "2024/01/01")
    with pytest.raises(mf.InvalidParameterError, match="not a real day"):
        Selection().with_dates("created_on", "2024/02/31", None)
    with pytest.raises(mf.InvalidParameterError, match="date_field='taken_on'"):
        Selection().with_dates("taken_on", "2024/01/01", None)


def test_selection_refuses_filters_it_chooses_itself() -> None:
    with pytest.raises(mf.InvalidParameterError, match="per_page"):
        Selection(filters={"per_page": 5})
    with pytest.raises(mf.InvalidParameterError, match="record_type must be one of"):
        Selection(filters={"record_type": "photo"})


def test_code_is_a_records_statement() -> None:
    selection = Selection("it's", filters={"bases": [1]}).select("K", "a", 'field.K="a"')
    simple = Selection(filters={"record_type": "image"}).select("T", "a", "type:audio")
    assert simple.code() == "df = client.records('(type:audio)', record_type='image')"
    namespace: dict = {}

    class Recorder:
        def records(self, *args, **kwargs):
            return args, kwargs

    exec(selection.code(), {"client": Recorder()}, namespace)
    assert namespace["df"] == (('(it\'s) AND (field.K="a")',), {"bases": [1]})
    assert Selection().code() == "df = client.records()"


# --- FacetFilter against the emulator ---------------------------------------------------------


def test_selecting_a_value_asks_the_server_and_total_is_its_count(client: mf.Client) -> None:
    picker = FacetFilter(client, debounce=0)
    types = _facet(client, "Type_Name")
    assert picker.total == _facet(client, "Collection_Name").sum()
    picker.select("Type_Name", "video")
    assert picker.total == types["video"]
    assert picker.query == "(type:video)"
    assert set(picker.frame["media_type"]) == {"video"}
    assert len(picker.frame) == 10
    # the selected facet keeps its other values (to OR them), counted without itself
    assert picker.facets.query("facet == 'Type_Name'").set_index("value")["count"].equals(types)
    picker.select("Type_Name", "audio")
    assert picker.total == types["video"] + types["audio"]
    keywords = _facet(client, "Keywords", picker.query)
    picker.select("Keywords", "city")
    assert picker.total == keywords["city"]
    picker.deselect("Type_Name", "video")
    assert picker.total == _facet(client, "Keywords", "(type:audio)")["city"]
    picker.clear("Keywords")
    assert picker.total == types["audio"]
    picker.clear()
    assert picker.query == "" and picker.total == types.sum()


def test_code_reproduces_the_selection(client: mf.Client) -> None:
    picker = FacetFilter(client, "sunset", debounce=0, record_type="image")
    picker.select("Collection_Name", "Nature")
    picker.dates(dt.date(2018, 1, 1), dt.date(2022, 12, 31))
    namespace: dict = {}
    exec(picker.code, {"client": client}, namespace)
    assert len(namespace["df"]) == picker.total > 0
    assert picker.filters["record_type"] == "image"


def test_over_the_cap_it_says_so_and_harvests_everything(client: mf.Client) -> None:
    picker = FacetFilter(client, debounce=0)
    assert picker.total > 1000 and picker.capped
    df = picker.harvest()
    assert len(df) == picker.total
    assert mf.HarvestReport.from_frame(df).complete
    picker.select("Type_Name", "audio")
    assert not picker.capped


def test_unknown_facet_or_value_is_named(client: mf.Client) -> None:
    picker = FacetFilter(client, debounce=0)
    with pytest.raises(mf.InvalidParameterError, match="no facet 'Colour'"):
        picker.select("Colour", "red")
    with pytest.raises(mf.InvalidParameterError, match=r"no value 'gif'.*'image'"):
        picker.select("Type_Name", "gif")


def test_a_burst_of_changes_costs_one_refresh(client: mf.Client, searches: list[str]) -> None:
    picker = FacetFilter(client, debounce=0.2)
    view = picker.widget and picker._view
    searches.clear()
    for value in ("image", "video", "audio"):
        picker.select("Type_Name", value)
    picker.search("sunset")
    assert "asking the server" in view.total.value
    picker.wait()
    assert f">{picker.total:,}<" in view.total.value  # shown by the timer's thread
    # one refresh: the selection, its one selected facet without itself, and the preview page
    assert sorted(searches) == ["/api/v1/search/", "/api/v2/search/", "/api/v2/search/"]
    assert picker.total == _facet(client, "Type_Name", "sunset")[["image", "video", "audio"]].sum()


def test_two_filters_at_once_keep_to_themselves(client: mf.Client) -> None:
    """Two widgets in one notebook, on one client, clicked in turn while both are refreshing."""
    first, second = FacetFilter(client, debounce=0.05), FacetFilter(client, debounce=0.05)
    views = [picker.widget and picker._view for picker in (first, second)]
    assert views[0] is not views[1] and views[0].box is not views[1].box
    _value_row(first, "Type_Name", "image").children[0].value = True
    _value_row(second, "Collection_Name", "Video rushes").children[0].value = True
    _value_row(first, "Type_Name", "video").children[0].value = True
    first.wait(), second.wait()
    assert first.code == "df = client.records('((type:image) OR (type:video))')"
    assert second.code == "df = client.records('(collection:\"Video rushes\")')"
    types = _facet(client, "Type_Name")
    assert first.total == types["image"] + types["video"]
    assert second.total == _facet(client, "Collection_Name")["Video rushes"]
    assert f">{first.total:,}<" in views[0].total.value
    assert f">{second.total:,}<" in views[1].total.value
    # a click in one leaves the other's boxes as they were
    assert not _value_row(second, "Type_Name", "image").children[0].value
    assert not _value_row(first, "Collection_Name", "Video rushes").children[0].value


def test_a_stale_answer_never_overwrites_a_newer_one(
    client: mf.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    picker = FacetFilter(client, debounce=0)
    release, started = threading.Event(), threading.Event()
    ask = facet_filter_module.ask

    def slow_for_everything(c: mf.Client, selection: Selection):
        if not selection.values:
            started.set()
            release.wait(10)
        return ask(c, selection)

    monkeypatch.setattr(facet_filter_module, "ask", slow_for_everything)
    # the refresh of the current state, run on a thread as a debounce timer would: it is slow
    old = threading.Thread(target=picker._refresh, args=(picker._generation,))
    old.start()
    started.wait(10)
    picker.select("Type_Name", "flash")  # generation 2, answered at once
    release.set()
    old.join(10)
    assert picker.total == _facet(client, "Type_Name")["flash"]


def test_server_errors_are_kept_and_shown_not_raised(client: mf.Client) -> None:
    picker = FacetFilter(client, debounce=0)
    picker.search('title:"unclosed')
    assert picker.error and "BadRequestError" in picker.error
    picker.search("")
    assert picker.error is None


def test_a_server_that_refuses_still_shows_the_widget_and_retry_asks_again(tmp_path) -> None:
    emu = Emulator(records=200, seed=3, cap=1000)
    emu.set_faults(fail_rate=1.0)  # every request answered 500
    settings = Settings.from_env().replace(cache_dir=tmp_path, progress=False, retries=0)
    session = emu.requests_session()
    with mf.connect(emu.base_url, token=emu.token, settings=settings, session=session) as client:
        picker = FacetFilter(client, debounce=0)
        assert picker.error and "ServerError" in picker.error
        bundle = picker._repr_mimebundle_()  # displaying it raises nothing
        assert "application/vnd.jupyter.widget-view+json" in bundle
        assert "no answer from the server" in bundle["text/html"]
        view = picker._view
        assert "ServerError" in view.error.value and "(no answer)" in view.total.value
        assert view.retry.layout.display is None and view.harvest_button.layout.display == "none"
        with pytest.raises(mf.MediaframeError, match=r"\.refresh\(\) asks again"):
            _ = picker.total
        emu.set_faults(fail_rate=0.0)  # the server is back: the retry button asks again
        view.retry.click()
        assert picker.error is None
        assert picker.total == client.api.search_v2("", per_page=1)["total_results"]
        assert view.error.value == "" and view.retry.layout.display == "none"
        assert f"{picker.total:,}</span> records" in view.total.value


def test_rich_display_shows_state_and_the_widget(client: mf.Client) -> None:
    picker = FacetFilter(client, debounce=0)
    picker.select("Type_Name", "image")
    bundle = picker._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "(type:image)" in bundle["text/html"] and "959" in bundle["text/html"]
    assert repr(picker) == "<FacetFilter '(type:image)': 959 records>"
    assert bundle["text/plain"] == repr(picker)  # not the widget's "VBox(children=(…"


def test_displaying_a_filter_right_after_a_change_shows_its_answer(
    client: mf.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The usual cell `picker.select(...); picker`: the display waits for the debounced refresh,
    # which needs the filter's lock to apply its answer; waiting under that lock hung the kernel.
    picker = FacetFilter(client, debounce=0.3)
    picker.select("Type_Name", "image")  # the refresh is pending on the debounce timer
    waiting = threading.Event()
    ask, wait = facet_filter_module.ask, picker.wait

    def ask_once_the_display_waits(c: mf.Client, selection: Selection):
        waiting.wait(30)  # however loaded the machine, the refresh comes while the display waits
        return ask(c, selection)

    def noted_wait() -> None:
        waiting.set()
        wait()

    monkeypatch.setattr(facet_filter_module, "ask", ask_once_the_display_waits)
    monkeypatch.setattr(picker, "wait", noted_wait)
    bundle: dict = {}
    display = threading.Thread(target=lambda: bundle.update(picker._repr_mimebundle_()))
    display.daemon = True  # left behind if it hangs, so that the run still ends
    display.start()
    display.join(60)  # a guard against hanging for ever, not a measure of speed
    assert not display.is_alive(), "displaying the filter hung"
    assert picker.total == _facet(client, "Type_Name")["image"]
    assert f">{picker.total:,}<" in bundle["text/html"]
    assert f"{picker.total:,}</span> records" in picker._view.total.value


# --- the widgets, driven like a user would ------------------------------------------------------


def _value_row(picker: FacetFilter, facet: str, value: str):
    box = picker._view.boxes[facet]
    rows = box.children[-1].children
    return next(row for row in rows if row.children[0].description == value)


def test_clicking_values_in_the_widget_drives_the_state(client: mf.Client) -> None:
    picker = FacetFilter(client, debounce=0)
    view_box = picker.widget
    view = picker._view
    types = _facet(client, "Type_Name")
    row = _value_row(picker, "Type_Name", "document")
    assert row.children[1].value == f"{types['document']:,}"
    assert "mf-count" in row.children[1]._dom_classes
    assert "mf-facet-Type_Name" in view.boxes["Type_Name"]._dom_classes
    row.children[0].value = True
    assert picker.query == "(type:document)"
    assert f">{types['document']:,}<" in view.total.value
    assert "client.records(&#x27;(type:document)&#x27;)" in view.code.value
    assert "mf-code" in view.code._dom_classes
    assert _value_row(picker, "Type_Name", "document").children[0].value is True
    _value_row(picker, "Type_Name", "image").children[0].value = True
    assert picker.total == types["document"] + types["image"]
    view.boxes["Type_Name"].children[0].children[1].click()  # the facet's "clear"
    assert picker.query == ""
    view.search.value = "sunset"
    assert picker.query == "(sunset)"
    view.date_min.value = dt.date(2020, 1, 1)
    assert picker.filters == {"date_field": "created_on", "date_min": "2020/01/01"}
    view.date_field.value = "updated_on"
    assert picker.filters["date_field"] == "updated_on"
    view.clear_all.click()
    assert picker.filters == {} and picker.query == "(sunset)"
    assert view.date_min.value is None
    assert view_box is picker.widget


def test_a_click_while_a_refresh_is_shown_is_not_lost(
    client: mf.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen in the browser: the debounce timer's thread shows an answer (drawing its plot) while
    # the kernel's thread handles the user's next click; that click must count.
    from mediaframe.widgets import view as view_module

    picker = FacetFilter(client, debounce=0.01)
    assert picker.widget is not None  # the view is built
    drawing, release = threading.Event(), threading.Event()
    draw = view_module._plot_png

    def slow_plot(facets, name):
        drawing.set()
        release.wait(10)
        return draw(facets, name)

    monkeypatch.setattr(view_module, "_plot_png", slow_plot)
    picker.select("Type_Name", "audio")  # its answer is shown by the timer, slowly
    assert drawing.wait(10)
    rushes = _value_row(picker, "Collection_Name", "Video rushes").children[0]
    seen: list[bool] = []
    rushes.observe(lambda change: seen.append(change["new"]), "value")
    click = threading.Thread(target=setattr, args=(rushes, "value", True))
    click.start()  # the kernel's thread: waits for the refresh being shown, then counts
    release.set()
    click.join(10)
    picker.wait()
    assert picker.query == '(type:audio) AND (collection:"Video rushes")'
    assert seen == [True]  # never unticked by the refresh shown meanwhile


def test_a_bad_date_range_is_said_in_the_widget(client: mf.Client) -> None:
    picker = FacetFilter(client, debounce=0)
    view = picker.widget and picker._view
    view.date_min.value = dt.date(2024, 5, 1)
    view.date_max.value = dt.date(2024, 1, 1)
    assert "after date_max" in view.error.value
    assert picker.filters == {"date_field": "created_on", "date_min": "2024/05/01"}


def test_the_cap_note_and_the_harvest_button(client: mf.Client) -> None:
    picker = FacetFilter(client, debounce=0)
    view = picker.widget and picker._view
    assert "one search hands out" in view.total.value
    assert view.harvest_button.layout.display is None
    view.harvest_button.click()
    assert picker.harvested is not None and len(picker.harvested) == picker.total
    assert "harvested" in view.total.value
    _value_row(picker, "Type_Name", "flash").children[0].value = True
    assert view.harvest_button.layout.display == "none"


def test_preview_and_plot_show_the_selection(client: mf.Client) -> None:
    picker = FacetFilter(client, debounce=0)
    view = picker.widget and picker._view
    picker.select("Type_Name", "audio")
    assert view.preview.value.count("</tr>") == 11  # header and ten records
    assert bytes(view.plot.value).startswith(b"\x89PNG")


def test_facets_keep_their_place_when_values_are_selected(client: mf.Client) -> None:
    picker = FacetFilter(client, debounce=0)
    view = picker.widget and picker._view
    order = list(view.facets.children)
    assert len(order) > 2
    picker.select("Type_Name", "audio")
    picker.select("Collection_Name", "Sound archive")
    assert list(view.facets.children) == order


def test_the_plots_title_fits_in_its_image(client: mf.Client) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from mediaframe.widgets import view as view_module

    figure = view_module._plot_figure(client.facets(), "Collection_Name")
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    texts = [t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_text"))]
    assert "Records per Collection_Name (server counts)" in texts
    drawn = figure.get_tightbbox(renderer).transformed(figure.dpi_scale_trans)  # in pixels
    assert figure.bbox.x0 <= drawn.x0 and drawn.x1 <= figure.bbox.x1
    assert figure.bbox.y0 <= drawn.y0 and drawn.y1 <= figure.bbox.y1


def test_long_value_lists_get_a_search_box(client: mf.Client) -> None:
    picker = FacetFilter(client, debounce=0)
    view = picker.widget and picker._view
    rows = pd.DataFrame(
        {"value": [f"v{i}" for i in range(30)], "count": range(30), "query": ["q"] * 30}
    )
    view._show_facets(rows.assign(facet="Big"), picker.selection)
    box = view.boxes["Big"]
    find = box.children[1]
    assert "mf-find" in find._dom_classes and find.layout.display is None
    find.value = "v2"
    rows = box.children[2].children
    shown = [r.children[0].description for r in rows if r.layout.display is None]
    assert shown == ["v2", *[f"v2{i}" for i in range(10)]]
    assert view.boxes["Type_Name"].children[1].layout.display == "none"
