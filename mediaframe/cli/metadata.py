"""Commands over descriptive metadata: ``fields``, ``story-records``, ``basket-records``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mediaframe.cli.app import State, emit, main, reads
from mediaframe.cli.data import extended_option, harvest_options, search_filters, search_options


@main.command()
@reads
def fields(state: State, output: Path | None, limit: int) -> None:
    """The caption fields of every databox the user can read: name, type, required, labels.

    \b
    Example:
      mediaframe fields -o fields.csv
    """
    with state.connect() as client:
        emit(state, client.fields(), output, limit=limit)


@main.command(name="story-records")
@search_options
@harvest_options
@extended_option
@reads
def story_records(state: State, output: Path | None, limit: int, **options: Any) -> None:
    """One row per (story, record) for every story the search finds (client.story_records).

    \b
    Example:
      mediaframe story-records --base 3 --extended -o story-records.parquet
    """
    query, filters = search_filters(options)
    with state.connect() as client:
        emit(state, client.story_records(query, **filters), output, limit=limit)


@main.command(name="basket-records")
@click.option("--basket", "basket_id", type=int, help="Only this basket (default: every basket).")
@extended_option
@reads
def basket_records(
    state: State, basket_id: int | None, extended: bool, output: Path | None, limit: int
) -> None:
    """One row per basket element, with validation choices (client.basket_records).

    \b
    Example:
      mediaframe basket-records --basket 12 -o basket.xlsx
    """
    with state.connect() as client:
        frame = client.basket_records(basket_id, extended=extended)
        emit(state, frame, output, limit=limit)
