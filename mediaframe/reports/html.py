"""Frames to one self-contained HTML page: escaped, sortable, with its provenance, offline.

The page loads nothing: styles and a few lines of sorting script are inline, figures are inline
SVG, and a Content-Security-Policy forbids every fetch and every script but that one (by its
hash), so that even a value that slipped past escaping could not run. Every value and name goes
through Jinja2's autoescaping.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import hashlib
import numbers
import os
import re
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mediaframe import __version__
from mediaframe.exceptions import EmptyPlotWarning, ExportError, InvalidParameterError
from mediaframe.reports.cells import indexed, plain_text
from mediaframe.reports.files import atomic_path

__all__ = [
    "MAX_CELLS",
    "MAX_CELL_CHARS",
    "MAX_ROWS",
    "Section",
    "clean_svg",
    "draw",
    "page_notes",
    "provenance_of",
    "render_html",
    "rows_shown",
    "svg_of",
    "to_html",
]

#: Rows a table of a page shows unless told otherwise (``max_rows=``): a page of a million rows
#: would be hundreds of megabytes no browser opens. Every row is in the CSV, Excel or parquet
#: export, which the page says under each table it cuts.
MAX_ROWS = 10_000
#: Cells a table of a page shows at most: a frame of thousands of columns (caption fields, or
#: technical keys a server made up) shows fewer rows, so that its page still opens.
MAX_CELLS = 1_000_000
#: Characters a cell of a page shows at most unless told otherwise (``max_cell_chars=``): one
#: 50 MB caption would make a 50 MB page. Two thousand are a long description, several
#: paragraphs; a cell cut ends in an ellipsis and says how many characters it left out, which
#: the CSV, Excel or parquet export holds.
MAX_CELL_CHARS = 2_000
# How far a cut moves back so as not to part a letter from its accents, or an emoji sequence
_CLUSTER = 32

_SORT_SCRIPT = """
document.querySelectorAll("table.mf-sortable th").forEach(function (th) {
  th.tabIndex = 0;
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex;
    var up = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].textContent, y = b.cells[col].textContent;
      var nx = parseFloat(x), ny = parseFloat(y), order;
      if (x === "" || y === "") order = (x === "") - (y === "");
      else if (!isNaN(nx) && !isNaN(ny) && isFinite(x) && isFinite(y)) order = nx - ny;
      else order = x.localeCompare(y);
      return up ? order : -order;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""
# What inline SVG may not hold: scripts, embedded documents, event handlers, and links other
# than to the page itself or to an embedded image (matplotlib's raster images are data: URIs);
# nor animation, which sets a link without a href= (<set attributeName="href" to=...>), nor
# page-level elements (<meta http-equiv="refresh">, <base>, <link>), which only a text that
# closes its <svg> early could place. matplotlib writes none of them.
_UNSAFE_SVG = re.compile(
    r"<(?:script|foreignObject|iframe|object|embed|animate\w*|set|meta|base|link)\b"
    r"|\bon\w+\s*="
    r"|(?:href|src)\s*=\s*(?![\"']?\s*(?:#|data:image/(?:png|jpeg);))",
    re.I,
)
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SORT_SCRIPT.encode()).digest()).decode()
CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    f"script-src 'sha256-{_SCRIPT_HASH}'; base-uri 'none'; form-action 'none'"
)


@dataclasses.dataclass
class Section:
    """One table of a page, with what it shows in a sentence and a short summary."""

    title: str
    frame: pd.DataFrame
    explanation: str = ""
    summary: str = ""


def to_html(
    frames: pd.DataFrame | Mapping[str, pd.DataFrame] | Iterable[pd.DataFrame | Section] | Section,
    path: str | os.PathLike[str],
    **options: Any,
) -> Path:
    """Write frames to one self-contained HTML page; see :func:`render_html` for ``options``.

    Examples
    --------
    >>> from mediaframe.reports import to_html
    >>> to_html(client.records("sunset"), "sunset.html")                   # doctest: +SKIP
    """
    page = render_html(frames, **options)
    with atomic_path(path) as partial:
        partial.write_text(page, encoding="utf-8")
    return Path(path)


