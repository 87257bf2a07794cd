"""The ``mediaframe`` command group, what every command shares, and how errors end a command.

Exit codes, for scripts: 0 done; 1 an error (one line on stderr); 2 a usage or configuration
error; 3 the credentials were refused (log in again); 130 interrupted.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import click
import pandas as pd

from mediaframe import __version__
from mediaframe.cli.table import printable
from mediaframe.config import Connection, Settings
from mediaframe.exceptions import (
    AuthenticationError,
    ConfigurationError,
    InvalidParameterError,
    MediaframeError,
)
from mediaframe.tokens import shown_url

__all__ = [
    "EXIT_AUTHENTICATION",
    "EXIT_CONFIGURATION",
    "EXIT_ERROR",
    "State",
    "chosen_base_url",
    "chosen_profile",
    "connection_options",
    "emit",
    "main",
    "once",
    "output_option",
    "reads",
    "reported",
]

#: Exit codes: what happened, for scripts.
EXIT_ERROR, EXIT_CONFIGURATION, EXIT_AUTHENTICATION, EXIT_INTERRUPTED = 1, 2, 3, 130

F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass
class State:
    """What the group's options say, shared by its commands."""

    base_url: str | None = None
    profile: str | None = None
    token_stdin: bool = False
    quiet: bool = False
    _token: str | None = dataclasses.field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        settings = Settings.from_env()
        return settings.replace(progress=False) if self.quiet else settings

    def connect(self, settings: Settings | None = None) -> Any:
        """A client: a token (``--token-stdin`` or ``MEDIAFRAME_TOKEN``) with a base URL, else a
        stored profile."""
        from mediaframe.client import connect

        settings = settings or self.settings
        env = Connection.from_env()
        base_url = self.base_url or env.base_url
        token = self._read_token() if self.token_stdin else None
        if token is None and self.profile is None:
            token = env.token
        if token is not None:
            if not base_url:
                raise click.UsageError(
                    "a token needs the service's address: --base-url URL or MEDIAFRAME_BASE_URL"
                )
            return connect(base_url, token=token, settings=settings)
        return connect(base_url, profile=self.profile, settings=settings)

    def _read_token(self) -> str:
        if self._token is None:
            line = sys.stdin.readline().strip()
            if not line:
                raise click.UsageError("--token-stdin: no token on standard input")
            self._token = line
        return self._token

    def say(self, message: str) -> None:
        """Narration and progress on stderr, silenced by ``--quiet``."""
        if not self.quiet:
            click.echo(printable(message), err=True)


