"""What the library says, said to a command-line user: its argument names as the CLI's options,
and its warnings as ``Warning: ...`` lines, as inert on the terminal as its errors."""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator
from typing import TextIO

import click

from mediaframe.cli.table import printable
from mediaframe.exceptions import IncompleteResultWarning

__all__ = ["said_for_cli", "warnings_said"]

#: The library's words in a message, and the CLI's for the same thing, applied in this order
#: (longer phrases first). A value after ``name=`` is kept: ``date_min='2024-13-01'`` reads
#: ``--since '2024-13-01'``.
_OPTION_NAMES: tuple[tuple[str, str], ...] = (
    (
        r"\bgive status= too, e\.g\. status=\{4: \{'on': \[1\]\}\}",
        "give --status too, e.g. --status 4:on:1",
    ),
    (
        r"\bstatus_only=True keeps the databoxes named in status=",
        "--status-only keeps the databoxes named by --status",
    ),
    (r"\bdrop offline=True / MEDIAFRAME_OFFLINE\b", "drop --offline / MEDIAFRAME_OFFLINE"),
    (r"\ballow_incomplete=True\b", "--allow-incomplete"),
    (r"\boffline=True\b", "--offline"),
    (r"\brefresh=True\b", "--refresh"),
    (
        r"\bdate_min/date_max need date_field \(e\.g\. date_field='created_on'\)",
        "--since/--until need --date-field (e.g. --date-field created_on)",
    ),
    (r"\bdate_min=", "--since "),
    (r"\bdate_max=", "--until "),
    (r"\bdate_min\b", "--since"),
    (r"\bdate_max\b", "--until"),
    (r"\bdate_field=", "--date-field "),
    (r"\bdate_field\b", "--date-field"),
    (r"\brecord_type=", "--record-type "),
    (r"\bbases=", "--base "),
    (r"\bconcurrency=", "--concurrency "),
    (r"\bttl=", "--ttl "),
    (r"give seconds, a timedelta, or a string", "give seconds or a duration"),
    (r"\bCheck the parameters of the call\b", "Check the query and the options"),
    (
        r"; or pass connect\(\) a token as token=",
        "; or give a token: --token-stdin or MEDIAFRAME_TOKEN",
    ),
    (r"\bpass token= to connect\(\)", "give a token (--token-stdin or MEDIAFRAME_TOKEN)"),
)
_TRANSLATIONS = tuple((re.compile(pattern), said) for pattern, said in _OPTION_NAMES)

#: Advice to allow an incomplete result, moot in the warning that says one was allowed.
_ALLOW_ADVICE = re.compile(r",? or pass allow_incomplete=True to accept a partial result")


def said_for_cli(message: object) -> str:
    """``message`` with the library's argument names said as the CLI's options.

    Examples
    --------
    >>> said_for_cli("date_min 2024/01/01 is after date_max 2023/01/01")
    '--since 2024/01/01 is after --until 2023/01/01'
    """
    text = str(message)
    for pattern, said in _TRANSLATIONS:
        text = pattern.sub(said, text)
    return text


@contextlib.contextmanager
def warnings_said() -> Iterator[None]:
    """For one command: each warning shown as one ``Warning: ...`` line on stderr, without
    Python's source path and line, its controls made inert and its names the CLI's. The
    display in place before (Python's, a test's) is back afterwards; which warnings are shown
    (``-W``, ``PYTHONWARNINGS``) is left as it was."""
    with warnings.catch_warnings():
        warnings.showwarning = _show
        yield


def _show(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    text = str(message)
    if issubclass(category, IncompleteResultWarning):  # issued because it was allowed
        text = _ALLOW_ADVICE.sub("", text)
    click.echo(f"Warning: {printable(said_for_cli(text), one_line=True)}", err=True)