def render_html(
    frames: pd.DataFrame | Mapping[str, pd.DataFrame] | Iterable[pd.DataFrame | Section] | Section,
    *,
    title: str = "mediaframe export",
    intro: str = "",
    provenance: Mapping[str, Any] | None = None,
    figures: Mapping[str, Any] | None = None,
    notes: Iterable[str] = (),
    max_rows: int | None = MAX_ROWS,
    max_cell_chars: int | None = MAX_CELL_CHARS,
) -> str:
    """The page as text.

    Parameters
    ----------
    frames : a DataFrame, a list of them, a mapping of title to DataFrame, or :class:`Section`
        objects (one, or a list).
    provenance : what the page is about (server, user, query...); by default what the first
        frame's ``attrs`` say (:func:`provenance_of`). The mediaframe version and the time the
        page was made are always added.
    figures : title to a matplotlib Figure (or Axes, or SVG text), embedded as inline SVG.
    notes : sentences shown under the provenance.
    max_rows : rows shown per table, :data:`MAX_ROWS` (10,000) by default, and fewer in a
        table so wide that they would be more than :data:`MAX_CELLS` cells; the page says under
        each table it cuts how many rows were left out and how to get them all. ``None`` shows
        every row, however large the page.
    max_cell_chars : characters shown per cell, :data:`MAX_CELL_CHARS` (2,000) by default; a
        longer text is cut (before it is escaped, never inside a character or between a letter
        and its accent) and ends in "…" with how many characters were left out. ``None`` shows
        every cell whole.
    """
    from jinja2 import Environment, PackageLoader

    # numpy's integers are numbers.Integral too (a count taken from a frame)
    if max_rows is not None and (
        not isinstance(max_rows, numbers.Integral) or isinstance(max_rows, bool) or max_rows < 0
    ):
        raise InvalidParameterError(
            f"max_rows is a number of rows (0 or more), or None for all; not {max_rows!r}"
        )
    if max_cell_chars is not None and (
        not isinstance(max_cell_chars, numbers.Integral)
        or isinstance(max_cell_chars, bool)
        or max_cell_chars < 1
    ):
        raise InvalidParameterError(
            "max_cell_chars is a number of characters (1 or more), or None for whole cells; "
            f"not {max_cell_chars!r}"
        )
    max_rows = None if max_rows is None else int(max_rows)
    max_cell_chars = None if max_cell_chars is None else int(max_cell_chars)
    sections = _sections(frames)
    if provenance is None:
        provenance = provenance_of(sections[0].frame if sections else None)
    meta = {
        _label(str(k), max_cell_chars): _label(_text(v), max_cell_chars)
        for k, v in provenance.items()
        if not _missing(v)
    }
    meta.setdefault("generated at", _now())
    meta["mediaframe version"] = __version__
    anchors: set[str] = set()
    env = Environment(
        loader=PackageLoader("mediaframe.reports", "templates"),
        autoescape=True,
        keep_trailing_newline=True,
    )
    from markupsafe import Markup

    rendered = [_rendered(s, _anchor(s.title, anchors), max_rows, max_cell_chars) for s in sections]
    shown_notes = page_notes(notes)
    if any(section["hidden"] for section in rendered):
        shown_notes.append(
            f"Tables longer than {max_rows:,} rows show their first {max_rows:,}"
            + (
                f", and wide ones fewer, at most {MAX_CELLS:,} cells"
                if any(section["narrowed"] for section in rendered)
                else ""
            )
            + ": the note under each says how many were left out. Every row is in the CSV, "
            "Excel or parquet export."
        )
    if any(section["cut_cells"] for section in rendered):
        shown_notes.append(
            f"Cells longer than {max_cell_chars:,} characters show their first {max_cell_chars:,}"
            ", then … and how many were left out. Every character is in the CSV, Excel or "
            "parquet export; max_cell_chars=None puts whole cells on the page."
        )
    context = {
        "title": _label(str(title), max_cell_chars),
        "intro": intro,
        "csp": CSP,
        "provenance": meta,
        "notes": shown_notes,
        "sections": rendered,
        "figures": [
            {
                "title": _label(str(name), max_cell_chars),
                "anchor": _anchor(f"figure {name}", anchors),
                "svg": Markup(clean_svg(f) if isinstance(f, str) else svg_of(f)),
            }
            for name, f in (figures or {}).items()
        ],
        "script": Markup(_SORT_SCRIPT),
    }
    return env.get_template("page.html.j2").render(context)


def page_notes(notes: str | Iterable[str]) -> list[str]:
    """``notes=`` as a list of sentences: one sentence given alone is one note, not a note per
    character."""
    return [notes] if isinstance(notes, str) else [str(note) for note in notes]


def provenance_of(frame: pd.DataFrame | None, **extra: Any) -> dict[str, Any]:
    """What a harvested frame says about where it came from: server, user, query, filters, when."""
    attrs = dict(getattr(frame, "attrs", None) or {})
    harvest = _mapping(attrs.get("harvest"))
    own = _mapping(attrs.get("mediaframe"))
    facts: dict[str, Any] = {
        "server": own.get("server") or harvest.get("server"),
        "user": own.get("user") or harvest.get("user"),
        "kind": harvest.get("kind"),
        "query": _quoted_query(harvest.get("query", own.get("query"))),
        "filters": harvest.get("filters") or own.get("filters") or None,
        "harvested at": own.get("fetched_at") or harvest.get("fetched_at"),
    }
    if harvest.get("fetched") is not None:
        state = "complete" if harvest.get("complete") else "INCOMPLETE"
        total = harvest.get("total_results")
        facts["rows"] = f"{_count(harvest['fetched'])} of {_count(total)} ({state})"
    facts.update(extra)
    return {key: value for key, value in facts.items() if not _missing(value)}


