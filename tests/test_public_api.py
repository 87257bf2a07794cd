"""The public surface is small and deliberate: a change to it must change this test."""

from __future__ import annotations

import subprocess
import sys

import mediaframe
from mediaframe import exceptions


def test_all_is_pinned():
    assert sorted(mediaframe.__all__) == sorted(
        [
            "Client",
            "HarvestReport",
            "connect",
            "process_tricks",
            "to_dask",
            "to_duckdb",
            "__version__",
            *exceptions.__all__,
        ]
    )
    for name in mediaframe.__all__:
        assert hasattr(mediaframe, name), name


def test_import_is_light_and_changes_nothing_global():
    probe = (
        "import logging, os, sys; before = dict(os.environ); import mediaframe; "
        "assert dict(os.environ) == before; "
        "heavy = {'ipywidgets', 'matplotlib'} & set(sys.modules); assert not heavy, heavy; "
        "assert not logging.getLogger('urllib3.connectionpool').filters"
    )
    subprocess.run([sys.executable, "-c", probe], check=True)
