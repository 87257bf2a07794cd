"""The records frame: one typed row per record, technical values pivoted, built page by page too."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionArray
from pandas.api.types import union_categoricals

from mediaframe._process import collector_paused
from mediaframe.exceptions import InvalidParameterError
from mediaframe.frames.arrays import TIMESTAMP, column_arrays, infer_array, object_values
from mediaframe.frames.captions import Structure, extended_columns
from mediaframe.frames.flatten import assemble, flatten
from mediaframe.frames.normalise import as_items, labeller
from mediaframe.frames.schema import RECORDS
from mediaframe.frames.technical import gather, pivot

__all__ = ["EXTENDED_MEMBERS", "concat_records", "flatten_records", "records"]

#: Members of extended records read into ``caption_*``/``status_*`` columns, not kept as such.
EXTENDED_MEMBERS = ("caption", "metadata", "status", "subdefs")
_EXTENDED = dataclasses.replace(RECORDS, ignored=(*RECORDS.ignored, *EXTENDED_MEMBERS))


def records(items: list[dict[str, Any]], structure: Structure | None = None) -> pd.DataFrame:
    """Flatten records into one typed row each.

    Columns are declared in :mod:`mediaframe.frames.schema` (see ``docs/frame-schema.md``): the
    key ``databox_id, record_id`` first, as ordinary columns (no index is set, so frames
    concatenate and go to parquet as they are), then the record, thumbnail and permalink members,
    then one column per technical name and per unknown member, sorted by name. Every dynamic
    column is typed over the whole input: all integers → ``Int64``, integers and floats →
    ``Float64``, any string → ``string``.

    Every member keeps its value in a column of its own, named by one rule whatever order the
    members come in (:func:`~mediaframe.frames.flatten.flatten` gives it whole):

    - an unknown member is named with the prefix of the object it sits in: a record's own
      ``rating`` is ``rating``, a thumbnail's ``cdn`` is ``thumbnail_cdn``. A member's name is
      never read as a path: a record's own ``"thumbnail.name"`` is the column
      ``thumbnail.name``, beside ``thumbnail_name``, the thumbnail's name;
    - an unknown member whose name is a declared column's, or the name of an unknown member
      before it (the record's own come first, then the thumbnail's, then its permalink's), is
      prefixed ``unknown_`` until the name is free: a record's own ``thumbnail_name`` is
      ``unknown_thumbnail_name``, a thumbnail's ``cdn`` beside a record's own
      ``thumbnail_cdn`` is ``unknown_thumbnail_cdn``;
    - a technical name (in sorted order), then a ``caption_*``/``status_*`` column, whose name
      is already a column's is prefixed ``technical_`` until the name is free: the technical
      name ``title`` is ``technical_title``, and ``technical_technical_title`` when the records
      also hold a ``technical_title`` member of their own.

    A name is prefixed only where its own is taken, and every name that is free is given first:
    a member literally named ``unknown_x`` keeps its name whatever else is there.

    Parameters
    ----------
    items : records as decoded from the API (e.g. ``response["results"]["records"]``); older
        spellings ``updated-on`` and ``phrasea_type`` are read too.
    structure : for extended records, the caption fields and status bits that become
        ``caption_<Field>`` and ``status_<bit>`` columns (see :mod:`mediaframe.frames.captions`).

    Raises
    ------
    MalformedItemError
        An item is not an object, lacks ``databox_id``/``record_id``, or has a member of the wrong
        type; the message names the item by position and key.

    Examples
    --------
    >>> df = records([{"databox_id": 1, "record_id": 7, "media_type": "image",
    ...                "technical_informations": [{"name": "ISO", "value": 200}]}])
    >>> df[["databox_id", "record_id", "media_type", "ISO"]]
       databox_id  record_id media_type  ISO
    0           1          7      image  200
    """
    items = as_items(items, "record")
    label = labeller(items, RECORDS.row, RECORDS.key)
    return flatten_records(items, label=label, structure=structure)


def flatten_records(
    items: list[dict[str, Any]],
    *,
    label: Callable[[int], str],
    structure: Structure | None = None,
) -> pd.DataFrame:
    """:func:`records` for items already checked, with errors naming items through ``label``.

    Stories and feed items use it so that a bad nested record is named by its container.
    """
    with collector_paused():
        rows, names, values = gather(items, label=label)
        technical = pivot(len(items), rows, names, values, label=label)
        # by name, so that the names given do not depend on which record first held one; a
        # caption_* column may share a technical name
        extra = sorted(technical.items())
        frame = RECORDS if structure is None else _EXTENDED
        if structure is not None:
            extra += extended_columns(items, structure, label=label).items()
        return flatten(items, frame, extra=extra, clash_prefix="technical_", label=label)


def concat_records(
    parts: Sequence[pd.DataFrame], *, consume: bool = False, structure: Structure | None = None
) -> pd.DataFrame:
    """Concatenate :func:`records` frames into the frame ``records`` gives for all their items.

    Dtypes are decided again over the whole result (an ``Int64`` column of one page and a
    ``Float64`` one of another give ``Float64``; a page with text makes the column ``string``),
    categories are merged and sorted, and the columns follow the same order rule, so a harvest
    can flatten page by page and still get ``records(all_items)``.

    Numbers beyond 2**53 are the one exception, where no float holds every integer exactly:
    integers that met a float on one page were already rounded by that page's float column, and
    such a number beside numeric text on another page (read at once: text, as the number cannot
    be parsed back exactly) joins as a number.

    With ``consume=True`` the frames are taken out of ``parts`` (a list, left empty) and each of
    their columns is let go as soon as it is copied, so the parts and the result never coexist
    whole: a harvest joining a million records needs the frame once, not twice. Memory is only
    given back for frames nothing else refers to.

    ``structure`` names the extended columns of extended records, so that joining no parts at
    all still gives them.

    The join costs the columns the parts hold, not parts × names: each technical or unknown
    column is typed and joined over the parts holding it, then laid out once over all rows, so
    shards each holding a few of thousands of names join as fast as one frame of their records.

    Raises
    ------
    InvalidParameterError
        A part lacks a declared records column (it was not built by :func:`records`).
    """
    frames = list(parts)
    _check_parts(frames)
    if consume:
        if not isinstance(parts, list):
            raise InvalidParameterError(
                "concat_records(consume=True) empties the list of parts it is given: pass a list"
            )
        # The caller's list lets go of the frames, and ``frames`` does once their columns are
        # out: each column is then dropped as soon as it is copied. (Deleting columns from the
        # frames themselves costs pandas a block rebuild per column: five times the join.)
        parts.clear()
    if not frames:
        return records([], structure)
    starts = np.cumsum([0] + [len(frame) for frame in frames]).tolist()
    columns = [_columns(frame) for frame in frames]
    del frames
    declared = {
        name: _declared(_take(columns, name), dtype) for name, dtype in RECORDS.dtypes.items()
    }
    held = _by_name(columns)
    del columns
    dynamic = {}
    while held:
        # popped, so that each part's column is let go once its name is joined
        name, present = held.popitem()
        dynamic[name] = _dynamic(present, starts)
    return assemble(RECORDS, declared, dynamic)


def _check_parts(parts: list[pd.DataFrame]) -> None:
    for index, part in enumerate(parts):
        missing = [name for name in RECORDS.names if name not in part.columns]
        if missing:
            raise InvalidParameterError(
                f"concat_records(): part #{index} lacks {missing[:3]}...; pass frames built by "
                "mediaframe.frames.records()"
            )


def _columns(frame: pd.DataFrame) -> dict[str, ExtensionArray]:
    arrays = map(_extension, column_arrays(frame))
    return dict(zip(frame.columns, arrays, strict=True))


def _extension(array: Any) -> ExtensionArray:
    """A column's array as an extension array (a numpy column wrapped, as ``Series.array``)."""
    return array if isinstance(array, ExtensionArray) else pd.arrays.NumpyExtensionArray(array)


def _take(columns: list[dict[str, ExtensionArray]], name: str) -> list[ExtensionArray]:
    """Every part's declared column ``name``, taken out of the parts' columns."""
    return [part.pop(name) for part in columns]


def _by_name(columns: list[dict[str, ExtensionArray]]) -> dict[str, list[tuple[int, Any]]]:
    """The parts' remaining columns by name, each with the index of its part; empties ``columns``.

    Only the columns a part holds are visited: a join of many parts, each holding a few of many
    names, costs the cells present and not parts × names.
    """
    held: dict[str, list[tuple[int, Any]]] = {}
    for index, part in enumerate(columns):
        for name, column in part.items():
            held.setdefault(name, []).append((index, column))
        part.clear()
    return held


def _declared(present: list[ExtensionArray], dtype: str) -> Any:
    if dtype == "category":
        return _categories(present)
    return _joined(present)


def _categories(present: list[ExtensionArray]) -> pd.Categorical:
    """The categorical :func:`categorical` gives for all values, merged code-wise (no objects)."""
    merged = union_categoricals(present, sort_categories=True)
    codes, categories = merged.codes, merged.categories
    # a page's placeholder "" goes unless it is used: the categories no code uses are dropped,
    # counted in one pass (remove_unused_categories sorts every code to find them)
    used = np.bincount(codes[codes >= 0], minlength=len(categories)) > 0
    if not used.all():
        renumbered = np.cumsum(used) - 1
        codes = np.where(codes >= 0, renumbered[codes], -1)
        categories = categories[used]
    kept = list(categories) or [""]
    return pd.Categorical.from_codes(codes, categories=pd.Index(kept, dtype="str"))


#: Page dtypes whose whole-input type follows from the dtypes alone, and that type.
_SETTLED = (({"Int64"}, "Int64"), ({"Int64", "Float64"}, "Float64"))
_SAME = ("string", "boolean", TIMESTAMP)


def _dynamic(present: list[tuple[int, ExtensionArray]], starts: list[int]) -> Any:
    """One technical or unknown column over all parts, from the parts that hold it.

    ``present`` pairs each such part's index with its column, ``starts`` gives each part's first
    row (and the total last). The column is typed and joined over the parts holding it, then laid
    out once over all rows: parts without it cost nothing of their own.
    """
    columns = [column for _, column in present]
    kinds = {str(column.dtype) for column in columns}
    target = next((dtype for allowed, dtype in _SETTLED if kinds <= allowed), None)
    if target is None and len(kinds) == 1 and kinds <= set(_SAME):
        target = kinds.pop()
    if target is not None:
        # The pages' dtypes decide the whole column: cast and concatenate (which copies, so the
        # result shares no memory with the parts, cast or not).
        joined = _joined([_cast(column, target) for column in columns])
    else:
        # Typed again by every value; the missing rows of the parts without it change nothing,
        # as the rule reads nulls as nothing.
        joined = infer_array(np.concatenate([object_values(column) for column in columns]))
    return _spread(joined, [(starts[index], len(column)) for index, column in present], starts[-1])


def _cast(column: ExtensionArray, dtype: str) -> Any:
    return column if str(column.dtype) == dtype else column.astype(dtype)


def _spread(joined: Any, spans: list[tuple[int, int]], total: int) -> Any:
    """``joined``, the values of rows ``spans`` (first row, count) end to end, at those rows of
    ``total`` rows, missing elsewhere."""
    if len(joined) == total:
        return joined  # every row is in a span
    indexer = np.full(total, -1, dtype=np.intp)
    taken = 0
    for first, count in spans:
        indexer[first : first + count] = np.arange(taken, taken + count)
        taken += count
    if isinstance(joined, np.ndarray):  # objects: pandas' take would fill with NaN, not None
        spread = np.full(total, None, dtype=object)
        spread[indexer >= 0] = joined
        return spread
    return joined.take(indexer, allow_fill=True)


def _joined(arrays: list[Any]) -> Any:
    # Arrays of one dtype joined directly: pd.concat of Series costs ~10x more in index work.
    return type(arrays[0])._concat_same_type(arrays)
