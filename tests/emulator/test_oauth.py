"""The OAuth 2.0 endpoints: token grants, client authentication, authorize flows."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

TOKEN = "/api/oauthv2/token"
AUTHORIZE = "/api/oauthv2/authorize"
OOB = "urn:ietf:wg:oauth:2.0:oob"


@pytest.fixture
def oauth(fresh_emulator):
    """A served emulator and a function posting forms to its token endpoint."""
    emu = fresh_emulator(records=100)

    def post(data: dict | None = None, **kwargs) -> requests.Response:
        return requests.post(emu.base_url + TOKEN, data=data, timeout=10, **kwargs)

    post.emu = emu
    return post


def password_form(emu, **overrides) -> dict:
    form = {
        "grant_type": "password",
        "client_id": emu.client_id,
        "client_secret": emu.client_secret,
        "username": emu.username,
        "password": emu.password,
    }
    form.update(overrides)
    return {k: v for k, v in form.items() if v is not None}


def test_password_grant_answers_exactly_the_servers_body(oauth) -> None:
    answer = oauth(password_form(oauth.emu))
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.headers["Cache-Control"] == "no-store"
    body = answer.json()
    assert list(body) == ["access_token", "scope"]
    assert re.fullmatch(r"[0-9a-f]{32}", body["access_token"])
    assert body["scope"] is None
    me = requests.get(
        f"{oauth.emu.base_url}/api/v1/me/", params={"oauth_token": body["access_token"]}, timeout=10
    )
    assert me.json()["response"]["user"]["login"] == "demo"


def test_basic_client_credentials_are_accepted(oauth) -> None:
    emu = oauth.emu
    form = password_form(emu, client_id=None, client_secret=None)
    answer = oauth(form, auth=(emu.client_id, emu.client_secret))
    assert answer.status_code == 200


def test_client_id_without_secret_is_accepted(oauth) -> None:
    assert oauth(password_form(oauth.emu, client_secret=None)).status_code == 200


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"grant_type": None}, "invalid_request"),
        ({"grant_type": "client_credentials"}, "invalid_request"),
        ({"grant_type": "magic"}, "invalid_request"),
        ({"grant_type": "refresh_token"}, "unsupported_grant_type"),
        ({"grant_type": "none"}, "unsupported_grant_type"),
        ({"client_id": None, "client_secret": None}, "invalid_client"),
        ({"client_id": "nobody"}, "invalid_client"),
        ({"client_secret": "wrong"}, "invalid_client"),
        ({"password": "wrong"}, "invalid_grant"),
        ({"password": "Passw\u00f6rt"}, "invalid_grant"),  # compare_digest refuses non-ASCII str
        ({"password": "\ufffd"}, "invalid_grant"),  # what a body decoded with "replace" holds
        ({"username": "nobody"}, "invalid_grant"),
        ({"password": None}, "invalid_request"),
        ({"scope": "read"}, "invalid_scope"),
    ],
)
def test_token_errors(oauth, overrides, error) -> None:
    answer = oauth(password_form(oauth.emu, **overrides))
    assert answer.status_code == 400
    assert answer.json() == {"error": error}


def test_basic_and_form_credentials_together_are_refused(oauth) -> None:
    emu = oauth.emu
    answer = oauth(password_form(emu), auth=(emu.client_id, emu.client_secret))
    assert answer.json() == {"error": "invalid_client"}


def test_password_grant_must_be_enabled_for_the_app(oauth) -> None:
    web = oauth.emu.accounts.apps["emulator-web-app"]
    form = password_form(oauth.emu, client_id=web.client_id, client_secret=web.client_secret)
    assert oauth(form).json() == {"error": "unsupported_grant_type"}


def test_only_a_form_body_is_read(oauth) -> None:
    emu = oauth.emu
    in_query = requests.post(emu.base_url + TOKEN, params=password_form(emu), timeout=10)
    assert (in_query.status_code, in_query.json()) == (400, {"error": "invalid_request"})
    as_json = requests.post(emu.base_url + TOKEN, json=password_form(emu), timeout=10)
    assert (as_json.status_code, as_json.json()) == (400, {"error": "invalid_request"})


def test_token_endpoint_is_post_only(oauth) -> None:
    answer = requests.get(oauth.emu.base_url + TOKEN, timeout=10)
    assert answer.status_code == 405
    assert answer.headers["Allow"] == "POST"
    assert answer.json()["meta"]["http_code"] == 405


# ------------------------------------------------------------------ authorize


def authorize(emu, **params) -> requests.Response:
    query = {"client_id": emu.client_id, "redirect_uri": emu.redirect_uri, "response_type": "code"}
    query.update(params)
    return requests.get(emu.base_url + AUTHORIZE, params=query, allow_redirects=False, timeout=10)


def redirect_parts(answer: requests.Response) -> tuple[str, dict, dict]:
    assert answer.status_code == 302
    url = urlsplit(answer.headers["Location"])
    return f"{url.scheme}://{url.netloc}{url.path}", parse_qs(url.query), parse_qs(url.fragment)


def test_code_flow_with_state_then_token(oauth) -> None:
    emu = oauth.emu
    where, query, _ = redirect_parts(authorize(emu, state="s3cr3t-state"))
    assert where == emu.redirect_uri
    assert query["state"] == ["s3cr3t-state"]
    form = {
        "grant_type": "authorization_code",
        "client_id": emu.client_id,
        "client_secret": emu.client_secret,
        "redirect_uri": emu.redirect_uri,
        "code": query["code"][0],
    }
    answer = oauth(form)
    assert answer.status_code == 200 and set(answer.json()) == {"access_token", "scope"}
    assert oauth(form).json() == {"error": "invalid_grant"}  # a code is used once


def test_code_grant_errors(oauth) -> None:
    emu = oauth.emu
    code = redirect_parts(authorize(emu))[1]["code"][0]
    base = {"grant_type": "authorization_code", "client_id": emu.client_id, "code": code}
    assert oauth(base).json() == {"error": "invalid_request"}  # no redirect_uri
    wrong_uri = {**base, "redirect_uri": "http://evil.example/callback"}
    assert oauth(wrong_uri).json() == {"error": "invalid_grant"}
    unknown = {**base, "redirect_uri": emu.redirect_uri, "code": "f" * 40}
    assert oauth(unknown).json() == {"error": "invalid_grant"}
    web = emu.accounts.apps["emulator-web-app"]
    foreign = {**base, "redirect_uri": emu.redirect_uri, "client_id": web.client_id}
    assert oauth(foreign).json() == {"error": "invalid_grant"}


def test_a_refused_scope_leaves_the_code_for_the_next_try(oauth) -> None:
    # RFC 6749 4.1.2/10.5: a code is used once - by the exchange that issues a token. A request
    # refused before that (here for its scope, as for a wrong redirect) has not used it.
    emu = oauth.emu
    code = redirect_parts(authorize(emu))[1]["code"][0]
    form = {
        "grant_type": "authorization_code",
        "client_id": emu.client_id,
        "redirect_uri": emu.redirect_uri,
        "code": code,
    }
    assert oauth({**form, "scope": "read"}).json() == {"error": "invalid_scope"}
    answer = oauth(form)
    assert answer.status_code == 200 and set(answer.json()) == {"access_token", "scope"}
    assert oauth(form).json() == {"error": "invalid_grant"}  # and that exchange did use it


def test_codes_expire_after_30_seconds(oauth) -> None:
    emu = oauth.emu
    code = redirect_parts(authorize(emu))[1]["code"][0]
    clock = emu.accounts.clock
    emu.accounts.clock = lambda: clock() + 31
    form = {
        "grant_type": "authorization_code",
        "client_id": emu.client_id,
        "redirect_uri": emu.redirect_uri,
        "code": code,
    }
    assert oauth(form).json() == {"error": "expired_token"}


def test_redirect_uri_may_extend_the_registered_one(oauth) -> None:
    emu = oauth.emu
    where, query, _ = redirect_parts(authorize(emu, redirect_uri=emu.redirect_uri + "/sub?x=1"))
    assert where == emu.redirect_uri + "/sub"
    assert query["x"] == ["1"] and "code" in query


def test_token_response_type_puts_the_token_in_the_fragment(oauth) -> None:
    emu = oauth.emu
    _, query, fragment = redirect_parts(authorize(emu, response_type="token", state="abc"))
    assert re.fullmatch(r"[0-9a-f]{32}", fragment["access_token"][0])
    assert query == {"state": ["abc"]}


def test_code_and_token_with_hyphens(oauth) -> None:
    _, query, fragment = redirect_parts(authorize(oauth.emu, response_type="code-and-token"))
    assert "code" in query and "access_token" in fragment


def test_documented_code_and_token_spelling_is_refused(oauth) -> None:
    _, query, _ = redirect_parts(authorize(oauth.emu, response_type="code_and_token", state="z"))
    assert query == {"error": ["invalid_request"], "state": ["z"]}


def test_oob_shows_the_code_in_a_text_field(oauth) -> None:
    answer = authorize(oauth.emu, redirect_uri=OOB)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/html")
    assert re.search(r'<input type="text" id="code" name="code" value="[0-9a-f]+"', answer.text)


def test_oob_refuses_the_token_response_type(oauth) -> None:
    answer = authorize(oauth.emu, redirect_uri=OOB, response_type="token")
    assert 'value="unsupported_response_type"' in answer.text


def test_unknown_client_and_foreign_redirect_are_not_redirected(oauth) -> None:
    assert authorize(oauth.emu, client_id="nobody").json() == {"error": "invalid_client"}
    foreign = authorize(oauth.emu, redirect_uri="http://evil.example/")
    assert foreign.status_code == 400 and "Location" not in foreign.headers


@pytest.mark.parametrize("response_type", ["code", "token", "code-and-token"])
@pytest.mark.parametrize("fragment", ["#/after-login", "#"])
def test_a_redirect_uri_with_a_fragment_is_refused_not_redirected(oauth, response_type, fragment):
    """RFC 6749 3.1.2: the code or token would land in (or after) the fragment."""
    emu = oauth.emu
    answer = authorize(emu, redirect_uri=emu.redirect_uri + fragment, response_type=response_type)
    assert answer.status_code == 400 and "Location" not in answer.headers
    assert answer.json() == {"error": "invalid_request"}


def test_login_and_consent_page_without_auto_approve(fresh_emulator) -> None:
    emu = fresh_emulator(records=50, auto_approve=False)
    page = authorize(emu, state="st")
    assert page.status_code == 200
    assert 'name="login"' in page.text and 'name="password"' in page.text
    form = {
        "client_id": emu.client_id,
        "redirect_uri": emu.redirect_uri,
        "response_type": "code",
        "state": "st",
        "login": "auditor",
        "password": "auditor-password",
        "action": "accept",
    }
    url = emu.base_url + AUTHORIZE
    accepted = requests.post(url, data=form, allow_redirects=False, timeout=10)
    _, query, _ = redirect_parts(accepted)
    assert query["state"] == ["st"] and "code" in query
    for password in ("nope", "Passw\u00f6rt"):
        wrong = requests.post(
            url, data={**form, "password": password}, allow_redirects=False, timeout=10
        )
        assert wrong.status_code == 200 and "Wrong login or password" in wrong.text
    denied = requests.post(url, data={**form, "action": "deny"}, allow_redirects=False, timeout=10)
    assert redirect_parts(denied)[1] == {"error": ["access_denied"], "state": ["st"]}


def test_code_redirect_needs_only_to_extend_the_registered_one(oauth) -> None:
    emu = oauth.emu
    code = redirect_parts(authorize(emu, redirect_uri=emu.redirect_uri + "/deep"))[1]["code"][0]
    form = {"grant_type": "authorization_code", "client_id": emu.client_id, "code": code}
    assert oauth({**form, "redirect_uri": emu.redirect_uri}).status_code == 200


def test_installed_application_flow_with_oob(oauth) -> None:
    emu = oauth.emu
    page = authorize(emu, redirect_uri=OOB).text
    code = re.search(r'id="code" name="code" value="([0-9a-f]+)"', page)[1]
    form = {
        "grant_type": "authorization_code",
        "client_id": emu.client_id,
        "code": code,
        "redirect_uri": OOB,
    }
    assert oauth(form).status_code == 200
