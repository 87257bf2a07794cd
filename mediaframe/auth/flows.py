"""OAuth 2.0 flows (requests-oauthlib): password, code via loopback or oob, implicit, refresh."""

from __future__ import annotations

import hmac
import http.server
import secrets
import socket
import threading
import webbrowser
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import requests
from oauthlib import oauth2
from requests_oauthlib import OAuth2Session

from mediaframe.auth.endpoint import (
    TOKEN_ENDPOINT,
    call_token_endpoint,
    oauth_failure,
    oauth_session,
    plain_http_allowed,
)
from mediaframe.exceptions import ConfigurationError, OAuthError, StateMismatchError
from mediaframe.tokens import (
    Token,
    check_base_url,
    is_loopback_url,
    register_secret,
    split_url,
)

__all__ = [
    "AUTHORIZE_ENDPOINT",
    "OOB_REDIRECT_URI",
    "TOKEN_ENDPOINT",
    "authorization_url",
    "code_from_redirect",
    "exchange_code",
    "login_browser",
    "login_implicit",
    "login_oob",
    "password_grant",
    "refresh",
    "token_from_redirect",
]

#: The redirect URI of the out-of-band flow: the service shows the code instead of redirecting.
OOB_REDIRECT_URI = "urn:ietf:wg:oauth:2.0:oob"

AUTHORIZE_ENDPOINT = "/api/oauthv2/authorize"


def password_grant(
    base_url: str,
    *,
    client_id: str,
    username: str,
    password: str,
    client_secret: str | None = None,
    session: requests.Session | None = None,
    timeout: float = 30.0,
) -> Token:
    """Exchange a username and password for a token (the password grant).

    Only for clients the user trusts with the password, and only if the application is allowed
    the grant (else :class:`OAuthError` ``unsupported_grant_type``).

    Examples
    --------
    >>> token = password_grant("https://assets.example.org", client_id="id",
    ...                        username="ada", password=getpass())  # doctest: +SKIP
    """
    base_url = check_base_url(base_url)
    _require(client_id=client_id, username=username, password=password)
    register_secret(password)
    register_secret(client_secret)
    oauth = oauth_session(oauth2.LegacyApplicationClient(client_id=client_id), session)
    return call_token_endpoint(
        base_url,
        oauth,
        session,
        lambda url: oauth.fetch_token(
            url,
            username=username,
            password=password,
            client_secret=client_secret,
            include_client_id=True,  # credentials in the body, never also as Basic
            timeout=timeout,
        ),
        timeout,
    )


def authorization_url(
    base_url: str,
    *,
    client_id: str,
    redirect_uri: str,
    response_type: str = "code",
    state: str | None = None,
) -> tuple[str, str]:
    """The URL to open in a browser, and the random ``state`` it carries.

    Parameters
    ----------
    response_type : ``code`` (then :func:`exchange_code`), ``token`` (browser-only flow, then
        :func:`token_from_redirect`) or ``code-and-token`` (``code_and_token`` is accepted and
        sent hyphenated, as real servers want).
    state : defaults to 256 random bits; keep it to check the answer.
    """
    base_url = check_base_url(base_url)
    _require(client_id=client_id, redirect_uri=redirect_uri)
    response_type = response_type.replace("_", "-")
    if response_type not in ("code", "token", "code-and-token"):
        raise ConfigurationError(
            f"response_type must be code, token or code-and-token, not {response_type!r}"
        )
    client = oauth2.MobileApplicationClient(client_id)
    client.response_type = response_type
    oauth = OAuth2Session(client=client, redirect_uri=redirect_uri)
    with plain_http_allowed(base_url):
        url, sent = oauth.authorization_url(
            base_url + AUTHORIZE_ENDPOINT, state=state or secrets.token_urlsafe(32)
        )
    return url, sent


