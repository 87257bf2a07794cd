"""Field structures of the databoxes: which caption fields each holds, and who may see them.

Every databox has a dozen fields: eleven shared ones (some multi-valued, some required, one
date, one number, one business field) and one of its own. ``meta_structure_id`` is the field's
place in its databox's structure, from 1, as on the servers (ids are local to a databox).

Business fields are shown only to users holding ``canmodifrecord`` on the record's collection
(on any collection of the databox, for the structure routes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mediaframe.emulator import vocabulary as vocab

#: Multi-values are joined with this in captions, as the servers write them.
SEPARATOR = " ; "
#: The right that lets a user see business fields.
BUSINESS_RIGHT = "canmodifrecord"


@dataclass(frozen=True)
class Field:
    """One caption field of a databox."""

    id: int
    name: str
    type: str  # string, date or number
    multivalue: bool
    required: bool
    business: bool
    source: str
    labels: dict[str, str]

    def me_dict(self, databox_id: int) -> dict[str, Any]:
        """The field as ``/me/structures/`` lists it (``type`` and ``required`` included)."""
        return {
            "name": self.name,
            "id": self.id,
            "databox_id": databox_id,
            "multivalue": self.multivalue,
            "indexable": True,
            "readonly": False,
            "business": self.business,
            "source": self.source,
            "labels": dict(self.labels),
            "type": self.type,
            "required": self.required,
        }

    def admin_dict(self) -> dict[str, Any]:
        """The field as the administrators' ``/databoxes/<id>/metadatas/`` route gives it."""
        namespace, _, tagname = self.source.partition(":")
        return {
            "id": self.id,
            "namespace": namespace or "Phraseanet",
            "source": self.source,
            "tagname": tagname or self.name,
            "name": self.name,
            "labels": dict(self.labels),
            "separator": ";" if self.multivalue else "",
            "thesaurus_branch": "",
            "type": self.type,
            "indexable": True,
            "multivalue": self.multivalue,
            "readonly": False,
            "required": self.required,
            # the GUI flags of the administration pages
            "report": True,
            "business": self.business,
            "aggregable": 10 if self.name in ("Keywords", "Creator", "Country") else 0,
            "dces_element": None,
        }


def _labels(en: str, fr: str, de: str, nl: str) -> dict[str, str]:
    return {"fr": fr, "en": en, "de": de, "nl": nl}


# (name, type, multivalue, required, business, source, labels): the fields every databox has.
_SHARED = (
    ("Title", "string", False, True, False, "IPTC:ObjectName",
     _labels("Title", "Titre", "Titel", "Titel")),
    ("Keywords", "string", True, False, False, "IPTC:Keywords",
     _labels("Keywords", "Mots-clés", "Stichwörter", "Trefwoorden")),
    ("Description", "string", False, False, False, "IPTC:Caption-Abstract",
     _labels("Description", "Description", "Beschreibung", "Beschrijving")),
    ("Creator", "string", False, True, False, "IPTC:By-line",
     _labels("Creator", "Auteur", "Urheber", "Maker")),
    ("City", "string", False, False, False, "IPTC:City",
     _labels("City", "Ville", "Stadt", "Stad")),
    ("Country", "string", False, False, False, "IPTC:Country-PrimaryLocationName",
     _labels("Country", "Pays", "Land", "Land")),
    ("Date", "date", False, False, False, "IPTC:DateCreated",
     _labels("Date", "Date", "Datum", "Datum")),
    ("Copyright", "string", False, True, False, "IPTC:CopyrightNotice",
     _labels("Copyright", "Droits", "Urheberrecht", "Auteursrecht")),
    ("Credit", "string", False, False, False, "IPTC:Credit",
     _labels("Credit", "Crédit", "Bildnachweis", "Credit")),
    ("Rating", "number", False, False, False, "XMP-xmp:Rating",
     _labels("Rating", "Note", "Bewertung", "Waardering")),
    ("InternalNote", "string", False, False, True, "",
     _labels("Internal note", "Note interne", "Interne Notiz", "Interne notitie")),
)  # fmt: skip
# The twelfth field, one per databox.
_OWN = {
    1: ("People", "string", True, False, False, "XMP-iptcExt:PersonInImage",
        _labels("People", "Personnes", "Personen", "Personen")),
    2: ("Programme", "string", False, False, False, "XMP-xmpDM:album",
        _labels("Programme", "Émission", "Sendung", "Programma")),
    3: ("Department", "string", True, False, False, "XMP-photoshop:Category",
        _labels("Department", "Service", "Abteilung", "Afdeling")),
}  # fmt: skip


def _structure(databox_id: int) -> tuple[Field, ...]:
    rows = (*_SHARED, _OWN[databox_id])
    return tuple(Field(position, *row) for position, row in enumerate(rows, start=1))


#: Every databox's fields, by databox id.
STRUCTURES: dict[int, tuple[Field, ...]] = {d: _structure(d) for d, _ in vocab.DATABOXES}
#: Every field name used in some databox (search understands them as ``Field:value``).
FIELD_NAMES = tuple(dict.fromkeys(f.name for fields in STRUCTURES.values() for f in fields))


def field(databox_id: int, name: str) -> Field:
    """The field ``name`` of ``databox_id``."""
    return next(f for f in STRUCTURES[databox_id] if f.name == name)


def databox_of_base(base_id: int) -> int:
    """The databox a base id (collection) belongs to."""
    return next(c[1] for c in vocab.COLLECTIONS if c[0] == base_id)


def business_bases(rights: dict[int, tuple[str, ...]]) -> frozenset[int]:
    """Base ids whose business fields a user with these collection rights may see."""
    return frozenset(
        base for base, held in rights.items() if "actif" in held and BUSINESS_RIGHT in held
    )


def me_structures(
    rights: dict[int, tuple[str, ...]], *, with_business: frozenset[int]
) -> dict[str, Any]:
    """The ``/me/structures/`` answer for a user with these collection rights."""
    databoxes = sorted({databox_of_base(b) for b, held in rights.items() if "actif" in held})
    business = {databox_of_base(b) for b in with_business}
    meta_fields = [
        f.me_dict(d) for d in databoxes for f in STRUCTURES[d] if not f.business or d in business
    ]
    aggregable = [
        {"name": name, "labels": dict(field(databoxes[0], name).labels)}
        for name in ("Keywords", "Creator", "Country")
        if databoxes
    ]
    technical = [
        {"name": name, "type": kind}
        for name, kind in (
            ("Aperture", "number"), ("CameraModel", "string"), ("FileSize", "number"),
            ("Height", "number"), ("ISO", "number"), ("MimeType", "string"), ("Width", "number"),
        )
    ]  # fmt: skip
    return {
        "meta_fields": meta_fields,
        "aggregable_fields": aggregable,
        "technical_fields": technical,
    }


def document_metadatas(databox_id: int) -> dict[str, Any]:
    """The administrators' view of a databox's structure: an object keyed by field id."""
    return {str(f.id): f.admin_dict() for f in STRUCTURES[databox_id]}