def draw(makers: Mapping[str, Callable[[], Any]]) -> tuple[dict[str, str], list[str]]:
    """Draw figures (each maker returns an Axes, e.g. from :mod:`mediaframe.plots`) as SVG.

    Returns the SVG texts by title, and notes on what could not be drawn: nothing to plot, a
    frame without the column a figure reads, or no matplotlib (the ``notebook`` extra), in
    which case the page simply has no figures.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        install = 'pip install -e ".[notebook]" in the mediaframe folder'
        return {}, [f"no figures: matplotlib is not installed ({install})"]
    figures: dict[str, str] = {}
    notes: list[str] = []
    for title, make in makers.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EmptyPlotWarning)
            try:
                axes = make()
            except InvalidParameterError as err:  # a frame of a few columns: the page without it
                notes.append(f"no figure {title!r}: {err}")
                continue
        try:
            empty = [w for w in caught if issubclass(w.category, EmptyPlotWarning)]
            if empty:
                notes.append(f"no figure {title!r}: {empty[0].message}")
            else:
                figures[title] = svg_of(axes)
        finally:
            plt.close(axes.figure)
    return figures, notes


def _count(value: Any) -> str:
    """A count as people read it (1,234), whatever a frame's attrs hold ("?" for nothing)."""
    if value is None:
        return "?"
    # numpy's integers too (an attrs count read from a frame), never a bool
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    return f"{int(value):,}" if whole else str(value)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def svg_of(figure: Any) -> str:
    """A matplotlib Figure (or Axes) as inline SVG text, with nothing that could fetch or run."""
    import io

    figure = getattr(figure, "figure", figure)
    if not hasattr(figure, "savefig"):
        raise InvalidParameterError(
            f"figures are matplotlib Figures or Axes, not {type(figure).__name__}"
        )
    import matplotlib

    buffer = io.StringIO()
    metadata = {"Date": None, "Creator": None, "Format": None, "Type": None}
    # Text drawn as paths, whatever the user's rcParams say: a label is a server's text (a
    # collection's or a feed's name), and as SVG text 'online=1' would read as a handler.
    with matplotlib.rc_context({"svg.fonttype": "path"}):
        figure.savefig(buffer, format="svg", metadata=metadata, bbox_inches="tight")
    return clean_svg(buffer.getvalue())


def clean_svg(svg: str) -> str:
    """SVG text fit to inline: no prolog, doctype, metadata or comments; refused if it holds a
    script, an event handler or a link out of the page."""
    # The prolog, doctype and metadata name outside addresses; comments repeat the labels' text.
    svg = re.sub(
        r"<\?xml.*?\?>|<!DOCTYPE.*?>|<metadata>.*?</metadata>|<!--.*?-->", "", svg, flags=re.S
    )
    svg = svg.strip()
    if not (svg.startswith("<svg") and svg.endswith("</svg>")) or _UNSAFE_SVG.search(svg):
        raise ExportError("the figure's SVG holds a script, a handler or an outside link")
    return svg


def _sections(frames: object) -> list[Section]:
    """The page's sections: what ``to_excel`` takes (a DataFrame, a list of them, a mapping of
    titles to them) and :class:`Section` objects; anything else is told, not a bare error
    halfway through the page."""
    given: list[tuple[str | None, object]]
    if isinstance(frames, Mapping):
        given = [(str(title), frame) for title, frame in frames.items()]
    elif isinstance(frames, Iterable) and not isinstance(frames, str | bytes | pd.DataFrame):
        given = [(None, frame) for frame in frames]
    else:
        given = [(None, frames)]
    sections = []
    for title, item in given:
        shown = item.frame if isinstance(item, Section) else item
        if not isinstance(shown, pd.DataFrame):
            hint = (
                ": make it a frame first, e.g. series.to_frame()"
                if hasattr(shown, "to_frame")
                else ""
            )
            raise InvalidParameterError(
                "to_html takes DataFrames (one, a list, or a mapping of titles to them) or "
                f"Sections; not {type(shown).__name__}{hint}"
            )
        if isinstance(item, Section):
            sections.append(item)
        else:
            sections.append(Section(title if title is not None else _title_of(shown), shown))
    return sections


def _title_of(frame: pd.DataFrame) -> str:
    """A frame's title: the kind of harvest it holds, else ``data``."""
    kind = (frame.attrs.get("harvest") or {}).get("kind") if frame.attrs else None
    return str(kind or "data")