def code_from_redirect(answer: str, *, state: str | None) -> str:
    """The authorization code in a redirect URL (or a bare pasted code), ``state`` verified.

    Parameters
    ----------
    answer : the URL the browser was sent to (``...?code=...&state=...``), or the code alone as
        the out-of-band page shows it.
    state : the value :func:`authorization_url` returned; ``None`` skips the check (only for a
        bare pasted code, which carries no state).

    Raises
    ------
    StateMismatchError
        The answer carries another state: it may not be the answer to this login (CSRF).
    OAuthError
        The answer carries ``error=...``, or no code.
    """
    answer = answer.strip()
    if "=" not in answer and "/" not in answer:
        if not answer:
            raise OAuthError("no code was pasted: copy the code the page shows and try again")
        return answer
    params = _answer_params(answer)
    _check_answer(params, state)
    if not params.get("code"):
        raise OAuthError("the answer carries no code: copy the whole address or the code shown")
    return params["code"]


def token_from_redirect(answer: str, *, state: str | None) -> Token:
    """The token of the browser-only flow, from the redirect URL's ``#access_token=...``."""
    params = _answer_params(answer.strip())
    _check_answer(params, state)
    if not params.get("access_token"):
        raise OAuthError(
            "the address carries no #access_token=: copy the whole address the browser ended on"
        )
    return Token(params["access_token"])


def _answer_params(answer: str) -> dict[str, str]:
    parts = split_url(
        answer if "://" in answer or answer.startswith(("?", "#", "/")) else "?" + answer,
        name="the pasted address",
    )
    params = dict(parse_qsl(parts.query))
    params.update(parse_qsl(parts.fragment))
    return params


def _check_answer(params: Mapping[str, str], state: str | None) -> None:
    if params.get("error"):
        raise oauth_failure(params["error"], where="the authorization page")
    sent = params.get("state", "").encode()
    if state is not None and not hmac.compare_digest(sent, state.encode()):
        raise StateMismatchError(
            "the answer's state does not match the one sent: it may not come from this login "
            "(possible cross-site request forgery). Start the login again",
            error="state_mismatch",
        )


def exchange_code(
    base_url: str,
    code: str,
    *,
    client_id: str,
    redirect_uri: str,
    client_secret: str | None = None,
    session: requests.Session | None = None,
    timeout: float = 30.0,
) -> Token:
    """Exchange an authorization code for a token (codes live 30 seconds)."""
    base_url = check_base_url(base_url)
    _require(client_id=client_id, code=code, redirect_uri=redirect_uri)
    register_secret(client_secret)
    oauth = oauth_session(
        oauth2.WebApplicationClient(client_id), session, redirect_uri=redirect_uri
    )
    return call_token_endpoint(
        base_url,
        oauth,
        session,
        lambda url: oauth.fetch_token(
            url,
            code=code,
            client_secret=client_secret,
            include_client_id=True,
            timeout=timeout,
        ),
        timeout,
    )


def refresh(
    base_url: str,
    token: Token,
    *,
    client_id: str,
    client_secret: str | None = None,
    session: requests.Session | None = None,
    timeout: float = 30.0,
) -> Token:
    """A new token for ``token.refresh_token`` (for servers that ever send one).

    Keeps the old refresh token if the server does not rotate it. Persist the result before
    using it: the old refresh token may be dead from now on.
    """
    base_url = check_base_url(base_url)
    if not token.refresh_token:
        raise ConfigurationError("this token has no refresh token: log in again")
    register_secret(client_secret)
    oauth = oauth_session(oauth2.WebApplicationClient(client_id), session)
    kwargs = {"client_id": client_id}
    if client_secret is not None:
        kwargs["client_secret"] = client_secret
    return call_token_endpoint(
        base_url,
        oauth,
        session,
        lambda url: oauth.refresh_token(
            url, refresh_token=token.refresh_token, timeout=timeout, **kwargs
        ),
        timeout,
    )


