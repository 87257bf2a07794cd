"""The facet filter in a real browser: Voilà renders it, Chromium clicks it, as a user would.

The notebook starts the emulator in its kernel, on loopback, and displays ``FacetFilter(client)``
with its default debounce; the expected numbers come from the same emulator (same knobs) asked
in-process. What is checked is what the page shows: counts beside values, the total, the code
line, the preview table, buttons, and that the page logged no JavaScript error.

``--update-screenshots`` writes the screenshot of the widget in use to docs/img/facet-filter.png.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, expect

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from tests.ui.conftest import Screen, Voila

#: The emulator of the notebook and of the expectations: 1,644 records over a cap of 1,000.
RECORDS, SEED, CAP = 2000, 7, 1000
NOTEBOOK = f"""\
import mediaframe as mf
from mediaframe.emulator import Emulator
from mediaframe.widgets import FacetFilter

emu = Emulator(records={RECORDS}, seed={SEED}, cap={CAP}).start()
client = mf.connect(emu.base_url, token=emu.token)
picker = FacetFilter(client)
picker
"""
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "facet-filter.png"
#: Milliseconds a shown value may take to follow a click: the debounce, the kernel's searches.
FOLLOW = 20_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[mf.Client]:
    """A client of the notebook's emulator (the same knobs), asked in-process."""
    emu = Emulator(records=RECORDS, seed=SEED, cap=CAP)
    cache = tmp_path_factory.mktemp("cache")
    settings = Settings.from_env().replace(cache_dir=cache, progress=False)
    session = emu.requests_session()
    with mf.connect(emu.base_url, token=emu.token, settings=settings, session=session) as client:
        yield client


@pytest.fixture(scope="module")
def notebook(open_screen: Callable[[str], Screen], voila: Voila) -> Screen:
    """The notebook rendered by Voilà, its widget on a page that lasts the module."""
    screen = open_screen(voila.serve("facet-filter.ipynb", NOTEBOOK))
    expect(screen.page.locator(".mf-facet-filter")).to_be_visible(timeout=90_000)
    return screen


@pytest.fixture
def screen(notebook: Screen) -> Iterator[Screen]:
    """The page with nothing selected; after the test, no JavaScript error may have been logged."""
    _reset(notebook)
    yield notebook
    assert not notebook.errors, f"the page logged JavaScript errors: {notebook.errors}"


def counts(client: mf.Client, facet: str, query: str = "") -> dict[str, str]:
    """The server's counts of ``facet``'s values for ``query``, as the page writes them."""
    facets = client.facets(query)
    rows = facets[facets["facet"] == facet]
    return {str(v): f"{int(n):,}" for v, n in zip(rows["value"], rows["count"], strict=True)}


def hits(client: mf.Client, query: str = "", **filters: str) -> str:
    """The server's total for ``query`` and ``filters``, as the page writes it."""
    return f"{client.api.search_v2(query, per_page=1, **filters)['total_results']:,}"


# --- what a user sees, located by role and label ------------------------------------------------


def facet_box(screen: Screen, facet: str) -> Locator:
    return screen.page.locator(f".mf-facet-{facet}")


def checkbox(screen: Screen, facet: str, value: str) -> Locator:
    return facet_box(screen, facet).get_by_role("checkbox", name=value, exact=True)


def shown_count(screen: Screen, facet: str, value: str) -> Locator:
    """The count beside ``value``: in the row holding that checkbox."""
    # ``has`` is matched inside each row: a locator from the page's root, not the facet's box
    value_box = screen.page.get_by_role("checkbox", name=value, exact=True)
    row = facet_box(screen, facet).locator(".mf-value").filter(has=value_box)
    return row.locator(".mf-count")


def total(screen: Screen) -> Locator:
    return screen.page.locator(".mf-total .mf-count")


def code(screen: Screen) -> Locator:
    return screen.page.locator(".mf-code")


def preview(screen: Screen) -> Locator:
    return screen.page.locator(".mf-preview")


def preview_column(screen: Screen, name: str) -> Locator:
    table = preview(screen).locator("table")
    expect(table.locator("thead th", has_text=name)).to_have_count(1)
    headers = table.locator("thead th").all_inner_texts()
    return table.locator(f"tbody tr td:nth-child({headers.index(name) + 1})")


