"""The demo harvests the emulator completely and writes what it says it writes."""

import pandas as pd
from click.testing import CliRunner

from mediaframe.cli import main


def test_demo_runs_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    out = tmp_path / "demo"
    result = CliRunner().invoke(
        main, ["demo", "--records", "3000", "--cap", "300", "--out", str(out), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    assert "(complete)" in result.output and "every key matches" in result.output
    assert "lets you page through only 300" in result.output
    exported = pd.read_parquet(out / "records.parquet")
    assert len(exported) > 300
    assert len(pd.read_csv(out / "records.csv")) == len(exported)
    assert any((out / "cache" / "records").iterdir())
