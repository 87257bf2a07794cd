"""Credentials: where a token may travel, how it is placed and redacted, obtained and stored."""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import http.server
import ipaddress
import json
import logging
import os
import re
import secrets
import tempfile
import threading
import time
import webbrowser
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import requests
from oauthlib import oauth2
from requests_oauthlib import OAuth2Session

from mediaframe.exceptions import (
    ConfigurationError,
    ConnectionFailedError,
    OAuthError,
    RequestTimeoutError,
    ResponseFormatError,
    ServerError,
    StateMismatchError,
)

__all__ = [
    "OOB_REDIRECT_URI",
    "TOKEN_PARAM",
    "Profile",
    "RedactingFilter",
    "Token",
    "TokenStore",
    "authorization_url",
    "check_base_url",
    "code_from_redirect",
    "exchange_code",
    "install_redaction",
    "is_loopback_url",
    "login_browser",
    "login_implicit",
    "login_oob",
    "password_grant",
    "redact",
    "refresh",
    "token_from_redirect",
    "token_header",
]

log = logging.getLogger(__name__)

#: The redirect URI of the out-of-band flow: the service shows the code instead of redirecting.
OOB_REDIRECT_URI = "urn:ietf:wg:oauth:2.0:oob"

#: Name of the query or form parameter that carries the token on older servers.
TOKEN_PARAM = "oauth_token"

TOKEN_ENDPOINT = "/api/oauthv2/token"
AUTHORIZE_ENDPOINT = "/api/oauthv2/authorize"


