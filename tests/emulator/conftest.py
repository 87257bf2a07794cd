"""Fixtures of the emulator's own tests: an in-process client speaking raw HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from mediaframe.emulator import Emulator


class Api:
    """Raw HTTP calls to one emulator, with the demo token unless told otherwise."""

    def __init__(self, emu: Emulator, session: requests.Session, base_url: str) -> None:
        self.emu = emu
        self.session = session
        self.base_url = base_url

    def call(
        self, method: str, path: str, *, token: str | None = "demo", **kwargs: Any
    ) -> requests.Response:
        if token is not None:
            token = self.emu.token if token == "demo" else token
            where = "params" if method == "GET" or "data" not in kwargs else "data"
            kwargs[where] = {**(kwargs.get(where) or {}), "oauth_token": token}
        kwargs.setdefault("allow_redirects", False)
        return self.session.request(method, self.base_url + path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("GET", path, **kwargs)

    def search(self, version: int = 1, **params: Any) -> dict:
        answer = self.call("POST", f"/api/v{version}/search/", data=params)
        assert answer.status_code == 200, answer.text
        return answer.json()["response"]


@pytest.fixture(scope="session")
def flavour() -> str:
    """The emulator's own tests check the contract's shape; test_flavours.py the others."""
    return "contract"


@pytest.fixture(scope="session")
def api(inprocess_emulator: Emulator) -> Iterator[Api]:
    """In-process raw HTTP to the shared (read-only) emulator."""
    with inprocess_emulator.requests_session() as session:
        yield Api(inprocess_emulator, session, inprocess_emulator.inprocess_url)


@pytest.fixture(scope="session")
def served() -> Iterator[Emulator]:
    """The contract's emulator with 2,000 records (seed 7), served: the same data as ``api``.

    Not the root ``emulator`` fixture: that one follows the session's flavour parameter, which a
    fixture of this directory cannot pin for a session-scoped value.
    """
    with Emulator(records=2000, seed=7) as emu:
        yield emu


@pytest.fixture
def loopback(served: Emulator) -> Iterator[Api]:
    """Raw HTTP over a real socket to the contract's served emulator."""
    with requests.Session() as session:
        yield Api(served, session, served.base_url)


@pytest.fixture(scope="session")
def api_of() -> Iterator[Any]:
    """Build an in-process Api for any emulator (sessions are closed at the end)."""
    sessions: list[requests.Session] = []

    def make(emu: Emulator) -> Api:
        session = emu.requests_session()
        sessions.append(session)
        return Api(emu, session, emu.inprocess_url)

    yield make
    for session in sessions:
        session.close()
