"""How deep an answer may nest (:data:`DEEPEST`, one limit for every answer and representation),
and how deep a piece of JSON nests, told at C speed before it is parsed.

pyarrow's JSON reader infers an unknown member by recursion: a member nested some ten thousand
levels deep (a 40 kB answer) overflows the C stack and kills the process, which no ``except``
catches. The records the reader reads natively nest a few levels; deeper pages take the decoded
route, whose parser (orjson) refuses beyond 1,024 levels with an error. What orjson lets through
must still be written and read again: the cache keeps nested members as JSON text through
Python's ``json``, and the exports, pandas and PyYAML's composer recurse once to three times per
level within the interpreter's recursion limit (1,000 frames): a member nested 981 levels made
every cache write of its search die with a bare ``RecursionError``. So an answer nesting deeper
than :data:`DEEPEST` is refused where it is read, with a ``ResponseFormatError``.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["DEEPEST", "DEEP_ADVICE", "nesting", "too_deep"]

#: The deepest nesting of arrays and objects an answer may have, envelope included (records sit
#: 4 levels in, and nest a handful more). PyYAML's composer, the hungriest, takes three frames
#: a level and overflows near 330 levels from a shallow stack: 128 leaves every reader and
#: writer room under whatever stack calls it, and is far beyond any answer the service sends.
DEEPEST = 128

_KEPT = b'"[]{}'
_DELETED = bytes(sorted(set(range(256)) - set(_KEPT)))
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
#: A string of the skeleton, whose content is only brackets.
_STRING = re.compile(rb'"[^"]*"')


def nesting(data: bytes) -> int:
    """The deepest nesting of arrays and objects in ``data`` (JSON), brackets in strings aside.

    Escaped backslashes and quotes go first (escapes pair from the left, as JSON reads them),
    then everything but quotes and brackets (one ``translate``), then empty strings (``""``:
    taking a closing and the next opening quote merges two strings, which changes nothing), then
    the few strings left, which hold brackets; what remains is the structure.
    """
    if b"\\\\" in data or b'\\"' in data:  # rare: most answers escape no quote or backslash
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    skeleton = data.translate(None, _DELETED).replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = _STRING.sub(b"", skeleton)
    steps = np.frombuffer(skeleton.translate(_STEPS), dtype=np.int8)
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def too_deep(depth: int | None = None) -> str:
    """Why an answer nesting ``depth`` levels (more than :data:`DEEPEST`; ``None``: not known,
    as where a parser stops at the limit) is refused, said alike wherever an answer is read, in
    whatever representation; :data:`DEEP_ADVICE` says what to do."""
    nests = (
        f"nests {depth:,} levels deep, deeper than" if depth is not None else "nests deeper than"
    )
    return (
        f"{nests} the {DEEPEST} levels mediaframe reads (the service's answers nest a handful; "
        "deeper values could be neither cached nor exported)"
    )


DEEP_ADVICE = (
    "Leave the record holding it out of the search (narrow the query), and tell the service's "
    "operator"
)
