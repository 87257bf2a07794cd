"""login / logout / whoami against the emulator on loopback: secrets never on the command line."""

from __future__ import annotations

import errno
import json
import re
import stat

import pytest
import requests
from click.testing import CliRunner

from mediaframe import files
from mediaframe.auth import TokenStore
from mediaframe.cli import auth as cli


@pytest.fixture
def run(tmp_path, emulator):
    env = {
        "MEDIAFRAME_CONFIG_DIR": str(tmp_path),
        "MEDIAFRAME_CLIENT_ID": emulator.client_id,
        "MEDIAFRAME_CLIENT_SECRET": emulator.client_secret,
        "MEDIAFRAME_PASSWORD": None,
        "MEDIAFRAME_PROFILE": None,
        "MEDIAFRAME_BACKOFF": "0",
    }

    def invoke(*args, input=None, **extra_env):
        result = CliRunner().invoke(cli.main, list(args), input=input, env={**env, **extra_env})
        assert emulator.token not in result.output
        assert emulator.password not in result.output
        return result

    return invoke


def test_password_login_stores_a_private_profile_and_whoami_reads_it(run, emulator, tmp_path):
    login = run(
        "login", "--url", emulator.base_url, "--username", "demo", "--password-stdin",
        input=emulator.password + "\n",
    )  # fmt: skip
    assert login.exit_code == 0, login.output
    assert "as demo" in login.output and "profile 'default'" in login.output
    path = TokenStore(tmp_path).path("default")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    stored = json.loads(path.read_text())
    assert stored["base_url"] == emulator.base_url and "client_secret" not in stored
    who = run("whoami")
    assert who.exit_code == 0 and who.output.startswith("demo")
    assert stored["access_token"] not in who.output
    as_json = run("whoami", "--json")
    assert json.loads(as_json.output)["login"] == "demo"


def test_the_password_can_come_from_a_hidden_prompt_or_the_environment(run, emulator):
    prompted = run(
        "login", "--url", emulator.base_url, "--username", "demo", "--profile", "p1",
        input=emulator.password + "\n",
    )  # fmt: skip
    assert prompted.exit_code == 0, prompted.output
    from_env = run(
        "login", "--url", emulator.base_url, "--username", "demo", "--profile", "p2",
        MEDIAFRAME_PASSWORD=emulator.password,
    )  # fmt: skip
    assert from_env.exit_code == 0, from_env.output


@pytest.mark.parametrize("option", ["--password", "--client-secret"])
def test_secrets_as_arguments_are_refused(run, emulator, option):
    result = run("login", "--url", emulator.base_url, "--username", "demo", option, "visible")
    assert result.exit_code == 2
    assert "ps" in result.output


def test_a_wrong_password_exits_3_and_stores_nothing(run, emulator, tmp_path):
    result = run(
        "login", "--url", emulator.base_url, "--username", "demo", "--password-stdin",
        input="wrong\n",
    )  # fmt: skip
    assert result.exit_code == 3
    assert "invalid_grant" in result.output
    assert TokenStore(tmp_path).names() == []


def test_token_login_checks_the_token_first(run, emulator, tmp_path):
    good = run(
        "login", "--url", emulator.base_url, "--token-stdin", "--profile", "t", input=emulator.token
    )
    assert good.exit_code == 0, good.output
    bad = run(
        "login", "--url", emulator.base_url, "--token-stdin", "--profile", "u", input="f" * 32
    )
    assert bad.exit_code == 3
    assert "mediaframe login" in bad.output
    assert TokenStore(tmp_path).names() == ["t"]


def test_oob_login_reads_the_pasted_code(run, emulator, monkeypatch):
    def paste(url):
        page = requests.get(url, timeout=10).text
        return re.search(r'name="code" value="([^"]+)"', page).group(1)

    monkeypatch.setattr(cli, "_ask", paste)
    result = run("login", "--url", emulator.base_url, "--oob", "--profile", "hub")
    assert result.exit_code == 0, result.output
    assert "as demo" in result.output


