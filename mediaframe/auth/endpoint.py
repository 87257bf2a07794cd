"""The token endpoint: one call sent through the transport's door, and its answer checked
(size, deadline, members, error codes), whatever it says quoted redacted."""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn
from urllib.parse import urlsplit

import requests
from oauthlib import oauth2
from requests_oauthlib import OAuth2Session

from mediaframe.exceptions import (
    ConnectionFailedError,
    MediaframeError,
    OAuthError,
    RedirectRefusedError,
    RequestTimeoutError,
    ResponseFormatError,
    ResponseTooLargeError,
    ServerError,
)
from mediaframe.http import deadline, failures, wire
from mediaframe.http.answers import Retry
from mediaframe.tokens import (
    Token,
    install_redaction,
    is_loopback_url,
    proxies_for,
    redact,
    redact_url,
    service_root_hint,
    shown_url,
)

__all__ = [
    "TOKEN_ENDPOINT",
    "call_token_endpoint",
    "oauth_failure",
    "oauth_session",
    "plain_http_allowed",
]

TOKEN_ENDPOINT = "/api/oauthv2/token"

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

# oauthlib refuses plain http unless this variable is set; see plain_http_allowed.
_INSECURE_VARIABLE = "OAUTHLIB_INSECURE_TRANSPORT"

#: Largest token-endpoint answer read: a token is some hundred bytes, an error page a few kB.
_TOKEN_ANSWER_LIMIT = 1 << 20
_INSECURE_LOCK = threading.Lock()


#: The most of an error code quoted: a code is a word, a hostile "code" a whole page.
_SHOWN_CODE = 80


def oauth_failure(code: str, where: str = "the token endpoint") -> OAuthError:
    # the server's text: it may echo the password, code or token it refused (redacted whole,
    # then cut: a cut secret would not be recognised)
    code = redact(code)
    if len(code) > _SHOWN_CODE:
        code = code[:_SHOWN_CODE] + "..."
    advice = _OAUTH_ADVICE.get(code, "log in again")
    return OAuthError(f"{where} refused the login ({code}): {advice}", error=code)


@contextlib.contextmanager
def plain_http_allowed(url: str) -> Iterator[None]:
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
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        body = None
    status = response.status_code
    if not isinstance(body, dict):
        # redacted whole, then cut: a secret the cut went through would not be recognised, and
        # its first half would be shown
        snippet = redact(" ".join(response.text.split()))[:160]
        kind = ServerError if status >= 500 else ResponseFormatError
        advice = _not_found(response) or "Check base_url and try again later"
        message = (
            f"the token endpoint answered HTTP {status} with something else than JSON: "
            f"{snippet!r}. {advice}"
        )
        if kind is ServerError:
            raise ServerError(message, status_code=status, request=f"POST {TOKEN_ENDPOINT}")
        raise ResponseFormatError(message, status_code=status, snippet=snippet)
    if body.get("error"):
        raise oauth_failure(str(body["error"]))
    if not isinstance(body.get("access_token"), str) or not body["access_token"]:
        advice = _not_found(response)
        raise ResponseFormatError(
            f"the token endpoint answered HTTP {status} without an access_token"
            + (f". {advice}" if advice else ""),
            status_code=status,
        )
    if not 200 <= status < 300:
        # a token comes with a success (RFC 6749, 5.1); an error page carrying one (a gateway's,
        # a cache's) is not a login
        message = (
            f"the token endpoint answered HTTP {status} with an access_token: a token comes "
            "with HTTP 200, so none was kept. Check base_url and try again later"
        )
        if status >= 500:
            raise ServerError(message, status_code=status, request=f"POST {TOKEN_ENDPOINT}")
        raise ResponseFormatError(message, status_code=status)
    _check_token_members(body, status)
    # None is asked for and none is read, and oauthlib splits one that is no text (a bare
    # AttributeError); `lifetime` is what a stored profile calls expires_in, never the server's
    if not isinstance(body.get("scope"), str):
        body.pop("scope", None)
    body.pop("lifetime", None)
    if body.get("expires_in") is not None:
        # expires_at is no member of RFC 6749, and beside expires_in it is not read (as
        # oauthlib 3 did): oauthlib 4 took it over the lifetime, and a past one kept a token
        # dead when issued, one of 400 digits ended in a bare OverflowError
        body.pop("expires_at", None)
    if not body.get("refresh_token"):
        # null or "" is no new refresh token: left out, requests-oauthlib keeps the one held
        # (read as the new one, it was lost, and the next expiry needed a login)
        body.pop("refresh_token", None)
    body.setdefault("token_type", "OAuth")
    response._content = json.dumps(body).encode()
    return response


