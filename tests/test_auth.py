"""Credentials: URL rule, redaction, token store, and every OAuth flow against scripted answers."""

from __future__ import annotations

import errno
import functools
import json
import logging
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from fake_service import BASE, Answer, FakeService, form, golden

from mediaframe import auth
from mediaframe.auth import OOB_REDIRECT_URI, Profile, Token, TokenStore
from mediaframe.auth import store as store_module
from mediaframe.exceptions import (
    ConfigurationError,
    ConnectionFailedError,
    OAuthError,
    ResponseFormatError,
    ServerError,
    StateMismatchError,
)

SECRET = "0123456789abcdef0123456789abcdef"


# --- the package ---------------------------------------------------------------------------------


@pytest.mark.parametrize("first", ["mediaframe.http", "mediaframe.auth", "mediaframe.tokens"])
def test_auth_and_http_import_in_either_order(first):
    """http imports mediaframe.tokens, and the token endpoint reads answers with http's wire:
    none may find another half made, whichever is imported first."""
    code = (
        "import sys, mediaframe\n"
        "for name in [m for m in sys.modules if m.startswith(('mediaframe.auth', "
        "'mediaframe.http', 'mediaframe.tokens'))]:\n"
        "    del sys.modules[name]\n"
        f"import {first}\n"
        "from mediaframe.auth import endpoint\n"
        "from mediaframe.http import wire\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-600:]


# --- where a token may travel --------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://assets.example.org/",
        "http://127.0.0.1:8080",
        "http://127.5.5.5",
        "http://[::1]:9",
        "http://localhost",
    ],
)
def test_https_or_loopback_urls_are_accepted(url):
    assert auth.check_base_url(url) == url.rstrip("/")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://assets.example.org", "plain http"),
        ("http://10.0.0.1", "plain http"),
        ("ftp://assets.example.org", "absolute http"),
        ("assets.example.org", "absolute http"),
        ("", "empty"),
        ("https://assets.example.org/?oauth_token=x", "query"),
        ("https://assets.example.org?", "query"),  # every path joined would be a query
        ("https://assets.example.org/#", "query"),
    ],
)
def test_other_urls_are_refused(url, message):
    with pytest.raises(ConfigurationError, match=message):
        auth.check_base_url(url)


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("https://assets.example.org/api/v1", "https://assets.example.org"),
        ("https://assets.example.org/api/v1/", "https://assets.example.org"),
        ("https://assets.example.org/dam/API/V2", "https://assets.example.org/dam"),
        ("http://127.0.0.1:8080/api/oauthv2/token", "http://127.0.0.1:8080"),
    ],
)
def test_a_url_ending_in_an_api_path_is_refused_naming_the_root(url, root):
    """Joined to such a URL every route doubles (/api/v1/api/v1/me/): refused before a
    password prompt or a request, saying which URL to give."""
    with pytest.raises(ConfigurationError, match="ends in the API's own path") as caught:
        auth.check_base_url(url)
    assert f"give the service root, e.g. {root} " in str(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        "https://assets.example.org/dam",
        "https://assets.example.org/api",
        "https://gateway.example.org/api/v1/dam",
        "http://[::1]/v1",
    ],
)
def test_a_service_under_a_path_is_accepted(url):
    # a gateway may mount the service under a path, even one named /api (its routes are then
    # /api/api/v1/...): only the API's own route prefixes are refused
    assert auth.check_base_url(url) == url


@pytest.mark.parametrize("suffix", ["/api", "/api/"])
def test_a_login_at_a_url_ending_in_api_says_to_give_the_root(emulator, suffix):
    with pytest.raises(ResponseFormatError, match="HTTP 404") as caught:
        auth.password_grant(
            emulator.base_url + suffix,
            client_id=emulator.client_id,
            client_secret=emulator.client_secret,
            username="demo",
            password=emulator.password,
        )
    said = str(caught.value)
    assert f"no token endpoint at {emulator.base_url}/api/api/oauthv2/token" in said
    assert f"base_url ends in /api: give the service root, e.g. {emulator.base_url}" in said


def test_a_404_at_the_token_endpoint_says_to_give_the_root():
    fake = FakeService(Answer(404, {"Content-Type": "text/html"}, b"<h1>Not Found</h1>"))
    with pytest.raises(ResponseFormatError, match="give the service root"):
        auth.password_grant(BASE, client_id="a", username="u", password="p", session=fake.session())


# --- redaction ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"GET /api/v1/me/?oauth_token={SECRET}&x=1",
        f"{{'Authorization': 'OAuth {SECRET}'}}",
        f"Authorization: Bearer {SECRET}",
        f"Obtained token {{'access_token': '{SECRET}', 'scope': None}}",
        f'{{"refresh_token": "{SECRET}"}}',
        f"grant_type=password&username=ada&password={SECRET}&client_secret={SECRET}",
        f"GET /callback?code={SECRET}&state=abc",
    ],
)
def test_redact_scrubs_every_secret(text):
    assert SECRET not in auth.redact(text)
    assert "***" in auth.redact(text)


