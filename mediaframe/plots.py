"""One-call plots of mediaframe frames, each drawn on a matplotlib ``Axes`` and returning it.

Every function has the form ``name(frame, *, ax=None, **style) -> Axes``: it draws on ``ax``
(a new figure when ``None``), gives the axes a title and axis labels, passes ``style`` to the
artist it draws (``color=``, ``alpha=``, ``cmap=`` …) and returns the axes. On a frame with
nothing to draw it warns (:class:`~mediaframe.EmptyPlotWarning`) and returns the empty axes.
Nothing is shown (no ``plt.show()``) and no global setting (``rcParams``) is changed.

matplotlib is imported when a plot is drawn, not with this module: ``pip install -e
".[notebook]"`` in the mediaframe folder installs it.

>>> import mediaframe.plots as mfp
>>> ax = mfp.media_types(client.records())        # doctest: +SKIP
>>> ax.figure.savefig("types.svg")                 # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import numpy as np
import pandas as pd

from mediaframe.exceptions import EmptyPlotWarning, InvalidParameterError
from mediaframe.frames import COLLECTION_RIGHTS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "PERIODS",
    "collections",
    "facet_counts",
    "feed_activity",
    "media_types",
    "positions",
    "rights",
    "status_usage",
    "technical",
    "timeline",
]

#: Periods ``timeline`` and ``feed_activity`` count by, with how an axis names them.
PERIODS = {"D": "day", "W": "week", "M": "month", "Q": "quarter", "Y": "year"}
#: Bars drawn at most by the bar charts of text values; the rest is summed as "other".
TOP = 20
_INSTALL = 'pip install -e ".[notebook]" in the mediaframe folder'
#: Inches of figure height per row of a heat map drawn on a new figure (its labels are ~8 pt).
_ROW_INCHES = 0.2


class _HasCollections(Protocol):
    collections: pd.DataFrame


#: Collection names: ``me()``, ``me().collections`` (``base_id``, ``name``) or ``{base_id: name}``.
Names: TypeAlias = "_HasCollections | pd.DataFrame | Mapping[int, str] | None"


# --- records --------------------------------------------------------------------------------


def timeline(
    frame: pd.DataFrame,
    *,
    by: str = "created_on",
    period: str = "M",
    ax: Axes | None = None,
    **style: Any,
) -> Axes:
    """Records per period of ``created_on`` (or ``by="updated_on"``), as a line over time.

    ``period`` is ``D``, ``W``, ``M`` (default), ``Q`` or ``Y``; periods without records count 0.
    Records without the date (NaT) are left out and named in the title.
    """
    counts, undated = _per_period(frame, by, period)
    ax = _axes(ax)
    what = by.removesuffix("_on")
    ax.set_title(f"Records {what} per {PERIODS[period]}" + _undated(undated))
    ax.set_xlabel(f"{by} ({PERIODS[period]}, UTC)")
    ax.set_ylabel("records")
    if counts.empty:
        return _empty(ax, f"no record has a {by}")
    ax.plot(counts.index, counts.to_numpy(), **{"marker": "o", "markersize": 3, **style})
    ax.set_ylim(bottom=0)
    return ax


def media_types(frame: pd.DataFrame, *, ax: Axes | None = None, **style: Any) -> Axes:
    """Records per ``media_type``, as horizontal bars, most frequent on top."""
    return _bars(
        _column(frame, "media_type"),
        ax=ax,
        title="Records per media type",
        label="media type",
        style=style,
    )


def collections(
    frame: pd.DataFrame, *, names: Names = None, ax: Axes | None = None, **style: Any
) -> Axes:
    """Records per collection, as horizontal bars.

    Collections are named from a ``collection`` column when the frame has one, else from
    ``names`` (``client.me()``, its ``collections`` or ``{base_id: name}``), else ``base <id>``.
    """
    labels = _collection_labels(frame, names)
    return _bars(labels, ax=ax, title="Records per collection", label="collection", style=style)


def technical(
    frame: pd.DataFrame, name: str, *, bins: int = 30, ax: Axes | None = None, **style: Any
) -> Axes:
    """The distribution of one technical value (``FileSize``, ``Width``, ``ISO``, ``CameraModel``…).

    Numbers are drawn as a histogram of ``bins`` bins, text as bars of the most frequent values.
    Records without the value are left out and counted in the title.
    """
    values = _column(frame, name)
    present = values.dropna()
    title = f"{name} of records" + _without(len(values) - len(present))
    if pd.api.types.is_bool_dtype(values.dtype) or not pd.api.types.is_numeric_dtype(values.dtype):
        # a technical value is missing where it does not apply (no CameraModel on a sound):
        # left out, as for numbers, not a "(not set)" bar outgrowing the values themselves
        why = f"no record has a value for {name!r}"
        return _bars(present, ax=ax, title=title, label=name, style=style, why=why)
    ax = _axes(ax)
    ax.set_title(title)
    ax.set_xlabel(name)
    ax.set_ylabel("records")
    if present.empty:
        return _empty(ax, f"no record has a value for {name!r}")
    ax.hist(present.to_numpy(dtype=float), bins=bins, **style)
    return ax


def positions(frame: pd.DataFrame, *, ax: Axes | None = None, **style: Any) -> Axes:
    """Where records were taken: a scatter of ``Longitude`` (x) against ``Latitude`` (y).

    Records without both coordinates, with one that is not a number (a server may send text
    such as ``"48 deg 51' N"``: the column is then text), or with coordinates outside the
    globe, are left out and counted in the title.
    """
    longitude = _degrees(_column(frame, "Longitude"))
    latitude = _degrees(_column(frame, "Latitude"))
    keep = (
        longitude.notna() & latitude.notna() & longitude.abs().le(180) & latitude.abs().le(90)
    ).fillna(False)
    ax = _axes(ax)
    ax.set_title("Record positions" + _without(int((~keep).sum())))
    ax.set_xlabel("longitude (°)")
    ax.set_ylabel("latitude (°)")
    if not keep.any():
        return _empty(ax, "no record has both Latitude and Longitude")
    x = longitude[keep].to_numpy(dtype=float)
    y = latitude[keep].to_numpy(dtype=float)
    ax.scatter(x, y, **{"s": 8, "alpha": 0.6, **style})
    return ax


def _degrees(values: pd.Series) -> pd.Series:
    """``values`` as numbers; text that is not one (the column keeps a server's text) is NA."""
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return values.astype("Float64")
    return pd.to_numeric(values.astype(object), errors="coerce").astype("Float64")


def status_usage(
    frame: pd.DataFrame,
    *,
    names: Names = None,
    statuses: pd.DataFrame | None = None,
    ax: Axes | None = None,
    **style: Any,
) -> Axes:
    """The share of records with each status bit on, per collection, as a heat map.

    Reads the boolean ``status_<bit>`` columns of an extended harvest
    (``client.records(extended=True)``). Bits are labelled from ``statuses``
    (``client.me().statuses``) when given — labels belong to collections, so a bit whose label
    differs between collections is shown by number only. Collections are named as in
    :func:`collections`.
    """
    bits = sorted(
        (int(col.removeprefix("status_")), col)
        for col in frame.columns
        if isinstance(col, str) and col.startswith("status_") and col[7:].isdigit()
    )
    share = None
    if bits and not frame.empty:
        on = frame[[col for _, col in bits]].astype("boolean").fillna(False).astype(float)
        share = on.groupby(_collection_labels(frame, names).to_numpy()).mean()
    ax = _axes(ax, rows=0 if share is None else len(share))
    ax.set_title("Share of records with each status bit on")
    ax.set_xlabel("status bit")
    ax.set_ylabel("collection")
    if share is None:
        why = "no status_<bit> column (harvest with extended=True)" if not bits else "no records"
        return _empty(ax, why)
    labels = [_bit_label(bit, statuses) for bit, _ in bits]
    _heat_map(ax, share.to_numpy(), rows=list(share.index), columns=labels, style=style)
    return ax


def facet_counts(frame: pd.DataFrame, name: str, *, ax: Axes | None = None, **style: Any) -> Axes:
    """The counts of one facet of ``client.facets()`` (the server's counts), as bars."""
    rows = frame[_column(frame, "facet") == name]
    counts = rows.set_index(rows["value"].astype("string").fillna("(not set)"))["count"]
    counts = counts.astype("Int64").fillna(0).sort_values(ascending=False, kind="stable")
    ax = _axes(ax)
    ax.set_title(f"Records per {name} (server counts)")
    ax.set_xlabel("records")
    ax.set_ylabel(name)
    if counts.empty:
        return _empty(ax, f"the facet {name!r} has no value here")
    shown = counts.iloc[:TOP]
    ax.barh([str(i) for i in shown.index[::-1]], shown.to_numpy(dtype=float)[::-1], **style)
    return ax


# --- rights and feeds -----------------------------------------------------------------------


def rights(frame: pd.DataFrame | _HasCollections, *, ax: Axes | None = None, **style: Any) -> Axes:
    """The rights matrix of ``client.me().collections`` (or of ``client.me()``) as a heat map.

    One row per collection, one column per right (the contract's rights, then any other
    boolean column); a right the server did not state is left blank.
    """
    table = frame if isinstance(frame, pd.DataFrame) else frame.collections
    columns = [c for c in COLLECTION_RIGHTS if c in table.columns]
    columns += [
        c for c in table.columns if c not in columns and pd.api.types.is_bool_dtype(table[c].dtype)
    ]
    ax = _axes(ax, rows=len(table))
    ax.set_title("Collection rights")
    ax.set_xlabel("right")
    ax.set_ylabel("collection")
    if table.empty or not columns:
        return _empty(ax, "no collection rights to show")
    names = table["name"] if "name" in table.columns else table.get("base_id", table.index)
    granted = table[columns].astype("boolean").astype("Float64")
    granted = granted.to_numpy(dtype=float, na_value=np.nan)
    style = {"cmap": "Greens", "vmin": 0, "vmax": 1, **style}
    _heat_map(ax, granted, rows=[str(n) for n in names], columns=columns, style=style, text=False)
    return ax


def feed_activity(
    frame: pd.DataFrame,
    *,
    by: str = "created_on",
    period: str = "Q",
    ax: Axes | None = None,
    **style: Any,
) -> Axes:
    """Feed entries per period (``Q`` by default), stacked by feed (``client.feed_entries()``)."""
    feed = _column(frame, "feed_title" if "feed_title" in frame.columns else "feed_id")
    counts, undated = _per_period(frame, by, period)
    ax = _axes(ax)
    ax.set_title(f"Feed entries per {PERIODS[period]}" + _undated(undated))
    ax.set_xlabel(f"{by} ({PERIODS[period]}, UTC)")
    ax.set_ylabel("entries")
    if counts.empty:
        return _empty(ax, f"no feed entry has a {by}")
    width = (counts.index[1:] - counts.index[:-1]).min() if len(counts) > 1 else None
    width = width * 0.8 if width is not None else pd.Timedelta(days=20)
    bottom = np.zeros(len(counts))
    for name, entries in frame.groupby(feed.astype("string").fillna("(no feed)"), sort=True):
        mine = _per_period(entries, by, period)[0].reindex(counts.index, fill_value=0)
        ax.bar(counts.index, mine.to_numpy(), width=width, bottom=bottom, label=str(name), **style)
        bottom += mine.to_numpy()
    ax.legend(title="feed", fontsize="small")
    return ax


# --- helpers --------------------------------------------------------------------------------


def _axes(ax: Axes | None, *, rows: int = 0) -> Axes:
    """``ax``, or the axes of a new figure, as tall as ``rows`` labelled rows need."""
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # the notebook extra is optional
        raise ImportError(f"mediaframe.plots needs matplotlib: {_INSTALL}") from err
    width, height = plt.rcParams["figure.figsize"]
    # a heat map of many collections: a row per label, legible, instead of labels overprinted
    height = max(height, _ROW_INCHES * rows + 2)
    return plt.subplots(figsize=(width, height), layout="constrained")[1]


def _empty(ax: Axes, why: str) -> Axes:
    warnings.warn(f"nothing to plot: {why}", EmptyPlotWarning, stacklevel=_outside_stacklevel())
    return ax


def _outside_stacklevel() -> int:
    """The stacklevel of the first caller outside mediaframe: the user's line (``df.media.x()``
    in a cell), whether the plot was called directly, through a helper or through ``df.media``."""
    frame, level = sys._getframe(1), 1  # level 1: the caller of this function's caller
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, got {type(frame).__name__}")
    if name not in frame.columns:
        raise InvalidParameterError(
            f"this frame has no {name!r} column; plot a frame from mediaframe "
            f"(client.records(), client.feed_entries() …) or pick one of its columns"
        )
    return frame[name]


def _per_period(frame: pd.DataFrame, by: str, period: str) -> tuple[pd.Series, int]:
    """Counts per period start (every period between the first and the last), and NaT count."""
    if period not in PERIODS:
        raise InvalidParameterError(
            f"period={period!r}: use one of {', '.join(PERIODS)} ({', '.join(PERIODS.values())})"
        )
    dates = pd.to_datetime(_column(frame, by), utc=True)
    present = dates.dropna()
    if present.empty:
        return pd.Series(dtype="int64"), len(dates)
    periods = present.dt.tz_convert(None).dt.to_period(period)
    span = pd.period_range(periods.min(), periods.max(), freq=period)
    counts = periods.value_counts().reindex(span, fill_value=0)
    counts.index = span.to_timestamp()
    return counts, len(dates) - len(present)


def _bars(
    values: pd.Series,
    *,
    ax: Axes | None,
    title: str,
    label: str,
    style: dict,
    why: str | None = None,
) -> Axes:
    """Horizontal bars of the most frequent values (the rest summed as "other"), top first."""
    counts = values.astype("string").fillna("(not set)").value_counts()
    if len(counts) > TOP:
        counts = pd.concat(
            [counts.iloc[: TOP - 1], pd.Series({"other": counts.iloc[TOP - 1 :].sum()})]
        )
    ax = _axes(ax)
    ax.set_title(title)
    ax.set_xlabel("records")
    ax.set_ylabel(label)
    if counts.empty:
        return _empty(ax, why or f"no records to count by {label}")
    ax.barh([str(i) for i in counts.index[::-1]], counts.to_numpy()[::-1], **style)
    return ax


def _collection_labels(frame: pd.DataFrame, names: Names) -> pd.Series:
    if "collection" in frame.columns:
        return frame["collection"].astype("string").fillna("(no collection)")
    base = _column(frame, "base_id")
    known = _names(names)
    return pd.Series(
        [known.get(int(b), f"base {int(b)}") if pd.notna(b) else "(no base)" for b in base],
        index=frame.index,
        dtype="string",
    )


def _names(names: Names) -> dict[int, str]:
    if names is None:
        return {}
    if isinstance(names, Mapping):
        return {int(k): str(v) for k, v in names.items()}
    table = names if isinstance(names, pd.DataFrame) else names.collections  # or client.me()
    pairs = zip(table["base_id"], table["name"], strict=True)
    # a collection without base_id (older servers send only coll_id) names no base
    return {int(b): str(n) for b, n in pairs if pd.notna(b) and pd.notna(n)}


def _bit_label(bit: int, statuses: pd.DataFrame | None) -> str:
    if statuses is None or "label_on_en" not in statuses.columns:
        return str(bit)
    labels = statuses.loc[statuses["position"] == bit, "label_on_en"].dropna().unique()
    return f"{bit} · {labels[0]}" if len(labels) == 1 else str(bit)


def _heat_map(
    ax: Axes,
    values: np.ndarray,
    *,
    rows: list[Any],
    columns: list[str],
    style: dict,
    text: bool = True,
) -> None:
    image = ax.imshow(
        np.ma.masked_invalid(values), **{"cmap": "Blues", "vmin": 0, "vmax": 1, **style}
    )
    image.axes.set_aspect("auto")
    ax.set_xticks(range(len(columns)), labels=columns, rotation=45, ha="right")
    ax.set_yticks(range(len(rows)), labels=[str(r) for r in rows])
    if text:  # the share in each cell, so the map reads without the colour bar
        for (row, col), share in np.ndenumerate(values):
            colour = "white" if share > 0.6 else "black"
            ax.text(col, row, f"{share:.0%}", ha="center", va="center", color=colour, fontsize=8)
    ax.figure.colorbar(image, ax=ax, shrink=0.8)


def _undated(count: int) -> str:
    return f" ({count} without a date)" if count else ""


def _without(count: int) -> str:
    return f" ({count} without a value)" if count else ""
