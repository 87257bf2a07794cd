"""What the command line says: warnings and errors in the CLI's own words, inert on a terminal."""

from __future__ import annotations

import warnings

import pytest

from mediaframe.cli.messages import said_for_cli, warnings_said
from mediaframe.cli.table import printable, render
from mediaframe.exceptions import IncompleteResultWarning
from tests.cli.conftest import runner_for

RLO, SO = "\N{RIGHT-TO-LEFT OVERRIDE}", "\x0e"


def test_a_warning_is_one_inert_line_without_a_source_path_and_the_display_is_restored(capsys):
    before = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with warnings_said():
            warnings.warn(
                f"Glyph 14 ({SO}) missing from font(s){RLO}\x1b[2J", UserWarning, stacklevel=1
            )
    assert warnings.showwarning is before
    err = capsys.readouterr().err
    assert err == "Warning: Glyph 14 (\ufffd) missing from font(s)\ufffd\ufffd[2J\n"


def test_an_allowed_incomplete_result_warns_without_advising_to_allow_it(capsys):
    message = (
        "only 9 of 10 records could be retrieved: ... Narrow the query, ask the server's "
        "administrator to raise the cap, or pass allow_incomplete=True to accept a partial result."
    )
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with warnings_said():
            warnings.warn(message, IncompleteResultWarning, stacklevel=1)
    err = capsys.readouterr().err
    assert "allow" not in err and err.endswith("raise the cap.\n")


@pytest.mark.filterwarnings("default")
def test_a_search_with_no_hit_warns_in_one_line(run):
    result = run("records", "sunsett")
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "sunsett" in line]
    assert lines and all(line.startswith("Warning: no record matches") for line in lines), lines
    assert ".py:" not in result.stderr


@pytest.mark.filterwarnings("default")
def test_what_the_server_warned_is_said_once_inert_and_in_the_summary(fresh_emulator, tmp_path):
    emu = fresh_emulator(records=300, cap=100)  # split into shards: many answers warn
    emu.set_search_warning(f"the part 'foo:' was ignored{RLO}\x1b[2J")
    result = runner_for(emu, tmp_path)("records", "--limit", "0")
    assert result.exit_code == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert len(said) == 1, result.stderr
    assert said[0].startswith("Warning: the search engine warned in its answers to this records")
    assert "was ignored\ufffd\ufffd[2J" in said[0]
    assert "\x1b" not in result.stderr + result.stdout and RLO not in result.stderr
    assert "the server warned (see its notes)" in result.stdout + result.stderr


def test_format_characters_are_shown_as_replacements_but_joiners_kept():
    family = "\N{MAN}\N{ZERO WIDTH JOINER}\N{WOMAN}"
    assert printable(f"gpj.{RLO}exe {family}") == f"gpj.\ufffdexe {family}"
    assert printable("a\N{LEFT-TO-RIGHT ISOLATE}b\N{ZERO WIDTH SPACE}") == "a\ufffdb\ufffd"
    text, _ = render(__import__("pandas").DataFrame({"name": [f"x{RLO}y"]}))
    assert RLO not in text and "x\ufffdy" in text


@pytest.mark.parametrize(
    ("library", "cli"),
    [
        (
            "date_min 2024/01/01 is after date_max 2023/01/01",
            "--since 2024/01/01 is after --until 2023/01/01",
        ),
        ("date_min='2024-13-01' is not a real day", "--since '2024-13-01' is not a real day"),
        (
            "status_only=True keeps the databoxes named in status=: give status= too, "
            "e.g. status={4: {'on': [1]}}",
            "--status-only keeps the databoxes named by --status: give --status too, "
            "e.g. --status 4:on:1",
        ),
        (
            "run it once online, or drop offline=True / MEDIAFRAME_OFFLINE",
            "run it once online, or drop --offline / MEDIAFRAME_OFFLINE",
        ),
        (
            "ttl='soon' is not a duration: give seconds, a timedelta, or a string such as '1h'",
            "--ttl 'soon' is not a duration: give seconds or a duration such as '1h'",
        ),
        ("or pass allow_incomplete=True to accept", "or pass --allow-incomplete to accept"),
        ("HTTP 400. Check the parameters of the call", "HTTP 400. Check the query and the options"),
    ],
)
def test_the_librarys_argument_names_are_said_as_options(library, cli):
    assert said_for_cli(library) == cli


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--since", "2024-01-01", "--until", "2023-01-01"), "--since 2024/01/01 is after --until"),
        (("--since", "2024-13-01"), "--since '2024-13-01' is not a real day"),
        (("--status-only",), "give --status too, e.g. --status 4:on:1"),
        (("--offline",), "drop --offline / MEDIAFRAME_OFFLINE"),
        (("--ttl", "abc"), "--ttl 'abc' is not a duration"),
    ],
)
def test_errors_name_the_options_given(run, args, says):
    result = run("records", *args)
    assert result.exit_code in (1, 2) and result.stderr.startswith("Error: "), result.stderr
    assert says in result.stderr and "date_min" not in result.stderr, result.stderr


