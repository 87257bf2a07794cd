"""The façade users hold: ``connect()`` resolves credentials and returns a :class:`Client`."""

from __future__ import annotations

import threading
from typing import Any

import requests

from mediaframe import auth
from mediaframe.auth import Profile, Token, TokenStore, check_base_url
from mediaframe.config import Settings
from mediaframe.exceptions import ConfigurationError
from mediaframe.http import Transport
from mediaframe.routes import API

__all__ = ["Client", "connect"]


def connect(
    base_url: str | None = None,
    *,
    token: str | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    username: str | None = None,
    password: str | None = None,
    profile: str | None = None,
    settings: Settings | None = None,
    session: requests.Session | None = None,
    representation: str = "json",
) -> Client:
    """Connect to a Media Asset Service.

    Credentials are taken from the first of:

    1. ``token=`` (with ``base_url``): a token you already have;
    2. ``username=``/``password=`` (with ``base_url`` and ``client_id``): the password grant;
       with ``profile=`` the token is also stored under that name;
    3. the stored profile ``profile`` (default ``MEDIAFRAME_PROFILE``, else ``default``), as
       written by ``mediaframe login``; ``base_url``, if given, must match it.

    Parameters
    ----------
    settings : defaults to ``Settings.from_env()``.
    session : a ``requests.Session`` to send through (e.g. the emulator's in-process one).
    representation : envelope format of v1 routes: ``json`` (default), ``yaml`` or ``jsonp``.

    Raises
    ------
    ConfigurationError
        Missing or contradictory credentials, plain http to a remote host, unknown profile.
    OAuthError
        The password grant was refused.

    Examples
    --------
    >>> import mediaframe as mf
    >>> client = mf.connect("https://assets.example.org", token="...")    # doctest: +SKIP
    >>> client = mf.connect(profile="work")                               # doctest: +SKIP
    >>> client.whoami()["login"]                                          # doctest: +SKIP
    'ada'
    """
    settings = settings or Settings.from_env()
    if token is not None:
        _refuse_extra(token=token, username=username, password=password)
        if base_url is None:
            raise ConfigurationError("token= needs base_url= too: connect(base_url, token=...)")
        return Client(
            base_url,
            token=Token(token),
            settings=settings,
            session=session,
            representation=representation,
        )
    if username is not None or password is not None:
        return _connect_with_password(
            base_url,
            client_id=client_id,
            client_secret=client_secret,
            username=username,
            password=password,
            profile=profile,
            settings=settings,
            session=session,
            representation=representation,
        )
    name = profile or settings.profile
    stored = TokenStore(settings.config_dir).load(name)
    if base_url is not None and check_base_url(base_url) != stored.base_url:
        raise ConfigurationError(
            f"profile {name!r} is for {stored.base_url}, not {base_url}: pick another profile "
            f"or log in to {base_url} with `mediaframe login --url {base_url} --profile NAME`"
        )
    return Client(
        stored.base_url,
        token=stored.token,
        settings=settings,
        session=session,
        profile=name,
        client_id=stored.client_id,
        client_secret=stored.client_secret,
        representation=representation,
    )


def _connect_with_password(
    base_url: str | None,
    *,
    client_id: str | None,
    client_secret: str | None,
    username: str | None,
    password: str | None,
    profile: str | None,
    settings: Settings,
    session: requests.Session | None,
    representation: str,
) -> Client:
    if base_url is None or not client_id or not username or password is None:
        raise ConfigurationError(
            "the password grant needs base_url, client_id, username and password together"
        )
    token = auth.password_grant(
        base_url,
        client_id=client_id,
        client_secret=client_secret,
        username=username,
        password=password,
        session=session,
        timeout=settings.timeout,
    )
    if profile is not None:
        stored = Profile(check_base_url(base_url), token, client_id, client_secret)
        TokenStore(settings.config_dir).save(profile, stored)
    return Client(
        base_url,
        token=token,
        settings=settings,
        session=session,
        profile=profile,
        client_id=client_id,
        client_secret=client_secret,
        representation=representation,
    )


def _refuse_extra(**given: Any) -> None:
    if given.get("username") is not None or given.get("password") is not None:
        raise ConfigurationError("give either token= or username=/password=, not both")


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

    def me_raw(self) -> dict[str, Any]:
        """``/api/v1/me/`` as decoded: ``{user, collections, databoxes}``."""
        return self.api.me()

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
        # Persist first: a rotated refresh token must not be lost if what follows fails.
        assert self._client_id is not None
        fresh = auth.refresh(
            self.base_url,
            stale,
            client_id=self._client_id,
            client_secret=self._client_secret,
            session=self._session,
            timeout=self.settings.timeout,
        )
        if self.profile is not None:
            stored = Profile(self.base_url, fresh, self._client_id, self._client_secret)
            TokenStore(self.settings.config_dir).save(self.profile, stored)
        return fresh
