"""The project speaks of itself alone: every Markdown file its docs, code, notebooks and tests
name is a file of the repository, so a reader can open what they are pointed at."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMED = re.compile(r"[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b")
SOURCES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    + [
        path
        for folder in ("mediaframe", "tests", "notebooks", "bench", "scripts")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in {".py", ".ipynb", ".md"}
    ]
)


def test_the_sources_are_found():
    names = {path.relative_to(ROOT).as_posix() for path in SOURCES}
    assert {"README.md", "docs/emulator.md", "mediaframe/emulator/flavours.py"} <= names


def test_every_markdown_file_named_is_in_the_repository():
    missing = {
        f"{source.relative_to(ROOT)}: {name}"
        for source in SOURCES
        for name in NAMED.findall(source.read_text(encoding="utf-8"))
        if not any((where / name).is_file() for where in (ROOT, ROOT / "docs", source.parent))
    }
    assert not missing, f"files named but not in the repository: {sorted(missing)}"


FROM_AN_INDEX = re.compile(r"""pip install\s+(?:-U\s+)?\\?['"]?mediaframe\b""")


def test_install_hints_work_from_a_checkout():
    """mediaframe is installed from its folder (``pip install -e ".[notebook]"``): a hint that
    installs it by name, extras and all, fails outside the venv that already holds it."""
    wrong = {
        f"{source.relative_to(ROOT)}: {match.group()}"
        for source in SOURCES
        for match in FROM_AN_INDEX.finditer(source.read_text(encoding="utf-8"))
    }
    assert not wrong, f"install hints that only an index could answer: {sorted(wrong)}"


def test_the_readme_says_what_ci_adds_to_its_test_command():
    """.ci/run runs the README's test command after other checks and with a larger fuzz budget:
    the README names each of them rather than calling its command "the same as CI"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    checks = {line.split()[0] for line in ci if line.split()[:1] in (["ruff"], ["mypy"])}
    checks |= {"lint-imports"} if "lint-imports" in ci else set()
    profile = next(line for line in ci if "HYPOTHESIS_PROFILE" in line)
    assert checks == {"ruff", "mypy", "lint-imports"}
    assert all(f"`{check}" in readme for check in checks)
    assert "HYPOTHESIS_PROFILE=ci" in readme and ":-ci}" in profile
    assert "scripts/check" in readme and "the same command CI runs" not in readme


def test_the_readme_lists_every_page_of_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in (ROOT / "docs").glob("*.md") if f"`docs/{p.name}`" not in readme]
    assert not missing
