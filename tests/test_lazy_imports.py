"""`import mediaframe` (and its notebook modules) stay light: the notebook extra loads on use."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("ipywidgets", "matplotlib", "IPython")


@pytest.mark.parametrize(
    "statement",
    [
        "import mediaframe",
        "import mediaframe.plots",
        "import mediaframe.widgets",
        "import mediaframe.accessor",
    ],
)
def test_importing_loads_no_notebook_library(statement: str) -> None:
    code = f"import sys; {statement}; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
