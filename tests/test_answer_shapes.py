"""The client's reads of baskets, feeds, /me/ and facets against answers of other server ages and
of lying servers: the emulator in-process behind a WSGI layer that rewrites its answers."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.emulator.server import InProcessAdapter
from mediaframe.emulator.service import INPROCESS_URL
from mediaframe.exceptions import MalformedItemError

#: Changes one decoded answer: ``(path, envelope)`` in place, or returns a new HTTP status.
Rewrite = Callable[[str, dict[str, Any]], "int | None"]


@pytest.fixture(scope="module")
def emu() -> Emulator:
    return Emulator(records=300, seed=5)


@pytest.fixture
def settings(tmp_path):
    return Settings(config_dir=tmp_path / "config", cache_dir=tmp_path / "cache", backoff=0)


class Rewriting:
    """The emulator's WSGI app, with each JSON answer passed through ``rewrite`` first."""

    def __init__(self, app: Callable, rewrite: Rewrite) -> None:
        self.app, self.rewrite = app, rewrite
        self.paths: list[str] = []

    def __call__(self, environ: dict, start_response: Callable) -> Iterator[bytes]:
        head: list[Any] = []

        def keep(status: str, headers: list, *_: object) -> None:
            head.extend([status, headers])

        body = b"".join(self.app(environ, keep))
        status, headers = head
        path = environ["PATH_INFO"]
        self.paths.append(path)
        kind = dict((k.lower(), v) for k, v in headers).get("content-type", "")
        if "json" in kind and body:
            envelope = json.loads(body)
            code = self.rewrite(path, envelope)
            if code is not None:
                status = f"{code} Rewritten"
                envelope["meta"]["http_code"] = code
            body = json.dumps(envelope).encode()
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
        start_response(status, [*headers, ("Content-Length", str(len(body)))])
        return iter([body])


def connect(emu: Emulator, settings: Settings, rewrite: Rewrite) -> tuple[mf.Client, Rewriting]:
    app = Rewriting(emu.app, rewrite)
    session = emu.requests_session()
    session.mount(INPROCESS_URL, InProcessAdapter(app))
    return mf.connect(INPROCESS_URL, token=emu.token, settings=settings, session=session), app


def unchanged(path: str, envelope: dict[str, Any]) -> None:
    return None


def keyed(member: str, key: str, route: str) -> Rewrite:
    """Answers of ``route`` whose list ``member`` is an object keyed by each item's ``key``."""

    def rewrite(path: str, envelope: dict[str, Any]) -> None:
        response = envelope["response"]
        if path.startswith(route) and isinstance(response.get(member), list):
            response[member] = {str(item[key]): item for item in response[member]}

    return rewrite


@pytest.mark.parametrize(
    "rewrite",
    [
        keyed("baskets", "basket_id", "/api/v1/baskets/list/"),
        keyed("basket_elements", "basket_element_id", "/api/v1/baskets/"),
    ],
    ids=["baskets", "basket_elements"],
)
def test_baskets_keyed_by_id_are_the_list_they_stand_for(emu, settings, rewrite):
    truth, _ = connect(emu, settings, unchanged)
    client, _ = connect(emu, settings, rewrite)
    assert len(truth.basket_records()) > 0
    assert client.baskets().equals(truth.baskets())
    assert client.basket_records().equals(truth.basket_records())


def test_feeds_keyed_by_id_are_the_list_they_stand_for(emu, settings):
    truth, _ = connect(emu, settings, unchanged)
    client, _ = connect(emu, settings, keyed("feeds", "id", "/api/v1/feeds/list/"))
    assert client.feeds().equals(truth.feeds())


def test_feed_entries_keyed_by_id_are_the_list_they_stand_for(emu, settings):
    truth, _ = connect(emu, settings, unchanged)
    client, _ = connect(emu, settings, keyed("entries", "id", "/api/v1/feeds/content/"))
    assert client.feed_items().equals(truth.feed_items())


