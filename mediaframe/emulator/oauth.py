"""The OAuth 2.0 endpoints: token (form-only POST) and authorize (login, consent, redirects)."""

from __future__ import annotations

import html
import json
from urllib.parse import urlencode

from mediaframe.emulator.accounts import OOB, Accounts, App, User
from mediaframe.emulator.messages import Request, Response

# grant_type values the servers recognise at all; any other is a malformed request.
KNOWN_GRANTS = ("authorization_code", "password", "refresh_token", "none")
SUPPORTED_GRANTS = ("authorization_code", "password")
RESPONSE_TYPES = ("code", "token", "code-and-token")
NO_STORE = ("Cache-Control", "no-store")


def _json(status: int, data: dict) -> Response:
    return Response(
        status, [("Content-Type", "application/json"), NO_STORE], json.dumps(data).encode()
    )


def _error(code: str) -> Response:
    return _json(400, {"error": code})


def _last(params: dict[str, list[str]], name: str) -> str:
    values = params.get(name) or [""]
    return values[-1]


class OAuthEndpoints:
    """``/api/oauthv2/token`` and ``/api/oauthv2/authorize`` over one set of accounts.

    Parameters
    ----------
    accounts
        Users, applications, codes and tokens.
    auto_approve
        Approve every authorization request as the demo user without showing the login page.
    """

    def __init__(self, accounts: Accounts, *, auto_approve: bool = True) -> None:
        self.accounts = accounts
        self.auto_approve = auto_approve

    # ----------------------------------------------------------------- token

    def token(self, request: Request) -> Response:
        """Exchange a grant for an access token; only a form-encoded body is read."""
        params = request.form
        grant = _last(params, "grant_type")
        if grant not in KNOWN_GRANTS:
            return _error("invalid_request")
        if grant not in SUPPORTED_GRANTS:
            return _error("unsupported_grant_type")
        app = self._client(request)
        if app is None:
            return _error("invalid_client")
        # Checked after the grant (its errors come first) but before the code is used up: a code
        # is used once, by the exchange that issues a token (RFC 6749 4.1.2, 10.5).
        scope_refused = bool(_last(params, "scope"))
        if grant == "password":
            if not app.password_grant:
                return _error("unsupported_grant_type")
            login, password = _last(params, "username"), _last(params, "password")
            if not login or not password:
                return _error("invalid_request")
            user: User | str = self.accounts.check_password(login, password) or "invalid_grant"
        else:
            code, redirect_uri = _last(params, "code"), _last(params, "redirect_uri")
            if not code or not redirect_uri:
                return _error("invalid_request")
            user = self.accounts.take_code(
                code, app.client_id, redirect_uri, redeem=not scope_refused
            )
        if isinstance(user, str):
            return _error(user)
        if scope_refused:
            return _error("invalid_scope")
        token = self.accounts.issue_token(user, app.client_id)
        return _json(200, {"access_token": token, "scope": None})

    def _client(self, request: Request) -> App | None:
        """The authenticated client: Basic or form credentials, never both; None if refused."""
        basic = request.basic_auth()
        secret: str | None
        if basic is not None and "client_id" in request.form:
            return None
        if basic is not None:
            client_id, secret = basic
        elif "client_id" in request.form:
            client_id = _last(request.form, "client_id")
            secret = (
                _last(request.form, "client_secret") if "client_secret" in request.form else None
            )
        else:
            return None
        app = self.accounts.apps.get(client_id)
        if app is None or (secret is not None and secret != app.client_secret):
            return None
        return app

    # ------------------------------------------------------------- authorize

    def authorize(self, request: Request) -> Response:
        """Log in, consent, then redirect with a code and/or a token (or show it for oob)."""
        params = {**request.query, **request.form}
        app = self.accounts.apps.get(_last(params, "client_id"))
        if app is None:
            return _error("invalid_client")  # never redirect to an unverified address
        redirect_uri = _last(params, "redirect_uri") or app.redirect_uri
        if redirect_uri != OOB and not redirect_uri.lower().startswith(app.redirect_uri.lower()):
            return _error("redirect_uri_mismatch")
        if "#" in redirect_uri:
            # RFC 6749 3.1.2: a redirect URI has no fragment; the code would land in it, which
            # the browser never sends to the client's server. Refused, never redirected.
            return _error("invalid_request")
        state = _last(params, "state")
        response_type = _last(params, "response_type")
        if response_type not in RESPONSE_TYPES:
            return _finish(redirect_uri, {"error": "invalid_request"}, state)
        if redirect_uri == OOB and "token" in response_type:
            return _finish(redirect_uri, {"error": "unsupported_response_type"}, state)
        if _last(params, "scope"):
            return _finish(redirect_uri, {"error": "invalid_scope"}, state)
        if _last(params, "action") == "deny":
            return _finish(redirect_uri, {"error": "access_denied"}, state)
        login = _last(params, "login")
        if request.method == "POST" and login:
            user = self.accounts.check_password(login, _last(params, "password"))
            if user is None:
                return _login_page(params, error="Wrong login or password.")
        elif self.auto_approve:
            user = self.accounts.users["demo"]
        else:
            return _login_page(params)
        query: dict[str, str] = {}
        fragment: dict[str, str] = {}
        if response_type in ("code", "code-and-token"):
            query["code"] = self.accounts.issue_code(user, app.client_id, redirect_uri)
        if response_type in ("token", "code-and-token"):
            fragment["access_token"] = self.accounts.issue_token(user, app.client_id)
        return _finish(redirect_uri, query, state, fragment)


def _finish(
    redirect_uri: str, query: dict[str, str], state: str, fragment: dict | None = None
) -> Response:
    """Redirect to the client (302), or show the outcome on a page for out-of-band clients."""
    if state:
        query = {**query, "state": state}
    if redirect_uri == OOB:
        name, value = ("error", query["error"]) if "error" in query else ("code", query["code"])
        body = _PAGE.format(
            title="Authorization code" if name == "code" else "Authorization refused",
            content=f'<label for="{name}">{name}</label> '
            f'<input type="text" id="{name}" name="{name}" value="{html.escape(value)}" readonly>',
        )
        return Response(
            200, [("Content-Type", "text/html; charset=UTF-8"), NO_STORE], body.encode()
        )
    location = redirect_uri
    if query:
        location += ("&" if "?" in location else "?") + urlencode(query)
    if fragment:
        location += "#" + urlencode(fragment)
    return Response(302, [("Location", location), NO_STORE])


def _login_page(params: dict[str, list[str]], *, error: str = "") -> Response:
    hidden = "".join(
        f'<input type="hidden" name="{name}" value="{html.escape(_last(params, name))}">'
        for name in ("client_id", "redirect_uri", "response_type", "state", "scope")
        if _last(params, name)
    )
    content = (
        (f'<p class="error">{html.escape(error)}</p>' if error else "")
        + '<form method="post" action="/api/oauthv2/authorize">'
        + hidden
        + '<label>Login <input name="login"></label> '
        + '<label>Password <input name="password" type="password"></label> '
        + '<button name="action" value="accept">Accept</button> '
        + '<button name="action" value="deny">Deny</button></form>'
    )
    body = _PAGE.format(title="Sign in to authorize the application", content=content)
    return Response(200, [("Content-Type", "text/html; charset=UTF-8"), NO_STORE], body.encode())


_PAGE = (
    '<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head>'
    "<body><h1>{title}</h1>{content}</body></html>"
)
