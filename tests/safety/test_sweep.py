"""The secret sweep can fail: an inner run that leaks a secret anywhere it looks fails."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).parents[1]

LEAKS = {
    "log": """
import logging
from mediaframe.auth import register_secret

def test_leak():
    register_secret("planted-secret-in-a-log")
    # a logger the sweep watches but redaction does not guard (every logger of mediaframe's
    # is guarded; of urllib3's, the one that sees request URLs)
    logging.getLogger("urllib3.response").debug("sending planted-secret-in-a-log")
""",
    "error": """
import pytest
from mediaframe.auth import register_secret

def test_leak():
    register_secret("planted-secret-in-an-error")
    with pytest.raises(KeyError):
        try:
            raise ValueError("planted-secret-in-an-error")
        except ValueError:
            raise KeyError("clean message")  # the secret rides along as __context__
""",
    "cut short": """
import pytest
from mediaframe.auth import register_secret

def test_leak():
    register_secret("planted-secret-cut-short-by-a-proxy")
    with pytest.raises(RuntimeError):
        raise RuntimeError("rejected planted-secret-cut...")  # 20 of its 35 characters
""",
    "file": """
from mediaframe.auth import register_secret

def test_leak(tmp_path):
    register_secret("planted-secret-in-a-file")
    (tmp_path / "export.csv").write_text("id,token\\n1,planted-secret-in-a-file\\n")
""",
    "emulator token in a cache file": """
from mediaframe.emulator import Emulator

def test_leak(tmp_path):
    token = Emulator(records=10, seed=1).token
    (tmp_path / "manifest.json").write_text('{"user": "%s"}' % token)
""",
    "repr": """
from mediaframe.auth import Token

def test_leak(monkeypatch):
    monkeypatch.setattr(Token, "__repr__", lambda self: f"Token({self.access_token})")
    Token("planted-secret-in-a-repr")
""",
}


#: What the sweep's report says for each planted leak.
REPORTED = {
    "log": "log record of urllib3.response",
    "error": "an exception caught by pytest.raises: ValueError",
    "cut short": "an exception caught by pytest.raises: RuntimeError",
    "file": "export.csv",
    "emulator token in a cache file": "manifest.json",
    "repr": "repr of Token",
}


def test_a_planted_secret_fails_the_run(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    pytester.makepyfile(**{f"test_{n}": LEAKS[where] for n, where in enumerate(sorted(LEAKS))})
    result = pytester.runpytest_subprocess("-p", "secret_sweep", f"--rootdir={pytester.path}")
    result.stdout.fnmatch_lines(["*secret sweep: FAILED*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # though every test passed
    result.assert_outcomes(passed=len(LEAKS))
    report = result.stdout.str()
    for where in LEAKS:
        assert REPORTED[where] in report, where
    assert "planted-secret" not in report  # the report masks what it found


def test_a_clean_run_passes(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    pytester.makepyfile(
        test_clean="""
import logging
from mediaframe.auth import register_secret, redact

def test_clean(tmp_path):
    register_secret("a-secret-kept-safe")
    logging.getLogger("mediaframe").debug(redact("using a-secret-kept-safe"))
    (tmp_path / "out.txt").write_text("nothing to see")
"""
    )
    result = pytester.runpytest_subprocess("-p", "secret_sweep", f"--rootdir={pytester.path}")
    result.stdout.fnmatch_lines(["*secret sweep: * none found*"])
    assert result.ret == pytest.ExitCode.OK
