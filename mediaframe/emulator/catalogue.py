"""The synthetic catalogue: columnar records and stories, deterministic from a seed."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from mediaframe.emulator import vocabulary as vocab
from mediaframe.emulator.columns import TechColumn, TextField, hex_text, iso_dates, uuid_text
from mediaframe.emulator.feeds import Feeds

START = int(pd.Timestamp("2015-01-01", tz="UTC").timestamp())
END = int(pd.Timestamp("2025-01-01", tz="UTC").timestamp())
DAY = 86_400
PERMALINK_HOST = "https://media.emulator.test"
ENTITY = "http://api.emulator.test/api/objects"

BASE_IDS = np.array([c[0] for c in vocab.COLLECTIONS], dtype=np.int64)
BASE_DATABOX = np.array([c[1] for c in vocab.COLLECTIONS], dtype=np.int64)
BASE_COLLECTION = np.array([c[2] for c in vocab.COLLECTIONS], dtype=np.int64)
MIMES = [(t, m, e) for t in vocab.MEDIA_TYPES for m, e in vocab.MIME_TYPES[t]]
MEDIA_CODES = {name: code for code, name in enumerate(vocab.MEDIA_TYPES)}
RECORD_FIELDS = ("Title", "Keywords", "Description", "Creator", "City", "Country")
STORY_FIELDS = ("Title", "Description", "Creator")


class _InBases:
    """Rows placed in bases by ``base_index``: their base and collection ids follow from it."""

    base_index: np.ndarray

    @property
    def base_id(self) -> np.ndarray:
        return BASE_IDS[self.base_index]

    @property
    def collection_id(self) -> np.ndarray:
        return BASE_COLLECTION[self.base_index]


class RecordTable(_InBases):
    """Record columns, one row per record, rows in creation order."""

    def __init__(self, size: int, rng: np.random.Generator) -> None:
        self.size = size
        weights = np.array([c[4] for c in vocab.COLLECTIONS])
        self.base_index = rng.choice(len(weights), size=size, p=weights / weights.sum())
        self.created = np.sort(rng.integers(START, END, size=size))
        self.databox_id = BASE_DATABOX[self.base_index]
        self.ident = _ids_in_order(self.databox_id)
        self.media = _media_types(self.base_index, rng)
        self.mime = _mime_types(self.media, rng)
        edited = rng.random(size) < 0.6
        delay = (rng.exponential(90 * DAY, size) * edited).astype(np.int64)
        self.updated = np.minimum(self.created + delay, END)
        self.sha256 = _sha256(size, rng)
        self.uuid = uuid_text(rng.integers(0, 256, (size, 16), dtype=np.uint8))
        self.status = _status_bits(size, rng)
        self.thumbnail = (self.media != MEDIA_CODES["unknown"]) & (rng.random(size) > 0.06)
        self.alive = np.ones(size, dtype=bool)
        self.texts = _record_texts(size, rng)
        self.dates = {"Date": self.created // DAY - rng.integers(0, 30, size)}
        self.tech = _tech_columns(self, rng)


class StoryTable(_InBases):
    """Story columns; members are record rows of the story's own collection."""

    def __init__(self, records: RecordTable, rng: np.random.Generator) -> None:
        size = max(6, records.size // 40) if records.size else 0
        self.size = size
        weights = np.array([c[4] for c in vocab.COLLECTIONS])
        self.base_index = rng.choice(len(weights), size=size, p=weights / weights.sum())
        self.created = np.sort(rng.integers(START, END, size=size))
        self.updated = np.minimum(self.created + rng.integers(0, 60 * DAY, size), END)
        self.databox_id = BASE_DATABOX[self.base_index]
        # Stories are records too on real servers: their ids follow the record ids.
        last_record = {
            d: int(records.ident[records.databox_id == d].max(initial=0))
            for d, _ in vocab.DATABOXES
        }
        self.ident = _ids_in_order(self.databox_id) + np.array(
            [last_record[d] for d in self.databox_id.tolist()], dtype=np.int64
        )
        self.uuid = uuid_text(rng.integers(0, 256, (size, 16), dtype=np.uint8))
        self.alive = np.ones(size, dtype=bool)
        self.media = np.full(size, -1, dtype=np.int8)
        self.sha256 = np.full(size, b"", dtype="S64")
        self.members = _story_members(self.base_index, records, rng)
        self.texts = _story_texts(self.created, rng)
        self.dates = {"Date": self.created // DAY}
        self.tech: dict[str, TechColumn] = {}

    def member_rows(self, row: int) -> np.ndarray:
        """Record rows of story ``row``."""
        offsets, rows = self.members
        return rows[offsets[row] : offsets[row + 1]]


class Catalogue:
    """Deterministic synthetic content of one service instance.

    Parameters
    ----------
    records
        Number of records (0 to a few million).
    seed
        Seed of every random choice: the same pair gives the same catalogue.

    Examples
    --------
    >>> cat = Catalogue(records=100, seed=0)
    >>> cat.record_dict(0)["databox_id"] in (1, 2, 3)
    True
    """

    def __init__(self, records: int = 5000, seed: int = 0) -> None:
        if records < 0:
            raise ValueError(f"records must be >= 0, got {records}")
        rng = np.random.default_rng(seed)
        self.seed = seed
        self.records = RecordTable(records, rng)
        self.stories = StoryTable(self.records, rng)
        self.feeds = Feeds(self.records, rng)
        self._by_id = {
            "records": _rows_by_id(self.records),
            "stories": _rows_by_id(self.stories),
        }

    def __repr__(self) -> str:
        return f"Catalogue(records={self.records.size}, seed={self.seed})"

    # ------------------------------------------------------------------ lookups

    def row_of(self, databox_id: int, ident: int, *, kind: str = "records") -> int | None:
        """Row of a live record (or story) by its ids, None when there is none."""
        table = self.stories if kind == "stories" else self.records
        rows = self._by_id[kind].get(databox_id)
        if rows is None:
            return None
        first, ordered = rows
        pos = ident - first
        if pos < 0 or pos >= len(ordered):
            return None
        row = int(ordered[pos])
        return row if table.alive[row] else None

    # --------------------------------------------------------------- rendering

    def record_dict(self, row: int) -> dict[str, Any]:
        """The JSON-ready dict the API returns for record ``row``."""
        return self.record_dicts([row])[0]

    def record_dicts(self, rows: Iterable[int] | np.ndarray) -> list[dict[str, Any]]:
        """JSON-ready dicts of several records, built column by column (fast)."""
        t = self.records
        idx = np.asarray(rows if isinstance(rows, np.ndarray) else list(rows), dtype=np.int64)
        rid = t.ident[idx].tolist()
        db = t.databox_id[idx].tolist()
        media = t.media[idx].tolist()
        mime = t.mime[idx].tolist()
        created = iso_dates(t.created[idx])
        updated = iso_dates(t.updated[idx])
        thumbs = self._thumbnails(idx, rid, db, media, created, updated)
        techs: list[list[dict]] = [[] for _ in range(len(idx))]
        for name in sorted(t.tech):  # column by column: only present values cost anything
            where, values = t.tech[name].render(idx)
            for i, value in zip(where, values, strict=True):
                techs[i].append({"name": name, "value": value})
        rows_out = zip(
            db, rid, mime, t.texts["Title"].first(idx), media, updated, created,
            t.collection_id[idx].tolist(), t.sha256[idx].astype(str).tolist(), thumbs,
            t.uuid[idx].astype(str).tolist(), t.base_id[idx].tolist(), techs,
            strict=True,
        )  # fmt: skip
        out = []
        for (
            db_,
            rid_,
            mime_,
            title,
            media_,
            upd,
            cre,
            coll,
            sha,
            thumb,
            uuid,
            base,
            tech,
        ) in rows_out:
            out.append(
                {
                    "databox_id": db_,
                    "record_id": rid_,
                    "mime_type": MIMES[mime_][1],
                    "title": title,
                    "original_name": _original_name(media_, rid_, mime_),
                    "updated_on": upd,
                    "created_on": cre,
                    "collection_id": coll,
                    "sha256": sha,
                    "thumbnail": thumb,
                    "technical_informations": tech,
                    "media_type": vocab.MEDIA_TYPES[media_],
                    "uuid": uuid,
                    "base_id": base,
                }
            )
        return out

    def story_dict(self, row: int) -> dict[str, Any]:
        """The JSON-ready dict the API returns for story ``row``, with its member records."""
        s = self.stories
        members = self.record_dicts(self.member_rows_alive(row))
        title, description, creator = (s.texts[f].first(np.array([row]))[0] for f in STORY_FIELDS)
        created, updated = iso_dates(np.array([s.created[row], s.updated[row]]))
        return {
            "@entity@": f"{ENTITY}/story",
            "databox_id": int(s.databox_id[row]),
            "story_id": int(s.ident[row]),
            "updated_on": updated,
            "created_on": created,
            "collection_id": int(s.collection_id[row]),
            "base_id": int(s.base_id[row]),
            "uuid": s.uuid[row].decode(),
            "record_count": len(members),
            "thumbnail": members[0]["thumbnail"] if members else None,
            "metadatas": _dublin_core(title, description, creator, created[:10].replace("-", "/")),
            "records": members,
        }

    def member_rows_alive(self, row: int) -> np.ndarray:
        """Live record rows of story ``row``."""
        rows = self.stories.member_rows(row)
        return rows[self.records.alive[rows]]

    def _thumbnails(
        self,
        idx: np.ndarray,
        rid: list[int],
        db: list[int],
        media: list[int],
        created: list[str],
        updated: list[str],
    ) -> list[dict[str, Any] | None]:
        t = self.records
        has = t.thumbnail[idx].tolist()
        tokens = t.uuid[idx].astype(str).tolist()
        width = t.tech["Width"].values[idx].tolist()
        height = t.tech["Height"].values[idx].tolist()
        out: list[dict[str, Any] | None] = []
        for i, present in enumerate(has):
            if not present:
                out.append(None)
                continue
            w, h = (width[i], height[i]) if width[i] and height[i] else (4, 3)
            scale = 240 / max(w, h)
            page = f"{PERMALINK_HOST}/permalink/v1/{db[i]}/{rid[i]}/thumbnail/"
            token = tokens[i].replace("-", "")[:20]
            url = f"{page}thumbnail.jpg?token={token}"
            out.append(
                {
                    "name": "thumbnail",
                    "permalink": {
                        "created_on": created[i],
                        "id": int(idx[i]) + 1,
                        "is_activated": True,
                        "label": f"record_{db[i]}_{rid[i]}",
                        "updated_on": updated[i],
                        "page_url": f"{page}?token={token}",
                        "download_url": f"{url}&download=1",
                        "url": url,
                    },
                    "height": max(1, round(h * scale)),
                    "width": max(1, round(w * scale)),
                    "filesize": 2_000 + (rid[i] * 7919) % 30_000,
                    "devices": [] if media[i] == MEDIA_CODES["document"] else ["screen"],
                    "player_type": "IMAGE",
                    "mime_type": "image/jpeg",
                }
            )
        return out

    # ------------------------------------------------------------ ground truth

    def frame(self, kind: str = "records", *, rows: np.ndarray | None = None) -> pd.DataFrame:
        """Ground truth of live records or stories as a typed DataFrame.

        Parameters
        ----------
        kind
            ``"records"`` or ``"stories"``.
        rows
            Restrict to these rows (default: every live row).
        """
        if kind not in ("records", "stories"):
            raise ValueError(f"kind must be 'records' or 'stories', got {kind!r}")
        table = self.records if kind == "records" else self.stories
        if rows is None:
            rows = np.flatnonzero(table.alive)
        if kind == "records":
            return self._record_frame(rows)
        return self._story_frame(rows)

    def _common_columns(self, table: RecordTable | StoryTable, rows: np.ndarray) -> dict:
        return {
            "databox_id": pd.array(table.databox_id[rows], dtype="Int64"),
            "base_id": pd.array(table.base_id[rows], dtype="Int64"),
            "collection_id": pd.array(table.collection_id[rows], dtype="Int64"),
            "created_on": _timestamps(table.created[rows]),
            "updated_on": _timestamps(table.updated[rows]),
            "uuid": pd.array(table.uuid[rows].astype(str), dtype="string"),
            "title": pd.array(table.texts["Title"].first(rows), dtype="string"),
        }

    def _record_frame(self, rows: np.ndarray) -> pd.DataFrame:
        t = self.records
        common = self._common_columns(t, rows)
        media = [vocab.MEDIA_TYPES[m] for m in t.media[rows].tolist()]
        mime = [MIMES[m][1] for m in t.mime[rows].tolist()]
        names = [
            _original_name(m, r, k)
            for m, r, k in zip(
                t.media[rows].tolist(), t.ident[rows].tolist(), t.mime[rows].tolist(), strict=True
            )
        ]
        columns = {
            "databox_id": common.pop("databox_id"),
            "record_id": pd.array(t.ident[rows], dtype="Int64"),
            **{k: common.pop(k) for k in ("base_id", "collection_id")},
            "media_type": pd.Categorical(media, categories=vocab.MEDIA_TYPES),
            "mime_type": pd.Categorical(mime, categories=sorted({m[1] for m in MIMES})),
            **{k: common.pop(k) for k in ("created_on", "updated_on")},
            "sha256": pd.array(t.sha256[rows].astype(str), dtype="string"),
            **common,
            "original_name": pd.array(names, dtype="string"),
            "status": pd.array(t.status[rows], dtype="Int64"),
            "keywords": pd.array(
                ["; ".join(v) for v in t.texts["Keywords"].values(rows)], dtype="string"
            ),
            "creator": pd.array(t.texts["Creator"].first(rows), dtype="string"),
            "has_thumbnail": pd.array(t.thumbnail[rows], dtype="boolean"),
        }
        return pd.DataFrame(columns)

    def _story_frame(self, rows: np.ndarray) -> pd.DataFrame:
        s = self.stories
        common = self._common_columns(s, rows)
        counts = [len(self.member_rows_alive(r)) for r in rows.tolist()]
        columns = {
            "databox_id": common.pop("databox_id"),
            "story_id": pd.array(s.ident[rows], dtype="Int64"),
            **common,
            "record_count": pd.array(counts, dtype="Int64"),
        }
        return pd.DataFrame(columns)

    # --------------------------------------------------------------- mutation

    def update_record(self, row: int, *, now: int | None = None, **fields: Any) -> None:
        """Change fields of record ``row`` and bump its updated_on to ``now``."""
        t = self.records
        allowed = {"title", "description", "creator", "keywords", "status"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(
                f"cannot update {sorted(unknown)}; updatable fields: {sorted(allowed)}"
            )
        for name, value in fields.items():
            if name == "status":
                t.status[row] = int(value)
            elif name == "keywords":
                t.texts["Keywords"].assign(row, list(value))
            else:
                t.texts[name.capitalize()].assign(row, [str(value)])
        stamp = int(time.time()) if now is None else now
        t.updated[row] = max(stamp, int(t.created[row]))

    def delete_record(self, row: int) -> None:
        """Remove record ``row`` from every answer."""
        self.records.alive[row] = False


# ------------------------------------------------------------------ generation


def _ids_in_order(databox_id: np.ndarray) -> np.ndarray:
    """Ids 1, 2, 3... per databox in row order (rows are in creation order)."""
    ident = np.zeros(len(databox_id), dtype=np.int64)
    for d, _ in vocab.DATABOXES:
        mask = databox_id == d
        ident[mask] = np.arange(1, int(mask.sum()) + 1)
    return ident


def _rows_by_id(table: RecordTable | StoryTable) -> dict[int, tuple[int, np.ndarray]]:
    """Per databox: the first id and the rows in id order (ids are consecutive)."""
    out = {}
    for d, _ in vocab.DATABOXES:
        rows = np.flatnonzero(table.databox_id == d)
        if len(rows):
            ordered = rows[np.argsort(table.ident[rows], kind="stable")]
            out[d] = (int(table.ident[ordered[0]]), ordered)
    return out


def _media_types(base_index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    media = np.zeros(len(base_index), dtype=np.int8)
    for k, weights in enumerate(vocab.MEDIA_WEIGHTS):
        rows = np.flatnonzero(base_index == k)
        p = np.array(weights) / sum(weights)
        media[rows] = rng.choice(len(weights), size=len(rows), p=p)
    # Small catalogues still hold every media type.
    if len(media) >= 2 * len(vocab.MEDIA_TYPES):
        media[: len(vocab.MEDIA_TYPES)] = np.arange(len(vocab.MEDIA_TYPES))
    return media


def _mime_types(media: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    mime = np.zeros(len(media), dtype=np.int8)
    for code, name in enumerate(vocab.MEDIA_TYPES):
        rows = np.flatnonzero(media == code)
        first = next(i for i, m in enumerate(MIMES) if m[0] == name)
        count = len(vocab.MIME_TYPES[name])
        # The first mime type of each media type is the common one.
        p = np.array([3.0] + [1.0] * (count - 1))
        mime[rows] = first + rng.choice(count, size=len(rows), p=p / p.sum())
    return mime


def _sha256(size: int, rng: np.random.Generator) -> np.ndarray:
    sha = hex_text(rng.integers(0, 256, (size, 32), dtype=np.uint8))
    if size >= 10:
        # A few deliberate duplicates, so duplicate audits find something.
        count = max(2, size // 500)
        src, dst = rng.choice(size, size=(2, count), replace=False)
        sha[dst] = sha[src]
    return sha


def _status_bits(size: int, rng: np.random.Generator) -> np.ndarray:
    status = np.zeros(size, dtype=np.int64)
    for bit, odds in vocab.STATUS_ODDS.items():
        status |= (rng.random(size) < odds).astype(np.int64) << bit
    return status


def _record_texts(size: int, rng: np.random.Generator) -> dict[str, TextField]:
    adj, noun, place = (
        rng.integers(0, len(v), size) for v in (vocab.ADJECTIVES, vocab.NOUNS, vocab.PLACES)
    )
    titles = [
        f"{a} {n} in {p[0]}"
        for a, n, p in itertools.product(vocab.ADJECTIVES, vocab.NOUNS, vocab.PLACES)
    ]
    n_places, n_nouns = len(vocab.PLACES), len(vocab.NOUNS)
    creator = rng.integers(0, len(vocab.CREATORS), size)
    project = rng.integers(0, len(vocab.PROJECTS), size)
    descriptions = [
        f"{n.capitalize()} photographed by {c} for the {p}."
        for n, c, p in itertools.product(vocab.NOUNS, vocab.CREATORS, vocab.PROJECTS)
    ]
    n_creators, n_projects = len(vocab.CREATORS), len(vocab.PROJECTS)
    countries = sorted({p[1] for p in vocab.PLACES})
    country_of_place = np.array([countries.index(p[1]) for p in vocab.PLACES])
    return {
        "Title": TextField((adj * n_nouns + noun) * n_places + place, titles),
        "Keywords": TextField(_keywords(size, rng), vocab.KEYWORDS),
        "Description": TextField(
            (noun * n_creators + creator) * n_projects + project, descriptions
        ),
        "Creator": TextField(creator, vocab.CREATORS),
        "City": TextField(place, [p[0] for p in vocab.PLACES]),
        "Country": TextField(country_of_place[place], countries),
    }


def _keywords(size: int, rng: np.random.Generator) -> np.ndarray:
    """One to four distinct keywords per record, a few of them much more common (Zipf-like)."""
    ranks = np.arange(1, len(vocab.KEYWORDS) + 1)
    p = 1 / ranks**0.9
    codes = rng.choice(len(ranks), size=(size, 4), p=p / p.sum()).astype(np.int32)
    count = rng.integers(1, 5, size)
    codes[np.arange(4)[None, :] >= count[:, None]] = -1
    for j in range(1, 4):
        repeated = (codes[:, j : j + 1] == codes[:, :j]).any(axis=1)
        codes[repeated, j] = -1
    return codes


def _story_texts(created: np.ndarray, rng: np.random.Generator) -> dict[str, TextField]:
    size = len(created)
    years = list(range(2015, 2026))
    event = rng.integers(0, len(vocab.STORY_EVENTS), size)
    year = pd.to_datetime(created, unit="s").year.to_numpy() - years[0]
    creator = rng.integers(0, len(vocab.CREATORS), size)
    project = rng.integers(0, len(vocab.PROJECTS), size)
    titles = [f"{e} {y}" for e, y in itertools.product(vocab.STORY_EVENTS, years)]
    descriptions = [
        f"Selection by {c} for the {p}."
        for c, p in itertools.product(vocab.CREATORS, vocab.PROJECTS)
    ]
    return {
        "Title": TextField(event * len(years) + year, titles),
        "Description": TextField(creator * len(vocab.PROJECTS) + project, descriptions),
        "Creator": TextField(creator, vocab.CREATORS),
    }


def _story_members(
    base_index: np.ndarray, records: RecordTable, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    rows_of_base = [np.flatnonzero(records.base_index == k) for k in range(len(vocab.COLLECTIONS))]
    counts = rng.integers(0, 11, len(base_index))
    members = []
    for k, count in zip(base_index.tolist(), counts.tolist(), strict=True):
        pool = rows_of_base[k]
        picked = np.unique(rng.choice(pool, size=min(count, len(pool)))) if len(pool) else pool
        members.append(picked)
    offsets = np.concatenate([[0], np.cumsum([len(m) for m in members])]).astype(np.int64)
    flat = np.concatenate(members).astype(np.int64) if members else np.zeros(0, np.int64)
    return offsets, flat


def _tech_columns(t: RecordTable, rng: np.random.Generator) -> dict[str, TechColumn]:
    n = t.size
    media = t.media
    code = MEDIA_CODES
    visual = np.isin(media, [code["image"], code["video"], code["flash"]])
    image = media == code["image"]
    timed = np.isin(media, [code["audio"], code["video"]])
    camera = image & (rng.random(n) < 0.75)
    gps = image & (rng.random(n) < 0.3)
    sizes = np.array(
        [(6000, 4000), (4000, 6000), (1920, 1080), (3840, 2160), (1280, 720), (800, 600)]
    )
    dims = sizes[rng.integers(0, len(sizes), n)]
    everywhere = np.ones(n, dtype=bool)

    def coded(choices: Sequence[str], present: np.ndarray) -> TechColumn:
        return TechColumn(rng.integers(0, len(choices), n).astype(np.int16), present, raw=choices)

    mime_names = [m[1] for m in MIMES]
    return {
        "FileSize": TechColumn(rng.lognormal(14, 1.2, n).astype(np.int64) + 1024, everywhere),
        "MimeType": TechColumn(t.mime.astype(np.int16), everywhere, raw=mime_names),
        "Width": TechColumn(np.where(visual, dims[:, 0], 0), visual),
        "Height": TechColumn(np.where(visual, dims[:, 1], 0), visual),
        "ColorSpace": coded(vocab.COLOR_SPACES, image),
        "ColorDepth": TechColumn(rng.choice([8, 16, 24, 32], n), image),
        "CameraModel": coded(vocab.CAMERAS, camera),
        "ISO": TechColumn(rng.choice([100, 200, 400, 800, 1600, 3200, 6400], n), camera),
        "Aperture": coded(vocab.APERTURES, camera),
        "ShutterSpeed": coded(vocab.SHUTTER_SPEEDS, camera),
        "FocalLength": coded(vocab.FOCAL_LENGTHS, camera & (rng.random(n) < 0.9)),
        "FlashFired": TechColumn(rng.integers(0, 2, n), camera & (rng.random(n) < 0.8)),
        "LightValue": coded(vocab.LIGHT_VALUES, camera & (rng.random(n) < 0.6)),
        "HyperfocalDistance": TechColumn(
            np.round(rng.uniform(0.5, 40, n), 2), camera & (rng.random(n) < 0.5)
        ),
        "Latitude": TechColumn(np.round(rng.uniform(-60, 70, n), 6), gps),
        "Longitude": TechColumn(np.round(rng.uniform(-120, 150, n), 6), gps),
        "Channels": TechColumn(rng.choice([1, 2, 6], n), timed),
        "Duration": TechColumn(np.round(rng.uniform(1, 3600, n), 2), timed),
        "FrameRate": coded(vocab.FRAME_RATES, media == code["video"]),
        "SampleRate": TechColumn(rng.choice([44100, 48000, 96000], n), media == code["audio"]),
        "Pages": TechColumn(rng.integers(1, 200, n), media == code["document"]),
    }


def _original_name(media: int, record_id: int, mime: int) -> str:
    return f"{vocab.FILE_PREFIX[vocab.MEDIA_TYPES[media]]}_{record_id:06d}.{MIMES[mime][2]}"


def _timestamps(seconds: np.ndarray) -> pd.Series:
    return pd.Series(pd.to_datetime(seconds, unit="s", utc=True)).astype("datetime64[ns, UTC]")


def _dublin_core(
    title: str | None, description: str | None, creator: str | None, date: str
) -> dict:
    keys = (
        "contributor", "coverage", "creator", "date", "description", "format", "identifier",
        "language", "publisher", "relation", "rights", "source", "subject", "title", "type",
    )  # fmt: skip
    meta: dict[str, Any] = {"@entity@": f"{ENTITY}/story-metadata-bag"}
    meta.update({f"dc:{k}": None for k in keys})
    meta.update(
        {"dc:title": title, "dc:description": description, "dc:creator": creator, "dc:date": date}
    )
    return meta
