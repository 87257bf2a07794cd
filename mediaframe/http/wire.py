"""On the wire: one request sent without following redirects, its body read whole within the
size limit and the attempt's deadline, and the library's failures told without a secret."""

from __future__ import annotations

import time

import requests
import urllib3

from mediaframe.exceptions import (
    ConfigurationError,
    ConnectionFailedError,
    RedirectRefusedError,
    RequestTimeoutError,
    ResponseFormatError,
    ResponseTooLargeError,
    TransportError,
)
from mediaframe.http.answers import Retry
from mediaframe.http.deadline import deadline as within
from mediaframe.http.failures import (
    describe,
    is_proxy_failure,
    is_unknown_host,
    library_message,
)
from mediaframe.tokens import proxies_for, redact, redact_url, same_origin

__all__ = ["read_body", "release", "send"]

# Bytes asked of the socket per read while streaming an answer (a read returns what has come).
_CHUNK = 1 << 18


def send(
    session: requests.Session,
    prepared: requests.PreparedRequest,
    *,
    base_url: str,
    line: str,
    timeout: float,
    deadline: float,
) -> requests.Response:
    """Send, never following a redirect; the body is left on the wire for :func:`read_body`.

    Failures are raised after the ``except`` blocks, so that no library exception (whose
    message may hold the request URL, and the token in it) rides along as ``__context__``.
    """
    if not same_origin(prepared.url or "", base_url):
        raise ConfigurationError(
            f"{line}: refusing to send to {redact_url(prepared.url or '')}, which is not "
            f"the service at {base_url}"
        )
    environment = session.merge_environment_settings(prepared.url, {}, True, None, None)
    environment["proxies"] = proxies_for(prepared.url or "", environment["proxies"])
    wait = min(timeout, max(deadline - time.monotonic(), 0.001))
    failure: Exception
    try:
        with within(deadline):  # the status line and headers too, in sessions made here
            response = session.send(prepared, timeout=wait, allow_redirects=False, **environment)
    except requests.Timeout as err:
        failure = Retry(timed_out(line, timeout, err, url=prepared.url or base_url))
    except requests.exceptions.ContentDecodingError as err:  # an adapter that read the body
        failure = _undecodable(line, None, err)
    except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as err:
        url = prepared.url or base_url
        # A name the resolver says does not exist will not exist a second later: retrying it
        # only kept a user with a mistyped base_url waiting. A resolver failing for now
        # (EAI_AGAIN) is retried like any connection failure.
        failure = (
            _unknown_host(line, err, url)
            if is_unknown_host(err)
            else Retry(_dropped(line, err, url))
        )
    except requests.RequestException as err:
        failure = TransportError(f"{line}: {library_message(err)}")
    else:
        if 300 <= response.status_code < 400:
            release(response)
            raise _redirect_error(response, line)
        return response
    raise failure


def read_body(
    response: requests.Response, *, line: str, limit: int, timeout: float, deadline: float
) -> bytes:
    """The whole body, decompressed, within ``limit`` bytes and the request's deadline.

    Read as it comes (one socket read at a time, so a server dripping bytes cannot outlast
    the deadline) into a list joined once: one copy of a large page, as before.
    """
    raw = response.raw
    if response._content is not False or not isinstance(raw, urllib3.BaseHTTPResponse):
        content = response.content  # an adapter that answered from memory
        if len(content) > limit:
            raise _too_large(line, limit)
        return content
    chunks: list[bytes] = []
    size = 0
    failure: Exception | None = None
    while failure is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            failure = Retry(timed_out(line, timeout))
            break
        _shorten_read_timeout(raw, remaining)
        try:
            chunk = raw.read1(_CHUNK, decode_content=True)
        except (urllib3.exceptions.TimeoutError, requests.Timeout) as err:
            failure = Retry(timed_out(line, timeout, err, url=response.url))
        except urllib3.exceptions.DecodeError as err:  # before HTTPError, which it is
            failure = _undecodable(line, response, err)
        except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as err:
            failure = Retry(_dropped(line, err, response.url))
        else:
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                failure = _too_large(line, limit)
            chunks.append(chunk)
    if failure is not None:
        raise failure
    content = b"".join(chunks)
    # as requests would have it after reading: its accessors see the body read here, and
    # the connection goes back to the pool
    response._content = content
    response._content_consumed = True  # requests' own flag
    return content


def release(response: requests.Response) -> None:
    """Give a fully read connection back to the pool; close one left half read."""
    raw = response.raw
    if isinstance(raw, urllib3.BaseHTTPResponse):
        if getattr(response, "_content_consumed", False):
            raw.release_conn()
        else:
            raw.close()


def timed_out(
    line: str, timeout: float, err: Exception | None = None, *, url: str = ""
) -> RequestTimeoutError:
    """The error of an attempt that had no whole answer within ``timeout`` seconds (``err``,
    the library's, says which step ran out of time at ``url``)."""
    cause = f" ({describe(err, url)})" if err is not None else ""
    return RequestTimeoutError(
        f"{line}: no whole answer within {timeout} s{cause}. "
        "Try again later or raise MEDIAFRAME_TIMEOUT"
    )


def _dropped(line: str, err: BaseException, url: str) -> ConnectionFailedError:
    return ConnectionFailedError(
        f"{line}: {describe(err, url)}. Check the URL and the network, then try again"
    )


def _unknown_host(line: str, err: BaseException, url: str) -> ConnectionFailedError:
    """The error of a host name that does not exist: the service's, or its proxy's."""
    where = "the proxy's address (HTTPS_PROXY, HTTP_PROXY)" if is_proxy_failure(err) else "base_url"
    # "or that this machine is online": some systems (macOS) say "no such name" when offline
    return ConnectionFailedError(
        f"{line}: {describe(err, url)}. Check the host name in {where} (or that this machine "
        "is online); not retried, as the resolver says the name does not exist"
    )


def _undecodable(
    line: str, response: requests.Response | None, err: BaseException
) -> ResponseFormatError:
    """A body that does not decompress as its ``Content-Encoding`` says: the server's (or a
    proxy's) label, the same on every attempt, so not asked again."""
    coding = response.headers.get("Content-Encoding") if response is not None else None
    said = f" (Content-Encoding: {redact(coding)[:40]})" if coding else ""
    return ResponseFormatError(
        f"{line}: the answer says its body is compressed{said}, but it does not decompress "
        f"({library_message(err)}): the service or a proxy before it labels a plain body "
        "wrongly. Not retried, the same answer would come again: check base_url, or tell "
        "the service's administrators",
        status_code=response.status_code if response is not None else None,
    )


def _too_large(line: str, limit: int) -> ResponseTooLargeError:
    return ResponseTooLargeError(
        f"{line}: the answer grew past {limit:,} bytes (decompressed) and was dropped. Ask "
        "for smaller pages (per_page=), or raise MEDIAFRAME_MAX_RESPONSE_BYTES if the service "
        "is trusted"
    )


def _redirect_error(response: requests.Response, line: str) -> RedirectRefusedError:
    location = redact_url(response.headers.get("Location", ""))
    return RedirectRefusedError(
        f"{line}: the service answered HTTP {response.status_code}, a redirect to {location}. "
        "API calls never follow redirects (the token would go along): set base_url to the "
        "address the service answers on itself",
        status_code=response.status_code,
        location=location,
    )


def _shorten_read_timeout(raw: urllib3.BaseHTTPResponse, remaining: float) -> None:
    """Let the next socket read wait no longer than the request's deadline allows."""
    connection = getattr(raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        current = sock.gettimeout()
        if current is None or current > remaining:
            sock.settimeout(remaining)
