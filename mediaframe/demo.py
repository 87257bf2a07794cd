"""The demo: the main job of mediaframe, end to end, against the built-in emulator.

The client talks to the emulator through an in-process HTTP session at one fixed address, so
the cache of the demo's harvest sits under the same key run after run (a served emulator gets a
new port, hence a new address and a new cache folder, each time).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from mediaframe.client import connect
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.exceptions import InvalidParameterError
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
    """Harvest every record of a local emulator, prove it complete, audit, report and export it.

    Parameters
    ----------
    out : folder for the exports and the parquet cache (created).
    records, cap, seed : size of the emulated catalogue, its retrieval cap, and its seed.
    echo : where the narration goes.

    Returns
    -------
    dict with the frame (``records``), the harvest report, the audit, and the paths written.

    Examples
    --------
    >>> from pathlib import Path
    >>> result = run(Path("mediaframe-demo"), records=5000)          # doctest: +SKIP
    """
    from mediaframe.reports import audit, report, to_csv, to_parquet

    if cap < 1:  # the emulator takes 0 (to test clients with it); a harvest could not begin
        raise InvalidParameterError(
            f"cap must be 1 or more, got {cap}: with 0 the search lets no hit be retrieved"
        )
    # the emulator first: it refuses a bad size or cap before anything is written
    emu = Emulator(records=records, seed=seed, cap=cap)
    settings = Settings.from_env().replace(cache_dir=out / "cache", progress=progress)
    out.mkdir(parents=True, exist_ok=True)
    echo(
        f"Emulator of {records:,} records (retrieval cap {cap:,}, seed {seed}), reached "
        f"in-process at {emu.inprocess_url}: every request goes through the HTTP client, "
        "without a socket."
    )
    with (
        emu.requests_session() as session,
        connect(
            emu.inprocess_url,
            client_id=emu.client_id,
            client_secret=emu.client_secret,
            username=emu.username,
            password=emu.password,
            settings=settings,
            session=session,
        ) as client,
    ):
        echo(f"Logged in as {client.user_key!r} with the password grant.")
        _explain_visibility(emu, echo)
        one = client.api.search(per_page=1)
        echo(
            f"A plain search reports {one['total_results']:,} hits but lets you page "
            f"through only {one['available_results']:,} of them."
        )
        started = time.monotonic()
        # extended: captions and status bits too, as the audit below reads them (one cache)
        frame = client.records(refresh=True, extended=True)
        harvest = HarvestReport.from_frame(frame)
        echo(f"mediaframe harvested {harvest.summary()}.")
        same = _keys(frame) == _keys(emu.ground_truth())
        verdict = "every key matches" if same else "MISMATCH"
        echo(f"Checked against the emulator's ground truth: {verdict}.")
        _describe(frame, echo)
        read_started = time.monotonic()
        client.records(extended=True)
        reread = time.monotonic() - read_started
        echo(
            f"Read back from the parquet cache in {reread:.2f} s "
            f"(the harvest took {read_started - started:.1f} s)."
        )
        checked = audit(client)
        echo(
            "Collection audit:\n"
            + "\n".join(f"  {c.name}: {c.summary}" for c in checked.checks.values())
        )
        monthly = report(client, period="year", extended=True)
        paths = {
            "parquet": to_parquet(frame, out / "records.parquet"),
            "csv": to_csv(frame, out / "records.csv"),
            "audit": checked.to_excel(out / "audit.xlsx"),
            "report": monthly.to_html(out / "report.html"),
        }
        # the harvest above is extended, which is part of its cache key
        where = client.cache_path(extended=True)
        echo(
            f"Cached harvest: {where}\n  open it lazily with mf.to_duckdb(path) or "
            "mf.to_dask(path) (its data- folder is hive-partitioned parquet)."
        )
        for kind, path in paths.items():
            echo(f"Exported {kind}: {path}")
    return {
        "records": frame,
        "report": harvest,
        "audit": checked,
        "matches_ground_truth": same,
        "paths": paths,
    }


def _explain_visibility(emu: Emulator, echo: Callable[[str], Any]) -> None:
    """Why a complete harvest holds fewer records than the catalogue: the user's rights."""
    everything = emu.ground_truth(user="*")
    visible = everything[everything["visible"].fillna(False).astype(bool)]
    hidden = everything["base_id"].nunique() - visible["base_id"].nunique()
    echo(
        f"The catalogue holds {len(everything):,} records in {everything['base_id'].nunique()} "
        f"collections; the demo user's rights reach {visible['base_id'].nunique()} of them "
        f"({hidden} are closed to this user), so {len(visible):,} records are theirs to see. "
        "A complete harvest is complete for the user: it returns those, never the others."
    )


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
