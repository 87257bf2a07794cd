"""The API routes other than OAuth: one method per route, returning the ``response`` member."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mediaframe.emulator import vocabulary as vocab
from mediaframe.emulator.accounts import Accounts, User
from mediaframe.emulator.catalogue import Catalogue
from mediaframe.emulator.columns import iso_dates
from mediaframe.emulator.descriptive import ROUTES as DESCRIPTIVE_ROUTES
from mediaframe.emulator.descriptive import DescriptiveRoutes
from mediaframe.emulator.envelope import ApiError
from mediaframe.emulator.feeds import Basket, Entry
from mediaframe.emulator.flavours import Rendering
from mediaframe.emulator.search import Search

ANY = None  # a route that accepts every method
# (path, allowed methods or ANY, handler name); each <name> in a path is an integer argument.
ROUTES = (
    ("/api/", ("GET",), "api_info"),
    ("/api/v1/search/", ANY, "search_v1"),
    ("/api/v2/search/", ANY, "search_v2"),
    ("/api/v1/me/", ("GET",), "me"),
    ("/api/v1/feeds/content/", ("GET",), "feeds_content"),
    ("/api/v1/feeds/list/", ("GET",), "feeds_list"),
    ("/api/v1/feeds/<feed_id>/content/", ("GET",), "feed_content"),
    ("/api/v1/feeds/entry/<entry_id>/", ("GET",), "feed_entry"),
    ("/api/v1/baskets/list/", ("GET",), "baskets_list"),
    ("/api/v1/records/<databox_id>/<record_id>/", ("GET",), "record"),
    ("/api/v1/stories/<databox_id>/<story_id>/", ("GET",), "story"),
    ("/api/v1/databoxes/list/", ("GET",), "databoxes_list"),
    *DESCRIPTIVE_ROUTES,
)


@dataclass
class Routes(DescriptiveRoutes):
    """The handlers, bound to the emulator's catalogue, accounts and search (the descriptive
    metadata routes and extended mode come from :class:`DescriptiveRoutes`)."""

    catalogue: Catalogue
    accounts: Accounts
    search: Search

    @property
    def render(self) -> Rendering:
        """Records, stories and the rest as the emulated server generation writes them."""
        return self.search.render

    def api_info(self, params: Mapping, user: User) -> dict:
        return {
            "name": "Media Asset Service (emulator)",
            "api_version": self.render.flavour.api_version,
            "versions": ["v1", "v2"],
            "routes": [f"{'/'.join(m) if m else 'ANY'} {p}" for p, m, _ in ROUTES],
            "oauth": {"authorize": "/api/oauthv2/authorize", "token": "/api/oauthv2/token"},
        }

    def search_v1(self, params: Mapping, user: User) -> dict:
        return self.search.answer(params, user, version=1)

    def search_v2(self, params: Mapping, user: User) -> dict:
        return self.search.answer(params, user, version=2)

    def me(self, params: Mapping, user: User) -> dict:
        collections = []
        for base_id, rights in sorted(user.bases.items()):
            _, databox_id, collection_id, name, _ = next(
                c for c in vocab.COLLECTIONS if c[0] == base_id
            )
            collections.append(
                {
                    "databox_id": databox_id,
                    "base_id": base_id,
                    "collection_id": collection_id,
                    "name": name,
                    "rights": list(rights),
                    "statuses": _statuses(),
                    "order_master": "manage" in rights,
                    "restrict_dwnld": "candwnldhd" not in rights,
                }
            )
        databoxes = [
            {"databox_id": d, "rights": list(r)} for d, r in sorted(user.databoxes.items())
        ]
        flavour = self.render.flavour
        shaped_collections, shaped_databoxes = flavour.me(collections, databoxes)
        return {
            "user": flavour.user(user.as_dict()),
            "collections": shaped_collections,
            "databoxes": shaped_databoxes,
        }

    # ---------------------------------------------------------------- feeds

    def feeds_content(self, params: Mapping, user: User) -> dict:
        entries = [e for e in self.catalogue.feeds.entries if self._readable(e.feed_id, user)]
        offset, per_page = _paging(params, default=5, largest=20)
        return {
            "total_entries": len(entries),
            "offset_start": offset,
            "per_page": per_page,
            "entries": [self._entry(e) for e in entries[offset : offset + per_page]],
        }

    def feeds_list(self, params: Mapping, user: User) -> dict:
        feeds = self.catalogue.feeds
        return {"feeds": [self._feed(f, user) for f in feeds.feeds if self._readable(f, user)]}

    def feed_content(self, params: Mapping, user: User, feed_id: str) -> dict:
        fid = int(feed_id)
        if fid not in self.catalogue.feeds.feeds:
            raise ApiError(404, f"Feed {fid} not found")
        if not self._readable(fid, user):
            return {}  # the servers answer an inaccessible feed with an empty response
        entries = [e for e in self.catalogue.feeds.entries if e.feed_id == fid]
        offset, per_page = _paging(params, default=5, largest=100)
        return {
            "feed": self._feed(fid, user),
            "offset_start": offset,
            "per_page": per_page,
            "entries": [self._entry(e) for e in entries[offset : offset + per_page]],
        }

    def feed_entry(self, params: Mapping, user: User, entry_id: str) -> dict:
        entry = next((e for e in self.catalogue.feeds.entries if e.id == int(entry_id)), None)
        if entry is None:
            raise ApiError(404, f"Feed entry {entry_id} not found")
        if not self._readable(entry.feed_id, user):
            raise ApiError(403, f"Feed entry {entry_id} belongs to a feed you cannot read")
        return {"entry": self._entry(entry)}

    def _readable(self, feed_id: int, user: User) -> bool:
        return self.catalogue.feeds.readable(feed_id, user.id, is_admin=user.is_admin)

    def _feed(self, feed_id: int, user: User) -> dict:
        _, title, subtitle, public, owner = self.catalogue.feeds.feeds[feed_id]
        entries = [e for e in self.catalogue.feeds.entries if e.feed_id == feed_id]
        stamps = [e.created for e in entries] or [0]
        created, updated = iso_dates(
            np.array([min(stamps), max(e.updated for e in entries) if entries else 0])
        )
        return self.render.flavour.feed({
            "id": feed_id,
            "title": title,
            "subtitle": subtitle,
            "total_entries": len(entries),
            "icon": False,
            "public": public,
            "readonly": owner != user.id,
            "deletable": owner == user.id,
            "created_on": created,
            "updated_on": updated,
        })  # fmt: skip

    def _entry(self, entry: Entry) -> dict:
        rows = [r for _, r in entry.items if self.catalogue.records.alive[r]]
        records = iter(self.catalogue.record_dicts(rows))  # shaped with the entry below
        items = [
            {"item_id": item_id, "record": next(records)}
            for item_id, row in entry.items
            if self.catalogue.records.alive[row]
        ]
        created, updated = iso_dates(np.array([entry.created, entry.updated]))
        return self.render.flavour.entry({
            "id": entry.id,
            "author_email": entry.author_email,
            "author_name": entry.author_name,
            "created_on": created,
            "updated_on": updated,
            "title": entry.title,
            "subtitle": entry.subtitle,
            "items": items,
            "feed_id": entry.feed_id,
            "feed_title": self.catalogue.feeds.feeds[entry.feed_id][1],
            "feed_url": f"/feeds/{entry.feed_id}/content/",
            "url": f"/feeds/entry/{entry.id}/",
        })  # fmt: skip

    # ------------------------------------------------------- other resources

    def baskets_list(self, params: Mapping, user: User) -> dict:
        mine = [b for b in self.catalogue.feeds.baskets if b.owner == user.id]
        return {"baskets": [self._basket(b) for b in mine]}

    def _basket(self, basket: Basket) -> dict:
        created, updated = iso_dates(np.array([basket.created, basket.updated]))
        shape = self.render.flavour.user
        users = self.accounts.users_by_id
        pusher = shape(users[basket.pusher].as_dict()) if basket.pusher else None
        return {
            "basket_id": basket.id,
            "owner": shape(users[basket.owner].as_dict()),
            "created_on": created,
            "description": basket.description,
            "name": basket.name,
            "pusher_usr_id": basket.pusher,
            "pusher": pusher,
            "updated_on": updated,
            "unread": basket.unread,
            "validation_basket": basket.validation,
        }

    def record(self, params: Mapping, user: User, databox_id: str, record_id: str) -> dict:
        row = self._visible_row(user, int(databox_id), int(record_id), kind="records")
        return {"record": self.render.record(row)}

    def story(self, params: Mapping, user: User, databox_id: str, story_id: str) -> dict:
        row = self._visible_row(user, int(databox_id), int(story_id), kind="stories")
        return {"story": self.render.story(row)}

    def _visible_row(self, user: User, databox_id: int, ident: int, *, kind: str) -> int:
        row = self.catalogue.row_of(databox_id, ident, kind=kind)
        noun = "Record" if kind == "records" else "Story"
        if row is None:
            raise ApiError(404, f"{noun} {ident} on database {databox_id} not found")
        table = self.catalogue.records if kind == "records" else self.catalogue.stories
        if int(table.base_id[row]) not in user.visible_bases:
            raise ApiError(401, "You are not authorized")
        return row

    def databoxes_list(self, params: Mapping, user: User) -> dict:
        mine = {c[1] for c in vocab.COLLECTIONS if c[0] in user.bases}
        databoxes = {}
        for databox_id, name in vocab.DATABOXES:
            if databox_id in mine:
                labels = dict.fromkeys(("de", "en", "fr", "nl"), name)
                databoxes[str(databox_id)] = {
                    "databox_id": databox_id,
                    "name": name,
                    "viewname": name,
                    "version": "4.1",
                    "labels": labels,
                }
        return {"databoxes": databoxes}


def _statuses() -> list[dict[str, Any]]:
    return [
        {
            "position": position,
            "labels": {"on": dict(on), "off": dict(off)},
            "restricted": restricted,
            "restriction_flag": restricted,
        }
        for position, on, off, restricted in vocab.STATUS_BITS
    ]


def _paging(params: Mapping, *, default: int, largest: int) -> tuple[int, int]:
    """Feed paging: ``per_page`` outside 1..largest becomes ``largest``, as on the servers."""

    def number(name: str, fallback: int) -> int:
        raw = (params.get(name) or [""])[-1].strip()
        try:
            return int(raw)
        except ValueError:
            return fallback

    offset = number("offset_start", 0)
    if offset < 0:
        raise ApiError(400, f"offset_start must be zero or more, got {offset}")
    per_page = number("per_page", default)
    return offset, per_page if 1 <= per_page <= largest else largest
