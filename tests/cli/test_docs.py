"""Every command is in docs/cli.md, and every command's help shows an example."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mediaframe.cli import main

DOC = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()


def _commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        yield path
        if isinstance(command, click.Group):
            yield from _commands(command, path)


COMMANDS = list(_commands(main))


def test_the_walk_finds_the_commands():
    names = {" ".join(path) for path in COMMANDS}
    assert {"records", "audit", "report", "cache ls", "emulator serve", "feed-entries"} <= names


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_each_command_has_a_heading_in_docs_cli_md(path):
    headings = [line for line in DOC.splitlines() if line.startswith("### ")]
    assert any(f"`{' '.join(path)}`" in line for line in headings), (
        f"docs/cli.md has no heading naming `{' '.join(path)}`"
    )


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_each_command_help_has_an_example(path):
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.stdout and f"mediaframe {path[0]}" in result.stdout


@pytest.mark.parametrize("path", [(), *COMMANDS], ids=lambda p: " ".join(p) or "mediaframe")
def test_a_help_naming_a_docs_page_says_where_it_is(path):
    # an installed package ships no docs/: a help page naming one says it is in the checkout
    shown = " ".join(CliRunner().invoke(main, [*path, "--help"]).stdout.split())
    for page in set(re.findall(r"docs/[\w-]+\.md", shown)):
        assert (Path(__file__).parents[2] / page).is_file(), page
        assert "source checkout" in shown, f"{' '.join(path)} --help names {page} without where"