def rows_shown(frame: pd.DataFrame, max_rows: int | None = MAX_ROWS) -> int:
    """How many rows of ``frame`` a page shows: all with ``max_rows=None``, else at most
    ``max_rows``, and at most :data:`MAX_CELLS` cells (one row, however wide)."""
    return _limit(indexed(frame), max_rows)


def _limit(frame: pd.DataFrame, max_rows: int | None) -> int:
    if max_rows is None:
        return len(frame)
    return min(len(frame), max_rows, max(1, MAX_CELLS // max(1, frame.shape[1])))


def _rendered(
    section: Section, anchor: str, max_rows: int | None, max_cell_chars: int | None
) -> dict[str, Any]:
    frame = indexed(section.frame)
    shown = frame.head(_limit(frame, max_rows))
    numeric = [
        pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
        for dtype in frame.dtypes
    ]
    columns = [
        [_cut(_text(v), max_cell_chars) for v in column.astype(object)]
        for _, column in shown.items()
    ]
    # each cell: its text, the characters left out ("" if none) and whether it is a number
    rows = (
        [
            [
                (text, left_out, number)
                for (text, left_out), number in zip(cells, numeric, strict=True)
            ]
            for cells in zip(*columns, strict=True)
        ]
        if columns
        else []
    )
    return {
        "title": _label(section.title, max_cell_chars),
        "anchor": anchor,
        "explanation": section.explanation,
        "summary": section.summary,
        "columns": [_label(str(name), max_cell_chars) for name in frame.columns],
        "rows": rows,
        "hidden": len(shown) < len(frame),
        "cut_cells": any(left_out for row in rows for _, left_out, _ in row),
        "narrowed": max_rows is not None and len(shown) < min(len(frame), max_rows),
        "shown": f"{len(shown):,}",
        "total": f"{len(frame):,}",
        "left_out": f"{len(frame) - len(shown):,}",
        # said when there is no table and no row was left out
        "no_table": "No rows."
        if len(frame) == 0
        else f"{len(frame):,} row{'s' if len(frame) != 1 else ''}, no columns.",
    }


def _text(value: Any) -> str:
    if _missing(value):
        return ""
    if isinstance(value, pd.Timestamp | dt.datetime):
        return value.isoformat()
    if isinstance(value, float):
        # 15 digits hide float noise (0.1 + 0.2); a whole number of more (an id in a float
        # column) is shown whole, or it would read as another id
        digits = repr(abs(value)).split("e")[0].replace(".", "").strip("0")
        if value.is_integer() and abs(value) < 2.0**64 and len(digits) > 15:
            return f"{value:.0f}"
        return f"{value:.15g}"
    return str(plain_text(value))


def _cut(text: str, limit: int | None) -> tuple[str, str]:
    """``text`` cut to ``limit`` characters, and how many it left out (``""`` if none).

    Cut as text, before it is escaped, so that no escape (``&amp;``) is cut in two, and on a
    character, so that no UTF-8 sequence is; moved back to the start of a cluster, so that an
    accent or an emoji's modifier is not shown without what it belongs to.
    """
    if limit is None or len(text) <= limit:
        return text, ""
    end = limit
    while end > max(0, limit - _CLUSTER) and _continues(text, end):
        end -= 1
    if end == 0 or _continues(text, end):  # accents longer than any cluster: cut where asked
        end = limit
    return text[:end], f"{len(text) - end:,}"


def _label(text: str, limit: int | None) -> str:
    """A title, column name or provenance value cut as a cell is (:func:`_cut`): one 50 MB
    column name made a 50 MB page."""
    shown, left_out = _cut(text, limit)
    return f"{shown}… ({left_out} more characters)" if left_out else shown


def _continues(text: str, at: int) -> bool:
    """Whether ``text[at]`` belongs to the character before it: an accent, a joiner or what
    follows one, a variation selector, a skin tone."""
    char = text[at]
    return (
        unicodedata.category(char) in ("Mn", "Mc", "Me")
        or char in "\u200d\ufe0e\ufe0f"
        or (at > 0 and text[at - 1] == "\u200d")
        or "\U0001f3fb" <= char <= "\U0001f3ff"
    )


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _anchor(title: str, used: set[str]) -> str:
    # from the title's first words: a title of megabytes made an anchor of as many
    base = re.sub(r"[^a-z0-9]+", "-", title[:_ANCHOR_CHARS].lower()).strip("-") or "section"
    anchor, number = base, 1
    while anchor in used:
        number += 1
        anchor = f"{base}-{number}"
    used.add(anchor)
    return anchor


_ANCHOR_CHARS = 64


def _quoted_query(query: Any) -> Any:
    if query is None:
        return None
    return repr(str(query)) if query == "" else str(query)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
