"""Commands that read the service: each a thin layer over one call of the library."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import pandas as pd

from mediaframe.cli.app import State, emit, main, reads
from mediaframe.parameters import RECORD_TYPES, SORTS

__all__ = ["search_filters"]

F = TypeVar("F", bound=Callable[..., Any])
_STATUS = re.compile(r"^(\d+):(on|off):(\d+(?:,\d+)*)$")


def _status(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> Any:
    status: dict[int, dict[str, list[int]]] = {}
    for value in values:
        match = _STATUS.match(value.strip())
        if not match:
            raise click.BadParameter(
                f"{value!r}: write BIT:on|off:DATABOX[,DATABOX...], e.g. 4:on:1", param=param
            )
        bit, state, ids = match.groups()
        status.setdefault(int(bit), {}).setdefault(state, []).extend(map(int, ids.split(",")))
    return status or None


def search_options(command: F) -> F:
    """The query and every search filter of the library, as options."""
    options = [
        click.argument("query", required=False, default=""),
        click.option("--record-type", type=click.Choice(RECORD_TYPES), help="Only this type."),
        click.option(
            "--base", "bases", multiple=True, type=int, help="Base id (repeat for several)."
        ),
        click.option(
            "--date-field",
            help="Field --since/--until filter on (default created_on when either is given).",
        ),
        # --date-min/--date-max as well: what %%mf_search and the library call them
        click.option(
            "--since", "--date-min", "date_min", help="First day, Y/m/d or Y-m-d (inclusive)."
        ),
        click.option(
            "--until", "--date-max", "date_max", help="Last day, Y/m/d or Y-m-d (inclusive)."
        ),
        click.option(
            "--status",
            multiple=True,
            callback=_status,
            metavar="BIT:on|off:DATABOX",
            help="Status bit state in databoxes, e.g. 4:on:1 (repeat for several).",
        ),
        click.option(
            "--status-only",
            is_flag=True,
            help="With --status: keep only the records of the databoxes it names.",
        ),
        click.option(
            "--field", "fields", multiple=True, help="Search the query in this field (repeat)."
        ),
        click.option("--stemme", is_flag=True, default=None, help="Stemmed search."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def sort_options(sorts: tuple[str, ...]) -> Callable[[F], F]:
    def add(command: F) -> F:
        command = click.option("--order", type=click.Choice(["asc", "desc"]), help="Order.")(
            command
        )
        return click.option("--sort", type=click.Choice(sorts), help="Sort by.")(command)

    return add


def extended_option(command: F) -> F:
    """``--extended``: records with their captions (``caption_<Field>``) and status bits."""
    return click.option(
        "--extended",
        is_flag=True,
        help="Also read captions (caption_<Field> columns) and status bits (status_<bit>).",
    )(command)


def harvest_options(command: F) -> F:
    """How a complete result is collected (cache, sync, completeness)."""
    options = [
        click.option("--refresh", is_flag=True, help="Harvest again, ignoring the cache."),
        click.option("--offline", is_flag=True, default=None, help="Read only the cache."),
        click.option(
            "--ttl",
            metavar="DURATION",
            help="How long a cached result is used as is: seconds, or e.g. 1h, 30min, 2days.",
        ),
        click.option(
            "--allow-incomplete",
            is_flag=True,
            help="Keep what the server's cap lets through instead of failing.",
        ),
        click.option(
            "--concurrency",
            type=click.IntRange(min=1),
            help="Requests in flight at once (default 4).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def search_filters(options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The query and the library's keyword arguments from the parsed options."""
    query = options.pop("query", "") or ""
    filters = {k: v for k, v in options.items() if v not in (None, (), False)}
    if "bases" in filters:
        filters["bases"] = list(filters["bases"])
    if "fields" in filters:
        filters["fields"] = list(filters["fields"])
    if "order" in filters:
        filters["ord"] = filters.pop("order")
    if ("date_min" in filters or "date_max" in filters) and "date_field" not in filters:
        filters["date_field"] = "created_on"
    return query, filters


def _collect(state: State, kind: str, output: Path | None, limit: int, options: Any) -> None:
    from mediaframe.harvest import HarvestReport
    from mediaframe.reports import provenance_of

    query, filters = search_filters(options)
    with state.connect() as client:
        frame = getattr(client, kind)(query, **filters)
        state.say(f"{HarvestReport.from_frame(frame).summary()}.")
        extra = {"server": client.base_url, "user": client.user_key}
        emit(state, frame, output, limit=limit, provenance=provenance_of(frame, **extra))


def _collect_command(kind: str, help: str) -> None:
    options = extended_option if kind == "records" else (lambda command: command)

    @main.command(name=kind, help=help)
    @options
    @search_options
    @sort_options(("created_on", "updated_on"))
    @harvest_options
    @reads
    def command(state: State, output: Path | None, limit: int, **options: Any) -> None:
        _collect(state, kind, output, limit, options)


_collect_command(
    "records",
    """Every record matching QUERY and the filters, never silently truncated.

    The search is harvested completely under the server's cap, cached as parquet and synced
    when the cache is older than its TTL (library: client.records).

    \b
    Example:
      mediaframe records "sunset" --record-type image --since 2024-01-01 -o sunset.xlsx
    """,
)
_collect_command(
    "stories",
    """Every story matching QUERY and the filters (library: client.stories).

    \b
    Example:
      mediaframe stories --base 3 -o stories.csv
    """,
)