@pytest.mark.parametrize(
    "args",
    [[], ["--oob", "--token-stdin"], ["--browser"]],
    ids=["none", "two", "browser-without-redirect"],
)
def test_login_needs_exactly_one_complete_way(run, emulator, args):
    result = run("login", "--url", emulator.base_url, *args)
    assert result.exit_code == 2


def test_plain_http_to_a_remote_host_exits_2(run):
    result = run("login", "--url", "http://assets.example.org", "--token-stdin", input="x")
    assert result.exit_code == 2
    assert "https" in result.output


def test_logout_removes_the_profile_and_says_so(run, emulator, tmp_path):
    run("login", "--url", emulator.base_url, "--token-stdin", input=emulator.token)
    first = run("logout")
    assert first.exit_code == 0 and "removed" in first.output and "revoke" in first.output
    assert TokenStore(tmp_path).names() == []
    second = run("logout")
    assert second.exit_code == 0 and "nothing to do" in second.output
    missing = run("whoami")
    assert missing.exit_code == 2 and "mediaframe login" in missing.output


def test_whoami_with_a_revoked_token_exits_3(run, emulator):
    token = emulator.token_for("demo")
    run("login", "--url", emulator.base_url, "--token-stdin", "--profile", "r", input=token)
    emulator.revoke(token)
    result = run("whoami", "--profile", "r")
    assert result.exit_code == 3
    assert "log in again" in result.output.lower()