def _check_token_members(body: Mapping[str, Any], status: int) -> None:
    """Refuse the members oauthlib would choke on (a bare ValueError or OverflowError) or read
    wrongly: an ``expires_in`` that is no number of seconds from one to ten years, an
    ``expires_at`` (read only without ``expires_in``) that is no time in the next ten years, a
    refresh token that is no text.

    A token dead when issued (``expires_in`` 0, or under the second oauthlib rounds down to 0;
    an ``expires_at`` past) is refused like the other broken answers, not kept: kept, it
    counted as expired at once (a past ``expires_at``; ``expires_in`` 0 with oauthlib 3) and
    every request silently refreshed it first, hammering the token endpoint and churning
    rotating refresh tokens. Nor is its lifetime read as unknown (what oauthlib 4 makes of a
    zero ``expires_in``): that keeps a token the service calls dead, sent until rejected, and
    hides a broken service the user should hear about.
    """
    expires_in = body.get("expires_in")
    if expires_in is not None and not _within(expires_in, _MOST_SECONDS, least=1):
        _refuse_member("expires_in", expires_in, "a number of seconds from 1", status)
    expires_at = body.get("expires_at")
    now = time.time()
    if (
        expires_in is None
        and expires_at is not None
        and not _within(expires_at, now + _MOST_SECONDS, least=now + 1)
    ):
        _refuse_member(
            "expires_at",
            expires_at,
            "a time to come in seconds since 1970 (check this machine's clock)",
            status,
        )
    for name in ("access_token", "refresh_token"):
        value = body.get(name)
        if isinstance(value, str) and _NO_TOKEN_CHARACTER.search(value.strip()):
            raise ResponseFormatError(
                f"the token endpoint answered HTTP {status} with a {name} holding whitespace, "
                "control characters or characters outside ASCII, which no token holds: the "
                "service is misconfigured; tell its administrators",
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


#: What Token refuses inside a token (it strips the edges): whitespace, controls, non-ASCII.
_NO_TOKEN_CHARACTER = re.compile(r"[^\x21-\x7e]")

#: The longest lifetime read as one: ten years. oauthlib adds it to the clock as an integer,
#: and a 400-digit one made the expiry no float at all (a bare OverflowError).
_MOST_SECONDS = 10 * 366 * 86400


def _within(value: object, most: float, *, least: float) -> bool:
    """Whether ``value`` is a number of seconds oauthlib can read: a number or ASCII digits,
    from ``least`` to ``most``."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    # compared, never converted: a 400-digit integer is no float (math.isfinite overflows)
    return least <= value <= most


def _refuse_member(name: str, value: object, meant: str, status: int) -> NoReturn:
    shown = redact(repr(value))[:40]  # redacted whole: a cut secret would not match
    raise ResponseFormatError(
        f"the token endpoint answered HTTP {status} with {name} {shown}, not {meant}: the "
        "service is misconfigured; tell its administrators",
        status_code=status,
    )


def oauth_session(
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


def call_token_endpoint(
    base_url: str,
    oauth: OAuth2Session,
    session: requests.Session | None,
    send: Callable[[str], Mapping[str, Any]],
    timeout: float,
) -> Token:
    # The answer is read as the transport reads its own (mediaframe.http is the door to the
    # network): within a size limit and one deadline, so that a token endpoint dripping, endless
    # or a compression bomb cannot hold or fill the login, nor a refresh in the middle of a
    # harvest.
    install_redaction()
    if urlsplit(base_url).scheme == "http":
        # The proxies an API request takes (mediaframe.http.wire.send: the session's and the
        # environment's, as requests merges them), less those off this machine: a debugging
        # proxy on loopback sees the token call as it sees the API's, and no proxy elsewhere
        # carries the password in clear text. Fixed here, the environment is not read again.
        url = base_url + TOKEN_ENDPOINT
        merged = oauth.merge_environment_settings(url, {}, True, None, None)["proxies"]
        oauth.proxies = proxies_for(url, merged)
        oauth.trust_env = False
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
        with plain_http_allowed(base_url), deadline.deadline(until):
            data = send(base_url + TOKEN_ENDPOINT)
    except Retry as retry:  # the answer timed out or dropped while it was read
        failure = retry.error
    except requests.Timeout as err:
        failure = RequestTimeoutError(
            f"POST {TOKEN_ENDPOINT}: no answer ({failures.describe(err, base_url)}); "
            "try again later"
        )
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
            f"POST {TOKEN_ENDPOINT}: {failures.describe(err, base_url)}; "
            "check base_url and the network"
        )
    except oauth2.OAuth2Error as err:
        failure = oauth_failure(err.error)
    finally:
        if session is None:  # a session passed in shares its adapters: its owner closes them
            oauth.close()
    if failure is not None:
        raise failure
    return Token.from_oauth(data)


def _not_found(response: requests.Response) -> str:
    """For a 404: the address asked and which base_url to give instead; else ``""``."""
    if response.status_code != 404:
        return ""
    asked = (response.url or "").partition("?")[0]
    base_url = asked.removesuffix(TOKEN_ENDPOINT)
    hint = service_root_hint(base_url) or "check base_url: give the service root, e.g. https://host"
    return f"There is no token endpoint at {shown_url(asked)}: {hint}"


def _location(response: requests.Response | None) -> str:
    return redact_url(response.headers.get("Location", "") if response is not None else "")
