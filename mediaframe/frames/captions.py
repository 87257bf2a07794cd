"""Descriptive metadata as columns: caption fields and status bits of extended records.

Extended records (the vendor media type) carry ``caption`` (``[{meta_structure_id, name,
value}]``, multi-values joined with ``" ; "``) and ``status`` (``[{bit, state}]``). Their columns
come from the field structure of the databoxes (:func:`fields`) and the status bits the user's
collections define, never from the records at hand, so every query of one server gives the same
columns, hits or not:

- ``caption_<Field>``: ``date`` fields → UTC timestamps, ``number`` fields → ``Float64``, the
  rest → ``string`` (multi-valued fields keep the joined text as the server gives it; see
  :func:`split_values`);
- ``status_<bit>``: ``boolean``, NA where the record's databox does not define the bit.

A field the structure does not list but a record carries still becomes a ``string`` column, so
nothing the server sent is lost.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from mediaframe.exceptions import InvalidParameterError, MalformedItemError, MetadataWarning
from mediaframe.frames.arrays import TIMESTAMP, text, to_array, warn_unreadable
from mediaframe.frames.flatten import flatten
from mediaframe.frames.normalise import as_items, labeller
from mediaframe.frames.schema import FIELDS, LANGUAGES
from mediaframe.inert import neutralised

__all__ = [
    "SEPARATOR",
    "Structure",
    "extended_columns",
    "fields",
    "split_values",
    "structure",
]

#: How servers join the values of a multi-valued field in ``caption``.
SEPARATOR = " ; "
#: Caption field types and their column dtypes; an unknown type is read as text.
FIELD_DTYPES = {"string": "string", "date": TIMESTAMP, "number": "Float64"}


@dataclasses.dataclass(frozen=True)
class Structure:
    """The extended columns of one server for one user: caption fields and status bits.

    Attributes
    ----------
    fields : caption field name → type (``string``, ``date`` or ``number``).
    bits : status bit positions defined in the user's collections.
    """

    fields: Mapping[str, str]
    bits: tuple[int, ...]

    @property
    def dtypes(self) -> dict[str, str]:
        """Column name → dtype of every extended column."""
        columns = {f"caption_{n}": FIELD_DTYPES.get(t, "string") for n, t in self.fields.items()}
        columns.update({f"status_{bit}": "boolean" for bit in self.bits})
        return columns


def fields(
    meta_fields: list[dict[str, Any]],
    admin: Mapping[int, Iterable[Mapping[str, Any]]] | None = None,
) -> pd.DataFrame:
    """The caption fields of every databox the user can read, one row per (databox, field).

    Parameters
    ----------
    meta_fields : ``meta_fields`` of ``/me/structures/``.
    admin : per databox id, the fields of ``/databoxes/<id>/metadatas/`` (administrators only);
        they give ``type``, ``required`` and ``separator`` where ``meta_fields`` lacks them.

    Examples
    --------
    >>> fields([{"databox_id": 1, "id": 7, "name": "Date", "type": "date", "multivalue": False,
    ...          "labels": {"en": "Date"}}])[["databox_id", "name", "type", "label_en"]]
       databox_id  name  type label_en
    0           1  Date  date     Date
    """
    items = as_items(meta_fields, "field")
    by_id: dict[tuple[int | None, Any], Mapping[str, Any]] = {
        (_int(databox_id), _int(entry.get("id"))): entry
        for databox_id, entries in (admin or {}).items()
        for entry in entries
        if isinstance(entry, Mapping)
    }
    merged = []
    declared: dict[str, list[Any]] = {f"label_{lang}": [] for lang in LANGUAGES}
    for item in items:
        extra = by_id.get((_int(item.get("databox_id")), _int(item.get("id"))), {})
        row = dict(item)
        for name in ("type", "required", "separator", "multivalue"):
            if row.get(name) is None and extra.get(name) is not None:
                row[name] = extra[name]
        found = row.get("labels")
        labels: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        for lang in LANGUAGES:  # declared columns, computed here (given to flatten)
            declared[f"label_{lang}"].append(labels.get(lang))
        for lang in sorted(set(labels) - set(LANGUAGES)):  # read as members of their own
            row[f"label_{lang}"] = labels.get(lang)
        merged.append(row)
    label = labeller(merged, FIELDS.row, FIELDS.key)
    given = {
        name: to_array(values, "string", member=f"labels.{name[6:]}", label=label, strict=False)
        for name, values in declared.items()
    }
    return flatten(merged, FIELDS, given=given, label=label)


def structure(fields_frame: pd.DataFrame, bits: Iterable[int]) -> Structure:
    """The :class:`Structure` of a :func:`fields` frame and the status bits of ``/me/``.

    A field name used by several databoxes with different types is read as text.
    """
    found: dict[str, str] = {}
    for name, kind in zip(fields_frame["name"], fields_frame["type"], strict=True):
        if pd.isna(name):
            continue
        kind = "string" if pd.isna(kind) or kind not in FIELD_DTYPES else str(kind)
        found[str(name)] = kind if found.get(str(name), kind) == kind else "string"
    return Structure(dict(sorted(found.items())), tuple(sorted({int(b) for b in bits})))


def extended_columns(
    items: Sequence[Mapping[str, Any]],
    structure: Structure,
    *,
    label: Callable[[int], str] = "record #{}".format,
) -> dict[str, Any]:
    """The ``caption_*`` and ``status_*`` columns of ``items`` (records), typed by ``structure``.

    Raises
    ------
    MalformedItemError
        ``caption`` or ``status`` is not an array of objects with a name (a bit).
    """
    n = len(items)
    captions: dict[str, list[Any]] = {name: [None] * n for name in structure.fields}
    states: dict[int, list[Any]] = {bit: [None] * n for bit in structure.bits}
    odd: list[int] = []
    for index, item in enumerate(items):
        for entry in _entries(item, "caption", "name", index, label):
            name = str(entry["name"])
            values = captions.get(name)
            if values is None:  # a field the structure does not list: kept as text
                values = captions[name] = [None] * n
            value = entry.get("value")
            if type(value) is list:
                value = SEPARATOR.join(map(str, value))
            elif type(value) is dict:  # no caption value is an object: kept as missing
                odd.append(index)
                value = None
            values[index] = value
        for entry in _entries(item, "status", "bit", index, label):
            bit = _int(entry["bit"])
            if bit is None:
                continue
            if bit not in states:
                states[bit] = [None] * n
            states[bit][index] = _state(entry.get("state"))
    warn_unreadable("caption.value", sorted(set(odd)), n, label, example={})
    columns = {
        f"caption_{name}": typed_caption(name, values, structure.fields.get(name, "string"))
        for name, values in captions.items()
    }
    columns.update(
        {f"status_{bit}": pd.array(values, dtype="boolean") for bit, values in states.items()}
    )
    return columns


def split_values(
    column: pd.Series, *, sep: str = SEPARATOR, long: bool = False
) -> pd.Series | pd.DataFrame:
    """Split a multi-valued caption column (``"a ; b"``) into lists, or into a long form.

    Parameters
    ----------
    column : e.g. ``df["caption_Keywords"]``.
    sep : the server's separator (``" ; "``).
    long : one row per value instead: a frame with the row's index (``row``) and ``value``.

    Examples
    --------
    >>> s = pd.Series(["sunset ; sea", None], dtype="string", name="caption_Keywords")
    >>> split_values(s).tolist()
    [['sunset', 'sea'], []]
    >>> split_values(s, long=True)
       row   value
    0    0  sunset
    1    0     sea
    """
    if not isinstance(column, pd.Series):
        raise InvalidParameterError(
            f"split_values() takes one column (a Series such as df['caption_Keywords']), not "
            f"{type(column).__name__}"
        )
    lists = [
        [] if value is None or value is pd.NA else [v.strip() for v in str(value).split(sep)]
        for value in column.astype("object").where(column.notna(), None)
    ]
    lists = [[v for v in values if v] for values in lists]
    if not long:
        return pd.Series(lists, index=column.index, name=column.name, dtype=object)
    rows = [row for row, values in zip(column.index, lists, strict=True) for _ in values]
    return pd.DataFrame(
        {
            "row": pd.Index(rows, dtype=column.index.dtype if rows else "int64"),
            "value": pd.array([v for values in lists for v in values], dtype="string"),
        }
    )


def _entries(
    item: Mapping[str, Any], member: str, key: str, index: int, label: Callable[[int], str]
) -> list[Mapping[str, Any]]:
    entries = item.get(member)
    if entries is None:
        return []
    if type(entries) is not list or any(
        not isinstance(e, Mapping) or e.get(key) is None for e in entries
    ):
        raise MalformedItemError(
            f"{label(index)}: member {member!r} is not an array of objects with a {key!r} "
            "(report the payload)",
            item=index,
        )
    return entries


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _state(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "on")


def typed_caption(name: str, values: list[Any], kind: str) -> Any:
    """One caption column in its field's dtype (``string``, ``date`` or ``number``, as
    :class:`Structure` says); values that do not fit are missing, with a warning."""
    if kind == "string" or all(v is None for v in values):
        if kind != "string":
            return pd.array([None] * len(values), dtype=FIELD_DTYPES[kind])
        return text([None if v is None else str(v) for v in values])
    raw = pd.Series(values, dtype=object)
    if kind == "number":
        cleaned = raw.map(lambda v: v.replace(",", ".").strip() if isinstance(v, str) else v)
        typed = pd.to_numeric(cleaned, errors="coerce")
        result: Any = pd.array(typed, dtype="Float64")
    else:
        typed = pd.to_datetime(raw, errors="coerce", utc=True, format="mixed")
        result = typed.astype(TIMESTAMP).array
    lost = raw.notna() & typed.isna() & raw.map(lambda v: str(v).strip() != "")
    if lost.any():
        examples = ", ".join(repr(v) for v in raw[lost].unique()[:3])
        warnings.warn(
            f"caption field {name!r} is declared {kind} but {int(lost.sum())} value(s) are not "
            f"({examples}); they are missing from caption_{neutralised(name)}. Read the raw text "
            "with client.api.record_caption() or the record's metadata",
            MetadataWarning,
            stacklevel=2,
        )
    return result