@pytest.mark.parametrize("baskets", ["3 baskets", 3, {"1": "Picks"}, [4]])
@pytest.mark.parametrize("read", ["baskets", "basket_records"])
def test_baskets_that_are_no_list_raise(emu, settings, baskets, read):
    def rewrite(path: str, envelope: dict[str, Any]) -> None:
        if path == "/api/v1/baskets/list/":
            envelope["response"]["baskets"] = baskets

    client, _ = connect(emu, settings, rewrite)
    with pytest.raises(MalformedItemError, match="basket"):
        getattr(client, read)()


@pytest.mark.parametrize("basket_id", [None, "picks", True])
def test_a_basket_without_an_id_is_named(emu, settings, basket_id):
    def rewrite(path: str, envelope: dict[str, Any]) -> None:
        if path == "/api/v1/baskets/list/":
            envelope["response"]["baskets"][1]["basket_id"] = basket_id

    client, _ = connect(emu, settings, rewrite)
    with pytest.raises(MalformedItemError, match=r"basket #1: member 'basket_id' is"):
        client.basket_records()


def test_a_basket_id_as_text_is_read(emu, settings):
    def rewrite(path: str, envelope: dict[str, Any]) -> None:
        if path == "/api/v1/baskets/list/":
            for basket in envelope["response"]["baskets"]:
                basket["basket_id"] = str(basket["basket_id"])

    truth, _ = connect(emu, settings, unchanged)
    client, _ = connect(emu, settings, rewrite)
    assert client.basket_records().equals(truth.basket_records())


def test_a_me_answer_naming_no_user_leaves_no_base_ids_behind(settings):
    legacy = Emulator(records=300, seed=5, flavour="legacy")  # records carry no base_id
    first = {"me": True}

    def blank_first_me(path: str, envelope: dict[str, Any]) -> None:
        if path == "/api/v1/me/" and first.pop("me", False):
            envelope["response"] = {}

    client, _ = connect(legacy, settings, blank_first_me)
    key = legacy.ground_truth().iloc[0]
    databox_id, record_id = int(key["databox_id"]), int(key["record_id"])
    with pytest.raises(mf.ResponseFormatError, match="names no user"):
        client.record(databox_id, record_id)
    assert client.record(databox_id, record_id)["base_id"].notna().all()


def no_v2(path: str, envelope: dict[str, Any]) -> int | None:
    """A server of the v1-only generation: ``/api/v2/`` is an unknown path (404 envelope)."""
    if not path.startswith("/api/v2/"):
        return None
    envelope["meta"].update(error_type="Not Found", error_message="Requested resource is not found")
    envelope["response"] = {}
    return 404


@pytest.mark.parametrize(
    ("query", "filters"), [("", {}), ("sunset", {"record_type": "image", "bases": [1]})]
)
def test_facets_on_a_server_without_v2_come_from_a_v1_search(emu, settings, query, filters):
    truth, _ = connect(emu, settings, unchanged)
    expected = truth.facets(query, **filters)
    assert len(expected) > 0
    client, app = connect(emu, settings, no_v2)
    assert client.facets(query, **filters).equals(expected)
    assert client.facets(query, **filters).equals(expected)
    asked = [path for path in app.paths if "/search/" in path]
    assert asked == ["/api/v2/search/", "/api/v1/search/", "/api/v1/search/"]  # 404 once


def test_a_404_from_v2_after_it_answered_is_not_taken_for_a_missing_version(emu, settings):
    answered: list[str] = []

    def later_404(path: str, envelope: dict[str, Any]) -> int | None:
        if path.startswith("/api/v2/"):
            answered.append(path)
            return no_v2(path, envelope) if len(answered) > 1 else None
        return None

    client, _ = connect(emu, settings, later_404)
    client.facets()
    with pytest.raises(mf.NotFoundError):
        client.facets()
