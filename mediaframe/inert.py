"""Server text shown inert: the one rule for every place a server's words reach a person.

A server's text may hold an escape sequence (which sets a terminal's title, clears its screen
or rewrites what it shows), a bidi control (which reorders what is read) or another control
or format character. Wherever such text is shown — the command line's tables and ``Error:``
lines, a report's warnings, the messages of exceptions and warnings the library raises — each
of those characters is shown as U+FFFD. Below the transport and the frames, so that both use
it; what an exception keeps as attributes stays as the server sent it.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["neutralised", "unsafe"]


def neutralised(text: str, *, kept: str = "") -> str:
    """``text`` with each control and format character but those ``kept`` replaced by U+FFFD:
    how server text is shown wherever it could rewrite what a terminal or a report shows (an
    escape sequence, a bidi control)."""

    def shown(match: re.Match[str]) -> str:
        char = match[0]
        return char if char in kept or not unsafe(char) else "\N{REPLACEMENT CHARACTER}"

    return _SUSPECT.sub(shown, text)


def unsafe(char: str) -> bool:
    """Whether the character ``char`` must not be shown as it is: a control (C0, DEL, C1) or a
    format character other than the two joiners some scripts and emoji are written with."""
    return char not in _JOINERS and unicodedata.category(char) in ("Cc", "Cf")


# Only characters outside printable ASCII are judged one by one.
_SUSPECT = re.compile(r"[^\x20-\x7e]")
_JOINERS = frozenset("\N{ZERO WIDTH NON-JOINER}\N{ZERO WIDTH JOINER}")
