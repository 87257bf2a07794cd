"""``audit``, ``report`` and ``demo``: the jobs auditors and schedulers run."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mediaframe.cli.app import EXIT_ERROR, State, main, reported


@main.command()
@click.option(
    "--records", default=20_000, show_default=True, help="Size of the emulated catalogue."
)
@click.option("--cap", default=1000, show_default=True, help="The emulator's retrieval cap.")
@click.option("--seed", default=0, show_default=True, help="Seed of the synthetic catalogue.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("mediaframe-demo"),
    show_default=True,
    help="Folder for the exports and the parquet cache.",
)
@click.option("--progress/--no-progress", default=True, help="Show a progress bar.")
@click.pass_obj
@reported
def demo(state: State, records: int, cap: int, seed: int, out: Path, progress: bool) -> None:
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
        progress=progress and not state.quiet,
    )
    if not result["matches_ground_truth"]:
        sys.exit(EXIT_ERROR)
