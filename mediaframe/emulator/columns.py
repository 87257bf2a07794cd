"""Column types of the synthetic catalogue: coded text fields and typed technical values."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

import numpy as np

_DECIMAL = re.compile(r"-?\d*\.\d+")


def typed_value(raw: str) -> int | float | str:
    """Type one technical value the way real servers do.

    All-digit strings become integers, decimals become floats, everything else stays a string,
    so ``"5"`` → 5, ``"2.8"`` → 2.8 and ``"-3"`` → ``"-3"``.
    """
    if raw.isascii() and raw.isdigit():
        return int(raw)
    if _DECIMAL.fullmatch(raw):
        return float(raw)
    return raw


def normalise(text: str) -> str:
    """Case-fold, strip accents and turn punctuation into spaces (how search compares text)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^\w]+", " ", bare).split())


class TextField:
    """A text field stored as codes into distinct values, so string tests run once per value.

    ``codes`` has one row per record and one column per value slot (several for multi-valued
    fields such as Keywords); ``-1`` marks an empty slot.
    """

    def __init__(self, codes: np.ndarray, categories: Sequence[str]) -> None:
        self.codes = (codes[:, None] if codes.ndim == 1 else codes).astype(np.int32)
        self.categories = list(categories)
        self._normalised: list[str] | None = None

    @property
    def normalised(self) -> list[str]:
        if self._normalised is None or len(self._normalised) != len(self.categories):
            self._normalised = [normalise(c) for c in self.categories]
        return self._normalised

    def mask(self, predicate: Callable[[str], bool], *, normalised: bool = True) -> np.ndarray:
        """Rows where any value satisfies ``predicate`` (given the normalised value by default)."""
        values = self.normalised if normalised else self.categories
        hits = np.fromiter((predicate(v) for v in values), dtype=bool, count=len(values))
        # The extra False at the end is what code -1 (no value) indexes.
        return np.asarray(np.append(hits, False)[self.codes].any(axis=1))

    def values(self, rows: np.ndarray) -> list[list[str]]:
        """The values of each row, in slot order."""
        cats = self.categories
        return [[cats[c] for c in row if c >= 0] for row in self.codes[rows].tolist()]

    def first(self, rows: np.ndarray) -> list[str | None]:
        """The first value of each row, or None."""
        cats = self.categories
        return [cats[c] if c >= 0 else None for c in self.codes[rows, 0].tolist()]

    def code_of(self, value: str) -> int:
        """The code of ``value``, adding it as a new distinct value when unseen."""
        try:
            return self.categories.index(value)
        except ValueError:
            self.categories.append(value)
            return len(self.categories) - 1

    def assign(self, row: int, values: Sequence[str]) -> None:
        """Replace the values of one row (extra values beyond the slots are refused)."""
        if len(values) > self.codes.shape[1]:
            raise ValueError(f"at most {self.codes.shape[1]} values fit this field")
        self.codes[row] = -1
        for slot, value in enumerate(values):
            self.codes[row, slot] = self.code_of(value)


class TechColumn:
    """One technical information name: numbers with a presence mask, or coded raw strings."""

    def __init__(
        self,
        values: np.ndarray,
        present: np.ndarray,
        *,
        raw: Sequence[str] | None = None,
    ) -> None:
        self.values = values
        self.present = present
        # For coded columns, raw holds the extractor's strings and typed their API values.
        self.raw = list(raw) if raw is not None else None
        self.typed = [typed_value(r) for r in raw] if raw is not None else None

    def render(self, rows: np.ndarray) -> tuple[list[int], list[int | float | str]]:
        """Positions in ``rows`` of records having this name, and their API values."""
        where = np.flatnonzero(self.present[rows])
        values = self.values[rows[where]].tolist()
        if self.typed is not None:
            typed = self.typed
            values = [typed[v] for v in values]
        return where.tolist(), values

    def numeric(self) -> np.ndarray:
        """Float view for comparisons: NaN where absent or not a number."""
        if self.typed is None:
            out = self.values.astype(np.float64)
        else:
            as_num = [float(t) if isinstance(t, int | float) else np.nan for t in self.typed]
            out = np.asarray(as_num, dtype=np.float64)[self.values]
        return np.where(self.present, out, np.nan)

    def text_mask(self, predicate: Callable[[str], bool]) -> np.ndarray:
        """Rows whose value, as normalised text, satisfies ``predicate``."""
        if self.raw is not None:
            hits = np.fromiter((predicate(normalise(r)) for r in self.raw), dtype=bool)
            return self.present & hits[self.values]
        texts = self.values.astype(str)
        uniques, inverse = np.unique(texts, return_inverse=True)
        hits = np.fromiter((predicate(normalise(u)) for u in uniques), dtype=bool)
        return self.present & hits[inverse]


def hex_text(raw: np.ndarray) -> np.ndarray:
    """Lower-case hex of each row of a uint8 matrix, as a fixed-width bytes array."""
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    chars = np.empty((raw.shape[0], raw.shape[1] * 2), dtype=np.uint8)
    chars[:, 0::2] = digits[raw >> 4]
    chars[:, 1::2] = digits[raw & 0x0F]
    return np.ascontiguousarray(chars).view(f"S{chars.shape[1]}").ravel()


def uuid_text(raw: np.ndarray) -> np.ndarray:
    """Version-4 UUID strings (8-4-4-4-12) from a (n, 16) uint8 matrix."""
    raw = raw.copy()
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80
    hexed = hex_text(raw).view(np.uint8).reshape(len(raw), 32)
    dash = np.full((len(raw), 1), ord("-"), dtype=np.uint8)
    parts = [hexed[:, :8], dash, hexed[:, 8:12], dash, hexed[:, 12:16], dash]
    parts += [hexed[:, 16:20], dash, hexed[:, 20:]]
    return np.ascontiguousarray(np.hstack(parts)).view("S36").ravel()


def iso_dates(seconds: np.ndarray) -> list[str]:
    """ISO 8601 strings with a numeric offset and no fraction, e.g. 2016-06-16T18:59:59+00:00."""
    texts = np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s").tolist()
    return [t + "+00:00" for t in texts]
