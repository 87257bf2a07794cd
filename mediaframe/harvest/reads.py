"""How a harvest's pages were read: natively from their bytes, or decoded, and why."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pandas as pd

from mediaframe.frames.fastjson import READ
from mediaframe.harvest.spec import Page

__all__ = ["PageReads"]


class PageReads:
    """Counts the pages read natively and those decoded, keeping the first reason per kind.

    Examples
    --------
    >>> reads = PageReads()
    >>> reads.add({"native": False, "kind": "dates", "detail": "'updated_on': 2021-06-30"})
    >>> reads.summary()
    {'native': 0, 'decoded': 1, 'reasons': {'dates': "'updated_on': 2021-06-30"}}
    """

    def __init__(self) -> None:
        self.native = 0
        self.decoded = 0
        self.reasons: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, read: Mapping[str, Any] | None) -> None:
        """Count one page from what its frame says (pages that say nothing are not counted)."""
        if not read:
            return
        with self._lock:
            if read.get("native"):
                self.native += 1
                return
            self.decoded += 1
            self.reasons.setdefault(str(read.get("kind")), str(read.get("detail")))

    def counting(self, page: Page) -> Page:
        """``page`` that also counts how each page it reads was read."""

        def read(**params: Any) -> tuple[Mapping[str, Any], pd.DataFrame]:
            response, frame = page(**params)
            self.add(frame.attrs.get(READ))
            # Read: the harvest needs it no more, and pandas deep-copies a frame's attrs into
            # every Series taken from it (each column, in each join and write of the page).
            frame.attrs = {}
            return response, frame

        return read

    def merge(self, summary: Mapping[str, Any] | None) -> None:
        """Add the counts of another :meth:`summary` (pages read in another process)."""
        if not summary:
            return
        with self._lock:
            self.native += int(summary.get("native") or 0)
            self.decoded += int(summary.get("decoded") or 0)
            for kind, detail in dict(summary.get("reasons") or {}).items():
                self.reasons.setdefault(str(kind), str(detail))

    def summary(self) -> dict[str, Any]:
        """``{"native": n, "decoded": m, "reasons": {kind: first detail}}``."""
        with self._lock:
            return {"native": self.native, "decoded": self.decoded, "reasons": dict(self.reasons)}
