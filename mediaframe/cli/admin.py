"""``cache ls``, ``cache clear`` and ``info``: what mediaframe keeps on this machine."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import click
import pandas as pd

from mediaframe import __version__
from mediaframe.cli.app import State, emit, limit_option, main, output_option, reported
from mediaframe.config import Connection
from mediaframe.exceptions import CacheError

_UNITS = ("B", "KB", "MB", "GB", "TB")


def size_text(count: float) -> str:
    """A byte count for people: ``1.5 MB``."""
    for unit in _UNITS:
        if count < 1024 or unit == _UNITS[-1]:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def age_text(age: Any) -> str:
    if age is None or pd.isna(age):
        return ""
    seconds = int(pd.Timedelta(age).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _shown_query(query: Any, damage: Any) -> str:
    if query is None or pd.isna(query):
        # a damaged manifest or plan says no query either, but holds what was harvested
        if not pd.isna(damage):
            return "(unknown: damaged)"
        # a harvest folder whose search never started (the server refused it) says no query
        return "(unknown: nothing harvested)"
    return repr(query) if query == "" else str(query)


def _shown_state(complete: Any, damage: Any) -> str:
    """``complete``, ``incomplete`` (or still being harvested), or ``damaged`` (what is wrong
    is said apart: it would not fit the table)."""
    if not pd.isna(damage):
        return "damaged"
    if pd.isna(complete):
        return ""
    return "complete" if complete else "incomplete"


@main.group()
def cache() -> None:
    """List or clear the parquet cache of harvests (MEDIAFRAME_CACHE_DIR).

    \b
    Example:
      mediaframe cache ls
    """


def _listing(state: State) -> pd.DataFrame:
    from mediaframe.cache.inventory import cached

    return cached(str(state.settings.cache_dir))


@cache.command(name="ls")
@output_option
@limit_option
@click.pass_obj
@reported
def cache_ls(state: State, output: Path | None, limit: int) -> None:
    """Each cached harvest: kind, query and filters, state, server and user, size, age.

    A harvest that cannot be read is listed as damaged, with what is wrong (a damaged
    manifest or plan, its dataset folder gone): it is fetched again by the next call.

    \b
    Example:
      mediaframe cache ls -o cache.csv
    """
    listing = _listing(state)
    state.say(
        f"{len(listing)} cached harvest(s), {size_text(listing['size_bytes'].sum())} in "
        f"{state.settings.cache_dir}"
    )
    for key, damage in zip(listing["key"], listing["damage"], strict=True):
        if not pd.isna(damage):
            state.say(
                f"harvest {key} is damaged ({damage}): the next call of its search fetches it "
                f"again, or remove it with `mediaframe cache clear --key {key}`"
            )
    if output is not None:
        emit(state, listing, output)
        return
    shown = pd.DataFrame(
        {
            "kind": listing["kind"],
            "query": [
                _shown_query(*row) for row in zip(listing["query"], listing["damage"], strict=True)
            ],
            "filters": listing["filters"],
            "state": [
                _shown_state(*row)
                for row in zip(listing["complete"], listing["damage"], strict=True)
            ],
            "hits": listing["hits"],
            "size": listing["size_bytes"].map(size_text),
            "age": listing["age"].map(age_text),
            "server": listing["server"],
            "user": listing["user"],
            "key": listing["key"],
        }
    )
    emit(state, shown, None, limit=limit)


@cache.command(name="clear")
@click.option("--older-than", type=click.FloatRange(min=0), help="Only harvests older than DAYS.")
@click.option("--key", "keys", multiple=True, help="Only this harvest (its key, see cache ls).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--wait",
    is_flag=True,
    help="Wait for a harvest, sync or read in progress to finish, then remove its cache "
    "(without it, a cache in use is left in place and the command fails saying which).",
)
@click.pass_obj
@reported
def cache_clear(
    state: State, older_than: float | None, keys: tuple[str, ...], yes: bool, wait: bool
) -> None:
    """Remove cached harvests: all of them, those older than --older-than DAYS, or --key ones.

    A harvest being written (a harvest or sync is running) or read is never removed: it is
    left in place with a message, or waited for with --wait.

    \b
    Example:
      mediaframe cache clear --older-than 30 --yes
    """
    from mediaframe.cache.inventory import remove

    listing = _listing(state)
    chosen = listing
    if keys:
        unknown = set(keys) - set(listing["key"])
        if unknown:
            raise click.BadParameter(
                f"no cached harvest with key {', '.join(sorted(unknown))} (see `mediaframe cache "
                "ls`)",
                param_hint="--key",
            )
        chosen = chosen[chosen["key"].isin(keys)]
    if older_than is not None:
        chosen = chosen[chosen["age"].isna() | (chosen["age"] > dt.timedelta(days=older_than))]
    if chosen.empty:
        click.echo("Nothing to remove.")
        return
    size = size_text(chosen["size_bytes"].sum())
    if not yes:
        click.confirm(f"Remove {len(chosen)} cached harvest(s), {size}?", abort=True, err=True)
    if wait:
        state.say("Waiting for any harvest, sync or read of these caches to finish...")
    busy = remove(chosen["path"].tolist(), wait=wait)
    gone = chosen[~chosen["path"].isin(busy)]
    click.echo(f"Removed {len(gone)} cached harvest(s), {size_text(gone['size_bytes'].sum())}.")
    if busy:
        left = chosen[chosen["path"].isin(busy)]
        raise CacheError(
            f"{len(busy)} cached harvest(s) left in place, in use by a running harvest, sync or "
            f"read: {', '.join(left['key'])}. Run `mediaframe cache clear` again once it is "
            "done, or add --wait to wait for it"
        )


@main.command()
@click.pass_obj
@reported
def info(state: State) -> None:
    """Version, configuration and cache folders, stored profiles, cache size; never a token.

    \b
    Example:
      mediaframe info
    """
    from mediaframe.auth import TokenStore

    settings = state.settings
    store = TokenStore(settings.config_dir)
    env = Connection.from_env()
    listing = _listing(state)
    click.echo(f"mediaframe {__version__}")
    click.echo(f"config folder: {settings.config_dir}")
    click.echo(f"cache folder:  {settings.cache_dir}")
    click.echo(
        f"cache:         {len(listing)} harvest(s), {size_text(listing['size_bytes'].sum())}"
    )
    click.echo(f"profile used:  {state.profile or settings.profile}")
    names = store.names()
    click.echo(f"profiles:      {len(names) or 'none (mediaframe login)'}")
    for name in names:
        try:
            where = store.load(name).base_url
        except Exception as err:  # a damaged profile is reported, not fatal here
            where = f"unreadable ({type(err).__name__})"
        click.echo(f"  {name}: {where}")
    if env.base_url or env.token:
        token = "set (hidden)" if env.token else "not set"
        click.echo(
            f"environment:   MEDIAFRAME_BASE_URL={_shown_url(env.base_url)}, "
            f"MEDIAFRAME_TOKEN {token}"
        )
    set_vars = sorted(k for k in os.environ if k.startswith("MEDIAFRAME_") and "TOKEN" not in k)
    if set_vars:
        click.echo(f"settings from: {', '.join(set_vars)}")


def _shown_url(url: str | None) -> str:
    """``url`` as info may print it: a user name or password in it is not repeated."""
    if not url:
        return ""
    from mediaframe.auth import check_base_url, shown_url
    from mediaframe.exceptions import ConfigurationError

    try:
        return check_base_url(url)
    except ConfigurationError as err:
        return f"{shown_url(url)} (refused: {' '.join(str(err).split())})"
