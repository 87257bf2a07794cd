"""How deep a piece of JSON nests, told at C speed before pyarrow parses it.

pyarrow's JSON reader infers an unknown member by recursion: a member nested some ten thousand
levels deep (a 40 kB answer) overflows the C stack and kills the process, which no ``except``
catches. The records the reader reads natively nest a few levels; deeper pages take the decoded
route, whose parser (orjson) refuses beyond 1,024 levels with an error.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["nesting"]

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
