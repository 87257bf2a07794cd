"""Descriptive metadata of the records: captions, per-value metadata, status bits and subdefs.

The catalogue's own text fields (title, keywords, description, creator, city, country) and its
``Date`` feed the captions, so an edit through ``Emulator.update_record`` shows in them. The other
fields of the structures are drawn here, from the catalogue's seed but a random stream of their
own, so the rest of the catalogue is the same with or without them. Some records lack the
required ``Copyright``, as real collections do.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from mediaframe.emulator import vocabulary as vocab
from mediaframe.emulator.catalogue import DAY, Catalogue
from mediaframe.emulator.columns import TextField
from mediaframe.emulator.structures import SEPARATOR, STRUCTURES, Field

#: Status bits every databox defines (the ones ``/me/`` lists).
STATUS_POSITIONS = tuple(position for position, *_ in vocab.STATUS_BITS)
#: Share of records whose required ``Copyright`` is missing.
MISSING_COPYRIGHT = 0.07

_OWNERS = {1: "Example Media", 2: "Example Broadcasting", 3: "Example Corporation"}
_NOTES = (
    "Model release on file",
    "Check usage rights before reuse",
    "Do not publish before the embargo ends",
    "Licensed until 2027",
    "Scanned from the original negative",
    "Colour corrected",
)
_RATINGS = ("1", "2", "3", "4", "5", "2.5", "4.5")
_PEOPLE = (
    "Hanna Keller", "Jonas Meier", "Léa Martin", "Noah Janssen", "Emma Rossi",
    "Lucas Bernard", "Mia Fischer", "Daan Visser", "Chloé Petit", "Elias Novak",
)  # fmt: skip
_PROGRAMMES = ("Evening news", "City stories", "Nature hour", "Sports weekly", "Culture club")
_DEPARTMENTS = ("Legal", "Finance", "Communication", "Human resources", "Operations")


class Captions:
    """Caption values of every record of ``catalogue``, rendered as the servers send them."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        t = catalogue.records
        n = t.size
        rng = np.random.default_rng([catalogue.seed, 14])
        year = pd.to_datetime(t.created, unit="s").year.astype(str).tolist()
        databox = t.databox_id.tolist()
        missing = rng.random(n) < MISSING_COPYRIGHT
        copyrights = [f"© {y} {_OWNERS[d]}" for y, d in zip(year, databox, strict=True)]
        creators = t.texts["Creator"]
        credit = rng.random(n) < 0.4
        self.drawn: dict[str, TextField] = {
            "Copyright": _field(
                [None if m else c for m, c in zip(missing, copyrights, strict=True)]
            ),
            "Credit": _field(
                [
                    f"{c} / {_OWNERS[d]}" if k else None
                    for c, d, k in zip(creators.first(np.arange(n)), databox, credit, strict=True)
                ]
            ),
            "Rating": _coded(rng, n, _RATINGS, 0.55),
            "InternalNote": _coded(rng, n, _NOTES, 0.3),
            "People": _multi(rng, n, _PEOPLE, most=3),
            "Programme": _coded(rng, n, _PROGRAMMES, 0.7),
            "Department": _multi(rng, n, _DEPARTMENTS, most=2, least=1),
        }

    # ------------------------------------------------------------------ values

    def values(self, rows: Sequence[int] | np.ndarray) -> list[dict[str, list[str]]]:
        """Per record row: field name → its values, for the fields of the record's databox."""
        t = self.catalogue.records
        idx = np.asarray(rows, dtype=np.int64)
        columns: dict[str, list[list[str]]] = {}
        for name in ("Title", "Description", "Creator", "City", "Country"):
            columns[name] = [[v] if v else [] for v in t.texts[name].first(idx)]
        columns["Keywords"] = t.texts["Keywords"].values(idx)
        days = t.dates["Date"][idx] * DAY
        columns["Date"] = [[d.replace("-", "/")] for d in _days(days)]
        for name, text in self.drawn.items():
            columns[name] = text.values(idx)
        out = []
        for i, databox_id in enumerate(t.databox_id[idx].tolist()):
            out.append({f.name: columns[f.name][i] for f in STRUCTURES[databox_id]})
        return out

    # --------------------------------------------------------------- rendering

    def extended(
        self, rows: Sequence[int], records: Sequence[dict[str, Any]], business: frozenset[int]
    ) -> list[dict[str, Any]]:
        """The four extended members of each record (``business``: bases showing business
        fields to this user)."""
        t = self.catalogue.records
        idx = np.asarray(rows, dtype=np.int64)
        shows = np.isin(t.base_id[idx], list(business)).tolist()
        out = []
        for row, values, record, show in zip(
            idx.tolist(), self.values(idx), records, shows, strict=True
        ):
            fields = _visible(int(t.databox_id[row]), show)
            out.append(
                {
                    "caption": caption(fields, values),
                    "metadata": metadata(fields, values, row),
                    "status": self.status(row),
                    "subdefs": subdefs(record.get("thumbnail")),
                }
            )
        return out

    def caption(self, row: int, *, business: bool) -> list[dict[str, Any]]:
        """``caption_metadatas`` of one record."""
        fields = _visible(int(self.catalogue.records.databox_id[row]), business)
        return caption(fields, self.values([row])[0])

    def metadata(self, row: int, *, business: bool) -> list[dict[str, Any]]:
        """``record_metadatas`` of one record: one entry per value."""
        fields = _visible(int(self.catalogue.records.databox_id[row]), business)
        return metadata(fields, self.values([row])[0], row)

    def status(self, row: int) -> list[dict[str, Any]]:
        """``[{bit, state}]`` for every status bit the databox defines."""
        bits = int(self.catalogue.records.status[row])
        return [{"bit": bit, "state": bool((bits >> bit) & 1)} for bit in STATUS_POSITIONS]

    # ------------------------------------------------------------ ground truth

    def frame(self, rows: np.ndarray) -> pd.DataFrame:
        """Ground truth: key, one ``caption_<Field>`` text column per field name (multi-values
        joined with ``" ; "``, business fields included) and one boolean per status bit."""
        t = self.catalogue.records
        names = list(dict.fromkeys(f.name for s in STRUCTURES.values() for f in s))
        values = self.values(rows)
        columns: dict[str, Any] = {
            "databox_id": pd.array(t.databox_id[rows], dtype="Int64"),
            "record_id": pd.array(t.ident[rows], dtype="Int64"),
        }
        for name in names:
            columns[f"caption_{name}"] = pd.array(
                [SEPARATOR.join(v[name]) if v.get(name) else None for v in values],
                dtype="string",
            )
        for bit in STATUS_POSITIONS:
            on = (t.status[rows] >> bit) & 1 == 1
            columns[f"status_{bit}"] = pd.array(on, dtype="boolean")
        return pd.DataFrame(columns)


