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
            **self._flags("multivalue", "indexable", "readonly", "business"),
            "source": self.source,
            "labels": dict(self.labels),
            **self._flags("type", "required"),
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
            **self._flags("type", "indexable", "multivalue", "readonly", "required"),
            # the GUI flags of the administration pages
            "report": True,
            "business": self.business,
            "aggregable": 10 if self.name in ("Keywords", "Creator", "Country") else 0,
            "dces_element": None,
        }

    def _flags(self, *names: str) -> dict[str, Any]:
        """``names`` as the routes write them, in that order (every field is indexable and
        editable here)."""
        fixed = {"indexable": True, "readonly": False}
        return {name: fixed[name] if name in fixed else getattr(self, name) for name in names}


# The fields every databox has, then each databox's own twelfth: name, type, flags (m:
# multi-valued, r: required, b: business), source tag, and labels in English, French, German
# and Dutch.
_SHARED = (
    ("Title", "string", "r", "IPTC:ObjectName", "Title|Titre|Titel|Titel"),
    ("Keywords", "string", "m", "IPTC:Keywords", "Keywords|Mots-clés|Stichwörter|Trefwoorden"),
    ("Description", "string", "", "IPTC:Caption-Abstract",
     "Description|Description|Beschreibung|Beschrijving"),
    ("Creator", "string", "r", "IPTC:By-line", "Creator|Auteur|Urheber|Maker"),
    ("City", "string", "", "IPTC:City", "City|Ville|Stadt|Stad"),
    ("Country", "string", "", "IPTC:Country-PrimaryLocationName", "Country|Pays|Land|Land"),
    ("Date", "date", "", "IPTC:DateCreated", "Date|Date|Datum|Datum"),
    ("Copyright", "string", "r", "IPTC:CopyrightNotice",
     "Copyright|Droits|Urheberrecht|Auteursrecht"),
    ("Credit", "string", "", "IPTC:Credit", "Credit|Crédit|Bildnachweis|Credit"),
    ("Rating", "number", "", "XMP-xmp:Rating", "Rating|Note|Bewertung|Waardering"),
    ("InternalNote", "string", "b", "",
     "Internal note|Note interne|Interne Notiz|Interne notitie"),
)  # fmt: skip
_OWN = {
    1: ("People", "string", "m", "XMP-iptcExt:PersonInImage", "People|Personnes|Personen|Personen"),
    2: ("Programme", "string", "", "XMP-xmpDM:album", "Programme|Émission|Sendung|Programma"),
    3: ("Department", "string", "m", "XMP-photoshop:Category",
        "Department|Service|Abteilung|Afdeling"),
}  # fmt: skip


def _field(position: int, name: str, kind: str, flags: str, source: str, labels: str) -> Field:
    en, fr, de, nl = labels.split("|")
    return Field(
        position, name, kind, "m" in flags, "r" in flags, "b" in flags, source,
        {"fr": fr, "en": en, "de": de, "nl": nl},
    )  # fmt: skip


def _structure(databox_id: int) -> tuple[Field, ...]:
    rows = (*_SHARED, _OWN[databox_id])
    return tuple(_field(position, *row) for position, row in enumerate(rows, start=1))


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
