"""OAuth 2.0 flows (requests-oauthlib): password, code via loopback or oob, implicit, refresh."""

from __future__ import annotations

import contextlib
import hmac
import http.server
import json
import os
import secrets
import socket
import threading
import time
import webbrowser
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import requests
from oauthlib import oauth2
from requests_oauthlib import OAuth2Session

from mediaframe.auth.tokens import (
    Token,
    check_base_url,
    install_redaction,
    is_loopback_url,
    proxies_for,
    redact,
    redact_url,
    register_secret,
)
from mediaframe.exceptions import (
    ConfigurationError,
    ConnectionFailedError,
    MediaframeError,
    OAuthError,
    RedirectRefusedError,
    RequestTimeoutError,
    ResponseFormatError,
    ResponseTooLargeError,
    ServerError,
    StateMismatchError,
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

TOKEN_ENDPOINT = "/api/oauthv2/token"
AUTHORIZE_ENDPOINT = "/api/oauthv2/authorize"


_OAUTH_ADVICE = {
    "invalid_client": "check client_id and client_secret (give the secret only if the "
    "application has one)",
    "invalid_grant": "the username, password or code is wrong, already used, or for another "
    "redirect URI; log in again",
    "expired_token": "the code expired (it lives 30 seconds); start the login again",
    "unsupported_grant_type": "this application may not use the password grant; log in with the "
    "browser (`mediaframe login --browser`) or the out-of-band flow (`--oob`)",
    "invalid_scope": "no scope may be requested from this service",
    "invalid_request": "the service found the request incomplete; check client_id and "
    "redirect_uri, and report it if they are right",
    "access_denied": "access was refused at the consent page; log in again to allow it",
    "unsupported_response_type": "this response type is not allowed here (the token flow cannot "
    "use the out-of-band redirect); use the code flow",
}

# oauthlib refuses plain http unless this variable is set; see _plain_http_allowed.
_INSECURE_VARIABLE = "OAUTHLIB_INSECURE_TRANSPORT"

#: Largest token-endpoint answer read: a token is some hundred bytes, an error page a few kB.
_TOKEN_ANSWER_LIMIT = 1 << 20
_INSECURE_LOCK = threading.Lock()


def _oauth_failure(code: str, where: str = "the token endpoint") -> OAuthError:
    code = redact(code)  # the server's text: it may echo the password, code or token it refused
    advice = _OAUTH_ADVICE.get(code, "log in again")
    return OAuthError(f"{where} refused the login ({code}): {advice}", error=code)


@contextlib.contextmanager
def _plain_http_allowed(url: str) -> Iterator[None]:
    """Let oauthlib speak plain http to a loopback host (the emulator), and nowhere else.

    oauthlib has no per-call switch, only this environment variable; it is set for the duration
    of one call under a lock and restored. ``check_base_url`` has already refused plain http to
    any other host.
    """
    if urlsplit(url).scheme != "http" or not is_loopback_url(url):
        yield
        return
    with _INSECURE_LOCK:
        previous = os.environ.get(_INSECURE_VARIABLE)
        os.environ[_INSECURE_VARIABLE] = "1"
        try:
            yield
        finally:
            if previous is None:
                del os.environ[_INSECURE_VARIABLE]
            else:
                os.environ[_INSECURE_VARIABLE] = previous


def _comply(response: requests.Response) -> requests.Response:
    """requests-oauthlib compliance hook for the service's token answers.

    The success body is exactly ``{"access_token": "...", "scope": null}``: no ``token_type``
    (oauthlib can insist on one) and a null scope; errors are ``{"error": "<code>"}``. Errors and
    bodies that are not JSON become mediaframe errors here, with advice.
    """
    try:
        body = response.json()
    except ValueError:
        body = None
    status = response.status_code
    if not isinstance(body, dict):
        snippet = redact(" ".join(response.text[:160].split()))
        kind = ServerError if status >= 500 else ResponseFormatError
        message = (
            f"the token endpoint answered HTTP {status} with something else than JSON: "
            f"{snippet!r}. Check base_url and try again later"
        )
        if kind is ServerError:
            raise ServerError(message, status_code=status, request=f"POST {TOKEN_ENDPOINT}")
        raise ResponseFormatError(message, status_code=status, snippet=snippet)
    if body.get("error"):
        raise _oauth_failure(str(body["error"]))
    if not isinstance(body.get("access_token"), str) or not body["access_token"]:
        raise ResponseFormatError(
            f"the token endpoint answered HTTP {status} without an access_token",
            status_code=status,
        )
    _check_token_members(body, status)
    if body.get("scope") is None:
        body.pop("scope", None)
    body.setdefault("token_type", "OAuth")
    response._content = json.dumps(body).encode()
    return response


def _check_token_members(body: Mapping[str, Any], status: int) -> None:
    """Refuse the members oauthlib would choke on (a bare ValueError or OverflowError) or read
    wrongly: an ``expires_in`` that is no finite number of seconds, a refresh token that is no
    text."""
    expires_in = body.get("expires_in")
    if expires_in is not None and not _seconds(expires_in):
        shown = redact(repr(expires_in))[:40]  # redacted whole: a cut secret would not match
        raise ResponseFormatError(
            f"the token endpoint answered HTTP {status} with expires_in {shown}, not a number of "
            "seconds: the service is misconfigured; tell its administrators",
            status_code=status,
        )
    refresh_token = body.get("refresh_token")
    if refresh_token not in (None, "") and not isinstance(refresh_token, str):
        raise ResponseFormatError(
            f"the token endpoint answered HTTP {status} with a refresh_token that is a "
            f"{type(refresh_token).__name__}, not text: the service is misconfigured; tell its "
            "administrators",
            status_code=status,
        )


#: The longest lifetime read as one: ten years. oauthlib adds it to the clock as an integer,
#: and a 400-digit one made the expiry no float at all (a bare OverflowError).
_MOST_SECONDS = 10 * 366 * 86400


def _seconds(value: object) -> bool:
    """Whether ``value`` is a lifetime in seconds oauthlib can read: a number or ASCII digits,
    from 0 to ten years."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    # compared, never converted: a 400-digit integer is no float (math.isfinite overflows)
    return 0 <= value <= _MOST_SECONDS


def _oauth_session(
    client: oauth2.Client, session: requests.Session | None, **options: Any
) -> OAuth2Session:
    """An OAuth2Session that sends through ``session``'s adapters (the in-process emulator's)."""
    oauth = OAuth2Session(client=client, **options)
    # A redirect of the token endpoint would carry the password or the code (a 307/308 re-posts
    # the form) to wherever it points: requests raises TooManyRedirects before following it.
    oauth.max_redirects = 0
    if session is not None:
        for prefix, adapter in session.adapters.items():
            oauth.mount(prefix, adapter)
        oauth.verify, oauth.cert, oauth.proxies = session.verify, session.cert, session.proxies
        oauth.trust_env = session.trust_env
    oauth.register_compliance_hook("access_token_response", _comply)
    oauth.register_compliance_hook("refresh_token_response", _comply)
    return oauth


def _call_token_endpoint(
    base_url: str,
    oauth: OAuth2Session,
    session: requests.Session | None,
    send: Callable[[str], Mapping[str, Any]],
    timeout: float,
) -> Token:
    # The answer is read as the transport reads its own (mediaframe.http is the door to the
    # network; imported here, as it imports this package): within a size limit and one deadline,
    # so that a token endpoint dripping, endless or a compression bomb cannot hold or fill the
    # login, nor a refresh in the middle of a harvest.
    from mediaframe.http import deadline, wire
    from mediaframe.http.answers import Retry

    install_redaction()
    if urlsplit(base_url).scheme == "http":
        # no proxy from the environment, nor one elsewhere, carries the password off this machine
        oauth.trust_env = False
        oauth.proxies = proxies_for(base_url, oauth.proxies)
    if session is None:  # a session passed in keeps its adapters (the in-process emulator's)
        oauth.mount("https://", deadline.DeadlineAdapter())
        oauth.mount("http://", deadline.DeadlineAdapter())
    until = time.monotonic() + timeout

    def read_bounded(response: requests.Response, **kwargs: Any) -> requests.Response:
        too_large = False
        try:
            wire.read_body(
                response,
                line=f"POST {TOKEN_ENDPOINT}",
                limit=_TOKEN_ANSWER_LIMIT,
                timeout=timeout,
                deadline=until,
            )
        except ResponseTooLargeError:
            too_large = True  # told below, with advice for a login rather than for pages
        finally:
            wire.release(response)
        if too_large:
            raise ResponseTooLargeError(
                f"POST {TOKEN_ENDPOINT}: the answer grew past {_TOKEN_ANSWER_LIMIT:,} bytes "
                "(decompressed) and was dropped: that is no token answer. Check base_url "
                "points at the service"
            )
        return response

    oauth.hooks["response"].append(read_bounded)
    failure: MediaframeError | None = None
    try:
        with _plain_http_allowed(base_url), deadline.deadline(until):
            data = send(base_url + TOKEN_ENDPOINT)
    except Retry as retry:  # the answer timed out or dropped while it was read
        failure = retry.error
    except requests.Timeout:
        failure = RequestTimeoutError(f"POST {TOKEN_ENDPOINT}: no answer; try again later")
    except requests.TooManyRedirects as err:
        location = _location(err.response)
        failure = RedirectRefusedError(
            f"POST {TOKEN_ENDPOINT}: the token endpoint answered with a redirect to {location}; "
            "credentials are never sent on to another address. Check base_url (https, the "
            "service's own host)",
            status_code=err.response.status_code if err.response is not None else None,
            location=location,
        )
    except requests.RequestException as err:
        failure = ConnectionFailedError(
            f"POST {TOKEN_ENDPOINT}: the connection failed ({type(err).__name__}); "
            "check base_url and the network"
        )
    except oauth2.OAuth2Error as err:
        failure = _oauth_failure(err.error)
    finally:
        if session is None:  # a session passed in shares its adapters: its owner closes them
            oauth.close()
    if failure is not None:
        raise failure
    return Token.from_oauth(data)


def _location(response: requests.Response | None) -> str:
    return redact_url(response.headers.get("Location", "") if response is not None else "")


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
    oauth = _oauth_session(oauth2.LegacyApplicationClient(client_id=client_id), session)
    return _call_token_endpoint(
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
    with _plain_http_allowed(base_url):
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
    parts = urlsplit(
        answer if "://" in answer or answer.startswith(("?", "#", "/")) else "?" + answer
    )
    params = dict(parse_qsl(parts.query))
    params.update(parse_qsl(parts.fragment))
    return params


def _check_answer(params: Mapping[str, str], state: str | None) -> None:
    if params.get("error"):
        raise _oauth_failure(params["error"], where="the authorization page")
    if state is not None and not hmac.compare_digest(params.get("state", ""), state):
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
    oauth = _oauth_session(
        oauth2.WebApplicationClient(client_id), session, redirect_uri=redirect_uri
    )
    return _call_token_endpoint(
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
    oauth = _oauth_session(oauth2.WebApplicationClient(client_id), session)
    kwargs = {"client_id": client_id}
    if client_secret is not None:
        kwargs["client_secret"] = client_secret
    return _call_token_endpoint(
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
    before the browser opens until one answer arrives or ``wait`` seconds pass.
    """
    parts = urlsplit(redirect_uri)
    if parts.scheme != "http" or not is_loopback_url(redirect_uri) or not parts.port:
        raise ConfigurationError(
            f"redirect_uri {redirect_uri!r} is not a loopback http URL with a port (such as "
            "http://127.0.0.1:8765/callback): use the out-of-band flow (`login_oob`) instead"
        )
    url, state = authorization_url(base_url, client_id=client_id, redirect_uri=redirect_uri)
    with _CallbackServer(parts.hostname or "127.0.0.1", parts.port, parts.path or "/") as server:
        open_browser(url)
        answer = server.wait(wait)
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
    """A loopback HTTP server that waits for one request on the callback path.

    Each connection is served on a thread of its own: a connection that sends nothing (a
    browser's speculative preconnect, any local process) must not keep the callback from being
    read, nor hold the login past ``wait``.
    """

    daemon_threads = True

    def __init__(self, host: str, port: int, path: str) -> None:
        self.path = path
        self.answer: str | None = None
        self.answered = threading.Event()
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            super().__init__((host, port), _CallbackPage)
        except OSError as err:
            raise ConfigurationError(
                f"cannot listen on {host}:{port} for the login callback ({err.strerror}); "
                "close what uses the port or use the out-of-band flow"
            ) from None

    def __enter__(self) -> _CallbackServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server_close()

    def take(self, answer: str) -> None:
        """Keep the first answer on the callback path."""
        with _ANSWER_LOCK:
            if not self.answered.is_set():
                self.answer = answer
                self.answered.set()

    def wait(self, seconds: float) -> str:
        serving = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        serving.start()
        try:
            answered = self.answered.wait(seconds)
        finally:
            self.shutdown()
            serving.join()
        if not answered or self.answer is None:
            raise OAuthError(
                f"no answer from the browser within {seconds:.0f} s: log in again, or use "
                "the out-of-band flow"
            )
        return self.answer


_ANSWER_LOCK = threading.Lock()


class _CallbackPage(http.server.BaseHTTPRequestHandler):
    server: _CallbackServer
    # a connection that stays silent is dropped, not kept on a thread until the login ends
    timeout = 10

    def do_GET(self) -> None:
        if urlsplit(self.path).path != self.server.path:
            self.send_error(404)
            return
        self.server.take(self.path)
        failed = "error=" in self.path
        body = b"<!doctype html><title>mediaframe</title><p>" + (
            b"Login failed; see your notebook." if failed else b"Logged in; close this tab."
        )
        self.send_response(200)
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
