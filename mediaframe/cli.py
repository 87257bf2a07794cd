"""Command line: parse, call the library, print; exit codes say what happened."""

from __future__ import annotations

import click

from mediaframe import __version__


@click.group()
@click.version_option(__version__, prog_name="mediaframe")
def main() -> None:
    """mediaframe: a Media Asset Service as typed DataFrames."""


def _register() -> None:
    # The emulator is a separate product inside the package: its commands are attached here,
    # and the emulator itself never imports the client side.
    from mediaframe.emulator.cli import emulator

    main.add_command(emulator)


_register()
