"""`audit` and `report` from the command line, written as a scheduler would ask."""

from __future__ import annotations

import openpyxl
from click.testing import CliRunner

from mediaframe.cli import main
from tests.cli.conftest import runner_for


def test_audit_prints_one_line_per_check_and_writes_html_xlsx_and_csv(fresh_emulator, tmp_path):
    emu = fresh_emulator(records=800, cap=200)
    run = runner_for(emu, tmp_path)
    result = run("audit")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0].split() == ["check", "rows", "summary"]
    assert "duplicates" in result.stdout and "fixity_drift" in result.stdout
    assert "baseline" in result.stdout
    assert run("audit", "-o", str(tmp_path / "a.html")).exit_code == 0
    page = (tmp_path / "a.html").read_text()
    assert "Duplicate files" in page and "Content-Security-Policy" in page
    assert run("audit", "-o", str(tmp_path / "a.xlsx")).exit_code == 0
    assert openpyxl.load_workbook(tmp_path / "a.xlsx").sheetnames[0] == "README"
    folder = run("audit", "-q", "-o", str(tmp_path / "csv"))
    assert folder.exit_code == 0 and folder.stderr == ""
    assert (tmp_path / "csv" / "duplicates.csv").exists()
    wrong = run("audit", "-o", str(tmp_path / "a.pdf"))
    assert wrong.exit_code == 1 and ".pdf" in wrong.stderr


def test_report_per_year_to_every_form(fresh_emulator, tmp_path):
    emu = fresh_emulator(records=600, cap=200)
    run = runner_for(emu, tmp_path)
    result = run("report", "--period", "year", "--start", "2020-01-01")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["period", "created", "updated", "storage_added"]
    assert lines[1].split()[0] == "2020"
    for name in ("r.html", "r.xlsx"):
        assert run("report", "-o", str(tmp_path / name)).exit_code == 0
    assert "<svg" in (tmp_path / "r.html").read_text()
    sheets = openpyxl.load_workbook(tmp_path / "r.xlsx").sheetnames
    assert sheets == ["README", "activity", "totals", "feeds"]
    bad = run("report", "--start", "soon")
    assert bad.exit_code == 2 and "YYYY-MM-DD" in bad.stderr
    swapped = run("report", "--start", "2024-03-01", "--end", "2024-01-31")
    assert swapped.exit_code == 2 and "swap them" in swapped.stderr


def test_a_job_refuses_an_output_it_cannot_write_before_it_harvests(fresh_emulator, tmp_path):
    emu = fresh_emulator(records=300, cap=200)
    run = runner_for(emu, tmp_path)
    for command in ("audit", "report"):
        for name in ("a.csv", "missing/a.xlsx"):
            wrong = run(command, "-o", str(tmp_path / name))
            assert wrong.exit_code == 1
            assert wrong.stderr.startswith("Error: ") and len(wrong.stderr.splitlines()) == 1
    # nothing was harvested: the fixity baseline is still to be made by the first real audit
    first = run("audit", "-o", str(tmp_path / "a.html"))
    assert first.exit_code == 0 and "baseline" in first.stderr


def test_demo_refuses_a_negative_size_or_a_cap_below_one_before_it_writes_anything(tmp_path):
    out = tmp_path / "demo"
    for bad in (["--cap", "-1", "--records", "10"], ["--cap", "0"], ["--records", "-5"]):
        result = CliRunner().invoke(main, ["demo", *bad, "--out", str(out), "--no-progress"])
        assert result.exit_code == 2, result.output
        assert f"Invalid value for '{bad[0]}'" in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert not out.exists(), "the output folder was made for a demo that never ran"