@main.command()
@search_options
@reads
def facets(state: State, output: Path | None, limit: int, **options: Any) -> None:
    """Facet counts of the whole hit set: facet, field, value, count, and a query per value.

    \b
    Example:
      mediaframe facets "sunset" --limit 50
    """
    query, filters = search_filters(options)
    with state.connect() as client:
        emit(state, client.facets(query, **filters), output, limit=limit)


@main.command()
@search_options
@sort_options(SORTS)
@click.option("--stories", "kind", flag_value="stories", help="Search stories, not records.")
@click.option("--offset", "offset_start", type=click.IntRange(min=0), help="First hit (0).")
@click.option("--per-page", type=click.IntRange(min=1), default=20, show_default=True)
@reads
def search(state: State, output: Path | None, limit: int, kind: str | None, **options: Any) -> None:
    """One page of a search, for a quick look (records or complete harvests: `records`).

    \b
    Example:
      mediaframe search "sunset" --sort created_on --order desc --per-page 10
    """
    query, filters = search_filters(options)
    if filters.pop("status_only", None):
        raise click.UsageError("--status-only narrows complete results: use `mediaframe records`")
    with state.connect() as client:
        route = client.api.search_stories_frame if kind else client.api.search_records_frame
        answer, frame = route(query, **filters)
        state.say(
            f"{len(frame):,} shown from offset {answer.get('offset_start', 0)}; "
            f"{answer.get('total_results', '?')} hits in all, "
            f"{answer.get('available_results', '?')} retrievable."
        )
        emit(state, frame, output, limit=limit)


@main.command()
@click.option(
    "--table",
    type=click.Choice(["user", "collections", "statuses", "databoxes"]),
    help="Only this table (needed by single-table formats such as .csv).",
)
@reads
def me(state: State, table: str | None, output: Path | None, limit: int) -> None:
    """The user, their collection rights, status bit definitions and databoxes.

    \b
    Example:
      mediaframe me --table collections -o rights.csv
    """
    with state.connect() as client:
        who = client.me()
        user = who.user.astype(object).rename("value").rename_axis("field").reset_index()
        frames = {
            "user": user,
            "collections": who.collections,
            "statuses": who.statuses,
            "databoxes": who.databoxes,
        }
        chosen = {table: frames[table]} if table else frames
        emit(state, chosen, output, limit=limit)


def _simple(name: str, call: Callable[[Any], pd.DataFrame], doc: str) -> None:
    @main.command(name=name, help=doc)
    @reads
    def command(state: State, output: Path | None, limit: int) -> None:
        with state.connect() as client:
            emit(state, call(client), output, limit=limit)


_simple(
    "feeds",
    lambda client: client.feeds(),
    "The feeds the user can see.\n\n\b\nExample:\n  mediaframe feeds -o feeds.xlsx",
)
_simple(
    "baskets",
    lambda client: client.baskets(),
    "The user's baskets.\n\n\b\nExample:\n  mediaframe baskets",
)


@main.command(name="feed-items")
@extended_option
@reads
def feed_items(state: State, extended: bool, output: Path | None, limit: int) -> None:
    """The records of every feed entry, one row per item (client.feed_items).

    \b
    Example:
      mediaframe feed-items --extended -o items.parquet
    """
    with state.connect() as client:
        emit(state, client.feed_items(extended=extended), output, limit=limit)


@main.command(name="feed-entries")
@click.option("--offset", "offset_start", type=click.IntRange(min=0), help="One page from here.")
@click.option("--per-page", type=click.IntRange(min=1), help="Entries in that page.")
@reads
def feed_entries(
    state: State,
    offset_start: int | None,
    per_page: int | None,
    output: Path | None,
    limit: int,
) -> None:
    """Entries of every feed: all of them, or one page with --offset/--per-page.

    \b
    Example:
      mediaframe feed-entries -o entries.csv
    """
    with state.connect() as client:
        frame = client.feed_entries(offset_start=offset_start, per_page=per_page)
        emit(state, frame, output, limit=limit)


@main.command()
@search_options
@extended_option
@click.option("--stories", "kind", flag_value="stories", default="records", help="Sync stories.")
@reads
def sync(state: State, kind: str, output: Path | None, limit: int, **options: Any) -> None:
    """Bring the cached harvest of a search up to date now (harvest it if none is cached).

    Fetches only what changed since the last harvest, drops what was deleted, and says how
    many records changed (library: client.records(..., ttl=0)).

    \b
    Example:
      mediaframe sync "sunset" --record-type image
    """
    from mediaframe.harvest import HarvestReport

    query, filters = search_filters(options)
    with state.connect() as client:
        frame = getattr(client, kind)(query, ttl=0, **filters)
        report = HarvestReport.from_frame(frame)
        state.say(f"{report.summary()}.")
        if report.synced:
            click.echo(
                f"Synced: {report.synced['changed']:,} read again as updated since "
                f"{str(report.synced['since'])[:10]}, {report.synced['removed']:,} removed, "
                f"{report.synced['added_by_key']:,} added by key; "
                f"{len(frame):,} {kind} cached."
            )
        else:
            click.echo(f"Harvested {len(frame):,} {kind} (nothing usable was cached to sync).")
        if output is not None:
            emit(state, frame, output, limit=limit)
