"""``connect()``: which credentials a connection uses (a token, the password grant, a stored
profile), and the :class:`~mediaframe.client.facade.Client` built with them."""

from __future__ import annotations

import warnings
from typing import Any

import requests

from mediaframe import auth
from mediaframe.auth import Token, TokenStore, check_base_url
from mediaframe.client.facade import Client
from mediaframe.config import Settings
from mediaframe.exceptions import ConfigurationError, ProfileWarning

__all__ = ["connect"]


def connect(
    base_url: str | None = None,
    *,
    token: str | Token | None = None,
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

    1. ``token=`` (with ``base_url``): a token you already have (with ``client_id=`` too, a
       :class:`~mediaframe.auth.Token` holding a refresh token is refreshed when it expires);
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
            token=token if isinstance(token, Token) else Token(token),
            settings=settings,
            session=session,
            client_id=client_id,
            client_secret=client_secret,
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
    try:
        stored = TokenStore(settings.config_dir).load(name)
    except ConfigurationError as err:
        if base_url is None or profile is not None:
            raise
        # connect(url) alone: a token is the other way in, and the likelier one from Python
        # (said so that redact() finds no token's value after "token=")
        raise ConfigurationError(f"{err}; or pass connect() a token as token=") from err
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
    if profile is not None:
        # before the grant: a token the service issues cannot be taken back from here
        TokenStore(settings.config_dir).check_writable(profile)
    token = auth.password_grant(
        base_url,
        client_id=client_id,
        client_secret=client_secret,
        username=username,
        password=password,
        session=session,
        timeout=settings.timeout,
    )
    client = Client(
        base_url,
        token=token,
        settings=settings,
        session=session,
        client_id=client_id,
        client_secret=client_secret,
        representation=representation,
    )
    if profile is not None:
        _store_or_keep(client, profile)
    return client


def _store_or_keep(client: Client, profile: str) -> None:
    """Store the new token as ``profile``; if that fails, keep it in ``client`` and warn.

    The folder passed its check before the grant, but the disk may fill (or the folder change)
    by the time the profile is written: raising here would throw away a token the service has
    just issued, and the connection that holds it works.
    """
    try:
        client.save_profile(profile)
    except ConfigurationError as err:
        warnings.warn(
            f"logged in, but {err}. This connection keeps the token and works meanwhile; "
            f"call client.save_profile({profile!r}) then to store it",
            ProfileWarning,
            stacklevel=4,  # _store_or_keep, _connect_with_password, connect, the caller
        )


def _refuse_extra(**given: Any) -> None:
    if given.get("username") is not None or given.get("password") is not None:
        raise ConfigurationError("give either token= or username=/password=, not both")
