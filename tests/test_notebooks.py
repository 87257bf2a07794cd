"""Execute every tutorial notebook on a fresh kernel of this interpreter; any cell error fails."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
DOCS = ROOT / "docs" / "notebooks.md"

#: Seconds one cell may take; the whole of a notebook runs in a few seconds.
CELL_TIMEOUT = 120

# Prepended to the in-memory copy only: proves the kernel runs this venv's python, so the
# notebook sees the mediaframe under test and not some other installation on the machine.
_WHICH_PYTHON = "import sys; print(sys.prefix)"


@pytest.fixture
def isolated_jupyter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kernel environment that writes nothing outside ``tmp_path`` and ignores user settings.

    A ``python3`` kernelspec naming this interpreter comes first on ``JUPYTER_PATH``, ahead of any
    ``python3`` kernel the user or the system has installed for another Python.
    """
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "Python 3 (tests)", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for name in [name for name in os.environ if name.startswith("MEDIAFRAME_")]:
        monkeypatch.delenv(name)
    return tmp_path


def test_every_notebook_is_found_and_documented() -> None:
    assert {
        "01-quickstart.ipynb",
        "02-facets-and-widgets.ipynb",
        "03-collection-audit.ipynb",
        "04-scale-out.ipynb",
    } == {path.name for path in NOTEBOOKS}
    text = DOCS.read_text(encoding="utf-8")
    assert all(path.name in text for path in NOTEBOOKS)


def test_the_widget_screenshot_is_shown_in_the_docs() -> None:
    # taken by tests/ui (python -m pytest tests/ui --update-screenshots)
    image = DOCS.parent / "img" / "facet-filter.png"
    assert image.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "](img/facet-filter.png)" in DOCS.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code
    assert not [cell.id for cell in code if cell.outputs or cell.execution_count is not None]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_runs(path: Path, isolated_jupyter: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(_WHICH_PYTHON))
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(isolated_jupyter)}},
    )
    client.execute()  # raises CellExecutionError naming the failing cell

    assert _stdout(notebook.cells[0]).strip() == sys.prefix
    noise = [
        (index, output.get("text", ""))
        for index, cell in enumerate(notebook.cells)
        for output in cell.get("outputs", [])
        if output.get("name") == "stderr"
    ]
    assert not noise, f"cells wrote to stderr (warnings or progress bars): {noise}"
    # the harvest's progress is shown as a user sees it: tqdm's widget, not hidden
    bars = [
        output["data"]["text/plain"]
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in output.get("data", {})
        # a bar is first drawn as "fetching <kind>" (before the call's first request); the
        # harvest renames it, but the notebook keeps the text it was displayed with
        and output["data"].get("text/plain", "").startswith(("fetching ", "harvesting "))
    ]
    assert bars, "no cell showed a harvest's progress bar"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_does_not_hide_progress(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    hiding = [
        cell.id
        for cell in notebook.cells
        if cell.cell_type == "code"
        and ("progress=False" in cell.source or "MEDIAFRAME_PROGRESS" in cell.source)
    ]
    assert not hiding, f"cells hide the progress bar: {hiding}"


def test_readme_test_command_is_cis_and_says_how_to_get_chromium() -> None:
    """`python -m pytest` as the README and .ci/run give it collects tests/ui (no marker or path
    deselects it), and the README says where the browser comes from."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if 'pip install -e ".[dev]"' in line)
    assert command.endswith("&& python -m pytest")
    assert ci.rstrip().splitlines()[-1] == "python -m pytest"
    assert "apt-get install -y chromium" in readme and "apt-get install -y chromium" in ci
    with (ROOT / "pyproject.toml").open("rb") as file:
        options = tomllib.load(file)["tool"]["pytest"]["ini_options"]
    assert options["testpaths"] == ["tests"]
    assert not {"-m", "--ignore", "--deselect", "-k"} & set(options["addopts"].split())
    assert (ROOT / "tests" / "ui" / "test_facet_filter.py").is_file()


def _stdout(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


def test_the_audit_notebook_reads_status_bits_from_one_extended_harvest() -> None:
    """Issue 14: the audit used to run one harvest per status bit; it must harvest once, with
    ``extended=True``, and read every bit from the ``status_<bit>`` columns."""
    import re

    notebook = nbformat.read(ROOT / "notebooks" / "03-collection-audit.ipynb", as_version=4)
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    harvests = re.findall(r"\.(?:records|stories|story_records)\(([^)]*)\)", code)
    assert harvests == ["extended=True"], harvests
    assert "status=" not in code and "status_" in code
