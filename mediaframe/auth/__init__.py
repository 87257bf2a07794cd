"""Credentials: where a token may travel, how it is placed and redacted, obtained and stored.

``store`` holds the private profile files, ``flows`` the OAuth 2.0 flows (requests-oauthlib),
``endpoint`` the token endpoint's call and the checks of what it answers; the token and the
rules around it (https only, the ``OAuth`` header, redaction) are ``mediaframe.tokens``,
re-exported here. The flows send through ``mediaframe.http``, which sits between the two:
``tokens`` below it, ``auth`` above it (a ``lint-imports`` contract keeps it so).
"""

from mediaframe.auth.flows import (
    OOB_REDIRECT_URI,
    authorization_url,
    code_from_redirect,
    exchange_code,
    login_browser,
    login_implicit,
    login_oob,
    password_grant,
    refresh,
    token_from_redirect,
)
from mediaframe.auth.store import Profile, TokenStore
from mediaframe.tokens import (
    TOKEN_PARAM,
    RedactingFilter,
    Token,
    check_base_url,
    install_redaction,
    is_loopback_url,
    proxies_for,
    redact,
    redact_url,
    register_secret,
    same_origin,
    shown_url,
    token_header,
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
    "proxies_for",
    "redact",
    "redact_url",
    "refresh",
    "register_secret",
    "same_origin",
    "shown_url",
    "token_from_redirect",
    "token_header",
]
