"""A search that survives pickling, for Dask: each process opens its own transport."""

from __future__ import annotations

from typing import Any

from mediaframe.auth import Token
from mediaframe.config import Settings
from mediaframe.exceptions import ConfigurationError
from mediaframe.http import Transport
from mediaframe.routes import API

__all__ = ["RemoteSearch"]


class RemoteSearch:
    """A search route that survives pickling: each process opens its own transport.

    Dask workers receive it with the token, so it goes only where the user sends it; its repr,
    like every repr in mediaframe, never shows the token.
    """

    def __init__(self, base_url: str, token: Token | None, settings: Settings, route: str) -> None:
        if not route.startswith("search") or not callable(getattr(API, route, None)):
            raise ConfigurationError(f"{route!r} is not a search route of mediaframe.routes.API")
        self.base_url, self.token, self.settings, self.route = base_url, token, settings, route
        self._api: API | None = None

    def __repr__(self) -> str:
        return f"RemoteSearch({self.base_url!r}, {self.route!r})"

    def __call__(self, query: str = "", **filters: Any) -> Any:
        if self._api is None:
            self._api = API(Transport(self.base_url, token=self.token, settings=self.settings))
        return getattr(self._api, self.route)(query, **filters)

    def __getstate__(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "_api": None,
        }  # a transport holds sockets: each process opens its own

    def __dask_tokenize__(self) -> tuple[str, str, str, int]:
        # stable within a run, and free of the token
        return ("RemoteSearch", self.base_url, self.route, id(self))
