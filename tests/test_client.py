"""connect() resolves credentials in order; Client holds the transport and never shows a token."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time

import pytest
from fake_service import BASE, Answer, FakeService, envelope, golden

import mediaframe as mf
from mediaframe import files
from mediaframe.auth import Profile, Token, TokenStore
from mediaframe.config import Settings
from mediaframe.exceptions import (
    ConfigurationError,
    OAuthError,
    ProfileWarning,
    ResponseFormatError,
)

SECRET = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def settings(tmp_path):
    return Settings(config_dir=tmp_path / "config", cache_dir=tmp_path / "cache", backoff=0)


def test_connect_with_a_token(settings):
    fake = FakeService(golden("me"))
    with mf.connect(BASE + "/", token=SECRET, settings=settings, session=fake.session()) as client:
        assert client.base_url == BASE
        assert client.whoami()["login"] == "ada"
        assert client.settings is settings
        assert SECRET not in repr(client) and SECRET not in repr(client.api)
    assert fake.requests[0].headers["Authorization"] == f"OAuth {SECRET}"


def test_user_key_is_the_login_fetched_once(settings):
    fake = FakeService(golden("me"))
    client = mf.connect(BASE, token=SECRET, settings=settings, session=fake.session())
    assert client.user_key == "ada" and client.user_key == "ada"
    assert len(fake.requests) == 1


@pytest.mark.parametrize("response", [{}, {"user": None, "collections": []}, {"user": "ada"}])
def test_a_me_answer_naming_no_user_is_not_kept(settings, response):
    # a failure dressed as a 200 (or a proxy's answer) must not poison the session
    fake = FakeService(envelope(response), golden("me"))
    client = mf.connect(BASE, token=SECRET, settings=settings, session=fake.session())
    with pytest.raises(ResponseFormatError, match="names no user"):
        client.me_raw()
    assert client.user_key == "ada" and client.whoami()["login"] == "ada"
    assert len(fake.requests) == 2


def connect_with_password(fake, settings, **options):
    """Ada's password grant through ``fake`` (client "app")."""
    return mf.connect(
        BASE,
        client_id="app",
        username="ada",
        password="pw",
        settings=settings,
        session=fake.session(),
        **options,
    )


def test_connect_with_a_password_stores_the_profile_when_named(settings):
    fake = FakeService(golden("token_ok"), golden("me"))
    client = connect_with_password(fake, settings, profile="work")
    assert client.profile == "work"
    assert TokenStore(settings.config_dir).load("work").token == Token(SECRET)
    client.me_raw()
    assert fake.requests[1].headers["Authorization"] == f"OAuth {SECRET}"


