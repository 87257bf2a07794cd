"""The façade users hold: :class:`Client`, one connection to the service as one user — its
token kept fresh (and stored with its profile), and every read of the library as a method
returning a DataFrame; :class:`Me`, what ``/me/`` says as frames."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import requests

from mediaframe import auth, frames, validate
from mediaframe.auth import Profile, Token, TokenStore, check_base_url
from mediaframe.client import feeds, searches
from mediaframe.config import Settings
from mediaframe.exceptions import (
    ConfigurationError,
    InvalidParameterError,
    MalformedItemError,
    NotFoundError,
    ResponseFormatError,
)
from mediaframe.filters import RESULT_SORTS, ordered_result, search_spec, split_filters
from mediaframe.harvest import Spec
from mediaframe.harvest.collect import ClientService, cache_path, collect
from mediaframe.http import Transport
from mediaframe.normalise import listed
from mediaframe.parameters import search_params
from mediaframe.remote import RemoteSearch
from mediaframe.routes import API

__all__ = ["Client", "Me"]


class Client:
    """A connection to one service as one user.

    Build it with :func:`connect`. ``client.api`` gives every route as a method returning the
    decoded answer; DataFrame methods build on it. Use it as a context manager, or call
    :meth:`close`. Its repr never shows the token.

    Attributes
    ----------
    base_url : the service root, without a trailing slash.
    settings : the :class:`~mediaframe.config.Settings` in force.
    profile : the stored profile in use, or ``None``.
    api : the routes (:class:`~mediaframe.routes.API`).
    transport : the :class:`~mediaframe.http.Transport` every request goes through.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: Token | None,
        settings: Settings | None = None,
        session: requests.Session | None = None,
        profile: str | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        representation: str = "json",
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.base_url = check_base_url(base_url)
        self.profile = profile
        self._client_id = client_id
        self._client_secret = client_secret
        self._session = session
        self.transport = Transport(
            self.base_url,
            token=token,
            refresh=self._refresh if client_id else None,
            settings=self.settings,
            session=session,
            representation=representation,
        )
        self.api = API(self.transport)
        self._user_key: str | None = None
        self._me: dict[str, Any] | None = None
        #: Whether the server has ``/api/v2/`` (None until a facets read has asked it).
        self._has_v2: bool | None = None
        # Re-entrant: user_key holds it while whoami() -> me_raw() may take it again.
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        profile = f", profile={self.profile!r}" if self.profile else ""
        return f"<Client {self.base_url}{profile}>"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the network session (a session passed to :func:`connect` stays open)."""
        self.transport.close()

    def me_raw(self, *, refresh: bool = False) -> dict[str, Any]:
        """``/api/v1/me/`` decoded: ``{user, collections, databoxes}`` (asked once, then kept).

        Raises
        ------
        ResponseFormatError
            The answer names no user (a failure the server dressed as success, a proxy's
            page): it is not kept, so the next call asks again.
        """
        with self._lock:
            if self._me is None or refresh:
                answer = self.api.me()
                user = answer.get("user")
                if not isinstance(user, Mapping) or not user:
                    raise ResponseFormatError(
                        f"the /me/ answer names no user (user is {_shown(user)}): it does not "
                        "say who the token belongs to, so it was not kept; try again, and if it "
                        "persists the service (or a proxy before it) is failing"
                    )
                self._me = answer
            return self._me

    def whoami(self) -> dict[str, Any]:
        """The user the token belongs to (the ``user`` member of ``/me/``).

        Raises
        ------
        TokenRejectedError
            The token is unknown, revoked or expired: log in again.
        """
        user = self.me_raw().get("user")
        return user if isinstance(user, dict) else {}

    @property
    def user_key(self) -> str:
        """A non-secret, stable name of the user for cache keys: the login (fetched once)."""
        with self._lock:
            if self._user_key is None:
                user = self.whoami()
                key = user.get("login") or user.get("id") or user.get("email")
                if key in (None, ""):
                    raise ConfigurationError("the service did not say who the token belongs to")
                self._user_key = str(key)
            return self._user_key

    def _refresh(self, stale: Token) -> Token:
        if self.profile is None:
            return self._refreshed(stale)
        store = TokenStore(self.settings.config_dir)
        with store.locked(self.profile):
            # another process of this profile (a second notebook) may have refreshed meanwhile:
            # its token serves, and the refresh token this one holds may be spent already
            newer = self._stored_since(store, self.profile, stale)
            if newer is not None:
                return newer
            fresh = self._refreshed(stale)
            # persisted before use: a rotated refresh token must not be lost if what follows fails
            self._store(self.profile, fresh)
            return fresh

    def _refreshed(self, stale: Token) -> Token:
        assert self._client_id is not None
        return auth.refresh(
            self.base_url,
            stale,
            client_id=self._client_id,
            client_secret=self._client_secret,
            session=self._session,
            timeout=self.settings.timeout,
        )

    def _stored_since(self, store: TokenStore, name: str, stale: Token) -> Token | None:
        """The profile's token if another process stored a fresh one since ``stale`` was read."""
        try:
            stored = store.load(name)
        except ConfigurationError:
            return None  # gone or damaged: this process refreshes and writes it again
        token = stored.token
        if stored.base_url != self.base_url or token.access_token == stale.access_token:
            return None
        return None if token.is_expired() else token

    def save_profile(self, name: str) -> Path:
        """Store this connection (its service, token and OAuth client) as the profile ``name``,
        file mode 0600, as ``mediaframe login`` does; ``connect(profile=name)`` finds it again,
        and a refreshed token is stored there from now on. Returns the profile's file.

        Examples
        --------
        >>> client = mf.connect(url, client_id=..., username="ada", password=...)  # doctest: +SKIP
        >>> client.save_profile("work")                                         # doctest: +SKIP
        """
        token = self.transport.token
        if token is None:
            raise ConfigurationError("this connection has no token to store")
        path = self._store(name, token)
        self.profile = name
        return path

    def _store(self, name: str, token: Token) -> Path:
        profile = Profile(self.base_url, token, self._client_id, self._client_secret)
        return TokenStore(self.settings.config_dir).save(name, profile)

    # -- DataFrames ------------------------------------------------------------------------

    def records(self, query: str = "", *, extended: bool = False, **filters: Any) -> pd.DataFrame:
        """Every record matching ``query`` and ``filters``, never silently truncated.

        The search is harvested completely under the server's retrieval cap (split into shards
        when needed), cached as parquet, and synced incrementally when the cache is older than
        its TTL. The harvest report is in ``df.attrs["harvest"]``
        (:meth:`mediaframe.HarvestReport.from_frame` rebuilds it).

        Parameters
        ----------
        query : the search query in the service's syntax; ``""`` matches everything.
        extended : also read each record's descriptive metadata: one ``caption_<Field>`` column
            per caption field of :meth:`fields` (dates as UTC timestamps, numbers as
            ``Float64``, multi-values as the server's joined text, see
            :func:`mediaframe.frames.split_values`) and one boolean ``status_<bit>`` column per
            status bit (labels in ``client.me().statuses``). Cached apart from plain harvests.
        **filters : ``bases``, ``record_type``, ``date_field`` (``created_on``, ``updated_on``
            or a date field of :meth:`fields`; ``created_on`` when only bounds are given, and the
            report's ``notes`` say so), ``date_min``, ``date_max`` (``date``, ``datetime`` or
            ``"Y/m/d"``), ``status``, ``status_only``, ``fields``, ``stemme``. ``status`` has the
            contract's meaning: ``{4: {"on": [1]}}`` keeps databox 1's records whose bit 4 is on
            *and every record of the other databoxes* (the condition only constrains the named
            databox); add ``status_only=True`` to keep only the named databoxes' records (their
            collections become ``bases``). ``sort`` (``created_on``/``updated_on``) and ``ord``
            order the result (key order otherwise). How to collect: ``refresh``, ``offline``,
            ``ttl`` (seconds or timedelta), ``allow_incomplete``, ``progress`` (``True`` for a
            bar, ``False`` for none, or a function called about four times a second with a
            :class:`mediaframe.harvest.Snapshot`), ``concurrency`` (requests in flight at once,
            default 4), ``per_page``, ``dask`` (a ``distributed.Client`` or scheduler address),
            ``cache_dir``.

        Raises
        ------
        IncompleteResultError
            Part of the search cannot be retrieved under the cap (``allow_incomplete=True``
            warns instead and keeps what could be retrieved).

        Examples
        --------
        >>> df = client.records("sunset", record_type="image", date_min="2024/01/01",
        ...                     date_field="created_on")                      # doctest: +SKIP
        >>> mf.HarvestReport.from_frame(df).summary()                          # doctest: +SKIP
        '1234 records of 1234 (complete) from 3 shard(s), 9 request(s), 0.8 s'
        """
        return self._collect("records", query, {**filters, "extended": extended})

    def stories(self, query: str = "", **filters: Any) -> pd.DataFrame:
        """Every story matching ``query`` and ``filters``; same options as :meth:`records`
        (but ``extended``: see :meth:`story_records`)."""
        if filters.get("extended"):
            raise InvalidParameterError(
                "stories() has no extended=: servers give captions and status bits to the "
                "records inside stories, not to the stories; use "
                "client.story_records(query, extended=True) for each story's records with theirs"
            )
        return self._collect(
            "stories", query, {k: v for k, v in filters.items() if k != "extended"}
        )

    def fields(self, *, refresh: bool = False) -> pd.DataFrame:
        """The caption fields of every databox you can read: ``databox_id, id, name, type,
        multivalue, required, business, …, label_<lang>`` (asked once, then kept).

        Business fields appear only if you may see them. Their columns in extended frames are
        ``caption_<name>``.
        """
        return self.api.fields(refresh=validate.flag(refresh, "refresh"))

    def record(self, databox_id: int, record_id: int, *, extended: bool = False) -> pd.DataFrame:
        """One record as a one-row frame, with the columns of :meth:`records`."""
        structure = self._structure(extended)
        record = self.api.record(databox_id, record_id, extended=bool(structure)).get("record")
        return self.api.fill_base_ids(frames.records([record] if record else [], structure))

    def story(self, databox_id: int, story_id: int) -> pd.DataFrame:
        """One story as a one-row frame, with the columns of :meth:`stories`
        (:meth:`story_records` gives its records)."""
        story = self.api.story(databox_id, story_id).get("story")
        return self.api.fill_base_ids(frames.stories([story] if story else []))

    def story_records(
        self, query: str = "", *, extended: bool = False, **filters: Any
    ) -> pd.DataFrame:
        """One row per (story, record) for every story the search finds, complete past the cap
        like :meth:`stories` (same options): ``story_databox_id, story_id, position``, then the
        record's columns (with captions and status bits if ``extended``).

        The stories come from :meth:`stories` (its report is in ``attrs["harvest"]``); each
        story's records are then read from the story route, which gives every child.
        """
        structure = self._structure(extended)
        found = self.stories(query, **filters)
        keys = list(zip(found["databox_id"].tolist(), found["story_id"].tolist(), strict=True))

        def read(key: tuple[int, int]) -> dict[str, Any]:
            return self.api.story(*key, extended=bool(structure)).get("story") or {}

        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            stories = list(pool.map(read, keys))
        frame = self.api.fill_base_ids(frames.story_members(stories, structure))
        frame.attrs.update(found.attrs)
        return frame

    def basket_records(
        self, basket_id: int | None = None, *, extended: bool = False
    ) -> pd.DataFrame:
        """One row per basket element (of every basket when ``basket_id`` is None):
        ``basket_id, basket_element_id, order``, for validation baskets your ``agreement`` and
        ``note`` and every participant's ``agreement_<login>``/``note_<login>``, then the
        record's columns (with captions and status bits if ``extended``)."""
        structure = self._structure(extended)
        ids = [basket_id] if basket_id is not None else _basket_ids(self.api.baskets_list())
        contents = [self.api.basket_content(i, extended=bool(structure)) for i in ids]
        for content in contents:
            content["basket_elements"] = listed(
                content, "basket_elements", key="basket_element_id", what="basket elements"
            )
        return self.api.fill_base_ids(frames.basket_records(contents, structure))

    def _structure(self, extended: bool) -> frames.Structure | None:
        """The structure extended columns are read with (checks the ``extended`` option)."""
        return self.api.structure() if validate.flag(extended, "extended") else None

    def facets(self, query: str = "", **filters: Any) -> pd.DataFrame:
        """Facets of the whole hit set in long form: ``facet, field, value, raw_value, count,
        query`` (each ``query`` selects its value).

        They are read from a one-hit v2 search; on a server without ``/api/v2/`` (it answers
        404: the v1-only generation) from the ``facets`` member of a one-hit v1 search, which
        this client then asks directly.
        """
        _, search = split_filters(filters, where="facets")
        spec, _ = self._spec("records", query, search)
        response = self._one_hit(query, spec.filters)
        return frames.facets(response.get("facets") or [])

    def _one_hit(self, query: str, filters: Mapping[str, Any]) -> dict[str, Any]:
        """A one-hit search answer with facets: v2 where the server has it, else v1."""
        if self._has_v2 is not False:
            try:
                answer = self.api.search_v2(query, per_page=1, **filters)
            except NotFoundError:
                if self._has_v2:  # v2 answered before: this 404 is not a missing version
                    raise
                self._has_v2 = False
            else:
                self._has_v2 = True
                return answer
        return self.api.search(query, per_page=1, **filters)

    def me(self, *, refresh: bool = False) -> Me:
        """The user (a Series) and their collection rights, status definitions and databoxes."""
        raw = self.me_raw(refresh=refresh)
        collections = raw.get("collections") or []
        return Me(
            user=frames.user(raw.get("user") or {}),
            collections=frames.collections(collections),
            statuses=frames.statuses(collections),
            databoxes=frames.databoxes(raw.get("databoxes") or []),
        )

    def feed_entries(
        self, *, offset_start: int | None = None, per_page: int | None = None
    ) -> pd.DataFrame:
        """Entries of every feed: all of them, or one page with ``offset_start``/``per_page``.

        All of them are paged from the first, and read again when the feeds change between
        pages: each entry comes once (see ``docs/reliability.md``).

        Raises
        ------
        IncompleteResultError
            Three reads in a row did not add up: the server ignores ``offset_start``, or the
            feeds changed on every read.
        """
        return frames.feed_entries(self._feed_entries(offset_start, per_page))

    def feed_items(
        self,
        *,
        offset_start: int | None = None,
        per_page: int | None = None,
        extended: bool = False,
    ) -> pd.DataFrame:
        """The records of feed entries, one row per item, with the entry's id (and their
        captions and status bits if ``extended``, as in :meth:`records`)."""
        structure = self._structure(extended)
        entries = self._feed_entries(offset_start, per_page, extended=bool(structure))
        return self.api.fill_base_ids(frames.feed_items(entries, structure))

    def feeds(self) -> pd.DataFrame:
        """The feeds the user can see."""
        return frames.feeds(listed(self.api.feeds_list(), "feeds", key="id", what="feeds"))

    def baskets(self) -> pd.DataFrame:
        """The user's baskets."""
        answer = self.api.baskets_list()
        return frames.baskets(listed(answer, "baskets", key="basket_id", what="baskets"))

    def cache_path(self, kind: str = "records", query: str = "", **filters: Any) -> str:
        """Where the harvest of this search is cached (for :func:`mediaframe.to_duckdb` etc.)."""
        kind = validate.choice(kind, "kind", ("records", "stories"))
        options, search = split_filters(filters, where="cache_path")
        spec, _ = self._spec(kind, query, search)
        return cache_path(ClientService(self), spec, options.cache_dir or self.settings.cache_dir)

    def remote_search(self, route: str = "search_records_frame") -> RemoteSearch:
        """A search route of :attr:`api` as a picklable callable, for tasks on other processes."""
        return RemoteSearch(self.base_url, self.transport.token, self.settings, route)

    def _spec(self, kind: str, query: str, search: Mapping[str, Any]) -> tuple[Spec, list[str]]:
        """The harvest's spec of a search (narrowed: :func:`searches.narrowed`), and the notes
        on what was filled in."""
        search, notes = searches.narrowed(search, self._collections)
        return search_spec(kind, query, search, searches.date_fields(search, self.fields)), notes

    def _collections(self) -> list[Any]:
        return self.me_raw().get("collections") or []

    def _collect(self, kind: str, query: str, filters: Mapping[str, Any]) -> pd.DataFrame:
        options, search = split_filters(filters, where=kind)
        sort, order = search.pop("sort", None), search.pop("ord", None)
        if sort is not None and sort not in RESULT_SORTS:
            raise InvalidParameterError(
                f"sort={sort!r}: a complete result is ordered by {' or '.join(RESULT_SORTS)} "
                f"(or by key when sort is left out).{validate.suggest(str(sort), RESULT_SORTS)} "
                "For ranked pages use client.api.search"
            )
        search_params(sort=sort, ord=order)  # validates ord
        spec, notes = self._spec(kind, query, search)
        frame = collect(self, spec, options)
        if notes:
            frame.attrs["harvest"]["notes"] = [*frame.attrs["harvest"].get("notes", []), *notes]
        return ordered_result(frame, sort, order)

    def _feed_entries(
        self, offset_start: int | None, per_page: int | None, *, extended: bool = False
    ) -> list[dict]:
        def fetch(start: int | None, size: int | None) -> dict[str, Any]:
            return self.api.feeds_content(offset_start=start, per_page=size, extended=extended)

        if offset_start is not None or per_page is not None:
            return feeds.entries_of(fetch(offset_start, per_page))
        return feeds.every_entry(fetch)


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _basket_ids(answer: Mapping[str, Any]) -> list[int]:
    """The ids of the baskets of a ``/baskets/list/`` answer, each one checked: a basket the
    reader cannot name is an error, never a basket left out."""
    ids = []
    for index, basket in enumerate(listed(answer, "baskets", key="basket_id", what="baskets")):
        if not isinstance(basket, Mapping):
            raise MalformedItemError(
                f"basket #{index} is {type(basket).__name__}, not an object; the server's answer "
                "does not follow the API contract (report the payload)",
                item=index,
            )
        ident = basket.get("basket_id")
        if isinstance(ident, str) and ident.strip().isdecimal():
            ident = int(ident)
        if isinstance(ident, bool) or not isinstance(ident, int) or ident < 1:
            raise MalformedItemError(
                f"basket #{index}: member 'basket_id' is {_shown(ident)}, not a basket id; "
                "every basket needs it to be read (report the payload)",
                item=index,
            )
        ids.append(ident)
    return ids


@dataclasses.dataclass(frozen=True, repr=False)
class Me:
    """What ``/me/`` says, as frames: the user and their rights (a short summary in a cell)."""

    user: pd.Series
    collections: pd.DataFrame
    statuses: pd.DataFrame
    databoxes: pd.DataFrame

    def __repr__(self) -> str:
        return frames.me.describe(self.user, self.collections, self.statuses, self.databoxes)

    def _repr_html_(self) -> str:
        return frames.me.describe_html(self.user, self.collections, self.statuses, self.databoxes)