def reported(command: F) -> F:
    """Turn mediaframe errors into one line on stderr and an exit code that says which kind."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except MediaframeError as err:
            # one line whatever the message holds, and no server text driving the terminal
            message = printable(err, one_line=True)
            click.echo(f"Error: {message}", err=True)
            if isinstance(err, AuthenticationError):
                sys.exit(EXIT_AUTHENTICATION)
            usage = isinstance(err, ConfigurationError | InvalidParameterError)
            sys.exit(EXIT_CONFIGURATION if usage else EXIT_ERROR)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            sys.exit(EXIT_INTERRUPTED)

    return run  # type: ignore[return-value]


def _remember(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def store(ctx: click.Context, _: click.Parameter, value: Any) -> Any:
        if value not in (None, False):
            setattr(ctx.ensure_object(State), name, value)
        return value

    return store


#: How a value of each choice is named in a message: addresses without what they may carry.
_SHOWN: dict[str, Callable[[str], str]] = {"service addresses": shown_url}


def _one_of(what: str, given: Sequence[tuple[str, str | None]]) -> str | None:
    """The one value of a choice given in several places (``given``: each place said as the
    option that gave it, e.g. ``--profile`` after the command, and its value); two different
    values are refused naming both, never one silently dropped. The same value twice is one.

    Addresses are named as :func:`~mediaframe.tokens.shown_url` shows them: a password, a
    user name or a token in one never reaches the terminal."""
    said = [(where, value) for where, value in given if value]
    shown = _SHOWN.get(what, str)
    for where, value in said[1:]:
        if value != said[0][1]:
            first, second = shown(said[0][1]), shown(value)
            raise click.UsageError(
                f"two {what} given: {said[0][0].format(first)} and {where.format(second)}; give one"
            )
    return said[0][1] if said else None


def chosen_profile(state: State, profile: str | None) -> str | None:
    """The ``--profile`` given after the command or before it; two different ones are refused,
    never one silently dropped."""
    return _one_of(
        "profiles",
        [("--profile {} before the command", state.profile), ("--profile {} after it", profile)],
    )


def chosen_base_url(
    state: State, base_url: str | None, *, option: str = "--base-url"
) -> str | None:
    """The service's address given after the command (as ``option``) or before it
    (``--base-url``); two different ones are refused, as :func:`chosen_profile` refuses two
    profiles."""
    return _one_of(
        "service addresses",
        [
            ("--base-url {} before the command", state.base_url),
            (f"{option} {{}} after it", base_url),
        ],
    )


def once(what: str) -> Callable[[click.Context, click.Parameter, tuple[str, ...]], str | None]:
    """The callback of an option given more than once (``multiple=True``): its one value, the
    same value repeated taken as one, two different ones refused naming both."""

    def one(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> str | None:
        option = max(param.opts, key=len)
        return _one_of(what, [(f"{option} {{}}", value) for value in values])

    return one


def _remember_profile(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> None:
    state = ctx.ensure_object(State)
    state.profile = chosen_profile(state, once("profiles")(ctx, param, values))


def _remember_base_url(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> None:
    state = ctx.ensure_object(State)
    state.base_url = chosen_base_url(state, once("service addresses")(ctx, param, values))


def connection_options(command: F) -> F:
    """``--base-url``, ``--profile`` and ``--token-stdin``, also accepted after the command."""
    options = [
        click.option(
            "--base-url",
            multiple=True,
            expose_value=False,
            callback=_remember_base_url,
            help="Service root (with a token); else MEDIAFRAME_BASE_URL.",
        ),
        click.option(
            "--profile",
            multiple=True,
            expose_value=False,
            callback=_remember_profile,
            help="Stored profile to use (default: MEDIAFRAME_PROFILE or 'default').",
        ),
        click.option(
            "--token-stdin",
            is_flag=True,
            expose_value=False,
            callback=_remember("token_stdin"),
            help="Read a token from standard input (needs --base-url); else MEDIAFRAME_TOKEN.",
        ),
        click.option(
            "-q",
            "--quiet",
            is_flag=True,
            expose_value=False,
            callback=_remember("quiet"),
            help="No progress or narration on stderr.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def output_option(command: F) -> F:
    return click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Write to FILE; the extension picks the format: .csv .xlsx .parquet .json .html; "
        ".csv and .json also compressed (.csv.gz, .json.zip, .bz2, .xz, .zst, .tar.gz).",
    )(command)


def emit(
    state: State,
    frames: pd.DataFrame | Mapping[str, pd.DataFrame],
    output: Path | None,
    *,
    limit: int = 20,
    max_cell: int = 32,
    **html: Any,
) -> None:
    """Write ``frames`` to ``output`` through the safe writers, or show them as tables."""
    if output is not None:
        from mediaframe.reports import export

        if output.suffix.lower() != ".html":
            html = {}
        path = export(frames, output, **html)
        sizes = (
            [len(frames)] if isinstance(frames, pd.DataFrame) else [len(f) for f in frames.values()]
        )
        state.say(f"Wrote {sum(sizes):,} row(s) to {path}")
        if output.suffix.lower() == ".html":
            from mediaframe.reports.html import MAX_CELLS, MAX_ROWS, rows_shown

            shown = [frames] if isinstance(frames, pd.DataFrame) else list(frames.values())
            left = sum(len(frame) - rows_shown(frame) for frame in shown)
            if left:
                state.say(
                    f"The page shows at most {MAX_ROWS:,} rows ({MAX_CELLS:,} cells) a table: "
                    f"{left:,} left out, as it says. Write .parquet, .csv or .xlsx for every row."
                )
        return
    from mediaframe.cli.table import render

    tables = {"": frames} if isinstance(frames, pd.DataFrame) else dict(frames)
    width = shutil.get_terminal_size((100, 24)).columns
    for title, frame in tables.items():
        if len(tables) > 1:
            click.echo(f"\n{title}:")
        text, note = render(frame, width=width, max_rows=limit, max_cell=max_cell)
        click.echo(text)
        if note:
            state.say(note)


def limit_option(command: F) -> F:
    return click.option(
        "--limit",
        default=20,
        show_default=True,
        type=click.IntRange(min=-1),
        help="Rows shown on the terminal (-1: all); -o writes every row (.html: 10,000 a table).",
    )(command)


def _output_checked(command: F) -> F:
    """Refuse an ``-o`` the export could not write (no format, no such folder) before the
    command reads anything, rather than after a long harvest."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("output") is not None:
            from mediaframe.reports.exports import check_export

            check_export(kwargs["output"])
        return command(*args, **kwargs)

    return run  # type: ignore[return-value]


def reads(command: F) -> F:
    """A command that shows or writes frames: ``-o`` (checked first), ``--limit``, the
    connection options, the shared :class:`State` passed first, and errors reported."""
    decorated: Any = command
    for decorate in (
        _output_checked,
        reported,
        click.pass_obj,
        connection_options,
        limit_option,
        output_option,
    ):
        decorated = decorate(decorated)
    return cast(F, decorated)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mediaframe")
@click.option(
    "--base-url",
    multiple=True,
    callback=once("service addresses"),
    help="Service root (with a token); else MEDIAFRAME_BASE_URL.",
)
@click.option(
    "--profile",
    multiple=True,
    callback=once("profiles"),
    help="Stored profile (default: MEDIAFRAME_PROFILE or 'default').",
)
@click.option(
    "--token-stdin",
    is_flag=True,
    help="Read a token from standard input (needs --base-url); else MEDIAFRAME_TOKEN.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress or narration on stderr.")
@click.pass_context
def main(
    ctx: click.Context, base_url: str | None, profile: str | None, token_stdin: bool, quiet: bool
) -> None:
    """mediaframe: a Media Asset Service as typed DataFrames, from the command line.

    \b
    Examples:
      mediaframe login --url https://assets.example.org --username ada
      mediaframe records "sunset" --record-type image -o sunset.xlsx
      MEDIAFRAME_BASE_URL=https://a.example MEDIAFRAME_TOKEN=... mediaframe audit -o audit.html

    Every command is described in docs/cli.md.
    """
    ctx.obj = State(base_url=base_url, profile=profile, token_stdin=token_stdin, quiet=quiet)
