"""Descriptive metadata routes, and extended mode: captions, status bits and subdefs in records.

A request whose ``Accept`` is ``application/vnd.phraseanet.record-extended+json`` (or its
``+yaml`` / ``+jsonp`` variants) is answered as usual, in the ordinary representation, and every
record of the answer gains four members: ``caption``, ``metadata``, ``status`` and ``subdefs``.
That step runs on the finished answer, after the route shaped its records, so it applies alike
to search results (and the records inside stories), the record route, feed items and basket
elements.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from mediaframe.emulator.accounts import User
from mediaframe.emulator.baskets import BasketContents
from mediaframe.emulator.captions import Captions
from mediaframe.emulator.columns import iso_dates
from mediaframe.emulator.envelope import ApiError
from mediaframe.emulator.structures import (
    STRUCTURES,
    business_bases,
    document_metadatas,
    me_structures,
)

if TYPE_CHECKING:
    from mediaframe.emulator.accounts import Accounts
    from mediaframe.emulator.catalogue import Catalogue
    from mediaframe.emulator.feeds import Basket
    from mediaframe.emulator.flavours import Rendering
    from mediaframe.emulator.search import Search

#: The maker's media type asking for extended records; ``+json``, ``+yaml`` or ``+jsonp``.
EXTENDED_TYPE = "application/vnd.phraseanet.record-extended"
_ORDINARY = {"+json": "application/json", "+yaml": "application/yaml", "+jsonp": "text/javascript"}

# (path, methods, handler name), as in routes.ROUTES.
ROUTES = (
    ("/api/v1/records/<databox_id>/<record_id>/caption/", ("GET",), "record_caption"),
    ("/api/v1/records/<databox_id>/<record_id>/metadatas/", ("GET",), "record_metadatas"),
    ("/api/v1/records/<databox_id>/<record_id>/status/", ("GET",), "record_status"),
    ("/api/v1/records/<databox_id>/<record_id>/related/", ("GET",), "record_related"),
    ("/api/v1/me/structures/", ("GET",), "me_structures"),
    ("/api/v1/databoxes/<databox_id>/metadatas/", ("GET",), "databox_metadatas"),
    ("/api/v1/baskets/<basket_id>/content/", ("GET",), "basket_content"),
)


def extended_accept(accept: str) -> tuple[bool, str]:
    """Whether ``accept`` asks for extended records, and the header with the vendor types
    replaced by the ordinary ones (for the usual content negotiation)."""
    parts, extended = [], False
    for part in accept.split(","):
        media, sep, params = part.strip().partition(";")
        name = media.strip().lower()
        if name.startswith(EXTENDED_TYPE) and name[len(EXTENDED_TYPE) :] in _ORDINARY:
            media, extended = _ORDINARY[name[len(EXTENDED_TYPE) :]], True
        parts.append(media + sep + params)
    return extended, ",".join(parts) if extended else accept


class DescriptiveRoutes:
    """The routes of descriptive metadata, mixed into the emulator's ``Routes``."""

    catalogue: Catalogue
    accounts: Accounts
    search: Search

    # provided by Routes
    @property
    def render(self) -> Rendering:
        raise NotImplementedError

    def _visible_row(self, user: User, databox_id: int, ident: int, *, kind: str) -> int:
        raise NotImplementedError

    def _basket(self, basket: Basket) -> dict:
        raise NotImplementedError

    @property
    def captions(self) -> Captions:
        return self.search.captions  # one set of captions, which search reads too

    @functools.cached_property
    def basket_contents(self) -> BasketContents:
        users = self.accounts.users_by_id
        return BasketContents(self.catalogue, lambda user_id: users[user_id].visible_bases)

    # ------------------------------------------------------------ extended mode

    def extend(self, response: Any, user: User) -> Any:
        """Add ``caption``, ``metadata``, ``status`` and ``subdefs`` to every record of an answer,
        in place (business fields only where the user may see them)."""
        found: list[dict[str, Any]] = []
        _records_in(response, found, None)
        pairs = []
        for record in found:
            row = self.catalogue.row_of(int(record["databox_id"]), int(record["record_id"]))
            if row is not None:
                pairs.append((row, record))
        if pairs:
            rows, records = zip(*pairs, strict=True)
            members = self.captions.extended(rows, records, business_bases(user.bases))
            for record, extra in zip(records, members, strict=True):
                record.update(extra)
        return response

    # ------------------------------------------------------------------ routes

    def record_caption(self, params: Mapping, user: User, databox_id: str, record_id: str) -> dict:
        row = self._visible_row(user, int(databox_id), int(record_id), kind="records")
        return {"caption_metadatas": self.captions.caption(row, business=False)}

    def record_metadatas(
        self, params: Mapping, user: User, databox_id: str, record_id: str
    ) -> dict:
        row = self._visible_row(user, int(databox_id), int(record_id), kind="records")
        business = int(self.catalogue.records.base_id[row]) in business_bases(user.bases)
        return {"record_metadatas": self.captions.metadata(row, business=business)}

    def record_status(self, params: Mapping, user: User, databox_id: str, record_id: str) -> dict:
        row = self._visible_row(user, int(databox_id), int(record_id), kind="records")
        return {"status": self.captions.status(row)}

    def record_related(self, params: Mapping, user: User, databox_id: str, record_id: str) -> dict:
        row = self._visible_row(user, int(databox_id), int(record_id), kind="records")
        contents = self.basket_contents
        baskets = [
            self._basket(b)
            for b in self.catalogue.feeds.baskets
            if contents.can_read(b, user.id)
            and any(e.row == row for e in contents.elements.get(b.id, ()))
        ]
        stories = self.catalogue.stories
        offsets, members = stories.members
        holders = np.unique(np.searchsorted(offsets, np.flatnonzero(members == row), "right") - 1)
        visible = [
            int(s)
            for s in holders.tolist()
            if stories.alive[s] and int(stories.base_id[s]) in user.visible_bases
        ]
        return {"baskets": baskets, "stories": [self.render.story(s) for s in visible]}

    def me_structures(self, params: Mapping, user: User) -> dict:
        answer = me_structures(user.bases, with_business=business_bases(user.bases))
        if self._legacy:  # older servers say neither a field's type nor whether it is required
            for entry in answer["meta_fields"]:
                del entry["type"], entry["required"]
        return answer

    def databox_metadatas(self, params: Mapping, user: User, databox_id: str) -> dict:
        databox = int(databox_id)
        if databox not in STRUCTURES:
            raise ApiError(404, f"Databox {databox} not found")
        if "bas_modify_struct" not in user.databoxes.get(databox, ()):
            raise ApiError(401, "You are not authorized")
        fields = document_metadatas(databox)
        # keyed by field id on current servers, a list on old ones
        return {"document_metadatas": list(fields.values()) if self._legacy else fields}

    @property
    def _legacy(self) -> bool:
        return self.render.flavour.name == "legacy"

    def basket_content(self, params: Mapping, user: User, basket_id: str) -> dict:
        basket = next((b for b in self.catalogue.feeds.baskets if b.id == int(basket_id)), None)
        if basket is None:
            raise ApiError(404, f"Basket {basket_id} not found")
        contents = self.basket_contents
        if not contents.can_read(basket, user.id):
            raise ApiError(403, f"Basket {basket_id} is not yours")
        alive = self.catalogue.records.alive
        elements = [e for e in contents.elements[basket.id] if alive[e.row]]
        records = self.render.records([e.row for e in elements])
        users = self.accounts.users_by_id
        out = []
        for element, record in zip(elements, records, strict=True):
            item: dict[str, Any] = {
                "basket_element_id": element.id,
                "order": element.order,
                "record": record,
                "validation_item": basket.validation,
            }
            if basket.validation:
                mine = next((c for c in element.choices if c.user_id == user.id), None)
                stamps = iso_dates(np.array([c.updated for c in element.choices], dtype=np.int64))
                item["validation_choices"] = [
                    {
                        "validation_user": users[c.user_id].as_dict(),
                        "agreement": c.agreement,
                        "updated_on": stamp,
                        "note": c.note,
                    }
                    for c, stamp in zip(element.choices, stamps, strict=True)
                ]
                item["agreement"] = None if mine is None else mine.agreement
                item["note"] = "" if mine is None else mine.note
            out.append(item)
        return {"basket": self._basket(basket), "basket_elements": out}


def _records_in(node: Any, found: list[dict[str, Any]], under: str | None) -> None:
    """Collect the records of an answer: objects with a ``record_id`` under ``record(s)``."""
    if isinstance(node, list):
        for value in node:
            _records_in(value, found, under)
    elif isinstance(node, dict):
        if under in ("record", "records") and "record_id" in node and "databox_id" in node:
            found.append(node)
            return
        for key, value in node.items():
            if isinstance(value, dict | list):
                _records_in(value, found, key)