def test_redact_keeps_ordinary_text():
    text = "GET /api/v1/me/ -> 200 (http_code 200)"
    assert auth.redact(text) == text


def test_the_filter_scrubs_requests_oauthlib_records(caplog):
    auth.install_redaction()
    auth.install_redaction()  # idempotent
    logger = logging.getLogger("requests_oauthlib.oauth2_session")
    assert sum(isinstance(f, auth.RedactingFilter) for f in logger.filters) == 1
    caplog.set_level(logging.DEBUG)
    logger.debug("Request body was %s", f"password={SECRET}")
    assert caplog.records and SECRET not in caplog.records[-1].getMessage()


def test_token_repr_hides_secrets():
    token = Token(SECRET, refresh_token=SECRET, expires_at=5.0)
    assert SECRET not in repr(token)
    assert SECRET not in repr(Profile(BASE, token, "id", SECRET))


def test_token_expiry():
    assert not Token("a").is_expired()
    assert Token("a", expires_at=100.0).is_expired(now=50.0)
    assert not Token("a", expires_at=1000.0).is_expired(now=50.0)


def test_a_short_lived_token_is_refreshed_a_share_of_its_lifetime_early():
    # issued at 1000 for 30 s: with a fixed minute it counted as expired from the start
    short = Token("a", refresh_token="r", expires_at=1030.0, lifetime=30.0)
    assert short.leeway == 7.5
    assert not short.is_expired(now=1000.0) and not short.is_expired(now=1022.0)
    assert short.is_expired(now=1023.0)
    minute = Token("a", expires_at=1060.0, lifetime=60.0)
    assert not minute.is_expired(now=1000.0) and minute.is_expired(now=1045.0)


@pytest.mark.parametrize("lifetime", [3600.0, 240.0, None])
def test_a_token_living_four_minutes_or_more_is_refreshed_a_minute_early(lifetime):
    token = Token("a", expires_at=5000.0, lifetime=lifetime)
    assert token.leeway == 60.0
    assert not token.is_expired(now=4939.0) and token.is_expired(now=4941.0)
    assert not token.is_expired(now=4941.0, leeway=10.0)  # an explicit leeway still rules


@pytest.mark.parametrize("lifetime", [-30.0, float("nan")])
def test_a_lifetime_that_makes_no_sense_gives_no_leeway(lifetime):
    token = Token("a", expires_at=1000.0, lifetime=lifetime)
    assert token.leeway == 0.0
    assert not token.is_expired(now=999.0) and token.is_expired(now=1000.0)


def test_the_lifetime_comes_from_expires_in_and_is_stored(tmp_path):
    # not "a" * 8: a secret's upper-case form is redacted too, and "AAAAAAAA" is base64's zeros,
    # which every parquet file's schema holds (the secret sweep would find it there)
    access = "k3y-9q7w"
    token = Token.from_oauth({"access_token": access, "expires_in": "30", "expires_at": 1030.0})
    assert (token.expires_at, token.lifetime) == (1030.0, 30.0)
    store = TokenStore(tmp_path)
    store.save("p", Profile(BASE, Token(SECRET, refresh_token="r", expires_at=9.0, lifetime=30.0)))
    assert store.load("p").token.lifetime == 30.0  # the next process refreshes as early


@pytest.mark.parametrize("member", ["expires_at", "lifetime"])
def test_a_stored_number_no_float_holds_is_a_damaged_profile(tmp_path, member):
    store = TokenStore(tmp_path)
    path = store.save("p", Profile(BASE, Token(SECRET, refresh_token="r", expires_at=9.0)))
    data = json.loads(path.read_text())
    path.write_text(json.dumps(data).replace("}", f', "{member}": 1{"0" * 400}}}'))
    with pytest.raises(ConfigurationError, match="damaged"):  # was a bare OverflowError
        store.load("p")


def test_an_empty_token_is_refused():
    with pytest.raises(ConfigurationError, match="log in again"):
        Token("  ")


# --- token store -------------------------------------------------------------------------------


