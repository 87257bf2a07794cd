"""Browser fixtures: Voilà serving notebooks on 127.0.0.1, Debian's Chromium via pytest-playwright.

pytest-playwright provides the browser (its session fixture ``browser``); the launch options it
uses, ``browser_type_launch_args``, are overridden here to name the system browser at
``/usr/bin/chromium`` (``apt-get install chromium``), or the one
``PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH`` names; Playwright's own browser download is never used.
Without that browser the tests are skipped, except under CI (``CI`` set), where a missing browser
is a failure: ``.ci/run`` installs it.

One Voilà server serves a folder for the whole session; a module writes its notebook there with
:meth:`Voila.serve` and opens it with ``open_screen``, in a page of its own that lasts the module
(a page starts a kernel: one per test would multiply the minutes). Every page only reaches
loopback: a request elsewhere (Voilà's template asks a CDN for icon fonts) is answered with an
empty body, here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import nbformat
import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Route

#: Debian's Chromium, or the browser ``PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH`` names (Playwright
#: itself never reads that variable: ``browser_type_launch_args`` passes it as ``executable_path``).
CHROMIUM = Path(os.environ.get("PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH") or "/usr/bin/chromium")
#: Headless, and nothing of Chromium's own traffic (updates, sync, QUIC probes) leaves the machine.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: Seconds Voilà may take to start, and a page to execute its notebook and render it.
START_TIMEOUT = 90


@pytest.fixture(scope="session")
def browser_type_launch_args(
    browser_type_launch_args: dict[str, Any], browser_name: str
) -> dict[str, Any]:
    """pytest-playwright's launch options aimed at Debian's headless Chromium.

    A missing executable skips the tests (fails them under CI) here, before Playwright or Voilà
    is started. ``--headed`` and ``--slowmo`` still work; ``--browser`` and ``--browser-channel``
    cannot name this browser, so they are refused.
    """
    if browser_name != "chromium" or browser_type_launch_args.get("channel"):
        pytest.fail(
            "tests/ui drive Debian's Chromium only: drop --browser/--browser-channel and name "
            "another Chromium with PLAYWRIGHT_CHROMIUM_EXECUTABLE_PATH=/path/to/chromium"
        )
    if not CHROMIUM.exists():
        why = (
            f"the browser tests need Chromium at {CHROMIUM}: "
            "`apt-get update && apt-get install -y chromium` (never `playwright install`)"
        )
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and {why}; .ci/run installs it before the tests")
        pytest.skip(why)
    headless = browser_type_launch_args.get("headless", True)
    args = [arg for arg in CHROMIUM_ARGS if headless or arg != "--headless"]
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "args": args}


@pytest.fixture(scope="session")
def base_url(pytestconfig: pytest.Config) -> str | None:
    """``--base-url`` (or the ``base_url`` ini value), as pytest-playwright's fallback gives it.

    That fallback is a session fixture defined as a method, which pytest 9.2 deprecates: its
    warning is an error in this suite (``filterwarnings = error``), so a plain function stands in.
    """
    given = pytestconfig.getoption("--base-url") or pytestconfig.getini("base_url")
    return str(given) if given else None


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's context options, at the 1280×1000 CSS pixels screenshots are taken at."""
    return {**browser_context_args, "viewport": {"width": 1280, "height": 1000}}


@dataclasses.dataclass
class Voila:
    """A Voilà server on 127.0.0.1 rendering the notebooks of ``folder``."""

    folder: Path
    url: str

    def serve(self, name: str, *cells: str) -> str:
        """Write a notebook of code ``cells`` as ``name`` and return the URL rendering it."""
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3 (tests)",
            "language": "python",
        }
        notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
        nbformat.write(notebook, self.folder / name)
        return f"{self.url}voila/render/{name}"


@pytest.fixture(scope="session")
def voila(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Voila]:
    """One Voilà server for the session, whose kernels run this interpreter.

    Its Jupyter and IPython folders, caches and logins are temporary; no ``MEDIAFRAME_*``
    setting of the user reaches it.
    """
    root = tmp_path_factory.mktemp("voila")
    folder = root / "notebooks"
    folder.mkdir()
    spec = root / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "Python 3 (tests)", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDIAFRAME_")}
    env.update(
        JUPYTER_PATH=str(root / "jupyter"),
        JUPYTER_CONFIG_DIR=str(root / "jupyter-config"),
        JUPYTER_RUNTIME_DIR=str(root / "runtime"),
        IPYTHONDIR=str(root / "ipython"),
        MPLBACKEND="Agg",
        MEDIAFRAME_CACHE_DIR=str(root / "cache"),
        MEDIAFRAME_CONFIG_DIR=str(root / "config"),
    )
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "voila",
        str(folder),
        "--no-browser",
        "--show_tracebacks=True",
        "--Voila.ip=127.0.0.1",
        f"--Voila.port={port}",
        "--Voila.port_retries=0",
        f"--Voila.connection_dir_root={root / 'connections'}",
    ]
    (root / "connections").mkdir()
    log = root / "voila.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stopped whole at the end
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_serving(server, url, log)
        yield Voila(folder=folder, url=url)
    finally:
        _stop(server)


@dataclasses.dataclass
class Screen:
    """One browser page and what it logged: JavaScript errors, requests it was refused."""

    page: Page
    errors: list[str] = dataclasses.field(default_factory=list)
    outside: list[str] = dataclasses.field(default_factory=list)

    def open(self, url: str) -> None:
        self.page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))
        self.page.on("console", self._console)
        self.page.context.route("**/*", self._loopback_only)
        self.page.goto(url, timeout=START_TIMEOUT * 1000)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console.error: {message.text}")

    def _loopback_only(self, route: Route) -> None:
        url = route.request.url
        if urlsplit(url).hostname in ("127.0.0.1", "localhost"):
            route.continue_()
        else:  # the tests talk to loopback only; an empty answer keeps the console quiet
            self.outside.append(url)
            route.fulfill(status=200, body="", content_type="text/css")


@pytest.fixture(scope="module")
def open_screen(
    browser: Browser, browser_context_args: dict[str, Any]
) -> Iterator[Callable[[str], Screen]]:
    """Opens a URL in a fresh context of pytest-playwright's ``browser``, for the whole module.

    ``browser`` is asked for first, so a missing Chromium skips before Voilà starts.
    """
    contexts: list[BrowserContext] = []

    def open_url(url: str) -> Screen:
        context = browser.new_context(**browser_context_args)
        contexts.append(context)
        screen = Screen(context.new_page())
        screen.open(url)
        return screen

    yield open_url
    for context in contexts:
        context.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_serving(server: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            text = log.read_text(errors="replace")
            raise RuntimeError(f"voila exited ({server.returncode}):\n{text}")
        if url in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise TimeoutError(f"voila did not serve {url} in {START_TIMEOUT} s:\n{log.read_text()}")


def _stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM lets Voilà shut its kernels down; what is left of its group is killed."""
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
