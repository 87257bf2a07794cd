"""Seeded users with their rights, registered applications, codes and access tokens."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mediaframe.emulator import vocabulary as vocab

# The contract's list, in its fixed order: rights are always listed in this order.
COLLECTION_RIGHTS = (
    "actif", "canaddrecord", "canadmin", "cancmd", "candeleterecord", "candwnldhd",
    "candwnldpreview", "canmodifrecord", "canpush", "canputinalbum", "canreport", "chgstatus",
    "imgtools", "manage", "modify_struct", "nowatermark",
)  # fmt: skip
DATABOX_RIGHTS = ("bas_modify_struct", "bas_manage", "bas_chupub", "bas_modif_th")
READER_RIGHTS = ("actif", "candwnldhd", "candwnldpreview", "canputinalbum", "canreport")
PLACEHOLDER_DATE = "-0001-11-30T00:00:00+00:09"
CODE_LIFETIME = 30  # seconds an authorization code stays valid
OOB = "urn:ietf:wg:oauth:2.0:oob"
ENTITY = "http://api.emulator.test/api/objects/user"


@dataclass(frozen=True)
class User:
    """One account of the service and its rights."""

    id: int
    login: str
    password: str = field(repr=False)
    first_name: str | None
    last_name: str | None
    gender: str | None
    bases: dict[int, tuple[str, ...]]  # base_id -> collection rights
    databoxes: dict[int, tuple[str, ...]]  # databox_id -> databox rights
    is_admin: bool = False
    legacy: bool = False  # placeholder dates and an empty profile, as migrated accounts have

    @property
    def visible_bases(self) -> frozenset[int]:
        """Base ids where the user may search (the ``actif`` right)."""
        return frozenset(b for b, rights in self.bases.items() if "actif" in rights)

    def as_dict(self) -> dict[str, Any]:
        """The ``user`` member of the ``/me/`` route."""
        email = None if self.legacy else f"{self.login}@example.org"
        display = " ".join(p for p in (self.first_name, self.last_name) if p) or self.login
        created = PLACEHOLDER_DATE if self.legacy else "2016-03-01T09:30:00+00:00"
        return {
            "@entity@": ENTITY,
            "id": self.id,
            "email": email,
            "login": self.login,
            "first_name": self.first_name,
            "last_name": self.last_name,
            "display_name": display,
            "gender": self.gender,
            "address": None if self.legacy else "12 rue des Archives",
            "zip_code": None if self.legacy else "75003",
            "city": None if self.legacy else "Paris",
            "country": None if self.legacy else "FR",
            "phone": None,
            "fax": None,
            "job": None if self.legacy else "Photo editor",
            "position": None,
            "company": None if self.legacy else "Example Media",
            "geoname_id": None if self.legacy else 2988507,
            "last_connection": PLACEHOLDER_DATE if self.legacy else "2024-11-05T08:12:44+00:00",
            "created_on": created,
            "updated_on": PLACEHOLDER_DATE if self.legacy else "2023-06-30T17:45:00+00:00",
            "locale": "fr_FR" if self.legacy else "en_GB",
        }


@dataclass(frozen=True)
class App:
    """A registered client application."""

    client_id: str
    client_secret: str = field(repr=False)
    name: str
    redirect_uri: str
    password_grant: bool


def _users() -> list[User]:
    every_base = [c[0] for c in vocab.COLLECTIONS]
    every_databox = [d for d, _ in vocab.DATABOXES]
    wanted = (*READER_RIGHTS, "canaddrecord", "canmodifrecord", "chgstatus")
    demo_rights = tuple(r for r in COLLECTION_RIGHTS if r in wanted)
    return [
        # demo: every collection but Legal (7) and Board minutes (8).
        User(1, "demo", "demo-password", "Demo", "User", "Mr",
             {b: demo_rights for b in every_base if b <= 6}, {1: ("bas_chupub",), 2: ()}),
        User(2, "auditor", "auditor-password", "Alice", "Auditor", "Mrs",
             {b: COLLECTION_RIGHTS for b in every_base}, {d: DATABOX_RIGHTS for d in every_databox},
             is_admin=True),
        User(3, "photographer", "photographer-password", "Paul", "Grapher", "Mr",
             {2: READER_RIGHTS}, {1: ()}),
        User(4, "legacy", "legacy-password", None, None, None,
             {1: READER_RIGHTS, 4: READER_RIGHTS}, {1: (), 2: ()}, legacy=True),
    ]  # fmt: skip


class Accounts:
    """Users, applications, authorization codes and access tokens of one emulator.

    Parameters
    ----------
    seed
        Derives the client secrets, so a server started with the same seed keeps them.
    clock
        Seconds since the epoch; tests replace it to age authorization codes.
    """

    def __init__(self, *, seed: int = 0, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.users = {u.login: u for u in _users()}
        self.users_by_id = {u.id: u for u in self.users.values()}
        self.apps = {
            app.client_id: app
            for app in (
                App("emulator-demo-app", _secret(seed, "demo"), "Demo notebook",
                    "http://127.0.0.1:8765/callback", password_grant=True),
                App("emulator-web-app", _secret(seed, "web"), "Web portal",
                    "http://127.0.0.1:8766/callback", password_grant=False),
            )
        }  # fmt: skip
        self._tokens: dict[str, tuple[int, str]] = {}  # token -> (user id, client id)
        self._codes: dict[str, tuple[str, int, str, float]] = {}
        self._uses: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def demo_app(self) -> App:
        return self.apps["emulator-demo-app"]

    def check_password(self, login: str, password: str) -> User | None:
        """The user with these credentials, or None."""
        user = self.users.get(login)
        # compared as bytes: compare_digest refuses str holding anything but ASCII
        if user is None or not secrets.compare_digest(
            user.password.encode("utf-8"), password.encode("utf-8", "surrogatepass")
        ):
            return None
        return user

    def issue_token(self, user: User, client_id: str) -> str:
        """A new access token (32 lowercase hex) for ``user`` through ``client_id``."""
        token = secrets.token_hex(16)
        with self._lock:
            self._tokens[token] = (user.id, client_id)
        return token

    def user_of(self, token: str, *, revoke_after: int | None = None) -> User | None:
        """The owner of a live token, or None for an unknown or revoked one.

        With ``revoke_after`` this request is counted, and the one that reaches the count still
        passes but revokes the token. Look-up, count and revocation hold one lock, so exactly
        ``revoke_after`` requests pass however many arrive at once.
        """
        with self._lock:
            entry = self._tokens.get(token)
            if entry is None:
                return None
            if revoke_after is not None:
                self._uses[token] = self._uses.get(token, 0) + 1
                if self._uses[token] >= revoke_after:
                    del self._tokens[token]
        return self.users_by_id[entry[0]]

    def revoke(self, token: str) -> None:
        """Make ``token`` invalid from now on (unknown tokens are ignored)."""
        with self._lock:
            self._tokens.pop(token, None)

    def issue_code(self, user: User, client_id: str, redirect_uri: str) -> str:
        """A new authorization code, valid for CODE_LIFETIME seconds."""
        code = secrets.token_hex(20)
        with self._lock:
            self._codes[code] = (client_id, user.id, redirect_uri, self.clock() + CODE_LIFETIME)
        return code

    def take_code(
        self, code: str, client_id: str, redirect_uri: str, *, redeem: bool = True
    ) -> User | str:
        """Redeem a code: the user, or the OAuth error code explaining the refusal.

        With ``redeem=False`` the code is only checked: an exchange refused for another reason
        leaves it for the client's next try, as a refusal here does.
        """
        with self._lock:
            stored = self._codes.get(code)
            if stored is None or stored[0] != client_id:
                return "invalid_grant"
            # The redirect must extend the registered one (or repeat the code's own, for oob).
            registered = self.apps[client_id].redirect_uri.lower()
            if not redirect_uri.lower().startswith(registered) and redirect_uri != stored[2]:
                return "invalid_grant"
            if stored[3] < self.clock():
                return "expired_token"
            if redeem:
                del self._codes[code]
        return self.users_by_id[stored[1]]


def _secret(seed: int, name: str) -> str:
    # Derived, not random, so `serve --seed S` keeps the same secret across restarts.
    return hashlib.sha256(f"emulator-secret:{name}:{seed}".encode()).hexdigest()[:32]
