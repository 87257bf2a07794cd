"""Fixed vocabulary of the synthetic catalogue: databoxes, collections, statuses and words."""

from __future__ import annotations

# (databox_id, name)
DATABOXES = (
    (1, "Photo library"),
    (2, "Broadcast archive"),
    (3, "Corporate documents"),
)

# (base_id, databox_id, collection_id, name, weight of the catalogue).  collection_id repeats
# across databoxes on purpose: only base_id is instance-wide.
COLLECTIONS = (
    (1, 1, 1, "Press photos", 0.24),
    (2, 1, 2, "Nature", 0.15),
    (3, 1, 3, "Events", 0.12),
    (4, 2, 1, "Video rushes", 0.12),
    (5, 2, 2, "Sound archive", 0.08),
    (6, 3, 1, "Brochures", 0.11),
    (7, 3, 2, "Legal", 0.10),
    (8, 3, 3, "Board minutes", 0.08),
)

MEDIA_TYPES = ("image", "video", "audio", "document", "flash", "unknown")

# Share of each media type (order of MEDIA_TYPES) inside each collection (order of COLLECTIONS).
MEDIA_WEIGHTS = (
    (0.90, 0.05, 0.00, 0.04, 0.00, 0.01),
    (0.85, 0.10, 0.00, 0.00, 0.00, 0.05),
    (0.60, 0.20, 0.10, 0.00, 0.05, 0.05),
    (0.10, 0.70, 0.10, 0.00, 0.05, 0.05),
    (0.00, 0.05, 0.85, 0.05, 0.00, 0.05),
    (0.30, 0.00, 0.00, 0.60, 0.10, 0.00),
    (0.00, 0.00, 0.00, 0.90, 0.00, 0.10),
    (0.00, 0.00, 0.20, 0.80, 0.00, 0.00),
)

# (mime type, file extension) candidates per media type.
MIME_TYPES = {
    "image": (
        ("image/jpeg", "jpg"),
        ("image/png", "png"),
        ("image/tiff", "tif"),
        ("image/gif", "gif"),
    ),
    "video": (("video/mp4", "mp4"), ("video/quicktime", "mov")),
    "audio": (("audio/mpeg", "mp3"), ("audio/x-wav", "wav")),
    "document": (
        ("application/pdf", "pdf"),
        ("application/msword", "doc"),
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"),
    ),
    "flash": (("application/x-shockwave-flash", "swf"),),
    "unknown": (("application/octet-stream", "bin"),),
}

FILE_PREFIX = {
    "image": "IMG",
    "video": "MVI",
    "audio": "REC",
    "document": "DOC",
    "flash": "ANIM",
    "unknown": "FILE",
}

# Status bits 4 to 7, labels per language.  (position, on labels, off labels, restricted)
STATUS_BITS = (
    (
        4,
        {"de": "Veröffentlicht", "en": "Published", "fr": "Publié", "nl": "Gepubliceerd"},
        {
            "de": "Unveröffentlicht",
            "en": "Unpublished",
            "fr": "Non publié",
            "nl": "Niet gepubliceerd",
        },
        False,
    ),
    (
        5,
        {"de": "Freigegeben", "en": "Approved", "fr": "Validé", "nl": "Goedgekeurd"},
        {"de": "Ausstehend", "en": "Pending", "fr": "En attente", "nl": "In afwachting"},
        False,
    ),
    (
        6,
        {"de": "Gesperrt", "en": "Embargoed", "fr": "Sous embargo", "nl": "Onder embargo"},
        {"de": "Frei", "en": "Free", "fr": "Libre", "nl": "Vrij"},
        True,
    ),
    (
        7,
        {"de": "Archiviert", "en": "Archived", "fr": "Archivé", "nl": "Gearchiveerd"},
        {"de": "Aktiv", "en": "Active", "fr": "Actif", "nl": "Actief"},
        False,
    ),
)
# Probability that each status bit is on.
STATUS_ODDS = {4: 0.7, 5: 0.5, 6: 0.1, 7: 0.2}