def test_an_html_page_isolates_each_bit_of_a_servers_text(run, tmp_path):
    # U+202E in a title or a cell would reverse what follows it in the same line of the page:
    # a section's summary in the contents, the note of a cut cell
    assert run("records", "-o", str(tmp_path / "r.html")).exit_code == 0
    page = (tmp_path / "r.html").read_text()
    style = page[page.index("<style>") : page.index("</style>")]
    rule = next(line for line in style.splitlines() if "unicode-bidi: isolate" in line)
    for selector in ("td", "th", "dd", "nav a", ".mf-cut-cell"):
        assert selector in [s.strip() for s in rule.split("{")[0].split(",")], rule


def test_with_no_login_the_suggested_login_names_what_it_needs(emulator, tmp_path):
    from tests.cli.conftest import runner_for

    run = runner_for(emulator, tmp_path, MEDIAFRAME_TOKEN=None, MEDIAFRAME_BASE_URL=None)
    result = run("me")
    assert result.exit_code == 2, result.stderr
    said = result.stderr
    assert "`mediaframe login --profile default --url URL --client-id ID --username NAME`" in said
    assert "`mediaframe emulator serve`" in said
    # an address without a token: the CLI's way to give one, not connect()'s
    with_url = run("me", MEDIAFRAME_BASE_URL=emulator.base_url)
    assert "--token-stdin or MEDIAFRAME_TOKEN" in with_url.stderr
    assert "connect()" not in with_url.stderr, with_url.stderr


def test_a_rejected_token_says_how_to_log_in_again(fresh_emulator, tmp_path):
    from tests.cli.conftest import runner_for

    emu = fresh_emulator()
    run = runner_for(emu, tmp_path)
    token = emu.token_for("demo")
    emu.revoke(token)
    result = run("me", MEDIAFRAME_TOKEN=token)
    assert result.exit_code == 3, result.stderr
    assert "Log in again: `mediaframe login --url URL --client-id ID --username NAME`" in (
        result.stderr
    )


def test_connect_to_an_address_without_a_login_mentions_a_token(tmp_path):
    import mediaframe as mf
    from mediaframe.config import Settings
    from mediaframe.exceptions import ConfigurationError

    settings = Settings.from_env().replace(config_dir=tmp_path / "config")
    with pytest.raises(ConfigurationError, match=r"a token as token=") as raised:
        mf.connect("http://127.0.0.1:9", settings=settings)
    assert "--url URL --client-id ID" in str(raised.value)


@pytest.mark.parametrize(("progress", "drawn"), [(None, False), ("1", True), ("0", False)])
def test_progress_bars_only_on_a_terminal_unless_asked_for(emulator, tmp_path, progress, drawn):
    # a scheduler's log (stderr not a terminal) filled with bar frames joined by \r
    from tests.cli.conftest import runner_for

    run = runner_for(emulator, tmp_path, MEDIAFRAME_PROGRESS=progress)
    result = run("records", "sunset", "-o", str(tmp_path / "r.parquet"))
    assert result.exit_code == 0, result.stderr
    assert ("\r" in result.stderr) is drawn, repr(result.stderr)


def test_an_interrupted_harvest_says_running_it_again_resumes(run, monkeypatch):
    from mediaframe.client import Client

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Client, "records", interrupted)
    result = run("records", "sunset")
    assert result.exit_code == 130
    assert result.stderr == (
        "Interrupted; the shards already harvested are kept: run the same command again to "
        "resume.\n"
    )
    monkeypatch.setattr(Client, "me", interrupted)
    assert run("me").stderr == "Interrupted.\n"  # nothing harvested, nothing to resume


def test_the_summary_says_how_many_shards_were_resumed():
    from mediaframe.harvest import HarvestReport

    shards = [{"id": str(n)} for n in range(27)]
    report = HarvestReport("records", "", {}, 10, 10, complete=True, shards=shards, requests=10)
    assert "from 27 shard(s), 10 request(s)" in report.summary()
    report.resumed_shards = 18
    assert "from 27 shard(s) (18 resumed), 10 request(s)" in report.summary()


def test_records_takes_the_magics_date_options_too(run, tmp_path):
    one = run(
        "records", "--since", "2020-01-01", "--until", "2021-12-31", "-o", str(tmp_path / "a.csv")
    )
    other = run(
        "records",
        "--date-min",
        "2020-01-01",
        "--date-max",
        "2021-12-31",
        "-o",
        str(tmp_path / "b.csv"),
    )
    assert one.exit_code == 0 and other.exit_code == 0, one.stderr + other.stderr
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
