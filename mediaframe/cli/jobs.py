"""``audit``, ``report`` and ``demo``: the jobs auditors and schedulers run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from mediaframe.cli.app import (
    EXIT_ERROR,
    State,
    connection_options,
    emit,
    limit_option,
    main,
    reported,
)
from mediaframe.cli.data import harvest_options, search_filters, search_options

_JOB_OUTPUT = click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="FILE.html (one page), FILE.xlsx (a sheet per table, a README), or a FOLDER of CSV files.",
)


@main.command()
@search_options
@harvest_options
@click.option(
    "--extended/--no-extended",
    default=True,
    show_default=True,
    help="Harvest captions and status bits, for required fields and status usage.",
)
@click.option(
    "--stale-days",
    default=365,
    show_default=True,
    type=click.IntRange(min=1),
    help="A feed with no entry in that many days is stale.",
)
@_JOB_OUTPUT
@limit_option
@connection_options
@click.pass_obj
@reported
def audit(
    state: State, extended: bool, stale_days: int, output: Path | None, limit: int, **options: Any
) -> None:
    """Audit the records of a search: duplicates, formats, missing values, rights, status bits,
    stories, feeds, and fixity drift since the last cached harvest (mediaframe.reports.audit).

    \b
    Example:
      mediaframe audit --base 3 -o audit.html
      mediaframe audit -o audit.xlsx        # a README sheet, then one sheet per check
      mediaframe audit -o audit-csv/        # one CSV per check
    """
    from mediaframe.reports import Audit
    from mediaframe.reports import audit as run_audit

    if output is not None:  # refused now, not after the harvest (whose cache is the baseline)
        Audit.check_export(output)
    query, filters = search_filters(options)
    with state.connect() as client:
        result = run_audit(
            client, query, stale_days=stale_days, echo=state.say, extended=extended, **filters
        )
    _written(state, result, output, limit)


@main.command()
@search_options
@harvest_options
@click.option(
    "--period",
    type=click.Choice(["day", "week", "month", "quarter", "year"]),
    default="month",
    show_default=True,
)
@click.option("--start", help="First day reported, YYYY-MM-DD (default: the first record).")
@click.option("--end", help="Last day reported, YYYY-MM-DD (default: the last record).")
@_JOB_OUTPUT
@limit_option
@connection_options
@click.pass_obj
@reported
def report(
    state: State,
    period: str,
    start: str | None,
    end: str | None,
    output: Path | None,
    limit: int,
    **options: Any,
) -> None:
    """Records created and updated per period, collection and media type, storage added, and
    feed activity: the export a scheduler runs (mediaframe.reports.report).

    \b
    Example:
      mediaframe report --period month --start 2024-01-01 -o monthly.xlsx
    """
    from mediaframe.reports import Report
    from mediaframe.reports import report as run_report

    if output is not None:
        Report.check_export(output)
    query, filters = search_filters(options)
    with state.connect() as client:
        result = run_report(client, query, period=period, start=start, end=end, **filters)
    _written(state, result, output, limit)


def _written(state: State, result: Any, output: Path | None, limit: int) -> None:
    if output is None:
        if hasattr(result, "summary"):  # an audit: one line per check
            emit(state, result.summary[["check", "rows", "summary"]], None, limit=-1, max_cell=80)
        else:
            emit(state, result.totals, None, limit=limit)
        return
    written = result.export(output)
    where = written if isinstance(written, Path) else f"{len(written)} CSV files in {output}"
    state.say(f"Wrote {where}")


@main.command()
@click.option(
    "--records",
    default=20_000,
    show_default=True,
    type=click.IntRange(min=0),
    help="Size of the emulated catalogue.",
)
@click.option(
    "--cap",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="The emulator's retrieval cap (1 or more: with 0 no hit could be retrieved).",
)
@click.option("--seed", default=0, show_default=True, help="Seed of the synthetic catalogue.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("mediaframe-demo"),
    show_default=True,
    help="Folder for the exports and the parquet cache.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar (default: when standard error is a terminal).",
)
@click.pass_obj
@reported
def demo(state: State, records: int, cap: int, seed: int, out: Path, progress: bool | None) -> None:
    """Harvest a local emulator completely, prove it, audit it, report on it and export it.

    \b
    Example:
      mediaframe demo --records 20000 --out mediaframe-demo
    """
    from mediaframe.demo import run

    result = run(
        out,
        records=records,
        cap=cap,
        seed=seed,
        echo=click.echo,
        progress=state.bars if progress is None else progress and not state.quiet,
    )
    if not result["matches_ground_truth"]:
        sys.exit(EXIT_ERROR)