ADJECTIVES = (
    "Golden",
    "Quiet",
    "Bright",
    "Misty",
    "Ancient",
    "Modern",
    "Frozen",
    "Crowded",
    "Empty",
    "Colourful",
    "Dark",
    "Sunny",
    "Rainy",
    "Wild",
    "Urban",
    "Rural",
    "Early",
    "Late",
    "Hidden",
    "Famous",
    "Little",
    "Grand",
    "Old",
    "New",
)
NOUNS = (
    "sunset",
    "harbour",
    "market",
    "cathedral",
    "forest",
    "river",
    "bridge",
    "festival",
    "portrait",
    "skyline",
    "garden",
    "mountain",
    "beach",
    "street",
    "train",
    "café",
    "museum",
    "concert",
    "stadium",
    "village",
    "lighthouse",
    "meadow",
    "factory",
    "parade",
    "lake",
    "castle",
    "vineyard",
    "desert",
    "island",
    "square",
)
PLACES = (
    ("Zürich", "Switzerland"),
    ("Genève", "Switzerland"),
    ("Paris", "France"),
    ("Lyon", "France"),
    ("Marseille", "France"),
    ("Berlin", "Germany"),
    ("München", "Germany"),
    ("Köln", "Germany"),
    ("Amsterdam", "Netherlands"),
    ("Utrecht", "Netherlands"),
    ("Bruxelles", "Belgium"),
    ("Antwerpen", "Belgium"),
    ("London", "United Kingdom"),
    ("Edinburgh", "United Kingdom"),
    ("Madrid", "Spain"),
    ("Sevilla", "Spain"),
    ("Roma", "Italy"),
    ("Milano", "Italy"),
    ("Lisboa", "Portugal"),
    ("Kraków", "Poland"),
)
KEYWORDS = (
    "sunset",
    "landscape",
    "city",
    "people",
    "architecture",
    "nature",
    "water",
    "night",
    "winter",
    "summer",
    "été",
    "automne",
    "travel",
    "food",
    "sport",
    "music",
    "culture",
    "history",
    "press",
    "portrait",
    "aerial",
    "black and white",
    "colour",
    "heritage",
    "industry",
    "transport",
    "event",
    "crowd",
    "animals",
    "flowers",
    "sky",
    "sea",
    "mountains",
    "festival",
    "interview",
    "report",
    "contract",
    "minutes",
    "brochure",
    "logo",
)
CREATORS = (
    "Anna Schmidt",
    "José García",
    "Zoë Müller",
    "Pieter de Vries",
    "Claire Dubois",
    "Marco Rossi",
    "Ingrid Larsen",
    "Tomás Novák",
    "Amélie Laurent",
    "Olivia Brown",
    "Lukas Weber",
    "Sofia Costa",
)
PROJECTS = (
    "spring campaign",
    "annual report",
    "heritage",
    "city guide",
    "press kit",
    "documentary",
    "exhibition",
    "newsletter",
    "website",
    "archive digitisation",
)
STORY_EVENTS = (
    "Spring campaign",
    "Summer festival",
    "Press conference",
    "Annual report",
    "Product launch",
    "Board meeting",
    "Heritage days",
    "Trade fair",
    "Photo contest",
    "Charity gala",
    "Documentary shoot",
    "City marathon",
    "Exhibition opening",
    "Staff portraits",
    "Site visit",
)

CAMERAS = (
    "Canon EOS 5D Mark IV",
    "Canon EOS R5",
    "Nikon D850",
    "Nikon Z6",
    "Sony ILCE-7M3",
    "Fujifilm X-T4",
    "Leica M10",
    "Olympus E-M1",
    "Apple iPhone 12",
    "Panasonic DC-GH5",
)
# Raw technical strings exactly as an extractor writes them; typing happens per value later.
APERTURES = ("1.4", "1.8", "2", "2.8", "4", "5.6", "8", "11", "16", "22")
SHUTTER_SPEEDS = ("0.00025", "0.001", "0.004", "0.008", "0.0167", "0.033", "0.5", "1", "2", "1/250")
FOCAL_LENGTHS = ("14", "24", "35", "50", "85", "105", "200", "4.2", "18.5", "70")
LIGHT_VALUES = ("-3", "-1.5", "0", "5", "8", "10.3", "12", "13.7", "15")
COLOR_SPACES = ("RGB", "sRGB", "AdobeRGB", "CMYK", "Grayscale")
FRAME_RATES = ("24", "25", "29.97", "30", "50", "59.94")