def login_oob(
    base_url: str,
    *,
    client_id: str,
    client_secret: str | None = None,
    ask: Callable[[str], str] | None = None,
    session: requests.Session | None = None,
    timeout: float = 30.0,
) -> Token:
    """Log in on a remote kernel (JupyterHub): open a URL anywhere, paste the code shown.

    Parameters
    ----------
    ask : shown the authorization URL, returns what the user pasted (the code, or the whole
        address); defaults to printing the URL and reading a line.
    """
    url, state = authorization_url(base_url, client_id=client_id, redirect_uri=OOB_REDIRECT_URI)
    pasted = (ask or _ask_in_terminal)(url)
    # The page shows the code alone, so its state cannot be checked; a pasted address can be.
    code = code_from_redirect(pasted, state=state if "state=" in pasted else None)
    return exchange_code(
        base_url,
        code,
        client_id=client_id,
        client_secret=client_secret,
        redirect_uri=OOB_REDIRECT_URI,
        session=session,
        timeout=timeout,
    )


def login_implicit(
    base_url: str,
    *,
    client_id: str,
    redirect_uri: str,
    ask: Callable[[str], str] | None = None,
) -> Token:
    """The browser-only flow: open the URL, paste the address the browser ends on."""
    url, state = authorization_url(
        base_url, client_id=client_id, redirect_uri=redirect_uri, response_type="token"
    )
    return token_from_redirect((ask or _ask_in_terminal)(url), state=state)


def _ask_in_terminal(url: str) -> str:
    print(f"Open this address in a browser, log in, and paste what you get:\n\n  {url}\n")
    return input("Code or address: ")


def login_browser(
    base_url: str,
    *,
    client_id: str,
    redirect_uri: str,
    client_secret: str | None = None,
    open_browser: Callable[[str], object] = webbrowser.open,
    wait: float = 300.0,
    session: requests.Session | None = None,
    timeout: float = 30.0,
) -> Token:
    """Log in at a local notebook: open the browser, catch the redirect on a loopback port.

    ``redirect_uri`` must be the application's registered callback and a loopback http URL with
    a port (e.g. ``http://127.0.0.1:8765/callback``): a one-shot server listens there, from
    before the browser opens until the answer to this login arrives or ``wait`` seconds pass.
    A request to the callback without this login's ``state`` (any local process or web page
    can send one) is answered 400 and ignored: only the browser's answer ends the login. An
    error answer with no state at all (``?error=access_denied``: the contract promises the
    state with the code only) ends it at once with that error: it can only fail the login.

    Raises
    ------
    StateMismatchError
        No answer arrived, but requests with another state (or none) did.
    OAuthError
        No answer within ``wait``, or the answer is an error (the user refused, ...).
    """
    parts = split_url(redirect_uri, name="redirect_uri")
    if parts.scheme != "http" or not is_loopback_url(redirect_uri) or not parts.port:
        raise ConfigurationError(
            f"redirect_uri {redirect_uri!r} is not a loopback http URL with a port (such as "
            "http://127.0.0.1:8765/callback): use the out-of-band flow (`login_oob`) instead"
        )
    url, state = authorization_url(base_url, client_id=client_id, redirect_uri=redirect_uri)
    host, port, path = parts.hostname or "127.0.0.1", parts.port, parts.path or "/"
    with _CallbackServer(host, port, path, state=state) as server:
        open_browser(url)
        answer = server.wait(wait)
    params = _answer_params(answer)
    if params.get("error") and not params.get("state"):
        refused = oauth_failure(params["error"], where="the authorization page")
        raise OAuthError(
            f"{refused}. You refused at the consent page, or the server refused this "
            "application; the answer carried no state, so if neither happened, something else "
            "on this machine answered the callback",
            error=refused.error,
        )
    return exchange_code(
        base_url,
        code_from_redirect(answer, state=state),
        client_id=client_id,
        client_secret=client_secret,
        redirect_uri=redirect_uri,
        session=session,
        timeout=timeout,
    )


