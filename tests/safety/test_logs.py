"""No secret reaches a log handler through any logger of mediaframe's, at any level."""

from __future__ import annotations

import importlib
import logging
import pkgutil
import traceback

import pytest

import mediaframe as mf
from mediaframe import _process, auth, tokens

SECRET = "10g5ecre7-10g5ecre7-10g5ecre7"
LEVELS = [logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL]


class Seen(logging.Handler):
    """Everything a handler could show of a record: its formatting and every attribute."""

    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record))
        self.texts.append(repr(vars(record)))
        if record.exc_info and record.exc_info[1] is not None:
            # a handler that formats the exception itself (Sentry, rich) reads exc_info
            self.texts.append("".join(traceback.format_exception(record.exc_info[1])))


@pytest.fixture
def seen():
    handler = Seen()
    root = logging.getLogger()
    root.addHandler(handler)
    yield handler
    root.removeHandler(handler)
    mf.process_tricks(None)


def _mediaframe_loggers() -> list[str]:
    """The logger of every module of mediaframe that has one, once all are imported."""
    for module in pkgutil.walk_packages(mf.__path__, "mediaframe."):
        importlib.import_module(module.name)
    names = [
        name
        for name, logger in logging.Logger.manager.loggerDict.items()
        if name.startswith("mediaframe.") and isinstance(logger, logging.Logger)
    ]
    assert "mediaframe.http" in names and "mediaframe.routes" in names
    return sorted(names)


def _log_everything(name: str) -> None:
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(1)
    try:
        for at in LEVELS:
            logger.log(at, "sent with token %s", SECRET)
            logger.log(at, f"a message holding {SECRET} itself")
            logger.log(at, "oauth_token=%s&x=1", SECRET, stack_info=True)
            try:
                raise ValueError(f"GET https://x.example/?oauth_token={SECRET}")
            except ValueError:
                logger.log(at, "failed", exc_info=True)
    finally:
        logger.setLevel(level)


#: How the tricks (and with them the record factory) are switched: on, off at run time, off by
#: the environment; and whether the factory is then in place.
SWITCHES = pytest.mark.parametrize(
    ("chosen", "environment", "factory"),
    [(True, None, True), (False, None, False), (None, "0", False)],
    ids=["tricks-on", "tricks-off", "MEDIAFRAME_PROCESS_TRICKS=0"],
)


def _switch(monkeypatch: pytest.MonkeyPatch, chosen: bool | None, environment: str | None) -> None:
    if environment is not None:
        monkeypatch.setenv("MEDIAFRAME_PROCESS_TRICKS", environment)
    mf.process_tricks(chosen)


def _leaks(seen: Seen) -> list[str]:
    assert seen.texts, "the handler saw nothing: the test proves nothing"
    return [text for text in seen.texts if SECRET in text]


@SWITCHES
def test_no_logger_of_mediaframes_modules_lets_a_secret_through(
    seen, monkeypatch, chosen, environment, factory
):
    _switch(monkeypatch, chosen, environment)
    names = ["mediaframe", *_mediaframe_loggers()]
    auth.register_secret(SECRET)  # as every token, password and client secret handed over is
    auth.install_redaction()  # as before any request
    assert _process.redacting_records() is factory
    for name in names:
        _log_everything(name)
    assert _leaks(seen) == []


@SWITCHES
def test_each_record_is_redacted_once(seen, monkeypatch, chosen, environment, factory):
    # with the tricks on, the record factory scrubs the record and the logger's own filter
    # lets it through; off, the filter alone scrubs it
    _switch(monkeypatch, chosen, environment)
    logging.getLogger("mediaframe.http")  # a logger of mediaframe's, with its filter
    auth.register_secret(SECRET)
    auth.install_redaction()
    assert _process.redacting_records() is factory
    scrubbed = []
    redact_record = tokens.redact_record

    def counted(record: logging.LogRecord) -> None:
        scrubbed.append(record.msg)
        redact_record(record)

    monkeypatch.setattr(tokens, "redact_record", counted)  # the filter's
    monkeypatch.setattr(_process, "_redactor", counted)  # the factory's
    logging.getLogger("mediaframe.http").warning("sent with token %s", SECRET)
    assert scrubbed == ["sent with token %s"]
    assert _leaks(seen) == []


def test_a_logger_made_after_the_first_request_is_redacted_too(seen):
    mf.process_tricks(None)
    assert _process.active()
    auth.register_secret(SECRET)
    auth.install_redaction()
    _log_everything("mediaframe.made_later.by_a_module_imported_late")
    assert _leaks(seen) == []


def test_knowing_a_secret_is_enough_to_redact_it(seen):
    # a token is registered the moment it exists, before any transport installs anything
    mf.process_tricks(None)
    auth.register_secret(SECRET)
    _log_everything("mediaframe.cache")
    assert _leaks(seen) == []


def test_the_record_factory_goes_with_the_tricks(seen):
    auth.register_secret(SECRET)
    mf.process_tricks(None)
    auth.install_redaction()
    assert _process.redacting_records()
    mf.process_tricks(False)
    assert not _process.redacting_records()
    assert logging.getLogRecordFactory() is logging.LogRecord  # the process's own again
    mf.process_tricks(None)
    assert _process.redacting_records()


def test_a_switch_that_does_not_read_leaves_logging_working_and_redacted(seen, monkeypatch):
    # the other tricks report the bad value where they are used; a log call must not raise
    monkeypatch.setenv("MEDIAFRAME_PROCESS_TRICKS", "maybe")
    mf.process_tricks(None)
    auth.register_secret(SECRET)
    _log_everything("mediaframe.somewhere_new")
    assert _leaks(seen) == []


def test_a_log_call_reads_no_environment(seen, monkeypatch):
    # the switch is read where the factory is put in place, not once per record
    mf.process_tricks(None)
    auth.register_secret(SECRET)
    assert _process.redacting_records()
    read: list[str] = []
    monkeypatch.setattr(_process.config, "process_tricks", lambda *a: read.append("env") or True)
    for _ in range(5):
        logging.getLogger("mediaframe.http").warning("sent with token %s", SECRET)
    assert read == []
    assert _leaks(seen) == []


def test_registering_a_secret_does_not_go_over_every_logger(seen, monkeypatch):
    auth.register_secret(SECRET)  # every logger there is now is guarded
    manager = logging.Logger.manager
    scans: list[int] = []

    class Registry(dict):
        def items(self):
            scans.append(len(self))
            return super().items()

    monkeypatch.setattr(manager, "loggerDict", Registry(manager.loggerDict))
    for n in range(20):
        auth.register_secret(f"{SECRET}-{n}")
    assert scans == []
    _log_everything("mediaframe.http")
    assert [text for text in seen.texts if SECRET in text] == []


@pytest.mark.parametrize("chosen", [True, False])
def test_a_logger_made_between_two_secrets_is_guarded_by_the_second(seen, chosen):
    # with the tricks off, its filter alone scrubs it: as when each secret went over them all
    mf.process_tricks(chosen)
    auth.register_secret(SECRET)
    child = logging.getLogger(f"mediaframe.between_{chosen}.secrets")  # its parent: a placeholder
    auth.register_secret(f"{SECRET}-second")
    assert any(isinstance(f, tokens.RedactingFilter) for f in child.filters)
    parent = logging.getLogger(f"mediaframe.between_{chosen}")  # made in the placeholder's stead
    auth.register_secret(f"{SECRET}-third")
    assert any(isinstance(f, tokens.RedactingFilter) for f in parent.filters)
    for name in (child.name, parent.name):
        _log_everything(name)
    assert _leaks(seen) == []