def _reset(screen: Screen) -> None:
    query = screen.page.get_by_placeholder("search…")
    if query.input_value():
        query.fill("")
        query.press("Enter")
    screen.page.get_by_role("button", name="clear all").click()
    expect(code(screen)).to_have_text("df = client.records()", timeout=FOLLOW)
    expect(screen.page.get_by_label("from", exact=True)).to_have_value("")
    expect(screen.page.locator(".mf-facet-filter input[type=checkbox]:checked")).to_have_count(0)


# --- the tests ------------------------------------------------------------------------------------


def test_values_are_listed_with_the_servers_counts(screen: Screen, server: mf.Client) -> None:
    expect(total(screen)).to_have_text(hits(server), timeout=FOLLOW)
    for facet in ("Type_Name", "Collection_Name"):
        expected = counts(server, facet)
        expect(facet_box(screen, facet).get_by_role("checkbox")).to_have_count(len(expected))
        for value, shown in expected.items():
            expect(checkbox(screen, facet, value)).not_to_be_checked()
            expect(shown_count(screen, facet, value)).to_have_text(shown)
    # a long list scrolls in its box; its rows are not squeezed until their labels are cut
    heights = screen.page.locator(".mf-facet-filter .mf-value").evaluate_all(
        "rows => rows.map(r => [r.getBoundingClientRect().height, r.scrollHeight])"
    )
    assert len(heights) > 20
    tallest = max(height for height, _ in heights)
    assert [h for h, needed in heights if h < tallest - 0.5 or needed > h + 0.5] == []
    # 1,644 records over a cap of 1,000: the page says so and offers the complete harvest
    expect(screen.page.locator(".mf-total")).to_contain_text("more than the 1,000")
    expect(screen.page.get_by_role("button", name="harvest all")).to_be_visible()


def test_clicking_values_refines_total_code_and_preview(
    screen: Screen, server: mf.Client, request: pytest.FixtureRequest
) -> None:
    types = counts(server, "Type_Name")
    checkbox(screen, "Type_Name", "video").check()
    expect(total(screen)).to_have_text(types["video"], timeout=FOLLOW)
    expect(code(screen)).to_have_text("df = client.records('(type:video)')")
    expect(preview_column(screen, "media_type")).to_have_text(["video"] * 10)
    expect(screen.page.get_by_role("button", name="harvest all")).to_be_hidden()

    # a second value of the same facet: OR
    checkbox(screen, "Type_Name", "audio").check()
    either = "((type:video) OR (type:audio))"
    expect(total(screen)).to_have_text(hits(server, either), timeout=FOLLOW)
    expect(code(screen)).to_have_text(f"df = client.records('{either}')")

    # a value of another facet: AND; each facet is counted within the other facets' values
    checkbox(screen, "Collection_Name", "Video rushes").check()
    rushes = 'collection:"Video rushes"'
    both = f"{either} AND ({rushes})"
    expect(code(screen)).to_have_text(f"df = client.records('{both}')", timeout=FOLLOW)
    expect(total(screen)).to_have_text(hits(server, both), timeout=FOLLOW)
    for value, shown in counts(server, "Type_Name", rushes).items():
        expect(shown_count(screen, "Type_Name", value)).to_have_text(shown)
    in_rushes = counts(server, "Collection_Name", either)["Video rushes"]
    expect(shown_count(screen, "Collection_Name", "Video rushes")).to_have_text(in_rushes)
    _screenshot(screen, request)

    checkbox(screen, "Type_Name", "video").uncheck()
    expect(total(screen)).to_have_text(hits(server, f"(type:audio) AND ({rushes})"), timeout=FOLLOW)

    # "clear" of one facet, then "clear all"
    facet_box(screen, "Type_Name").get_by_role("button", name="clear", exact=True).click()
    expect(total(screen)).to_have_text(hits(server, rushes), timeout=FOLLOW)
    expect(checkbox(screen, "Type_Name", "audio")).not_to_be_checked()
    expect(checkbox(screen, "Collection_Name", "Video rushes")).to_be_checked()
    screen.page.get_by_role("button", name="clear all").click()
    expect(total(screen)).to_have_text(hits(server), timeout=FOLLOW)
    expect(code(screen)).to_have_text("df = client.records()")
    expect(checkbox(screen, "Collection_Name", "Video rushes")).not_to_be_checked()


