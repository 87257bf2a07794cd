"""The emulator shares no code with the client side: a shared bug would hide itself."""

from __future__ import annotations

import ast
from pathlib import Path

import mediaframe.emulator

PACKAGE = Path(mediaframe.emulator.__file__).parent
ALLOWED_THIRD_PARTY = {"numpy", "pandas", "pyarrow", "yaml", "click", "requests"}


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_every_file_imports_only_the_emulator_stdlib_or_allowed_libraries() -> None:
    import sys

    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 5
    for path in files:
        for name in imported_modules(path):
            top = name.split(".")[0]
            if top == "mediaframe":
                assert name.startswith("mediaframe.emulator"), f"{path.name} imports {name}"
            else:
                known = (
                    top in sys.stdlib_module_names
                    or top in ALLOWED_THIRD_PARTY
                    or top == "__future__"
                )
                assert known, f"{path.name} imports {name}"