def test_client_secret_alone_prompts_with_hidden_input(run, emulator):
    result = run(
        "login", "--url", emulator.base_url, "--username", "demo", "--client-secret",
        "--password-stdin", "--profile", "s",
        input=f"{emulator.client_secret}\n{emulator.password}\n",
        MEDIAFRAME_CLIENT_SECRET=None,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Client secret:" in result.output and emulator.client_secret not in result.output


# --- the group's options, and refusals before any token is issued -------------------------------


def test_profile_before_the_command_is_the_one_login_and_logout_act_on(run, emulator, tmp_path):
    store = TokenStore(tmp_path)
    run("login", "--url", emulator.base_url, "--token-stdin", input=emulator.token_for("demo"))
    login = run(
        "--profile", "work", "login", "--url", emulator.base_url, "--token-stdin",
        input=emulator.token_for("auditor"),
    )  # fmt: skip
    assert login.exit_code == 0, login.output
    assert "profile 'work'" in login.output
    assert store.names() == ["default", "work"]
    assert run("whoami").output.startswith("demo"), "the default login was overwritten"
    assert run("--profile", "work", "whoami").output.startswith("auditor")
    logout = run("--profile", "work", "logout")
    assert logout.exit_code == 0 and "profile 'work' removed" in logout.output
    assert store.names() == ["default"], "logout removed another profile than the one named"


@pytest.mark.parametrize("command", ["login", "logout", "whoami"])
def test_two_different_profiles_are_refused_and_nothing_changes(run, emulator, tmp_path, command):
    token = emulator.token_for("demo")
    for name in ("a", "b"):
        run("login", "--url", emulator.base_url, "--token-stdin", "--profile", name, input=token)
    extra = ["--url", emulator.base_url, "--token-stdin"] if command == "login" else []
    result = run("--profile", "a", command, "--profile", "b", *extra, input=token)
    assert result.exit_code == 2
    assert "two profiles" in result.output and "--profile a" in result.output
    assert TokenStore(tmp_path).names() == ["a", "b"]
    same = run("--profile", "a", command, "--profile", "a", *extra, input=token)
    assert same.exit_code == 0, same.output


def test_login_takes_the_address_and_token_stdin_given_before_the_command(run, emulator, tmp_path):
    login = run(
        "--base-url", emulator.base_url, "--token-stdin", "--profile", "g", "login",
        input=emulator.token,
    )  # fmt: skip
    assert login.exit_code == 0, login.output
    assert TokenStore(tmp_path).load("g").base_url == emulator.base_url
    both = run(
        "--base-url", "https://other.example.org", "login", "--url", emulator.base_url,
        "--token-stdin", input=emulator.token,
    )  # fmt: skip
    assert both.exit_code == 2 and "two service addresses" in both.output
    neither = run("login", "--token-stdin", input=emulator.token)
    assert neither.exit_code == 2 and "--url" in neither.output


@pytest.fixture
def flows(monkeypatch):
    """The login flows the command started (each would have the service issue a token)."""
    started: list[str] = []

    def record(name):
        def flow(*args, **kwargs):
            started.append(name)
            raise AssertionError(f"{name} started")

        return flow

    monkeypatch.setattr(cli, "connect", record("connect"))
    monkeypatch.setattr(cli, "_flow_login", record("flow"))
    return started


@pytest.mark.parametrize("way", [["--username", "demo", "--password-stdin"], ["--oob"]])
@pytest.mark.parametrize("name", ["my work", "a/b"])
def test_a_bad_profile_name_is_refused_before_any_login_flow(run, emulator, flows, way, name):
    result = run(
        "login", "--url", emulator.base_url, *way, "--profile", name, input=emulator.password
    )
    assert result.exit_code == 2
    assert "is not valid" in result.output
    assert flows == []


def test_an_unwritable_profile_folder_is_refused_before_the_login_and_logout_says_so(
    run, emulator, flows, tmp_path
):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the configuration folder should be")
    login = run(
        "login", "--url", emulator.base_url, "--username", "demo", "--password-stdin",
        input=emulator.password, MEDIAFRAME_CONFIG_DIR=str(blocked),
    )  # fmt: skip
    assert login.exit_code == 2 and flows == []
    assert "Error: cannot create the profile folder" in login.output
    assert "MEDIAFRAME_CONFIG_DIR" in login.output and "Traceback" not in login.output
    logout = run("logout", MEDIAFRAME_CONFIG_DIR=str(blocked))
    assert logout.exit_code == 2
    assert "Error: cannot remove profile 'default'" in logout.output


@pytest.fixture
def disk_fills_once(monkeypatch):
    """The next write of a file fails with ENOSPC (after the folder check), later ones work."""
    real = files._write_all
    failures = [OSError(errno.ENOSPC, "No space left on device")]

    def write(handle, data):
        if failures:
            raise failures.pop()
        real(handle, data)

    monkeypatch.setattr(files, "_write_all", write)
    return failures


def test_a_full_disk_at_a_terminal_keeps_the_login_for_another_try(
    run, emulator, tmp_path, disk_fills_once, monkeypatch
):
    monkeypatch.setattr(cli, "_at_a_terminal", lambda: True, raising=False)
    login = run(
        "login", "--url", emulator.base_url, "--username", "demo", input=emulator.password + "\ny\n"
    )  # fmt: skip
    assert login.exit_code == 0, login.output
    assert "No space left on device" in login.output and "try again" in login.output
    assert "profile 'default' saved" in login.output
    assert run("whoami").output.startswith("demo")


def test_a_full_disk_without_a_terminal_says_what_to_do_and_leaves_nothing_behind(
    run, emulator, tmp_path, disk_fills_once
):
    login = run(
        "login", "--url", emulator.base_url, "--username", "demo", "--password-stdin",
        input=emulator.password,
    )  # fmt: skip
    assert login.exit_code == 2
    assert "No space left on device" in login.output
    assert "mediaframe login --profile default` again" in login.output
    store = TokenStore(tmp_path)
    assert store.names() == [] and list(store.directory.iterdir()) == []


def test_connection_options_also_go_after_login_logout_and_whoami(run, emulator, tmp_path):
    # docs/cli.md: --base-url, --profile, --token-stdin and --quiet go after the command too
    login = run(
        "login", "--base-url", emulator.base_url, "--token-stdin", "--quiet", "--profile", "w",
        input=emulator.token,
    )  # fmt: skip
    assert login.exit_code == 0, login.output
    who = run("whoami", "--base-url", emulator.base_url, "--token-stdin", input=emulator.token)
    assert who.exit_code == 0 and who.output.startswith("demo"), who.output
    assert run("whoami", "--profile", "w", "--quiet").exit_code == 0
    logout = run("logout", "--profile", "w", "-q")
    assert logout.exit_code == 0 and "profile 'w' removed" in logout.output
