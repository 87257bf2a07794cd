"""The process-wide tricks: each on by default, each turned off by the one switch."""

from __future__ import annotations

import gc
import threading

import pandas as pd
import pytest

import mediaframe as mf
from mediaframe import _process, frames
from mediaframe.cache.datasets import read_frame, write_frame
from mediaframe.config import process_tricks as from_environment
from mediaframe.exceptions import ConfigurationError, InvalidParameterError


@pytest.fixture(autouse=True)
def as_the_environment_says(monkeypatch):
    monkeypatch.delenv("MEDIAFRAME_PROCESS_TRICKS", raising=False)
    yield
    mf.process_tricks(None)


@pytest.fixture
def trims(monkeypatch):
    """Records each call of malloc_trim (and of Arrow's release) instead of making it."""
    calls: list[str] = []
    monkeypatch.setattr(_process, "_malloc_trim", lambda: lambda pad: calls.append("trim"))

    class Pool:
        def release_unused(self):
            calls.append("release")

    monkeypatch.setattr(_process.pa, "default_memory_pool", Pool)
    return calls


def _switched_off(monkeypatch, way):
    """Turn the tricks off one of the two ways: the environment, or the function."""
    if way == "environment":
        monkeypatch.setenv("MEDIAFRAME_PROCESS_TRICKS", "0")
    else:
        mf.process_tricks(False)
    assert not _process.active()


WAYS = ["environment", "function"]


def test_on_by_default_and_the_function_overrides_the_environment(monkeypatch):
    assert _process.active()
    monkeypatch.setenv("MEDIAFRAME_PROCESS_TRICKS", "0")
    assert not _process.active()
    mf.process_tricks(True)
    assert _process.active()
    mf.process_tricks(None)
    assert not _process.active()


def test_a_bad_switch_is_refused_saying_what_to_give(monkeypatch):
    monkeypatch.setenv("MEDIAFRAME_PROCESS_TRICKS", "maybe")
    with pytest.raises(ConfigurationError, match="MEDIAFRAME_PROCESS_TRICKS"):
        from_environment()
    with pytest.raises(InvalidParameterError, match="True, False or None"):
        mf.process_tricks("off")


@pytest.mark.parametrize("way", WAYS)
def test_the_collector_is_paused_only_with_the_tricks_on(monkeypatch, way):
    assert gc.isenabled()
    with _process.collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    _switched_off(monkeypatch, way)
    with _process.collector_paused():
        assert gc.isenabled()
    assert gc.isenabled()


@pytest.mark.parametrize("way", WAYS)
def test_memory_is_handed_back_only_with_the_tricks_on(monkeypatch, trims, way):
    _process.give_back_memory()
    assert trims == ["release", "trim"]
    _switched_off(monkeypatch, way)
    _process.give_back_memory()
    assert trims == ["release", "trim"]


def _readers_alive() -> int:
    return sum(thread.name.startswith("mediaframe-read") for thread in threading.enumerate())


@pytest.mark.parametrize("way", WAYS)
def test_reader_threads_are_kept_only_with_the_tricks_on(monkeypatch, tmp_path, way):
    frame = frames.records([{"databox_id": 1, "record_id": 2, "collection_id": 3}])
    write_frame(frame, str(tmp_path / "data"), provenance={}, sort_by=["databox_id"])
    with _process.reader_threads() as first, _process.reader_threads() as second:
        assert first is second  # the process's kept threads
    _switched_off(monkeypatch, way)
    with _process.reader_threads() as first, _process.reader_threads() as second:
        assert first is not second
    kept = _readers_alive()
    back, _ = read_frame(str(tmp_path / "data"))
    pd.testing.assert_frame_equal(back, frame)  # the same frame, without the tricks
    assert _readers_alive() == kept  # the read's own threads are gone once it is done


@pytest.mark.parametrize("way", WAYS)
def test_frames_are_the_same_without_the_tricks(monkeypatch, way):
    items = [
        {"databox_id": 1, "record_id": i, "technical_informations": [{"name": "ISO", "value": i}]}
        for i in range(50)
    ]
    with_tricks = frames.records(items)
    _switched_off(monkeypatch, way)
    pd.testing.assert_frame_equal(frames.records(items), with_tricks)
