"""What a harvest needs from the service, and nothing more: :class:`SearchService`.

The harvest never holds the client. It pages through :meth:`SearchService.pages`, counts
through :meth:`SearchService.counts` (a count is a search of one hit, read as decoded JSON),
finds deletions through :meth:`~SearchService.keys`, fetches stragglers through
:meth:`~SearchService.item`, plans with :meth:`~SearchService.rights`, and names its cache by
:attr:`~SearchService.server` and :attr:`~SearchService.user`. Any object with these members can
be harvested: the client's adapter, or a stand-in in a test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from mediaframe.harvest.counter import CountRoute
from mediaframe.harvest.spec import Page

__all__ = ["Rights", "SearchService"]

#: Base ids the user may search, and ``{base_id: (databox_id, status bits)}`` for planning.
Rights = tuple[tuple[int, ...], dict[int, tuple[int, list[int]]]]


class SearchService(Protocol):
    """The service as a harvest sees it."""

    @property
    def server(self) -> str:
        """The service's base URL: part of the cache's name."""

    @property
    def user(self) -> str:
        """A stable, non-secret key of the user: part of the cache's name (never the token)."""

    def rights(self) -> Rights:
        """What the user may search: their base ids and the status bits defined in each."""

    def pages(self, kind: str) -> Page:
        """One page of the v1 search of ``kind`` as ``(response, frame)``."""

    def counts(self, kind: str) -> CountRoute:
        """One small page of the v1 search of ``kind`` as its decoded, normalised answer: what
        counts read (a frame of one hit costs more to build than the request)."""

    def keys(self, kind: str) -> Page:
        """One page of v2 references of ``kind``: the key columns and ``version``."""

    def item(self, kind: str, *, extended: bool = False) -> Callable[[int, int], Mapping[str, Any]]:
        """Reads one record (or story) by ``(databox_id, id)``; ``extended``: with its
        caption, status and sub-definitions."""
