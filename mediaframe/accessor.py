"""``df.media``: plots, a thumbnail gallery, technical values in long form and safe exports.

Importing this module registers the accessor (and ``%load_ext mediaframe`` imports it)::

    >>> import mediaframe.accessor                       # doctest: +SKIP
    >>> df = client.records("sunset")                    # doctest: +SKIP
    >>> df.media.timeline(period="Y")                    # doctest: +SKIP
    >>> df.media.gallery(limit=12)                       # doctest: +SKIP
    >>> df.media.to_excel("sunset.xlsx")                 # doctest: +SKIP

It works on records frames — any frame keyed by ``databox_id`` and ``record_id``, as
``client.records()``, ``client.feed_items()``, ``client.story_records()`` and
``client.basket_records()`` return — and raises ``AttributeError`` on others. It keeps no
state: everything is read from the frame (and ``df.attrs``) at each call, so a filtered or
copied frame behaves the same.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mediaframe import plots, reports
from mediaframe.frames.schema import (
    BASKET_RECORDS,
    FEED_ITEMS,
    RECORDS,
    STORY_MEMBERS,
    STORY_RECORDS,
)
from mediaframe.harvest import HarvestReport

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["Gallery", "MediaAccessor"]

_KEY = ("databox_id", "record_id")
#: The columns of the frames the accessor works on (records, feed items, story members, basket
#: records, the story-to-record links) that are the frame's own, never technical values.
_DECLARED = frozenset(
    name
    for frame in (RECORDS, FEED_ITEMS, STORY_MEMBERS, BASKET_RECORDS, STORY_RECORDS)
    for name in frame.names
)
#: Columns of a records frame that are not technical values even though the schema does not
#: declare them: thumbnails, captions and status bits of extended harvests, and the say of each
#: participant of a validation basket (``agreement_<login>``, ``note_<login>``).
_NOT_TECHNICAL = ("thumbnail_", "caption_", "status_", "agreement_", "note_")


@pd.api.extensions.register_dataframe_accessor("media")
class MediaAccessor:
    """The ``media`` namespace of a records frame."""

    def __init__(self, frame: pd.DataFrame) -> None:
        missing = [name for name in _KEY if name not in frame.columns]
        if missing:
            raise AttributeError(
                f"df.media works on records frames (client.records(), client.feed_items()), "
                f"keyed by databox_id and record_id; this frame has no {' or '.join(missing)}"
            )
        self._frame = frame

    # -- plots (mediaframe.plots on this frame) -----------------------------------------------

    def timeline(self, **options: Any) -> Axes:
        """Records per period (:func:`mediaframe.plots.timeline`)."""
        return plots.timeline(self._frame, **options)

    def media_types(self, **options: Any) -> Axes:
        """Records per media type (:func:`mediaframe.plots.media_types`)."""
        return plots.media_types(self._frame, **options)

    def collections(self, **options: Any) -> Axes:
        """Records per collection (:func:`mediaframe.plots.collections`; ``names=``)."""
        return plots.collections(self._frame, **options)

    def technical(self, name: str, **options: Any) -> Axes:
        """The distribution of one technical value (:func:`mediaframe.plots.technical`)."""
        return plots.technical(self._frame, name, **options)

    def positions(self, **options: Any) -> Axes:
        """Latitude/longitude scatter (:func:`mediaframe.plots.positions`)."""
        return plots.positions(self._frame, **options)

    def status_usage(self, **options: Any) -> Axes:
        """Status bits per collection (:func:`mediaframe.plots.status_usage`)."""
        return plots.status_usage(self._frame, **options)

    def rights(self, me: Any, **options: Any) -> Axes:
        """The rights of ``client.me()`` (or its ``collections``) over these records' collections.

        Rights are per collection, not per record: this is the matrix of
        :func:`mediaframe.plots.rights` kept to the collections the frame's records are in.
        """
        collections = me if isinstance(me, pd.DataFrame) else me.collections
        if "base_id" in self._frame.columns and "base_id" in collections.columns:
            present = set(self._frame["base_id"].dropna().astype(int))
            collections = collections[collections["base_id"].isin(present)]
        return plots.rights(collections, **options)

    def feed_activity(self, entries: pd.DataFrame, **options: Any) -> Axes:
        """Activity of the feed entries holding these records (a ``client.feed_items()`` frame,
        with its ``entry_id``), or of every entry given when the frame has no ``entry_id``."""
        if "entry_id" in self._frame.columns:
            entries = entries[entries["id"].isin(self._frame["entry_id"].dropna())]
        return plots.feed_activity(entries, **options)

    # -- views ----------------------------------------------------------------------------------

    def gallery(self, *, limit: int = 48, size: int = 128) -> Gallery:
        """Thumbnails of the first ``limit`` records with their titles, as HTML.

        The image is ``thumbnail_url`` (newer servers) or the thumbnail's permalink. Every value
        is HTML-escaped; only ``http``/``https`` URLs are used (anything else shows as a blank
        tile).
        """
        if limit < 1 or size < 16:
            raise ValueError(f"gallery(limit={limit}, size={size}): limit >= 1 and size >= 16")
        return Gallery(self._frame.head(limit), size=size, total=len(self._frame))

    def technical_columns(self) -> list[str]:
        """The technical value columns (``ISO``, ``FileSize``, ``CameraModel`` …) of the frame."""
        return [
            str(name)
            for name in self._frame.columns
            if name not in _DECLARED
            and isinstance(name, str)
            and not name.startswith(_NOT_TECHNICAL)
            and name != "collection"
        ]

    def technical_long(self) -> pd.DataFrame:
        """Technical values in long form: ``databox_id, record_id, name, value``, one row per
        value present (the shape of :func:`mediaframe.frames.technical_long`)."""
        columns = self.technical_columns()
        key = self._frame[list(_KEY)]
        parts = [
            key.assign(name=name, value=self._frame[name].astype(object))[
                self._frame[name].notna().to_numpy()
            ]
            for name in columns
        ]
        if not parts:
            return pd.DataFrame(
                {"databox_id": [], "record_id": [], "name": [], "value": []}
            ).astype({"databox_id": "Int64", "record_id": "Int64", "name": "string"})
        long = pd.concat(parts, ignore_index=True)
        long["name"] = long["name"].astype("string")
        return long.sort_values([*_KEY, "name"], kind="stable", ignore_index=True)

    def report(self) -> HarvestReport:
        """The harvest report that travels with the frame (``df.attrs["harvest"]``)."""
        if "harvest" not in self._frame.attrs:
            raise ValueError(
                "this frame carries no harvest report: only frames from client.records() "
                "(and their copies) have one in df.attrs['harvest']"
            )
        return HarvestReport.from_frame(self._frame)

    # -- exports --------------------------------------------------------------------------------

    def to_csv(self, path: str | os.PathLike[str], **options: Any) -> Path:
        """CSV a spreadsheet opens without running anything (:func:`mediaframe.reports.to_csv`)."""
        return reports.to_csv(self._frame, path, **options)

    def to_excel(self, path: str | os.PathLike[str], **options: Any) -> Path:
        """An ``.xlsx`` file safe to open, dates in UTC (:func:`mediaframe.reports.to_excel`)."""
        return reports.to_excel(self._frame, path, **options)


class Gallery:
    """Thumbnails as HTML: shown as tiles in a notebook, ``str()`` gives the markup."""

    def __init__(self, frame: pd.DataFrame, *, size: int, total: int) -> None:
        self._frame, self._size, self._total = frame, size, total

    def __repr__(self) -> str:
        return f"<Gallery of {len(self._frame)} of {self._total} records>"

    def __str__(self) -> str:
        return self._repr_html_()

    def _repr_html_(self) -> str:
        tiles = "".join(self._tile(row) for row in self._frame.itertuples(index=False))
        more = self._total - len(self._frame)
        note = f"<p>… and {more:,} more records</p>" if more > 0 else ""
        return (
            "<div class='mf-gallery' style='display:flex;flex-wrap:wrap;gap:8px'>"
            f"{tiles}</div>{note}"
        )

    def _tile(self, row: Any) -> str:
        size = self._size
        url = _value(row, "thumbnail_url") or _value(row, "thumbnail_permalink_url")
        title = _value(row, "title") or _value(row, "original_name")
        key = f"{_value(row, 'databox_id')}/{_value(row, 'record_id')}"
        label = html.escape(f"{title} ({key})" if title else key, quote=True)
        if url.lower().startswith(("https://", "http://")):
            image = (
                f"<img src='{html.escape(url, quote=True)}' alt='{label}' loading='lazy' "
                f"style='max-width:{size}px;max-height:{size}px'>"
            )
        else:
            image = f"<div style='width:{size}px;height:{size}px;background:#eee'></div>"
        return (
            f"<figure style='margin:0;width:{size}px' title='{label}'>{image}"
            f"<figcaption style='font-size:small;overflow:hidden;text-overflow:ellipsis;"
            f"white-space:nowrap'>{label}</figcaption></figure>"
        )


def _value(row: Any, name: str) -> str:
    value = getattr(row, name, None)
    return "" if value is None or pd.isna(value) else str(value)