def test_a_token_the_disk_cannot_take_is_kept_in_the_connection(settings, monkeypatch):
    # The folder passed its check before the grant; the disk fills before the profile is written.
    fake = FakeService(golden("token_ok"), golden("me"))

    def disk_full(handle, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as full:
        full.setattr(files, "_write_all", disk_full)
        said = r"'work' .*No space left.*save_profile\('work'\)"
        with pytest.warns(ProfileWarning, match=said) as caught:
            client = connect_with_password(fake, settings, profile="work")
    assert caught[0].filename == __file__  # points at the caller's line
    store = TokenStore(settings.config_dir)
    assert store.names() == [] and list(store.directory.iterdir()) == []  # no partial file
    assert client.profile is None  # a refresh must not write to a profile that is not there
    assert client.whoami()["login"] == "ada"  # the session works on the token it holds
    assert fake.requests[1].headers["Authorization"] == f"OAuth {SECRET}"
    client.save_profile("work")  # space freed: stored as the warning says
    assert store.load("work").token == Token(SECRET)


@pytest.mark.parametrize("name", ["my work", "a/b"])
def test_connect_with_a_password_refuses_a_bad_profile_name_before_the_grant(settings, name):
    fake = FakeService(golden("token_ok"), golden("me"))
    with pytest.raises(ConfigurationError, match="is not valid"):
        connect_with_password(fake, settings, profile=name)
    assert fake.requests == [], "the service issued a token the client then threw away"


def test_connect_with_a_password_stores_nothing_unnamed(settings):
    fake = FakeService(golden("token_ok"))
    connect_with_password(fake, settings)
    assert TokenStore(settings.config_dir).names() == []


def test_a_refused_password_raises_oauth_error(settings):
    fake = FakeService(golden("token_invalid_grant"))
    with pytest.raises(OAuthError):
        mf.connect(
            BASE,
            client_id="a",
            username="u",
            password="p",
            settings=settings,
            session=fake.session(),
        )


def test_connect_loads_the_default_profile(settings):
    TokenStore(settings.config_dir).save("default", Profile(BASE, Token(SECRET)))
    fake = FakeService(golden("me"))
    client = mf.connect(settings=settings, session=fake.session())
    assert (client.base_url, client.profile) == (BASE, "default")
    client.whoami()
    assert fake.requests[0].headers["Authorization"] == f"OAuth {SECRET}"


def test_connect_refuses_a_profile_for_another_service(settings):
    TokenStore(settings.config_dir).save("work", Profile(BASE, Token(SECRET)))
    with pytest.raises(ConfigurationError, match=r"is for https://assets\.example\.org"):
        mf.connect("https://other.example.org", profile="work", settings=settings)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"token": SECRET}, "needs base_url"),
        ({"base_url": BASE, "token": SECRET, "password": "x"}, "not both"),
        ({"base_url": BASE, "username": "u", "password": "p"}, "client_id"),
        ({}, "mediaframe login --profile default"),
        ({"base_url": "http://assets.example.org", "token": SECRET}, "plain http"),
    ],
)
def test_connect_explains_missing_or_contradictory_credentials(settings, kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        mf.connect(settings=settings, **kwargs)


def test_an_expiring_profile_is_refreshed_and_persisted_before_use(settings):
    store = TokenStore(settings.config_dir)
    stale = Token("old-token", refresh_token="r1", expires_at=1.0)
    store.save("work", Profile(BASE, stale, "app", "shh"))
    seen_on_disk = []

    def me(request):
        seen_on_disk.append(store.load("work").token.access_token)
        return golden("me")

    fake = FakeService(golden("token_refreshable"), me)
    client = mf.connect(profile="work", settings=settings, session=fake.session())
    client.whoami()
    assert fake.requests[0].path_url == "/api/oauthv2/token"
    assert fake.requests[1].headers["Authorization"] == "OAuth fedcba9876543210fedcba9876543210"
    assert seen_on_disk == ["fedcba9876543210fedcba9876543210"], "persisted before it was used"
    assert store.load("work").token.refresh_token == "r2r2r2r2"


def test_two_connections_of_one_profile_spend_its_refresh_token_once(settings):
    """Two notebooks of one profile: the second finds the token the first refreshed and stored,
    instead of spending the refresh token again (a rotating service refuses it then)."""
    store = TokenStore(settings.config_dir)
    store.save("work", Profile(BASE, Token("old-token", refresh_token="r1", expires_at=1.0), "app"))
    fake = FakeService(golden("token_refreshable"), golden("me"), golden("me"))
    first = mf.connect(profile="work", settings=settings, session=fake.session())
    second = mf.connect(profile="work", settings=settings, session=fake.session())
    first.whoami()
    second.whoami()
    paths = [request.path_url for request in fake.requests]
    assert paths == ["/api/oauthv2/token", "/api/v1/me/", "/api/v1/me/"]
    fresh = "OAuth fedcba9876543210fedcba9876543210"
    assert fake.requests[2].headers["Authorization"] == fresh


def test_a_profile_is_refreshed_under_a_lock_other_processes_see(settings):
    store = TokenStore(settings.config_dir)
    store.save("work", Profile(BASE, Token("old-token", refresh_token="r1", expires_at=1.0), "app"))
    held = []

    def token(request):
        # another open file description of the lock file, as another process would open it
        fd = os.open(store.directory / ".work.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held.append(True)
        finally:
            os.close(fd)
        return golden("token_refreshable")

    fake = FakeService(token, golden("me"))
    mf.connect(profile="work", settings=settings, session=fake.session()).whoami()
    assert held == [True]
    assert (store.directory / ".work.lock").stat().st_mode & 0o777 == 0o600


def test_a_connection_saved_as_a_profile_is_found_again_and_kept_fresh(settings):
    # what `mediaframe login` does with a token from an OAuth flow: one path, the library's
    expiring = Token("old-token", refresh_token="r1", expires_at=1.0)
    fake = FakeService(golden("token_refreshable"), golden("me"), golden("me"))
    client = mf.connect(
        BASE,
        token=expiring,
        client_id="app",
        client_secret="shh-client",
        settings=settings,
        session=fake.session(),
    )
    client.whoami()  # refreshed first: a Token with a refresh token and a client id
    assert fake.requests[0].path_url == "/api/oauthv2/token"
    path = client.save_profile("work")
    assert client.profile == "work" and path.stat().st_mode & 0o777 == 0o600
    stored = TokenStore(settings.config_dir).load("work")
    assert stored.base_url == BASE and (stored.client_id, stored.client_secret) == (
        "app",
        "shh-client",
    )
    assert stored.token.access_token == "fedcba9876543210fedcba9876543210"
    again = mf.connect(profile="work", settings=settings, session=fake.session())
    assert again.whoami()["login"] == "ada"


def test_a_short_lived_token_is_refreshed_near_its_end_not_before_every_request(
    settings, monkeypatch
):
    """A service issuing 30-second tokens: refreshed once, and again near the end of the new
    one's life, not before each request (the fixed minute of leeway made each one stale)."""
    clock = [1000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])  # oauthlib's expires_at reads it too
    issued = []

    def token(request):
        issued.append(clock[0])
        body = {"access_token": f"short-lived-{len(issued):04d}", "scope": None}
        body |= {"expires_in": 30, "refresh_token": f"r-{len(issued):04d}"}
        return Answer(200, {"Content-Type": "application/json"}, json.dumps(body).encode())

    def answer(request):
        return token(request) if request.path_url == "/api/oauthv2/token" else golden("me")

    fake = FakeService(answer)
    expired = Token("old-token", refresh_token="r1", expires_at=1.0)
    client = mf.connect(
        BASE, token=expired, client_id="app", settings=settings, session=fake.session()
    )
    for now in (1000.0, 1005.0, 1010.0, 1015.0, 1020.0, 1022.0):
        clock[0] = now
        client.me_raw(refresh=True)
    assert issued == [1000.0], "one refresh for the expired token, none while the new one lives"
    clock[0] = 1023.0  # 7.5 s (a quarter of its 30) from its end: refreshed
    client.me_raw(refresh=True)
    assert issued == [1000.0, 1023.0]
    sent = [r.headers.get("Authorization") for r in fake.requests if "/me/" in r.path_url]
    assert sent[-1] == "OAuth short-lived-0002"


@pytest.mark.parametrize(
    "expiry",
    [{"expires_in": 0}, {"expires_in": "0"}, {"expires_in": 0.5}, {"expires_at": 5}],
    ids=["expires_in 0", "expires_in '0'", "expires_in 0.5", "expires_at past"],
)
def test_a_token_issued_dead_is_refused_not_kept(settings, expiry):
    """A refresh answered with a token dead when issued was kept: expired at once (a past
    ``expires_at``; ``expires_in: 0`` with oauthlib 3), each request silently refreshed it
    first, or (oauthlib 4 drops a zero ``expires_in``) it was kept as never expiring. Now the
    refresh fails with advice, every time, and the dead token is never sent."""
    body = {"access_token": "dead-on-arrival-token", "scope": None, **expiry}
    body["refresh_token"] = "r-next-token"

    def answer(request):
        if request.path_url == "/api/oauthv2/token":
            return Answer(200, {"Content-Type": "application/json"}, json.dumps(body).encode())
        return golden("me")

    fake = FakeService(answer)
    expired = Token("old-token", refresh_token="r1", expires_at=1.0)
    client = mf.connect(
        BASE, token=expired, client_id="app", settings=settings, session=fake.session()
    )
    for _ in range(3):
        with pytest.raises(ResponseFormatError, match=r"expires_(in|at) .*misconfigured"):
            client.me_raw(refresh=True)
    assert not any("dead-on-arrival" in str(r.headers) for r in fake.requests)


def test_the_token_is_sent_even_with_a_netrc_login_for_the_host(settings, tmp_path, monkeypatch):
    """requests puts a ~/.netrc login for the host in the Authorization header of a request
    that has no auth of its own: the token was dropped and the netrc password sent instead."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine assets.example.org login someone password netrc-pass-123\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    fake = FakeService(golden("me"))
    client = mf.connect(BASE, token=SECRET, settings=settings, session=fake.session())
    client.whoami()
    assert fake.requests[0].headers["Authorization"] == f"OAuth {SECRET}"