class _CallbackServer(http.server.ThreadingHTTPServer):
    """A loopback HTTP server, serving from the moment it listens, that waits for the answer to
    one login on the callback path: the request carrying that login's ``state``, or an error
    answer carrying no state (which can only fail the login).

    Any local process, or a page the user has open, can send a request to the callback: one
    with another state, or none, is answered 400 and the server keeps waiting, so a forged
    request can neither end the login nor take the place of the browser's. Each connection is
    served on a thread of its own: a connection that sends nothing (a browser's speculative
    preconnect, any local process) must not keep the callback from being read, nor hold the
    login past ``wait``.
    """

    daemon_threads = True

    def __init__(self, host: str, port: int, path: str, *, state: str) -> None:
        self.path = path
        self.state = state
        self.answer: str | None = None
        self.refused = 0
        self.answered = threading.Event()
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            super().__init__((host, port), _CallbackPage)
        except OSError as err:
            raise ConfigurationError(
                f"cannot listen on {host}:{port} for the login callback ({err.strerror}); "
                "close what uses the port or use the out-of-band flow"
            ) from None
        self._serving = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> _CallbackServer:
        self._serving.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._serving.is_alive():
            self.shutdown()
            self._serving.join()
        self.server_close()

    def is_this_login(self, query: str) -> bool:
        """Whether the callback's query carries this login's state (compared in constant time),
        or is an error answer with no state: the provider may leave the state out of an error
        (the contract promises it with the code only), and such an answer can only fail the
        login, never log anyone in."""
        params = dict(parse_qsl(query))
        if params.get("error") and "state" not in params:
            return True
        state = params.get("state", "")
        return hmac.compare_digest(state.encode(), self.state.encode())

    def take(self, answer: str) -> None:
        """Keep the first answer to this login."""
        with _ANSWER_LOCK:
            if not self.answered.is_set():
                self.answer = answer
                self.answered.set()

    def refuse(self) -> None:
        """Count a request to the callback that is not the answer to this login."""
        with _ANSWER_LOCK:
            self.refused += 1

    def wait(self, seconds: float) -> str:
        """The answer to this login (the callback's path and query), within ``seconds``."""
        if self.answered.wait(seconds) and self.answer is not None:
            return self.answer
        if self.refused:
            raise StateMismatchError(
                f"no answer to this login within {seconds:.0f} s, and {self.refused} request(s) "
                "to the callback carried another state or none: they were refused, as something "
                "other than your browser may be answering (possible cross-site request "
                "forgery). Log in again",
                error="state_mismatch",
            )
        raise OAuthError(
            f"no answer from the browser within {seconds:.0f} s: log in again, or use "
            "the out-of-band flow"
        )


_ANSWER_LOCK = threading.Lock()


class _CallbackPage(http.server.BaseHTTPRequestHandler):
    server: _CallbackServer
    # a connection that stays silent is dropped, not kept on a thread until the login ends
    timeout = 10

    def do_GET(self) -> None:
        target = urlsplit(self.path)
        if target.path != self.server.path:
            self.send_error(404)
            return
        if not self.server.is_this_login(target.query):
            self.server.refuse()
            self._page(400, b"This is not the answer to the login in progress; it was ignored.")
            return
        self.server.take(self.path)
        failed = "error" in dict(parse_qsl(target.query))
        self._page(
            200, b"Login failed; see your notebook." if failed else b"Logged in; close this tab."
        )

    def _page(self, status: int, text: bytes) -> None:
        body = b"<!doctype html><title>mediaframe</title><p>" + text
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Say nothing: the request line carries the authorization code."""


def _require(**values: str | None) -> None:
    missing = [name for name, value in values.items() if not value]
    if missing:
        raise ConfigurationError(f"{' and '.join(missing)} needed for this login")