def test_store_round_trips_profiles_with_private_modes(tmp_path):
    store = TokenStore(tmp_path / "config")
    path = store.save("work", Profile(BASE, Token(SECRET), "app"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    loaded = store.load("work")
    assert (loaded.base_url, loaded.token, loaded.client_id) == (BASE, Token(SECRET), "app")
    assert store.names() == ["work"]
    assert [p.name for p in store.directory.iterdir()] == ["work.json"], "no temporary file left"


def test_store_writes_the_secret_only_with_a_refresh_token(tmp_path):
    store = TokenStore(tmp_path)
    plain = store.save("a", Profile(BASE, Token(SECRET), "app", "s3cret"))
    assert "s3cret" not in plain.read_text()
    refreshable = Profile(BASE, Token(SECRET, refresh_token="r", expires_at=9.0), "app", "s3cret")
    store.save("b", refreshable)
    assert store.load("b").client_secret == "s3cret"
    assert store.load("b").token.refresh_token == "r"


def test_store_files_are_created_private_from_the_first_byte(tmp_path, monkeypatch):
    created = []
    real_open = os.open

    def spy(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if flags & os.O_CREAT:  # the mode the file has the moment it exists, before a byte
            created.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return fd

    monkeypatch.setattr(os, "open", spy)
    TokenStore(tmp_path).save("p", Profile(BASE, Token(SECRET)))
    assert created == [0o600]


def test_store_syncs_the_file_and_then_the_directory_its_rename_is_in(tmp_path, monkeypatch):
    synced = []
    real_fsync = store_module.os.fsync

    def spy(fd):
        synced.append("directory" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(store_module.os, "fsync", spy)
    TokenStore(tmp_path).save("p", Profile(BASE, Token(SECRET)))
    # a crash after save() returned cannot bring the old profile (its dead refresh token) back
    assert synced == ["file", "directory"]


def test_store_saves_where_the_filesystem_cannot_flush_a_folder(tmp_path, monkeypatch):
    real_fsync = store_module.os.fsync

    def folders_refused(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        real_fsync(fd)

    monkeypatch.setattr(store_module.os, "fsync", folders_refused)
    TokenStore(tmp_path).save("p", Profile(BASE, Token(SECRET)))  # the rename stands: no error
    assert TokenStore(tmp_path).load("p").token.access_token == SECRET


def test_store_leaves_the_old_profile_when_a_write_fails(tmp_path, monkeypatch):
    store = TokenStore(tmp_path)
    store.save("p", Profile(BASE, Token("old-token")))

    def broken(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_module.os, "replace", broken)
    with pytest.raises(ConfigurationError, match=r"cannot write profile 'p' .*No space left"):
        store.save("p", Profile(BASE, Token("new-token")))
    assert store.load("p").token.access_token == "old-token"
    assert store.names() == ["p"] and len(list(store.directory.iterdir())) == 1


def test_store_tightens_a_loose_directory(tmp_path):
    (tmp_path / "profiles").mkdir(mode=0o755)
    os.chmod(tmp_path / "profiles", 0o755)
    TokenStore(tmp_path).save("p", Profile(BASE, Token(SECRET)))
    assert stat.S_IMODE((tmp_path / "profiles").stat().st_mode) == 0o700


def test_store_refuses_unknown_damaged_and_readable_profiles(tmp_path):
    store = TokenStore(tmp_path)
    with pytest.raises(ConfigurationError, match="mediaframe login --profile nope"):
        store.load("nope")
    path = store.save("bad", Profile(BASE, Token(SECRET)))
    path.write_text("{not json")
    # the command given works as it is: a damaged profile holds no address or client id to reuse
    with pytest.raises(ConfigurationError, match=r"damaged.*--profile bad --url URL --client"):
        store.load("bad")
    store.save("open", Profile(BASE, Token(SECRET))).chmod(0o644)
    with pytest.raises(ConfigurationError, match="chmod 600"):
        store.load("open")


@pytest.mark.parametrize("kind", ["link-loop", "directory"])
def test_store_refuses_a_profile_that_is_no_readable_file(tmp_path, kind):
    store = TokenStore(tmp_path)
    path = store.save("work", Profile(BASE, Token(SECRET)))
    path.unlink()
    if kind == "link-loop":
        path.symlink_to(path)
    else:
        path.mkdir(mode=0o700)
    with pytest.raises(ConfigurationError, match="cannot read profile file"):
        store.load("work")


@pytest.mark.parametrize("name", ["../evil", "", ".hidden", "a/b", "x" * 80])
def test_store_refuses_names_that_are_paths(tmp_path, name):
    with pytest.raises(ConfigurationError, match="not valid"):
        TokenStore(tmp_path).path(name)


def test_store_says_what_to_do_when_its_folder_cannot_be_written(tmp_path):
    blocked = tmp_path / "config"
    blocked.write_text("a file where the configuration folder should be")
    store = TokenStore(blocked)
    advice = r"\(Not a directory\): .*MEDIAFRAME_CONFIG_DIR"
    with pytest.raises(ConfigurationError, match="cannot create the profile folder .*" + advice):
        store.save("p", Profile(BASE, Token(SECRET)))
    with pytest.raises(ConfigurationError, match="cannot create the profile folder"):
        store.check_writable("p")
    with (
        pytest.raises(ConfigurationError, match="cannot create the profile folder"),
        store.locked("p"),
    ):
        pass
    with pytest.raises(ConfigurationError, match=r"cannot remove profile 'p' .*Not a directory"):
        store.delete("p")


def test_store_says_what_to_do_when_a_folder_has_the_profiles_name(tmp_path):
    store = TokenStore(tmp_path)
    (store.directory / "p.json").mkdir(parents=True)
    with pytest.raises(ConfigurationError, match="a folder has the profile's name"):
        store.check_writable("p")
    with pytest.raises(ConfigurationError, match="cannot write profile 'p'"):
        store.save("p", Profile(BASE, Token(SECRET)))
    with pytest.raises(ConfigurationError, match="cannot remove profile 'p'"):
        store.delete("p")
    assert TokenStore(tmp_path).check_writable("q") == store.directory / "q.json"
    with pytest.raises(ConfigurationError, match="not valid"):
        store.check_writable("my work")


def test_store_delete(tmp_path):
    store = TokenStore(tmp_path)
    store.save("p", Profile(BASE, Token(SECRET)))
    assert store.delete("p") is True
    assert store.delete("p") is False
    assert store.names() == []


# --- password grant -----------------------------------------------------------------------------


def test_password_grant_posts_a_form_with_client_credentials_in_the_body_only():
    fake = FakeService(golden("token_ok"))
    token = auth.password_grant(
        BASE,
        client_id="app",
        client_secret="shh",
        username="ada",
        password="pw",
        session=fake.session(),
    )
    assert token == Token(SECRET)
    sent = fake.requests[0]
    assert (sent.method, sent.path_url) == ("POST", "/api/oauthv2/token")
    assert sent.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert "Authorization" not in sent.headers, "credentials in the body or Basic, never both"
    assert dict(form(sent)) == {
        "grant_type": "password",
        "username": "ada",
        "password": "pw",
        "client_id": "app",
        "client_secret": "shh",
    }


def test_password_grant_without_a_secret_sends_none():
    fake = FakeService(golden("token_ok"))
    auth.password_grant(
        BASE, client_id="app", username="ada", password="pw", session=fake.session()
    )
    assert "client_secret" not in dict(form(fake.requests[0]))


def test_password_grant_keeps_expiry_and_refresh_token_when_sent():
    fake = FakeService(golden("token_refreshable"))
    token = auth.password_grant(
        BASE, client_id="a", username="u", password="p", session=fake.session()
    )
    assert token.refresh_token == "r2r2r2r2"
    assert token.expires_at is not None and not token.is_expired()


@pytest.mark.parametrize(
    ("code", "advice"),
    [
        ("invalid_grant", "username, password or code is wrong"),
        ("unsupported_grant_type", "--oob"),
        ("invalid_client", "client_id and client_secret"),
        ("something_new", "log in again"),
    ],
)
def test_token_errors_become_oauth_errors_with_advice(code, advice):
    fake = FakeService(
        Answer(400, {"Content-Type": "application/json"}, f'{{"error": "{code}"}}'.encode())
    )
    with pytest.raises(OAuthError, match=advice) as caught:
        auth.password_grant(BASE, client_id="a", username="u", password="p", session=fake.session())
    assert caught.value.error == code
    assert "p" not in str(caught.value).split()


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (golden("proxy_login_page"), ResponseFormatError),
        (golden("proxy_502"), ServerError),
        (Answer(200, {}, b'{"scope": null}'), ResponseFormatError),
        (requests.ConnectionError("refused"), ConnectionFailedError),
    ],
)
def test_token_endpoint_failures_are_typed(answer, kind):
    fake = FakeService(answer)
    with pytest.raises(kind):
        auth.password_grant(BASE, client_id="a", username="u", password="p", session=fake.session())


@pytest.mark.parametrize(
    "members",
    [
        '"expires_in": "soon"',  # oauthlib: a bare ValueError
        '"expires_in": Infinity',  # oauthlib: a bare OverflowError
        '"expires_in": true',
        '"refresh_token": 12345678',  # was "the refresh token is empty: log in again"
        '"expires_in": 1' + "0" * 400,  # oauthlib: an expiry no float holds (OverflowError)
        '"expires_in": "1' + "0" * 400 + '"',
        '"expires_in": -5',
        # dead when issued: each request would first refresh it (oauthlib rounds 0.5 down to 0)
        '"expires_in": 0',
        '"expires_in": "0"',
        '"expires_in": 0.5',
        '"expires_at": 5',  # read only without expires_in: a time long past
        '"expires_at": "soon"',  # read only without expires_in: a bare ValueError
        '"expires_at": 1' + "0" * 400,  # a bare OverflowError
        '"expires_at": [1]',
    ],
)
def test_a_token_answer_with_odd_members_is_a_format_error(members):
    body = f'{{"access_token": "{SECRET}", {members}}}'.encode()
    fake = FakeService(Answer(200, {"Content-Type": "application/json"}, body))
    with pytest.raises(ResponseFormatError, match="misconfigured"):
        auth.password_grant(BASE, client_id="a", username="u", password="p", session=fake.session())


@pytest.mark.parametrize("expires_at", ["5", "1" + "0" * 400])
def test_expires_in_is_read_over_an_expires_at_beside_it(expires_at):
    # oauthlib 4 took a server's expires_at over its expires_in: 5 kept a token expired when
    # issued (refreshed before every request), 400 digits ended in a bare OverflowError
    body = f'{{"access_token": "{SECRET}", "expires_in": 3600, "expires_at": {expires_at}}}'
    fake = FakeService(Answer(200, {"Content-Type": "application/json"}, body.encode()))
    token = auth.password_grant(
        BASE, client_id="a", username="u", password="p", session=fake.session()
    )
    assert token.lifetime == 3600 and not token.is_expired()
    assert token.expires_at is not None and token.expires_at <= time.time() + 3601


@pytest.mark.parametrize(
    ("body", "kind", "told"),
    [
        (b"[" * 100_000, ResponseFormatError, "else than JSON"),  # a bare RecursionError
        (b'{"a":' * 100_000, ResponseFormatError, "else than JSON"),
        (b'{"access_token": "ab\\u2026cdefgh"}', ResponseFormatError, "outside ASCII"),
        (
            f'{{"access_token": "{SECRET}", "refresh_token": "r r r"}}'.encode(),
            ResponseFormatError,
            "misconfigured",
        ),
        (b'{"error": "' + b"x" * 500_000 + b'"}', OAuthError, "xxx..."),
    ],
)
def test_a_hostile_token_answer_is_a_mediaframe_error_and_short(body, kind, told):
    fake = FakeService(Answer(200, {"Content-Type": "application/json"}, body))
    with pytest.raises(kind, match=re.escape(told)) as caught:
        auth.password_grant(BASE, client_id="a", username="u", password="p", session=fake.session())
    assert len(str(caught.value)) < 400


@pytest.mark.parametrize(("status", "kind"), [(400, ResponseFormatError), (503, ServerError)])
def test_a_token_in_an_error_answer_is_not_kept(status, kind):
    body = f'{{"access_token": "{SECRET}"}}'.encode()
    fake = FakeService(Answer(status, {"Content-Type": "application/json"}, body))
    with pytest.raises(kind, match=f"HTTP {status} with an access_token"):
        auth.password_grant(BASE, client_id="a", username="u", password="p", session=fake.session())


@pytest.mark.parametrize("members", ['"scope": 5', '"scope": {"a": 1}', '"lifetime": "soon"'])
def test_members_mediaframe_never_reads_cannot_break_a_login(members):
    # scope: oauthlib split it as text (a bare AttributeError); lifetime: a stored profile's name
    body = f'{{"access_token": "{SECRET}", {members}}}'.encode()
    fake = FakeService(Answer(200, {"Content-Type": "application/json"}, body))
    token = auth.password_grant(
        BASE, client_id="a", username="u", password="p", session=fake.session()
    )
    assert (token.access_token, token.expires_at, token.lifetime) == (SECRET, None, None)


def test_the_token_endpoint_on_loopback_http_works_and_leaves_the_environment_alone():
    fake = FakeService(golden("token_ok"))
    before = os.environ.get("OAUTHLIB_INSECURE_TRANSPORT")
    token = auth.password_grant(
        "http://127.0.0.1:9", client_id="a", username="u", password="p", session=fake.session()
    )
    assert token.access_token == SECRET
    assert os.environ.get("OAUTHLIB_INSECURE_TRANSPORT") == before


def test_secrets_never_reach_the_logs_during_a_login(caplog):
    caplog.set_level(logging.DEBUG)
    fake = FakeService(golden("token_ok"))
    auth.password_grant(
        BASE,
        client_id="a",
        client_secret="topsecret1",
        username="u",
        password="hunter22",
        session=fake.session(),
    )
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "Obtained token" in messages, "requests-oauthlib logged, and was filtered"
    for secret in (SECRET, "topsecret1", "hunter22"):
        assert secret not in messages


# --- authorization code, oob, browser-only ------------------------------------------------------


def test_authorization_url_carries_a_fresh_random_state():
    url, state = auth.authorization_url(BASE, client_id="app", redirect_uri=OOB_REDIRECT_URI)
    params = parse_qs(urlsplit(url).query)
    assert urlsplit(url).path == "/api/oauthv2/authorize"
    assert params["state"] == [state] and len(state) >= 32
    assert params["response_type"] == ["code"]
    assert params["redirect_uri"] == [OOB_REDIRECT_URI]
    assert auth.authorization_url(BASE, client_id="app", redirect_uri="x")[1] != state


@pytest.mark.parametrize("spelling", ["code_and_token", "code-and-token"])
def test_code_and_token_is_sent_hyphenated(spelling):
    url, _ = auth.authorization_url(BASE, client_id="a", redirect_uri="r", response_type=spelling)
    assert parse_qs(urlsplit(url).query)["response_type"] == ["code-and-token"]


def test_code_from_redirect_checks_the_state():
    assert auth.code_from_redirect("http://127.0.0.1:1/cb?code=c1&state=s1", state="s1") == "c1"
    with pytest.raises(StateMismatchError, match="forgery"):
        auth.code_from_redirect("http://127.0.0.1:1/cb?code=c1&state=evil", state="s1")
    with pytest.raises(StateMismatchError):
        auth.code_from_redirect("http://127.0.0.1:1/cb?code=c1", state="s1")
    with pytest.raises(OAuthError, match="refused") as caught:
        auth.code_from_redirect("http://127.0.0.1:1/cb?error=access_denied&state=s1", state="s1")
    assert caught.value.error == "access_denied"
    assert auth.code_from_redirect("  barecode  ", state=None) == "barecode"


@pytest.mark.parametrize(
    "read",
    [
        lambda: auth.code_from_redirect("http://[::1/cb?code=c1&state=s1", state="s1"),
        lambda: auth.token_from_redirect("https://app.example:1e3/cb#access_token=t", state=None),
        lambda: auth.login_browser(
            "https://assets.example.org", client_id="c", redirect_uri="http://[bad/cb"
        ),
    ],
    ids=["pasted-code", "pasted-token", "redirect-uri"],
)
def test_an_address_urllib_cannot_read_is_a_configuration_error(read):
    with pytest.raises(ConfigurationError, match="cannot be read as a URL"):
        read()


def test_token_from_redirect_reads_the_fragment():
    url = f"https://app.example/cb#access_token={SECRET}&state=s1"
    assert auth.token_from_redirect(url, state="s1") == Token(SECRET)
    with pytest.raises(StateMismatchError):
        auth.token_from_redirect(url, state="other")
    with pytest.raises(OAuthError, match="no #access_token"):
        auth.token_from_redirect("https://app.example/cb#state=s1", state="s1")


def test_oob_flow_exchanges_the_pasted_code():
    fake = FakeService(golden("token_ok"))
    shown = []

    def paste(url):
        shown.append(url)
        return "pasted-code\n"

    token = auth.login_oob(BASE, client_id="app", ask=paste, session=fake.session())
    assert token.access_token == SECRET
    assert "redirect_uri=urn%3Aietf%3Awg%3Aoauth%3A2.0%3Aoob" in shown[0]
    assert dict(form(fake.requests[0])) == {
        "grant_type": "authorization_code",
        "code": "pasted-code",
        "redirect_uri": OOB_REDIRECT_URI,
        "client_id": "app",
    }


def test_implicit_flow_reads_the_pasted_address():
    def paste(url):
        state = parse_qs(urlsplit(url).query)["state"][0]
        assert parse_qs(urlsplit(url).query)["response_type"] == ["token"]
        return f"https://app.example/cb#access_token={SECRET}&state={state}"

    assert auth.login_implicit(
        BASE, client_id="a", redirect_uri="https://app.example/cb", ask=paste
    ) == Token(SECRET)


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _browser(answer_for):
    """A stand-in browser: follows the authorization URL to the loopback callback in a thread."""

    def open_browser(url):
        params = parse_qs(urlsplit(url).query)
        target = answer_for(params["redirect_uri"][0], params["state"][0])
        threading.Thread(target=requests.get, args=(target,), kwargs={"timeout": 10}).start()

    return open_browser


@pytest.mark.parametrize(
    ("family", "host"), [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")], ids=["v4", "v6"]
)
def test_browser_flow_catches_the_callback_and_exchanges_the_code(family, host):
    fake = FakeService(golden("token_ok"))
    try:
        with socket.socket(family) as probe:
            probe.bind((host, 0))
            port = probe.getsockname()[1]
    except OSError:
        pytest.skip(f"this machine has no {host} loopback")
    redirect = f"http://{f'[{host}]' if ':' in host else host}:{port}/callback"
    browser = _browser(lambda uri, state: f"{uri}?code=the-code&state={state}")
    token = auth.login_browser(
        BASE,
        client_id="app",
        redirect_uri=redirect,
        open_browser=browser,
        wait=10,
        session=fake.session(),
    )
    assert token.access_token == SECRET
    assert ("code", "the-code") in form(fake.requests[0])
    assert ("redirect_uri", redirect) in form(fake.requests[0])


def test_browser_flow_is_not_held_by_a_connection_that_sends_nothing():
    fake = FakeService(golden("token_ok"))
    redirect = f"http://127.0.0.1:{_free_port()}/callback"
    browser = _browser(lambda uri, state: f"{uri}?code=the-code&state={state}")
    idle = []

    def preconnect_then_browse(url):
        # a browser's speculative preconnect: opened first, never used
        idle.append(socket.create_connection(("127.0.0.1", urlsplit(redirect).port)))
        # closed after a long while, so that a login held by it ends (and fails) rather than hangs
        closing = threading.Timer(30, idle[0].close)
        closing.daemon = True
        closing.start()
        browser(url)

    token = auth.login_browser(
        BASE,
        client_id="app",
        redirect_uri=redirect,
        open_browser=preconnect_then_browse,
        wait=10,
        session=fake.session(),
    )
    idle[0].close()
    assert token.access_token == SECRET


def test_browser_flow_refuses_a_forged_state():
    fake = FakeService(golden("token_ok"))
    redirect = f"http://127.0.0.1:{_free_port()}/callback"
    refused = []

    def forge(url):  # the callback serves before the browser opens: asked in this thread
        refused.append(requests.get(f"{redirect}?code=the-code&state=forged", timeout=10))

    with pytest.raises(StateMismatchError, match="1 request"):
        auth.login_browser(
            BASE,
            client_id="a",
            redirect_uri=redirect,
            open_browser=forge,
            wait=0,
            session=fake.session(),
        )
    assert refused[0].status_code == 400
    assert fake.requests == [], "no code exchanged after a state mismatch"


@pytest.mark.parametrize(
    ("genuine", "outcome"),
    [("code=the-code", None), ("error=access_denied", "access_denied")],
    ids=["code", "error"],
)
def test_a_forged_callback_before_the_browsers_answer_is_ignored(genuine, outcome):
    # review 14, finding 2: any local process, or an <img> on a page the user has open, could
    # hit the callback first and end the login
    fake = FakeService(golden("token_ok"))
    redirect = f"http://127.0.0.1:{_free_port()}/callback"
    answers = []

    def forged_then_browser(url):
        state = parse_qs(urlsplit(url).query)["state"][0]

        def hits():
            for query in ("code=AAAA&state=forged", "code=AAAA", f"{genuine}&state={state}"):
                answers.append(requests.get(f"{redirect}?{query}", timeout=10).status_code)

        threading.Thread(target=hits).start()

    login = functools.partial(
        auth.login_browser,
        BASE,
        client_id="app",
        redirect_uri=redirect,
        open_browser=forged_then_browser,
        wait=10,
        session=fake.session(),
    )
    if outcome is None:
        assert login().access_token == SECRET
        assert ("code", "the-code") in form(fake.requests[0])
    else:
        with pytest.raises(OAuthError, match=outcome) as caught:
            login()
        assert not isinstance(caught.value, StateMismatchError) and fake.requests == []
    assert answers[:2] == [400, 400]


@pytest.mark.parametrize("error", ["access_denied", "server_error"])
def test_an_error_answer_without_state_ends_the_login_with_that_error(error):
    # review 14b, finding 6: the contract promises state with the code only; a provider's
    # ?error=... without it made the login wait its whole time and then blame a forgery
    fake = FakeService(golden("token_ok"))
    redirect = f"http://127.0.0.1:{_free_port()}/callback"
    pages = []
    browsers = []

    def refuse(url):
        def browser():
            answer = requests.get(f"{redirect}?error={error}", timeout=10)
            pages.append((answer.status_code, answer.text))

        browsers.append(threading.Thread(target=browser))
        browsers[0].start()

    with pytest.raises(OAuthError, match=f"refused the login \\({error}\\)") as caught:
        auth.login_browser(
            BASE,
            client_id="app",
            redirect_uri=redirect,
            open_browser=refuse,
            wait=30,
            session=fake.session(),
        )
    assert not isinstance(caught.value, StateMismatchError) and caught.value.error == error
    assert "no answer" not in str(caught.value) and fake.requests == []
    browsers[0].join(10)  # the login ends once the answer is taken, maybe before the page is read
    assert pages and pages[0][0] == 200 and "Login failed" in pages[0][1]


@pytest.mark.parametrize("query", ["error=access_denied&state=forged", "code=AAAA&state="])
def test_an_answer_with_another_state_is_still_refused(query):
    redirect = f"http://127.0.0.1:{_free_port()}/callback"
    refused = []

    def forge(url):
        refused.append(requests.get(f"{redirect}?{query}", timeout=10).status_code)

    with pytest.raises(StateMismatchError, match="1 request"):
        auth.login_browser(BASE, client_id="a", redirect_uri=redirect, open_browser=forge, wait=0.5)
    assert refused == [400]


def test_browser_flow_gives_up_after_waiting():
    redirect = f"http://127.0.0.1:{_free_port()}/callback"
    with pytest.raises(OAuthError, match="no answer from the browser"):
        auth.login_browser(
            BASE, client_id="a", redirect_uri=redirect, open_browser=lambda url: None, wait=0.2
        )


def test_browser_flow_needs_a_loopback_redirect():
    with pytest.raises(ConfigurationError, match="out-of-band"):
        auth.login_browser(BASE, client_id="a", redirect_uri=OOB_REDIRECT_URI)


# --- refresh ------------------------------------------------------------------------------------


def test_refresh_sends_the_refresh_grant_and_keeps_an_unrotated_refresh_token():
    fake = FakeService(golden("token_ok"))
    fresh = auth.refresh(
        BASE, Token("old", refresh_token="r1"), client_id="app", session=fake.session()
    )
    assert fresh == Token(SECRET, refresh_token="r1")
    body = dict(form(fake.requests[0]))
    assert body["grant_type"] == "refresh_token" and body["refresh_token"] == "r1"
    assert body["client_id"] == "app"


@pytest.mark.parametrize("member", [', "refresh_token": null', ', "refresh_token": ""', ""])
def test_refresh_keeps_the_refresh_token_when_the_answer_names_none(member):
    body = f'{{"access_token": "{SECRET}", "expires_in": 3600{member}}}'.encode()
    fake = FakeService(Answer(200, {"Content-Type": "application/json"}, body))
    held = Token("old-token", refresh_token="r1-kept", expires_at=1.0)
    fresh = auth.refresh(BASE, held, client_id="app", session=fake.session())
    assert fresh.access_token == SECRET and fresh.refresh_token == "r1-kept"


def test_refresh_needs_a_refresh_token():
    with pytest.raises(ConfigurationError, match="log in again"):
        auth.refresh(BASE, Token("old"), client_id="app")


# --- end to end, against the emulator ---------------------------------------------------------


def test_password_grant_against_the_emulator(inprocess_emulator):
    emu = inprocess_emulator
    token = auth.password_grant(
        emu.inprocess_url, client_id=emu.client_id, client_secret=emu.client_secret,
        username=emu.username, password=emu.password, session=emu.requests_session(),
    )  # fmt: skip
    assert re.fullmatch(r"[0-9a-f]{32}", token.access_token)
    assert (token.refresh_token, token.expires_at) == (None, None)


def test_an_application_without_the_password_grant_is_told_to_use_the_browser(inprocess_emulator):
    emu = inprocess_emulator
    web = next(app for app in emu.accounts.apps.values() if not app.password_grant)
    with pytest.raises(OAuthError, match="--oob") as caught:
        auth.password_grant(
            emu.inprocess_url, client_id=web.client_id, client_secret=web.client_secret,
            username=emu.username, password=emu.password, session=emu.requests_session(),
        )  # fmt: skip
    assert caught.value.error == "unsupported_grant_type"


def test_code_flow_with_the_loopback_callback_against_the_emulator(emulator):
    def browser(url):
        # No browser here: requests follows the authorize redirect to the loopback callback.
        threading.Thread(target=requests.get, args=(url,), kwargs={"timeout": 10}).start()

    token = auth.login_browser(
        emulator.base_url, client_id=emulator.client_id, client_secret=emulator.client_secret,
        redirect_uri=emulator.redirect_uri, open_browser=browser, wait=10,
    )  # fmt: skip
    me = requests.get(
        f"{emulator.base_url}/api/v1/me/", headers=auth.token_header(token.access_token), timeout=10
    )
    assert me.json()["response"]["user"]["login"] == "demo"


def test_oob_flow_against_the_emulator(emulator):
    def paste(url):
        page = requests.get(url, timeout=10).text
        return re.search(r'name="code" value="([^"]+)"', page).group(1)

    token = auth.login_oob(
        emulator.base_url, client_id=emulator.client_id, client_secret=emulator.client_secret,
        ask=paste,
    )  # fmt: skip
    assert len(token.access_token) == 32


@pytest.mark.parametrize("response_type", ["token", "code-and-token"])
def test_browser_only_fragment_against_the_emulator(emulator, response_type):
    url, state = auth.authorization_url(
        emulator.base_url, client_id=emulator.client_id, redirect_uri=emulator.redirect_uri,
        response_type=response_type,
    )  # fmt: skip
    location = requests.get(url, allow_redirects=False, timeout=10).headers["Location"]
    token = auth.token_from_redirect(location, state=state)
    assert len(token.access_token) == 32
    if response_type == "code-and-token":
        assert auth.code_from_redirect(location, state=state)


def test_a_used_code_is_refused_by_the_emulator(emulator):
    url, state = auth.authorization_url(
        emulator.base_url, client_id=emulator.client_id, redirect_uri=emulator.redirect_uri
    )
    location = requests.get(url, allow_redirects=False, timeout=10).headers["Location"]
    code = auth.code_from_redirect(location, state=state)
    exchange = {"client_id": emulator.client_id, "redirect_uri": emulator.redirect_uri}
    assert auth.exchange_code(emulator.base_url, code, **exchange)
    with pytest.raises(OAuthError) as caught:
        auth.exchange_code(emulator.base_url, code, **exchange)
    assert caught.value.error == "invalid_grant"