def test_an_empty_selection_keeps_its_values_at_zero(screen: Screen, server: mf.Client) -> None:
    press, sound = 'collection:"Press photos"', 'collection:"Sound archive"'
    assert "audio" not in counts(server, "Type_Name", press)
    # no press photo is a sound: reach that selection through the sound archive
    checkbox(screen, "Collection_Name", "Press photos").check()
    expect(total(screen)).to_have_text(hits(server, press), timeout=FOLLOW)
    expect(checkbox(screen, "Type_Name", "audio")).to_have_count(0)  # no value of the selection
    checkbox(screen, "Collection_Name", "Sound archive").check()
    expect(total(screen)).to_have_text(hits(server, f"({press}) OR ({sound})"), timeout=FOLLOW)
    checkbox(screen, "Type_Name", "audio").check()
    checkbox(screen, "Collection_Name", "Sound archive").uncheck()
    expect(total(screen)).to_have_text("0", timeout=FOLLOW)
    expect(preview(screen)).to_have_text("no records")
    # both values stay listed and checked, counted 0, so they can be taken back
    expect(checkbox(screen, "Type_Name", "audio")).to_be_checked()
    expect(shown_count(screen, "Type_Name", "audio")).to_have_text("0")
    expect(checkbox(screen, "Collection_Name", "Press photos")).to_be_checked()
    expect(shown_count(screen, "Collection_Name", "Press photos")).to_have_text("0")
    checkbox(screen, "Type_Name", "audio").uncheck()
    expect(total(screen)).to_have_text(hits(server, press), timeout=FOLLOW)


def test_a_query_without_hits_says_no_records(screen: Screen) -> None:
    query = screen.page.get_by_placeholder("search…")
    query.fill("zebra-crossing-nowhere")
    query.press("Enter")
    expect(total(screen)).to_have_text("0", timeout=FOLLOW)
    expect(code(screen)).to_have_text("df = client.records('(zebra-crossing-nowhere)')")
    expect(preview(screen)).to_have_text("no records")
    # a query the server refuses: its error in the widget, the last answer kept
    query.fill('title:"unclosed')
    query.press("Enter")
    expect(screen.page.locator(".mf-error")).to_contain_text("BadRequestError", timeout=FOLLOW)
    expect(preview(screen)).to_have_text("no records")


def test_a_date_range_narrows_the_total(screen: Screen, server: mf.Client) -> None:
    screen.page.get_by_label("from", exact=True).fill("2020-01-01")
    since = {"date_field": "created_on", "date_min": "2020/01/01"}
    expect(total(screen)).to_have_text(hits(server, **since), timeout=FOLLOW)
    expect(code(screen)).to_have_text(
        "df = client.records(date_field='created_on', date_min='2020/01/01')"
    )
    screen.page.get_by_label("dates", exact=True).select_option("updated_on")
    since["date_field"] = "updated_on"
    expect(total(screen)).to_have_text(hits(server, **since), timeout=FOLLOW)
    screen.page.get_by_label("to", exact=True).fill("2019-12-31")  # ends before it starts
    expect(screen.page.locator(".mf-error")).to_contain_text("after date_max", timeout=FOLLOW)
    expect(total(screen)).to_have_text(hits(server, **since))  # the last good range stays


def test_harvest_all_fetches_every_record_past_the_cap(screen: Screen, server: mf.Client) -> None:
    screen.page.get_by_role("button", name="harvest all").click()
    expect(screen.page.locator(".mf-total")).to_contain_text(
        f"harvested {hits(server)} records (complete)", timeout=60_000
    )
    # with its progress bar, finished, under the widget
    widget = screen.page.locator(".mf-facet-filter")
    expect(widget).to_contain_text("harvesting records (done): 100%")


def _screenshot(screen: Screen, request: pytest.FixtureRequest) -> None:
    """The widget in use, kept with the test's files (and in the docs with --update-screenshots)."""
    path = request.getfixturevalue("tmp_path") / "facet-filter.png"
    screen.page.locator(".mf-facet-filter").screenshot(path=path, animations="disabled")
    if request.config.getoption("--update-screenshots"):
        SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(path, SCREENSHOT)
