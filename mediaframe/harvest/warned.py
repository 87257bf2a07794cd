"""What the server warned of in the search answers a harvest read: each text once, counted."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pandas as pd

from mediaframe.harvest.counter import CountRoute
from mediaframe.harvest.spec import Page
from mediaframe.normalise import search_warning

__all__ = ["OTHERS", "ServerWarnings", "notes_of"]

#: The key of :meth:`ServerWarnings.counts` counting the answers whose warning was none of the
#: texts kept (a warning is never empty: an empty one says nothing).
OTHERS = ""


class ServerWarnings:
    """Counts the answers of each distinct ``warning`` a harvest's searches carried.

    A few texts are kept (:attr:`KEPT`); the answers warning of others are counted under
    :data:`OTHERS`, so that an engine that words each warning its own way (a shard's bounds,
    a time taken) leaves a few lines, not thousands.

    Examples
    --------
    >>> heard = ServerWarnings()
    >>> heard.hear({"warning": "results are approximate"})
    >>> heard.hear({"warning": ""})
    >>> heard.counts()
    {'results are approximate': 1}
    """

    #: Distinct texts kept, each with its count.
    KEPT = 5

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def hear(self, response: Mapping[str, Any]) -> None:
        """Count the warning of one answer (an answer that warns of nothing is not counted)."""
        said = search_warning(response)
        if said is not None:
            self._add(said, 1)

    def watching(self, page: Page) -> Page:
        """``page`` that also hears the warning of each answer it reads."""

        def read(**params: Any) -> tuple[Mapping[str, Any], pd.DataFrame]:
            response, frame = page(**params)
            self.hear(response)
            return response, frame

        return read

    def watching_counts(self, count: CountRoute) -> CountRoute:
        """``count`` that also hears the warning of each answer it reads."""

        def read(**params: Any) -> Mapping[str, Any]:
            response = count(**params)
            self.hear(response)
            return response

        return read

    def merge(self, counts: Mapping[str, int] | None) -> None:
        """Add the :meth:`counts` of another (answers read in another process, or another pass)."""
        for text, n in (counts or {}).items():
            self._add(str(text), int(n))

    def counts(self) -> dict[str, int]:
        """``{text: answers}`` in the order heard, and :data:`OTHERS` last if any."""
        with self._lock:
            counts = dict(self._counts)
        if OTHERS in counts:
            counts[OTHERS] = counts.pop(OTHERS)
        return counts

    def _add(self, text: str, n: int) -> None:
        with self._lock:
            kept = len(self._counts) - (OTHERS in self._counts)
            if text != OTHERS and (text in self._counts or kept < self.KEPT):
                self._counts[text] = self._counts.get(text, 0) + n
            else:
                self._counts[OTHERS] = self._counts.pop(OTHERS, 0) + n


def notes_of(counts: Mapping[str, int]) -> list[str]:
    """The report's notes for :meth:`ServerWarnings.counts`: one line per text kept, one for
    the others."""
    notes = [
        f"the server warned in {n} answer(s): {text!r}"
        for text, n in counts.items()
        if text != OTHERS
    ]
    others = counts.get(OTHERS)
    if others:
        notes.append(
            f"the server warned in {others} more answer(s) of other things (the first "
            f"{ServerWarnings.KEPT} texts only are kept)"
        )
    return notes
