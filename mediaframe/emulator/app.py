"""The WSGI application: routing, token check, faults, handlers and the envelope."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from mediaframe.emulator.accounts import Accounts, User
from mediaframe.emulator.descriptive import extended_accept
from mediaframe.emulator.envelope import ApiError, choose_format, envelope, render
from mediaframe.emulator.faults import DropConnection, Faults
from mediaframe.emulator.messages import Request, Response, flatten
from mediaframe.emulator.oauth import OAuthEndpoints
from mediaframe.emulator.query import MAX_ID_DIGITS
from mediaframe.emulator.routes import ROUTES, Routes

OAUTH_ROUTES = {"/api/oauthv2/token": ("POST",), "/api/oauthv2/authorize": ("GET", "POST")}
COMPILED = [
    (re.compile(re.sub(r"<\w+>", r"(\\d+)", path)), methods, name) for path, methods, name in ROUTES
]


def _bare(status: int, error: str) -> Response:
    """The OAuth layer's answer for a missing or bad token: no body, a WWW-Authenticate header."""
    challenge = f"OAuth realm='Service', error='{error}'"
    return Response(status, [("WWW-Authenticate", challenge)])


def _invalid_request() -> Response:
    body = b'{"error":"invalid_request"}'
    return Response(
        400, [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body
    )


class App:
    """The emulated service as a WSGI callable.

    Parameters
    ----------
    routes
        Handlers bound to the catalogue, accounts and search.
    oauth
        The token and authorize endpoints.
    faults
        Fault knobs applied to authenticated API requests.
    revoke_after
        Revoke each token after this many authenticated requests (None: never).
    """

    def __init__(
        self,
        routes: Routes,
        oauth: OAuthEndpoints,
        faults: Faults,
        *,
        revoke_after: int | None = None,
    ) -> None:
        self.routes = routes
        self.oauth = oauth
        self.faults = faults
        self.revoke_after = revoke_after

    @property
    def accounts(self) -> Accounts:
        return self.routes.accounts

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        response = self.handle(Request.from_environ(environ))
        headers = [*response.headers, ("Content-Length", str(len(response.body)))]
        start_response(response.status_line, headers)
        return [response.body]

    def handle(self, request: Request) -> Response:
        """Answer one request (raises DropConnection when a fault drops it)."""
        if request.body_error is not None:  # an HTTP-level fault, refused as servers do first
            return self._envelope(request, ApiError(400, request.body_error))
        if request.path in OAUTH_ROUTES:
            allowed = OAUTH_ROUTES[request.path]
            if request.method not in allowed:
                return self._envelope(
                    request, ApiError(405, headers=[("Allow", ", ".join(allowed))])
                )
            handler = self.oauth.token if request.path.endswith("token") else self.oauth.authorize
            return handler(request)
        found = self._route(request)
        if isinstance(found, ApiError):
            return self._envelope(request, found)
        name, args = found
        user = self._authenticate(request)
        if isinstance(user, Response):
            return user
        plan = self.faults.draw()
        if plan.delay:
            time.sleep(plan.delay)
        if plan.drop:
            raise DropConnection(request.line)
        if plan.fail:
            return self._envelope(request, ApiError(500, "Injected fault"))
        response = self._dispatch(request, user, name, args)
        if plan.truncate:
            response.body = response.body[: len(response.body) // 2]
        return response

    def _route(self, request: Request) -> tuple[str, tuple[str, ...]] | ApiError:
        # Routing runs before the token check: unknown paths and wrong methods need no token.
        for pattern, methods, name in COMPILED:
            match = pattern.fullmatch(request.path)
            if match is None:
                continue
            if methods is not None and request.method not in methods:
                details = (
                    f"{request.method} is not allowed on {request.path}; use {', '.join(methods)}"
                )
                return ApiError(405, details, headers=[("Allow", ", ".join(methods))])
            too_long = [ident for ident in match.groups() if len(ident) > MAX_ID_DIGITS]
            if too_long:
                digits = len(too_long[0])
                return ApiError(
                    400, f"an id of {digits} digits is not an id (at most {MAX_ID_DIGITS})"
                )
            return name, match.groups()
        return ApiError(404, f"No route found for {request.line}")

    def _authenticate(self, request: Request) -> User | Response:
        header = request.headers.get("authorization")
        in_query = request.query.get("oauth_token", [])
        in_body = request.form.get("oauth_token", [])
        if isinstance(request.body_json, dict) and "oauth_token" in request.body_json:
            in_body = [*in_body, str(request.body_json["oauth_token"])]
        if header is not None:
            if in_query or in_body or not header.startswith("OAuth "):
                return _invalid_request()
            token = header[len("OAuth ") :].strip()
        else:
            if in_query and in_body:
                return _invalid_request()
            values = in_query or in_body
            token = values[-1].strip() if values else ""
        if not token:
            return _bare(400, "invalid_request")
        user = self.accounts.user_of(token, revoke_after=self.revoke_after)
        if user is None:
            return _bare(401, "invalid_token")
        return user

    def _dispatch(self, request: Request, user: User, name: str, args: tuple[str, ...]) -> Response:
        version_two = request.path.startswith("/api/v2/")
        callback = (request.query.get("callback") or request.form.get("callback") or [""])[-1]
        fmt = "json"
        extended, accept = extended_accept(request.headers.get("accept", ""))
        try:
            fmt = choose_format(accept, callback, json_only=version_two)
            data = getattr(self.routes, name)(self._params(request), user, *args)
            if extended and not version_two:  # after the route shaped its records
                data = self.routes.extend(data, user)
        except ApiError as err:
            return self._envelope(request, err, fmt=fmt, callback=callback)
        flavour = self.routes.render.flavour
        answer = envelope(request.line, 200, data, api_version=flavour.api_version)
        return render(answer, fmt, callback=callback, pretty=flavour.pretty)

    def _params(self, request: Request) -> dict[str, list[str]]:
        params = {k: list(v) for k, v in request.query.items()}
        if isinstance(request.body_json, ValueError):
            raise ApiError(400, str(request.body_json))
        body: dict[str, Any] = (
            flatten(request.body_json) if isinstance(request.body_json, dict) else {}
        )
        for name, values in [*request.form.items(), *body.items()]:
            params.setdefault(name, []).extend(values)
        return params

    def _envelope(
        self, request: Request, error: ApiError, *, fmt: str | None = None, callback: str = ""
    ) -> Response:
        if fmt is None:
            callback = (request.query.get("callback") or [""])[-1]
            _, accept = extended_accept(request.headers.get("accept", ""))
            try:
                fmt = choose_format(accept, callback, json_only=False)
            except ApiError:
                fmt = "json"
        flavour = self.routes.render.flavour
        data = envelope(
            request.line, error.status, {}, error.details, api_version=flavour.api_version
        )
        return render(data, fmt, callback=callback, headers=error.headers, pretty=flavour.pretty)
