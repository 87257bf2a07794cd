"""The demo harvests the emulator completely and writes what it says it writes."""

import re
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from click.testing import CliRunner

import mediaframe as mf
from mediaframe.cli import main
from mediaframe.demo import run


def test_demo_runs_end_to_end_and_keeps_one_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    out = tmp_path / "demo"
    args = ["demo", "--records", "3000", "--cap", "300", "--out", str(out), "--no-progress"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "(complete)" in result.output and "every key matches" in result.output
    assert "lets you page through only 300" in result.output
    assert "The catalogue holds 3,000 records in 8 collections" in result.output
    assert "reach 6 of them" in result.output
    exported = pd.read_parquet(out / "records.parquet")
    assert 300 < len(exported) < 3000
    assert len(pd.read_csv(out / "records.csv")) == len(exported)
    assert openpyxl.load_workbook(out / "audit.xlsx").sheetnames[:2] == ["README", "duplicates"]
    page = (out / "report.html").read_text()
    assert "Report per year" in page and "Content-Security-Policy" in page
    folders = sorted(p.name for p in (out / "cache" / "records").iterdir())
    # the dataset the demo points DuckDB/Dask/Spark users to is the harvest it made
    said = re.search(r"Cached harvest: (\S+)", result.output)
    assert said and Path(said[1]).is_dir(), result.output
    assert Path(said[1]).name == folders[0]
    assert mf.to_duckdb(said[1]).aggregate("count(*)").fetchall()[0][0] == len(exported)
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert sorted(p.name for p in (out / "cache" / "records").iterdir()) == folders
    assert len(folders) == 1


def test_a_demo_its_emulator_refuses_writes_nothing(tmp_path):
    out = tmp_path / "demo"
    with pytest.raises(ValueError, match="cap"):
        run(out, records=10, cap=-1, echo=lambda _: None, progress=False)
    assert not out.exists()


def test_a_demo_refuses_a_cap_of_zero_before_it_writes_anything(tmp_path):
    """No hit could be retrieved: the harvest would have nothing to do but fail."""
    out = tmp_path / "demo"
    with pytest.raises(mf.InvalidParameterError, match="cap must be 1 or more, got 0"):
        run(out, records=10, cap=0, echo=lambda _: None, progress=False)
    assert not out.exists()
