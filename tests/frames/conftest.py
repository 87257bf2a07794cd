"""Golden payloads for the frames tests, read from tests/data/frames/."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mediaframe.frames import fastjson

DATA = Path(__file__).parent.parent / "data" / "frames"


@pytest.fixture
def payload():
    """Return the decoded golden payload ``tests/data/frames/<name>.json``."""

    def load(name: str) -> Any:
        return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))

    return load


def parquet_round_trip(frame: pd.DataFrame) -> pd.DataFrame:
    """Write ``frame`` to parquet in memory and read it back."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    buffer.seek(0)
    return pd.read_parquet(buffer)


@pytest.fixture
def fallbacks(monkeypatch):
    """Count the answers that took the decoded route instead of the native one."""
    calls = []
    decoded = fastjson._decoded

    def spy(body: bytes, *args: Any):
        calls.append(body)
        return decoded(body, *args)

    monkeypatch.setattr(fastjson, "_decoded", spy)
    return calls
