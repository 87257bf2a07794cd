"""The ``mediaframe`` command line: each command a thin layer over one library call.

Modules: :mod:`~mediaframe.cli.app` (the group, shared options, output, exit codes),
:mod:`~mediaframe.cli.auth` (login/logout/whoami), :mod:`~mediaframe.cli.data` (records, stories,
facets, search, me, feeds, baskets, sync), :mod:`~mediaframe.cli.jobs` (audit, report, demo),
:mod:`~mediaframe.cli.admin` (cache, info), :mod:`~mediaframe.cli.table` (terminal tables).
"""

from mediaframe.cli import admin, auth, data, jobs
from mediaframe.cli.app import EXIT_AUTHENTICATION, EXIT_CONFIGURATION, EXIT_ERROR, main

__all__ = ["EXIT_AUTHENTICATION", "EXIT_CONFIGURATION", "EXIT_ERROR", "main"]


def _register() -> None:
    # The emulator is a separate product inside the package: its commands are attached here,
    # and the emulator itself never imports the client side.
    from mediaframe.emulator.cli import emulator

    main.add_command(emulator)


_register()
del admin, auth, data, jobs
