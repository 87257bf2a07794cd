"""Which technical names hold a number written as a float that may be whole (``1.0``,
``1e3``): pyarrow reads both ``1`` and ``1.0`` as the same double, and records() keeps a name
whose JSON wrote a float a ``Float64`` column, so the native reader looks for such numbers in
the bytes themselves (rare: a page is scanned only if a name's type depends on it)."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.compute as pc

from mediaframe.frames.fromarrow import Unreadable

__all__ = ["whole_float_names"]


#: A number written as a float (a point or an exponent) whose value may be whole: zeros after
#: the point, an exponent, or 16 digits and more around a point (beyond a double's precision,
#: so a fraction may round away). Integers and text values never match; any whitespace around
#: the colon does. Possessive quantifiers: a number is scanned once, without backtracking.
_WHOLE_FLOAT_NUMBER = (
    rb"\s*+:\s*+-?+(?:(?=[0-9.]{17})[0-9]*+\.|[0-9]++(?:[eE]|\.(?:[0-9]*+[eE]|0++\s*+[,}])))"
)
_WHOLE_FLOAT = re.compile(rb'"value"' + _WHOLE_FLOAT_NUMBER)


def _key_pattern(key: str) -> bytes:
    """``"key"`` with any of its letters written as a ``\\uXXXX`` escape (hex in either case)."""
    letters = []
    for letter in key:
        code = "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{ord(letter):04x}")
        letters.append(f"(?:{letter}|\\\\u{code})")
    return ('"' + "".join(letters) + '"').encode()


#: The same after a ``value`` key with letters written as escapes (``"v\u0061lue"``), which
#: pyarrow reads as ``value``: looked for only where a letter's escape occurs (it is slower).
_WHOLE_FLOAT_ESCAPED = re.compile(_key_pattern("value") + _WHOLE_FLOAT_NUMBER)
#: An ASCII letter written as an escape (``\\u0060`` to ``\\u007f``), for RE2.
_LETTER_ESCAPE = r"\\u00[67]"


def _holds_letter_escape(data: bytes, start: int, stop: int) -> bool:
    """Whether ``data[start:stop]`` writes an ASCII letter as an escape, searched by pyarrow's
    RE2 in the bytes as they are: three times faster than ``re`` here (``\\`` is frequent)."""
    view = pa.py_buffer(memoryview(data)[start:stop])
    offsets = pa.array([0, len(view)], pa.int64()).buffers()[1]
    whole = pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, view])
    return bool(pc.match_substring_regex(whole, _LETTER_ESCAPE)[0].as_py())


def whole_float_names(data: bytes, start: int = 0, stop: int | None = None) -> set[str]:
    """Technical names holding a number written as a float that may be whole (rare), in
    ``data[start:stop]``."""
    stop = len(data) if stop is None else stop
    escaped = _holds_letter_escape(data, start, stop)
    found = (_WHOLE_FLOAT_ESCAPED if escaped else _WHOLE_FLOAT).finditer(data, start, stop)
    return {_entry_name(data, match.start()) for match in found}


def _entry_name(data: bytes, at: int) -> str:
    """The name of the technical entry whose ``value`` is at ``at``: its object decoded alone.

    An entry is a flat object, so its ``{`` is the last before ``at`` and its ``}`` the first
    after, unless its name holds a brace: then the bytes between do not decode as an entry.
    """
    window = data[data.rfind(b"{", 0, at) : data.find(b"}", at) + 1]
    try:
        entry = json.loads(window)
    except ValueError:
        entry = None
    if (
        not isinstance(entry, dict)
        or set(entry) != {"name", "value"}
        or not isinstance(entry["name"], str)
    ):
        raise Unreadable("technical values", "a float written whole sits in an unusual entry")
    return entry["name"]
