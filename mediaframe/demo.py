"""The demo: the main job of mediaframe, end to end, against the built-in emulator."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from mediaframe.client import connect
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.harvest import HarvestReport

__all__ = ["run"]


def run(
    out: Path,
    *,
    records: int = 20_000,
    cap: int = 1000,
    seed: int = 0,
    echo: Callable[[str], Any] = print,
    progress: bool = True,
) -> dict[str, Any]:
    """Harvest every record of a local emulator, prove it complete, cache and export it.

    Parameters
    ----------
    out : folder for the exports and the parquet cache (created).
    records, cap, seed : size of the emulated catalogue, its retrieval cap, and its seed.
    echo : where the narration goes.

    Returns
    -------
    dict with the frame (``records``), the report, and the paths written.

    Examples
    --------
    >>> from pathlib import Path
    >>> result = run(Path("mediaframe-demo"), records=5000)          # doctest: +SKIP
    """
    out.mkdir(parents=True, exist_ok=True)
    settings = Settings.from_env().replace(cache_dir=out / "cache", progress=progress)
    with Emulator(records=records, seed=seed, cap=cap) as emu:
        echo(f"Emulator serving {records:,} records (retrieval cap {cap:,}) at {emu.base_url}")
        client = connect(
            emu.base_url,
            client_id=emu.client_id,
            client_secret=emu.client_secret,
            username=emu.username,
            password=emu.password,
            settings=settings,
        )
        with client:
            echo(f"Logged in as {client.user_key!r} with the password grant.")
            one = client.api.search(per_page=1)
            echo(
                f"A plain search reports {one['total_results']:,} hits but lets you page "
                f"through only {one['available_results']:,} of them."
            )
            started = time.monotonic()
            frame = client.records(refresh=True)
            report = HarvestReport.from_frame(frame)
            echo(f"mediaframe harvested {report.summary()}.")
            truth = emu.ground_truth()
            same = _keys(frame) == _keys(truth)
            verdict = "every key matches" if same else "MISMATCH"
            echo(f"Checked against the emulator's ground truth: {verdict}.")
            _describe(frame, echo)
            read_started = time.monotonic()
            client.records()
            reread = time.monotonic() - read_started
            echo(
                f"Read back from the parquet cache in {reread:.2f} s "
                f"(the harvest took {time.monotonic() - started - reread:.1f} s)."
            )
            paths = _export(frame, out)
            echo(f"Cached dataset (DuckDB, Dask and Spark read it as is): {client.cache_path()}")
            for kind, path in paths.items():
                echo(f"Exported {kind}: {path}")
    return {"records": frame, "report": report, "matches_ground_truth": same, "paths": paths}


def _keys(frame: pd.DataFrame) -> set[tuple[int, int]]:
    return set(zip(frame["databox_id"].astype(int), frame["record_id"].astype(int), strict=True))


def _describe(frame: pd.DataFrame, echo: Callable[[str], Any]) -> None:
    echo(f"\n{len(frame.columns)} typed columns, e.g.:")
    echo(frame.dtypes.head(12).to_string())
    echo("\nRecords per media type:")
    echo(frame["media_type"].value_counts().to_string())
    if "CameraModel" in frame.columns:
        echo("\nMost used cameras:")
        echo(frame["CameraModel"].value_counts().head(5).to_string())
    echo("")


def _export(frame: pd.DataFrame, out: Path) -> dict[str, Path]:
    parquet, csv = out / "records.parquet", out / "records.csv"
    frame.to_parquet(parquet, index=False)
    frame.to_csv(csv, index=False)
    return {"parquet": parquet, "csv": csv}
