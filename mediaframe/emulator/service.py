"""The Emulator: catalogue, accounts, search, faults and app, in-process or served."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import requests

from mediaframe.emulator import vocabulary as vocab
from mediaframe.emulator.accounts import Accounts
from mediaframe.emulator.app import App
from mediaframe.emulator.catalogue import Catalogue
from mediaframe.emulator.faults import Faults
from mediaframe.emulator.flavours import Rendering, by_name
from mediaframe.emulator.oauth import OAuthEndpoints
from mediaframe.emulator.routes import Routes
from mediaframe.emulator.search import Search
from mediaframe.emulator.server import InProcessAdapter, LoopbackServer

INPROCESS_URL = "https://emulator.test"


class Emulator:
    """A faithful local Media Asset Service with a synthetic catalogue.

    Parameters
    ----------
    records, seed
        Size and seed of the deterministic catalogue.
    cap
        Retrieval cap of searches (``available_results = min(total_results, cap)``); a
        ``current`` server has none.
    flavour
        The server generation to speak: ``"contract"`` (the contract's shape, the default),
        ``"current"`` or ``"legacy"`` (see :mod:`mediaframe.emulator.flavours`).
    fail_rate, drop_rate, truncate_rate
        Probabilities of a 500 answer, a dropped connection, a body cut in half.
    delay_ms
        ``(min, max)`` milliseconds of delay per answer.
    revoke_after
        Revoke a token after this many authenticated requests.
    fault_seed
        Seed of the fault draws.
    auto_approve
        Approve authorization requests as the demo user without a login page.
    host, port
        Where ``start()`` listens (port 0: any free port).

    Examples
    --------
    >>> with Emulator(records=200, seed=1) as emu:           # doctest: +SKIP
    ...     requests.get(f"{emu.base_url}/api/v1/me/", params={"oauth_token": emu.token})
    """

    def __init__(
        self,
        records: int = 1000,
        seed: int = 0,
        cap: int = 1000,
        flavour: str = "contract",
        fail_rate: float = 0.0,
        drop_rate: float = 0.0,
        truncate_rate: float = 0.0,
        delay_ms: tuple[int, int] = (0, 0),
        revoke_after: int | None = None,
        fault_seed: int | None = None,
        auto_approve: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.catalogue = Catalogue(records=records, seed=seed)
        self.accounts = Accounts(seed=seed)
        self.flavour = by_name(flavour)
        render = Rendering(self.catalogue, self.flavour)
        self.search = Search(self.catalogue, cap=_check_cap(cap), render=render)
        self.faults = Faults(
            fail_rate=fail_rate, drop_rate=drop_rate, truncate_rate=truncate_rate,
            delay_ms=delay_ms, seed=fault_seed,
        )  # fmt: skip
        routes = Routes(self.catalogue, self.accounts, self.search)
        oauth = OAuthEndpoints(self.accounts, auto_approve=auto_approve)
        self.app = App(routes, oauth, self.faults, revoke_after=revoke_after)
        self.token = self.token_for("demo")
        self._where = (host, port)
        self._server: LoopbackServer | None = None

    def __repr__(self) -> str:
        state = self._server.base_url if self._server else "not served"
        return (
            f"Emulator(records={self.catalogue.records.size}, seed={self.catalogue.seed}, "
            f"flavour={self.flavour.name!r}, {state})"
        )

    # ------------------------------------------------------------ credentials

    client_id = property(lambda self: self.accounts.demo_app.client_id)
    client_secret = property(lambda self: self.accounts.demo_app.client_secret)
    redirect_uri = property(lambda self: self.accounts.demo_app.redirect_uri)
    username = property(lambda self: "demo")
    password = property(lambda self: self.accounts.users["demo"].password)
    inprocess_url = INPROCESS_URL

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` once started, else the in-process URL."""
        return self._server.base_url if self._server else INPROCESS_URL

    @property
    def credentials(self) -> dict[str, str]:
        """The demo account: the same 7 keys as the line `serve` prints."""
        return {
            "base_url": self.base_url,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "redirect_uri": self.redirect_uri,
            "username": self.username,
            "password": self.password,
            "token": self.token,
        }

    def token_for(self, login: str) -> str:
        """A fresh token of a seeded user: demo, auditor, photographer or legacy."""
        user = self.accounts.users.get(login)
        if user is None:
            raise ValueError(
                f"no seeded user {login!r}; users are {', '.join(self.accounts.users)}"
            )
        return self.accounts.issue_token(user, self.client_id)

    def revoke(self, token: str) -> None:
        """Invalidate ``token``, as a user revoking access in the settings."""
        self.accounts.revoke(token)

    # ---------------------------------------------------------------- serving

    def start(self) -> Emulator:
        """Serve on the loopback address in a background thread."""
        if self._server is None:
            host, port = self._where
            self._server = LoopbackServer(self.app, host=host, port=port)
            self._server.start()
        return self

    def stop(self) -> None:
        """Stop serving (the in-process app keeps working)."""
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def requests_session(self) -> requests.Session:
        """A session whose requests to ``inprocess_url`` go straight to the app, no socket."""
        session = requests.Session()
        session.mount(INPROCESS_URL, InProcessAdapter(self.app))
        return session

    # ------------------------------------------------------------ ground truth

    def ground_truth(self, kind: str = "records", user: str | None = None) -> pd.DataFrame:
        """What the service holds, as a typed DataFrame.

        Parameters
        ----------
        kind
            ``"records"`` or ``"stories"``.
        user
            None: the rows the demo user may see; a login: that user's rows; ``"*"``: every row
            with a boolean ``visible`` column for the demo user.
        """
        table = self.catalogue.stories if kind == "stories" else self.catalogue.records
        rows = np.flatnonzero(table.alive)
        demo = self._visible(table, "demo")
        if user == "*":
            frame = self.catalogue.frame(kind, rows=rows)
            frame["visible"] = pd.array(demo[rows], dtype="boolean")
            return frame
        mask = demo if user is None else self._visible(table, user)
        return self.catalogue.frame(kind, rows=rows[mask[rows]])

    def _visible(self, table: Any, login: str) -> np.ndarray:
        user = self.accounts.users.get(login)
        if user is None:
            raise ValueError(
                f"no seeded user {login!r}; users are {', '.join(self.accounts.users)}"
            )
        allowed = [i for i, c in enumerate(vocab.COLLECTIONS) if c[0] in user.visible_bases]
        return np.isin(table.base_index, allowed)

    # ---------------------------------------------------------------- changes

    def update_record(self, databox_id: int, record_id: int, **fields: Any) -> None:
        """Change title, description, creator, keywords or status; updated_on becomes now."""
        self.catalogue.update_record(self._row(databox_id, record_id), **fields)
        self.search.invalidate()

    def delete_record(self, databox_id: int, record_id: int) -> None:
        """Delete a record: it leaves searches, and its route answers 404."""
        self.catalogue.delete_record(self._row(databox_id, record_id))
        self.search.invalidate()

    def _row(self, databox_id: int, record_id: int) -> int:
        row = self.catalogue.row_of(databox_id, record_id)
        if row is None:
            raise KeyError(f"no record {record_id} in databox {databox_id}")
        return row

    def set_cap(self, n: int) -> None:
        """Change the retrieval cap of searches."""
        self.search.cap = _check_cap(n)

    def set_search_warning(self, text: str = "") -> None:
        """Make every search answer's ``warning`` say ``text`` (a part of the query ignored,
        results approximate, as a degraded engine says); ``""``, the default, says nothing."""
        self.search.warning = str(text)

    def set_faults(
        self,
        *,
        fail_rate: float | None = None,
        drop_rate: float | None = None,
        truncate_rate: float | None = None,
        delay_ms: tuple[int, int] | None = None,
        revoke_after: int | None = None,
        fault_seed: int | None = None,
        seed: int | None = None,
    ) -> None:
        """Change fault knobs live; the knobs not given keep their value.

        The names are the constructor's (``fault_seed`` restarts the draws as
        ``Emulator(fault_seed=...)`` starts them); ``seed`` is the older spelling of
        ``fault_seed``.
        """
        if fault_seed is not None and seed is not None and fault_seed != seed:
            raise ValueError(f"give fault_seed once, not fault_seed={fault_seed} and seed={seed}")
        self.faults.configure(
            fail_rate=fail_rate, drop_rate=drop_rate, truncate_rate=truncate_rate,
            delay_ms=delay_ms, seed=seed if fault_seed is None else fault_seed,
        )  # fmt: skip
        if revoke_after is not None:
            self.app.revoke_after = revoke_after


def _check_cap(cap: int) -> int:
    if cap < 0:
        raise ValueError(f"cap must be zero or more, got {cap}")
    return cap