@functools.cache
def _visible(databox_id: int, business: bool) -> tuple[Field, ...]:
    return tuple(f for f in STRUCTURES[databox_id] if business or not f.business)


def caption(fields: Sequence[Field], values: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Fields with a value, multi-values joined with ``" ; "``."""
    return [
        {"meta_structure_id": f.id, "name": f.name, "value": SEPARATOR.join(values[f.name])}
        for f in fields
        if values.get(f.name)
    ]


def metadata(fields: Sequence[Field], values: dict[str, list[str]], row: int) -> list[dict]:
    """One entry per value, each with the field's labels and a value id (``meta_id``)."""
    return [
        {
            "meta_structure_id": f.id,
            "name": f.name,
            "labels": dict(f.labels),
            "meta_id": row * 64 + f.id * 4 + slot + 1,
            "value": value,
        }
        for f in fields
        for slot, value in enumerate(values.get(f.name) or [])
    ]


def subdefs(thumbnail: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The record's subdefinitions: its thumbnail and a larger preview, or none."""
    if not thumbnail:
        return []
    # copies: a YAML writer would turn a shared object into an anchor and an alias
    thumbnail, preview = _copied(thumbnail), _copied(thumbnail)
    preview["name"] = "preview"
    preview["width"], preview["height"] = thumbnail["width"] * 4, thumbnail["height"] * 4
    preview["filesize"] = thumbnail["filesize"] * 12
    permalink = preview.get("permalink") or {}
    for key in ("page_url", "url", "download_url"):
        if key in permalink:
            permalink[key] = permalink[key].replace("/thumbnail/", "/preview/")
    return [thumbnail, preview]


def _copied(value: Any) -> Any:
    """A copy of nested dicts and lists (JSON values), several times cheaper than deepcopy."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def _days(seconds: np.ndarray) -> list[str]:
    return np.datetime_as_string(seconds.astype("datetime64[s]"), unit="D").tolist()


def _field(values: list[str | None]) -> TextField:
    """A one-slot text field from values (None: no value)."""
    categories = sorted({v for v in values if v is not None})
    lookup = {v: k for k, v in enumerate(categories)}
    codes = np.array([-1 if v is None else lookup[v] for v in values], dtype=np.int32)
    return TextField(codes, categories)


def _coded(rng: np.random.Generator, n: int, choices: Sequence[str], odds: float) -> TextField:
    codes = rng.integers(0, len(choices), n).astype(np.int32)
    codes[rng.random(n) >= odds] = -1
    return TextField(codes, choices)


def _multi(
    rng: np.random.Generator, n: int, choices: Sequence[str], *, most: int, least: int = 0
) -> TextField:
    """Up to ``most`` distinct values per record."""
    codes = np.argsort(rng.random((n, len(choices))), axis=1)[:, :most].astype(np.int32)
    count = rng.integers(least, most + 1, n)
    codes[np.arange(most)[None, :] >= count[:, None]] = -1
    return TextField(codes, choices)