# --- where a token may travel ---------------------------------------------------------------


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` names this machine (127.0.0.0/8, ``::1`` or ``localhost``)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(base_url: str) -> str:
    """Validate the service URL and return it without a trailing slash.

    Tokens and passwords travel only over https; plain http is allowed for loopback hosts, where
    the emulator runs and nothing crosses a network.

    Raises
    ------
    ConfigurationError
        The URL is not absolute, or is plain http to another host.
    """
    if not isinstance(base_url, str) or not base_url.strip():
        raise ConfigurationError("base_url is empty: give the service URL, e.g. https://host")
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ConfigurationError(
            f"base_url {url!r} is not an absolute http(s) URL: give e.g. https://assets.example.org"
        )
    if parts.query or parts.fragment:
        raise ConfigurationError(f"base_url {url!r} must not carry a query or a fragment")
    if parts.scheme == "http" and not is_loopback_url(url):
        raise ConfigurationError(
            f"base_url {url!r} uses plain http: tokens would travel in clear text. "
            "Use https (plain http is allowed only for 127.0.0.1, ::1 and localhost)"
        )
    return url


# --- placement and redaction ----------------------------------------------------------------


def token_header(access_token: str) -> dict[str, str]:
    """The header that carries a token: ``Authorization: OAuth <token>`` (not Bearer)."""
    return {"Authorization": f"OAuth {access_token}"}


_SECRET_VALUE = re.compile(
    r"""(?ix)
    \b(oauth_token|access_token|refresh_token|token|client_secret|password|code)
    (["']?\s*[:=]\s*["']?)          # = in a query string, ": " in JSON or a dict repr
    ([^"'&\s,;}\])]+)
    """
)
_SECRET_HEADER = re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)(\w+)\s+[^\"'\s,}]+")


def redact(text: str) -> str:
    """Replace tokens, secrets, passwords and codes in ``text`` by ``***``.

    Examples
    --------
    >>> redact("GET /api/v1/me/?oauth_token=abc123&x=1")
    'GET /api/v1/me/?oauth_token=***&x=1'
    >>> redact("{'Authorization': 'OAuth abc123'}")
    "{'Authorization': 'OAuth ***'}"
    """
    text = _SECRET_HEADER.sub(r"\1\2 ***", text)
    return _SECRET_VALUE.sub(r"\1\2***", text)


class RedactingFilter(logging.Filter):
    """A logging filter that scrubs secrets from every record it sees, then lets it through."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


# Loggers that may see a secret: ours, requests-oauthlib (logs token bodies and headers at
# DEBUG) and urllib3 (logs request URLs, which carry the token in `oauth_token` mode).
_GUARDED_LOGGERS = (
    "mediaframe",
    "mediaframe.auth",
    "mediaframe.http",
    "requests_oauthlib.oauth2_session",
    "urllib3.connectionpool",
)


def install_redaction() -> None:
    """Attach a :class:`RedactingFilter` to every logger that can see a secret (idempotent).

    A logger filter applies only to records created on that very logger, hence the list. Called
    before mediaframe sends anything; safe to call again.
    """
    for name in _GUARDED_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())


# --- the token --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, repr=False)
class Token:
    """An access token, with the refresh token and expiry a server may one day send.

    Today's servers send tokens that never expire, so ``refresh_token`` and ``expires_at`` are
    usually ``None``. The repr never shows a secret.
    """

    access_token: str
    refresh_token: str | None = None
    expires_at: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.access_token, str) or not self.access_token.strip():
            raise ConfigurationError("the access token is empty: log in again")

    def __repr__(self) -> str:
        refresh = "***" if self.refresh_token else None
        return (
            f"Token(access_token='***', refresh_token={refresh!r}, expires_at={self.expires_at!r})"
        )

    def is_expired(self, *, leeway: float = 60.0, now: float | None = None) -> bool:
        """Whether the token expires within ``leeway`` seconds (never, without ``expires_at``)."""
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) + leeway >= self.expires_at

    @classmethod
    def from_oauth(cls, data: Mapping[str, Any]) -> Token:
        """Build from a token-endpoint answer as parsed by oauthlib (``expires_at`` derived)."""
        expires_at = data.get("expires_at")
        if expires_at is None and data.get("expires_in") not in (None, ""):
            expires_at = time.time() + float(data["expires_in"])
        return cls(
            access_token=str(data.get("access_token") or ""),
            refresh_token=data.get("refresh_token") or None,
            expires_at=float(expires_at) if expires_at is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The members worth storing (``None`` members left out)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


# --- the token store ----------------------------------------------------------------------------

_PROFILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")


@dataclasses.dataclass(frozen=True, repr=False)
class Profile:
    """What a stored profile holds: the service URL, the token and how to refresh it."""

    base_url: str
    token: Token
    client_id: str | None = None
    #: Stored only with a refresh token, which cannot be used without it.
    client_secret: str | None = None

    def __repr__(self) -> str:
        return f"Profile({self.base_url!r}, token={self.token!r}, client_id={self.client_id!r})"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"base_url": self.base_url, **self.token.to_dict()}
        if self.client_id:
            data["client_id"] = self.client_id
        if self.client_secret and self.token.refresh_token:
            data["client_secret"] = self.client_secret
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Profile:
        return cls(
            base_url=check_base_url(data["base_url"]),
            token=Token.from_oauth(data),
            client_id=data.get("client_id"),
            client_secret=data.get("client_secret"),
        )


class TokenStore:
    """Named profiles, one JSON file each, in ``<config_dir>/profiles/`` (directory 0700).

    Files are created with mode 0600 from the first byte (never loosened then tightened) and
    replaced atomically, so a crash leaves the old profile or the new one, never half of one.

    Examples
    --------
    >>> store = TokenStore(Settings.from_env().config_dir)             # doctest: +SKIP
    >>> store.save("work", Profile("https://assets.example.org", Token("...")))  # doctest: +SKIP
    """

    def __init__(self, config_dir: Path | str) -> None:
        self.directory = Path(config_dir) / "profiles"

    def __repr__(self) -> str:
        return f"TokenStore({str(self.directory)!r})"

    def path(self, name: str) -> Path:
        """The file of profile ``name`` (which must be a plain name, not a path)."""
        if not isinstance(name, str) or not _PROFILE_NAME.match(name):
            raise ConfigurationError(
                f"profile name {name!r} is not valid: use letters, digits, '_', '-' and '.'"
            )
        return self.directory / f"{name}.json"

    def names(self) -> list[str]:
        """The stored profile names, sorted."""
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.json"))

    def load(self, name: str) -> Profile:
        """Read profile ``name``.

        Raises
        ------
        ConfigurationError
            No such profile, a damaged file, or a file others may read.
        """
        path = self.path(name)
        try:
            mode = path.stat().st_mode
            raw = path.read_bytes()
        except FileNotFoundError:
            raise ConfigurationError(
                f"no profile {name!r} in {self.directory}: run `mediaframe login --profile {name}`"
            ) from None
        if os.name == "posix" and mode & 0o077:
            raise ConfigurationError(
                f"{path} can be read by other users: run `chmod 600 {path}` (or log in again)"
            )
        try:
            return Profile.from_dict(json.loads(raw))
        except (ValueError, KeyError, TypeError) as err:
            raise ConfigurationError(
                f"profile file {path} is damaged ({type(err).__name__}): run "
                f"`mediaframe login --profile {name}` again"
            ) from None

    def save(self, name: str, profile: Profile) -> Path:
        """Write profile ``name`` atomically with mode 0600; return its path."""
        path = self.path(name)
        self._make_directory()
        payload = json.dumps(profile.to_dict(), indent=2).encode()
        # mkstemp creates the file 0600: the secret is never readable by others, not even briefly.
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(payload)
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return path

    def delete(self, name: str) -> bool:
        """Remove profile ``name``; whether there was one."""
        try:
            self.path(name).unlink()
        except FileNotFoundError:
            return False
        return True

    def _make_directory(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.name == "posix" and self.directory.stat().st_mode & 0o077:
            os.chmod(self.directory, 0o700)


# --- OAuth 2.0 flows (requests-oauthlib) --------------------------------------------------------

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
_INSECURE_LOCK = threading.Lock()


def _oauth_failure(code: str, where: str = "the token endpoint") -> OAuthError:
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
    if body.get("scope") is None:
        body.pop("scope", None)
    body.setdefault("token_type", "OAuth")
    response._content = json.dumps(body).encode()
    return response


def _oauth_session(
    client: oauth2.Client, session: requests.Session | None, **options: Any
) -> OAuth2Session:
    """An OAuth2Session that sends through ``session``'s adapters (the in-process emulator's)."""
    oauth = OAuth2Session(client=client, **options)
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
) -> Token:
    install_redaction()
    try:
        with _plain_http_allowed(base_url):
            data = send(base_url + TOKEN_ENDPOINT)
    except requests.Timeout:
        raise RequestTimeoutError(f"POST {TOKEN_ENDPOINT}: no answer; try again later") from None
    except requests.RequestException as err:
        raise ConnectionFailedError(
            f"POST {TOKEN_ENDPOINT}: the connection failed ({type(err).__name__}); "
            "check base_url and the network"
        ) from None
    except oauth2.OAuth2Error as err:
        raise _oauth_failure(err.error) from None
    finally:
        if session is None:  # a session passed in shares its adapters: its owner closes them
            oauth.close()
    return Token.from_oauth(data)


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


class _CallbackServer(http.server.HTTPServer):
    """A loopback HTTP server that waits for one request on the callback path."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self.path = path
        self.answer: str | None = None
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

    def wait(self, seconds: float) -> str:
        deadline = time.monotonic() + seconds
        while self.answer is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OAuthError(
                    f"no answer from the browser within {seconds:.0f} s: log in again, or use "
                    "the out-of-band flow"
                )
            self.timeout = remaining
            self.handle_request()
        return self.answer


class _CallbackPage(http.server.BaseHTTPRequestHandler):
    server: _CallbackServer

    def do_GET(self) -> None:
        if urlsplit(self.path).path != self.server.path:
            self.send_error(404)
            return
        self.server.answer = self.path
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
