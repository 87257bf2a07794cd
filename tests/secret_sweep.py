"""The secret sweep: after the whole suite, no secret may be found where a user could see it.

Loaded by tests/conftest.py for every run. It learns the secrets of the run — every value
mediaframe was handed as a secret (``mediaframe.auth.register_secret``: tokens, client
secrets, passwords) and everything the emulator issues (tokens, codes) or holds (client
secrets, passwords). Each is looked for whole and, in logs, errors and reprs, cut short too
(its first run of the length :func:`mediaframe.tokens.least_run` says redaction hides), in:

- every log record of the ``mediaframe``, ``urllib3`` and ``requests_oauthlib`` loggers, at
  DEBUG, as handlers would print it;
- every exception a test caught with ``pytest.raises`` (message, args, attributes, repr, along
  the ``__cause__``/``__context__`` chain), and every failure report;
- the repr of every Client, Transport, API, Token, Profile, TokenStore and RemoteSearch made;
- every file the tests wrote under pytest's base temporary directory (caches, manifests,
  parquet metadata, exports), except token-store profiles, which are where tokens belong;
- the outputs of every executed notebook.

Anything found fails the run (exit status 1) with where it was found, the secret masked.
tests/safety/test_sweep.py proves it can fail by planting secrets in an inner run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_LOGGERS = ("mediaframe", "urllib3", "requests_oauthlib")
# Tokens the emulator issues are 32 lowercase hex digits: found by one regex pass over a file.
_HEX32 = re.compile(rb"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")
_MIN = 6


@dataclasses.dataclass
class Sweep:
    extra: set[str] = dataclasses.field(default_factory=set)
    found: list[str] = dataclasses.field(default_factory=list)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def secrets(self) -> set[str]:
        from mediaframe import tokens

        with tokens._SECRETS_LOCK:
            known = set(tokens._SECRETS)
        return {s for s in known | self.extra if len(s) >= _MIN}

    def learn(self, value: Any) -> None:
        if isinstance(value, str) and len(value) >= _MIN:
            with self.lock:
                self.extra.add(value)

    def check(self, text: str, where: str) -> None:
        if not text:
            return
        from mediaframe.tokens import least_run

        for secret in self.secrets():
            # whole, or cut short as a proxy's page echoes a header: its first run of the length
            # redaction hides (a prefix scan is as cheap as the whole one)
            if secret in text or secret[: least_run(len(secret))] in text:
                with self.lock:
                    self.found.append(f"{where}: holds {secret[:3]}…{secret[-2:]}")
                return

    def check_exception(self, error: BaseException | None, where: str) -> None:
        seen: set[int] = set()
        todo = [error]
        while todo:
            current = todo.pop()
            if current is None or id(current) in seen:
                continue
            seen.add(id(current))
            parts = [str(current), repr(current), *map(repr, current.args)]
            parts += [repr(v) for v in getattr(current, "__dict__", {}).values()]
            self.check("\n".join(parts), f"{where}: {type(current).__name__}")
            todo += [current.__cause__, current.__context__]

    def check_files(self, root: Path) -> None:
        secrets = self.secrets()
        hex_tokens = {s.encode() for s in secrets if _HEX32.fullmatch(s.encode())}
        others = [s.encode() for s in secrets if s.encode() not in hex_tokens]
        for path in _files(root):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            hit = next((m.group() for m in _HEX32.finditer(data) if m.group() in hex_tokens), None)
            hit = hit or next((s for s in others if s in data), None)
            if hit is not None:
                self.found.append(f"file {path}: holds {hit[:3].decode()}…")


def _files(root: Path) -> Iterator[Path]:
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            # the token store is where tokens belong (mode 0600); nothing else may hold one
            if path.parent.name == "profiles" and path.suffix in (".json", ".tmp"):
                continue
            if path.is_file() and not path.is_symlink():
                yield path


SWEEP = Sweep()


class _LogCheck(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        # a record that cannot be formatted is the logging module's business, not the sweep's
        with contextlib.suppress(Exception):
            SWEEP.check(self.format(record), f"log record of {record.name}")


def _wrap_init(cls: type) -> None:
    original = cls.__init__

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        SWEEP.check(repr(self), f"repr of {cls.__name__}")

    cls.__init__ = init  # type: ignore[misc]


def _wrap_accounts() -> None:
    from mediaframe.emulator import accounts

    for name in ("issue_token", "issue_code"):
        original = getattr(accounts.Accounts, name)

        @functools.wraps(original)
        def issue(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> str:
            value = __original(self, *args, **kwargs)
            SWEEP.learn(value)
            return value

        setattr(accounts.Accounts, name, issue)
    original_init = accounts.Accounts.__init__

    @functools.wraps(original_init)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        for app in self.apps.values():
            SWEEP.learn(app.client_secret)
        for user in self.users.values():
            SWEEP.learn(user.password)

    accounts.Accounts.__init__ = init  # type: ignore[method-assign]


def _wrap_raises() -> None:
    original = pytest.raises

    class Sweeping:
        def __init__(self, context: Any) -> None:
            self.context = context

        def __enter__(self) -> Any:
            return self.context.__enter__()

        def __exit__(self, kind: Any, error: Any, traceback: Any) -> Any:
            handled = self.context.__exit__(kind, error, traceback)
            SWEEP.check_exception(error, "an exception caught by pytest.raises")
            return handled

        def __getattr__(self, name: str) -> Any:
            return getattr(self.context, name)

    @functools.wraps(original)
    def raises(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        return Sweeping(result) if hasattr(result, "__exit__") else result

    pytest.raises = raises  # type: ignore[assignment]


def _widget_ids(nb: Any) -> set[str]:
    """The model ids of the widget views a notebook's outputs show, and of its saved state."""
    ids = set(nb.get("metadata", {}).get("widgets", {}).get(_WIDGET_STATE, {}).get("state", {}))
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get("application/vnd.jupyter.widget-view+json")
            if isinstance(view, dict) and isinstance(view.get("model_id"), str):
                ids.add(view["model_id"])
    return ids


_WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _wrap_notebooks() -> None:
    try:
        import nbclient
        import nbformat
    except ImportError:
        return
    original = nbclient.NotebookClient.execute

    @functools.wraps(original)
    def execute(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        finally:
            text = nbformat.writes(self.nb)
            SWEEP.check(text, "an executed notebook's outputs")
            # tokens issued inside the kernel are unknown here: any 32-hex value is suspect,
            # but for the ids ipywidgets gives its models (also 32 hex), named as such
            widgets = _widget_ids(self.nb)
            for match in _HEX32.finditer(text.encode()):
                if match.group().decode() in widgets:
                    continue
                SWEEP.found.append(
                    f"an executed notebook's outputs: a token-like {match.group()[:3].decode()}…"
                )

    nbclient.NotebookClient.execute = execute  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    from mediaframe import client, http, routes, tokens
    from mediaframe.auth import install_redaction, store

    # As in any process where mediaframe has sent a request: tests also send raw requests
    # (emulator tests), whose urllib3 records would otherwise be logged before mediaframe's
    # first transport installs the filters.
    install_redaction()
    handler = _LogCheck(logging.DEBUG)
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)
    for cls in (
        client.Client,
        client.RemoteSearch,
        http.Transport,
        routes.API,
        tokens.Token,
        store.Profile,
        store.TokenStore,
    ):
        _wrap_init(cls)
    _wrap_accounts()
    _wrap_raises()
    _wrap_notebooks()


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed and report.longreprtext:
        SWEEP.check(report.longreprtext, f"the failure report of {report.nodeid}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is not None:
        with contextlib.suppress(OSError, ValueError):
            SWEEP.check_files(factory.getbasetemp())
    if SWEEP.found:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if SWEEP.found:
        terminalreporter.section("secret sweep: FAILED", sep="=", red=True)
        for line in sorted(set(SWEEP.found))[:50]:
            terminalreporter.write_line(line)
    else:
        count = len(SWEEP.secrets())
        terminalreporter.write_line(
            f"secret sweep: {count} secrets, none found in logs, errors, reprs or files"
        )
