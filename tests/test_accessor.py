"""``df.media`` on records frames, and the IPython extension in an in-process shell."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from IPython.core.error import UsageError
from twins import make_twins

import mediaframe as mf
import mediaframe.accessor
from mediaframe.auth import Profile, Token, TokenStore
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.frames import technical_long

# every test draws off-screen and has its figures closed after it (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("pyplot")


@pytest.fixture(scope="module")
def client(inprocess_emulator: Emulator, tmp_path_factory: pytest.TempPathFactory) -> mf.Client:
    settings = Settings.from_env().replace(
        cache_dir=tmp_path_factory.mktemp("cache"), progress=False
    )
    return mf.connect(
        inprocess_emulator.base_url,
        token=inprocess_emulator.token,
        settings=settings,
        session=inprocess_emulator.requests_session(),
    )


@pytest.fixture(scope="module")
def records(client: mf.Client) -> pd.DataFrame:
    return client.records("sunset")


def test_not_a_records_frame_is_refused_clearly(client: mf.Client) -> None:
    with pytest.raises(AttributeError, match=r"records frames.*no databox_id or record_id"):
        _ = pd.DataFrame({"a": [1]}).media
    with pytest.raises(AttributeError, match="no record_id"):
        _ = client.stories().media
    assert not hasattr(client.feeds(), "media")


def test_every_plot_is_there(client: mf.Client, records: pd.DataFrame) -> None:
    me = client.me()
    assert records.media.media_types().get_title() == "Records per media type"
    assert records.media.timeline(period="Y").get_ylabel() == "records"
    assert records.media.collections(names=me.collections).get_ylabel() == "collection"
    assert records.media.technical("ISO").get_xlabel() == "ISO"
    assert records.media.positions().get_xlabel().startswith("longitude")
    with pytest.warns(mf.EmptyPlotWarning):  # no status bits without an extended harvest
        records.media.status_usage()
    ax = records.media.rights(me)
    shown = [t.get_text() for t in ax.get_yticklabels()]
    names = me.collections.set_index("base_id")["name"]
    assert shown == [names[b] for b in sorted(set(records["base_id"]))]
    items = client.feed_items()
    entries = client.feed_entries()
    ax = items.media.feed_activity(entries, period="Y")
    held = entries[entries["id"].isin(items["entry_id"])]
    assert sum(b.get_height() for bars in ax.containers for b in bars) == len(held)


def test_gallery_escapes_every_value() -> None:
    frame = pd.DataFrame(
        {
            "databox_id": [1, 1, 1],
            "record_id": [1, 2, 3],
            "title": ["<script>alert(1)</script>", 'it\'s "quoted"', None],
            "original_name": ["a.jpg", "b.jpg", "<img src=x onerror=alert(2)>.jpg"],
            "thumbnail_url": [
                "https://h.test/t.jpg?a=1&b='x'",
                "javascript:alert(3)",
                "https://h.test/<b>.jpg",
            ],
        }
    )
    markup = frame.media.gallery()._repr_html_()
    assert "<script>" not in markup and "<img src=x" not in markup
    assert "&lt;script&gt;" in markup and "&lt;img src=x onerror=alert(2)&gt;.jpg" in markup
    assert "javascript:" not in markup
    assert "a=1&amp;b=&#x27;x&#x27;" in markup
    assert "it&#x27;s &quot;quoted&quot;" in markup
    assert markup.count("<figure") == 3
    assert "and 1 more" in frame.media.gallery(limit=2)._repr_html_()


def test_technical_long_is_the_frames_values_in_long_form(
    client: mf.Client, records: pd.DataFrame
) -> None:
    long = records.media.technical_long()
    assert list(long.columns) == ["databox_id", "record_id", "name", "value"]
    assert "ISO" in set(long["name"]) and "title" not in set(long["name"])
    assert not {"thumbnail_url", "base_id"} & set(records.media.technical_columns())
    # the same values the server sent, in the shape of frames.technical_long
    raw = client.api.search("sunset", per_page=1000)["results"]["records"]
    direct = technical_long(raw).sort_values(["databox_id", "record_id", "name"])
    assert len(long) == len(direct)
    assert long["name"].tolist() == direct["name"].tolist()
    assert [float(v) for v in long.loc[long["name"] == "ISO", "value"]] == [
        float(v) for v in direct.loc[direct["name"] == "ISO", "value"]
    ]


@pytest.mark.parametrize("kind", ["feed_items", "story_records", "basket_records"])
def test_bookkeeping_columns_are_not_technical_values(client: mf.Client, kind: str) -> None:
    frame = getattr(client, kind)()
    own = {"entry_id", "item_id", "story_databox_id", "story_id", "position", "basket_id"}
    own |= {"basket_element_id", "order", "validation_item", "agreement", "note"}
    own |= {c for c in frame.columns if c.startswith(("agreement_", "note_"))}
    assert own & set(frame.columns), "the frame has columns of its own"
    assert not own & set(frame.media.technical_columns())
    names = set(frame.media.technical_long()["name"])
    assert "ISO" in names and not own & names


def test_report_and_safe_exports(records: pd.DataFrame, tmp_path: Path) -> None:
    assert records.media.report().complete
    assert records.head(3).media.report().kind == "records"  # attrs travel, state does not
    with pytest.raises(ValueError, match="no harvest report"):
        pd.DataFrame({"databox_id": [1], "record_id": [1]}).media.report()
    risky = records.head(2).assign(title=['=HYPERLINK("http://x")', "-1+1"])
    path = records.media.to_csv(tmp_path / "r.csv")
    assert pd.read_csv(path).shape[0] == len(records)
    risky.media.to_csv(tmp_path / "risky.csv")
    text = (tmp_path / "risky.csv").read_text(encoding="utf-8")
    assert "'=HYPERLINK" in text and "'-1+1" in text
    xlsx = risky.media.to_excel(tmp_path / "r.xlsx")  # tz-aware dates and all
    back = pd.read_excel(xlsx)
    assert back.shape[0] == 2


# --- the IPython extension ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def ip():
    from IPython.testing.globalipapp import start_ipython

    with warnings.catch_warnings():  # IPython's test app may warn about its own setup
        warnings.simplefilter("ignore")
        shell = start_ipython()
    shell.run_line_magic("load_ext", "mediaframe")
    yield shell
    shell.run_line_magic("unload_ext", "mediaframe")


@pytest.fixture(scope="module")
def contract_emulator() -> Iterator[Emulator]:
    """The contract's server only: IPython's test shell starts once per process, so these
    tests cannot run once per server generation (the frames tests cover the shapes)."""
    with Emulator(records=2000, seed=7) as emu:
        yield emu


@pytest.fixture
def served(
    contract_emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Emulator:
    emulator = contract_emulator
    monkeypatch.setenv("MEDIAFRAME_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("MEDIAFRAME_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MEDIAFRAME_PROGRESS", "0")
    return emulator


def test_connect_and_search_magics(ip, served: Emulator, capsys) -> None:
    ip.user_ns["tok"] = served.token
    ip.run_line_magic("mf_connect", f"{served.base_url} --token $tok")
    assert "client = <Client http://127.0.0.1" in capsys.readouterr().out
    client = ip.user_ns["client"]
    assert isinstance(client, mf.Client)
    result = ip.run_cell_magic("mf_search", "found --record-type image", "sunset\n")
    assert result is None  # stored, not displayed
    found = ip.user_ns["found"]
    expected = client.records("sunset", record_type="image")
    pd.testing.assert_frame_equal(found, expected)
    assert capsys.readouterr().out.startswith(f"found: {len(expected)} records of")
    assert found.media.report().complete  # the extension registered df.media


def test_search_magic_takes_the_command_lines_date_options(ip, served: Emulator) -> None:
    ip.user_ns["client"] = client = mf.connect(served.base_url, token=served.token)
    ip.run_cell_magic("mf_search", "dated --since 2020-01-01 --until 2021-12-31", "\n")
    expected = client.records(date_min="2020-01-01", date_max="2021-12-31", date_field="created_on")
    pd.testing.assert_frame_equal(ip.user_ns["dated"], expected)


def test_connect_magic_reads_a_stored_profile(ip, served: Emulator, tmp_path: Path) -> None:
    profile = Profile(served.base_url, Token(served.token), None, None)
    TokenStore(tmp_path / "config").save("work", profile)
    ip.run_line_magic("mf_connect", "work --name work_client")
    assert ip.user_ns["work_client"].profile == "work"


@pytest.mark.parametrize(
    ("cell", "said"),
    [
        ("%%mf_search x --client nobody\nsunset", "no client in 'nobody': run %mf_connect"),
        ("%%mf_search 1x\nsunset", "'1x' is not a Python name"),
        ("%%mf_search x --bases a,b\nsunset", "give ids like 1,2"),
        ("%%mf_search x --date-min 2020-13-01\nsunset", "date_min='2020-13-01' is not a real day"),
        ("%%mf_search x\n(sunset AND", "BadRequestError: "),
        ("%%mf_search x --record-type photo\nsunset", "record_type must be one of image"),
        ("%mf_connect nosuchprofile", "run `mediaframe login --profile nosuchprofile --url URL"),
        ("%mf_connect work --token abc", "--token goes with a service URL"),
        (
            "%mf_connect https://example.org",
            "or pass a token, as in %mf_connect https://example.org --",
        ),
        ("%mf_connect https://example.org --name 1x", "'1x' is not a Python name"),
        ("%mf_connect http://127.0.0.1:9 --token '$tok", "No closing quotation"),
        ("%%mf_search x --bases '1\nsunset", "No closing quotation"),
        ("%mf_connect http://[bad --token $tok", "cannot be read as a URL"),
        ("%mf_connect https://h.example:99999 --token $tok", "cannot be read as a URL"),
    ],
)
def test_a_bad_argument_of_a_magic_is_said_without_a_traceback(
    ip, served: Emulator, cell: str, said: str, capsys
) -> None:
    """As IPython's own argument errors: a UsageError, shown as its message alone, which still
    stops a notebook run (nbclient raises on it)."""
    ip.user_ns["client"] = mf.connect(served.base_url, token=served.token)
    ip.user_ns["tok"] = "9f3c2a7d1e5b4c6a8d0e2f4a6b8c0d1e"
    ip.user_ns.pop("nobody", None)
    ip.run_line_magic("xmode", "Verbose")  # shows the locals of every frame, the line's too
    try:
        result = ip.run_cell(cell)
    finally:
        ip.run_line_magic("xmode", "Context")
    error = result.error_in_exec
    assert isinstance(error, UsageError), error
    assert said in str(error) and error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__
    shown = capsys.readouterr()
    assert said in shown.err and "Traceback" not in shown.out + shown.err
    assert ip.user_ns["tok"] not in shown.out + shown.err + str(error)


_TOKENS = [
    "9f3c2a7d1e5b4c6a8d0e2f4a6b8c0d1f",  # the service's: 32 lowercase hex digits
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZGEifQ.c2lnbmF0dXJl-_x",  # a JWT, as other servers issue
    "ya29.A0ARrdaM-b3k5Tq8Zp0Xy2Lm",  # and shorter opaque ones
]


@pytest.mark.parametrize("secret", _TOKENS, ids=["hex", "jwt", "opaque"])
@pytest.mark.parametrize(
    ("cell", "said"),
    [
        ("%mf_connect {t}", "run `mediaframe login --profile *** --url URL"),
        ("%mf_connect $typed", "run `mediaframe login --profile *** --url URL"),
        ("%mf_connect https://example.org {t}", "unrecognized arguments: ***"),
        ("%mf_connect https://example.org --name {t}", "is not a Python name"),
        ("%mf_connect {t} --token $tok", "--token goes with a service URL"),
        ("%mf_connect 'a/{t}'", "is not valid"),
        ("%%mf_search {t}\nsunset", "is not a Python name"),
        ("%%mf_search x --client {t}\nsunset", "run %mf_connect"),
        ("%%mf_search x --bases {t}\nsunset", "give ids like 1,2"),
    ],
)
def test_a_token_typed_where_a_magic_wants_a_name_is_never_repeated(
    ip, served: Emulator, cell: str, said: str, secret: str, capsys
) -> None:
    ip.user_ns["client"] = mf.connect(served.base_url, token=served.token)
    ip.user_ns["tok"] = "0d1e2f4a6b8c9f3c2a7d1e5b4c6a8d0e"
    ip.user_ns["typed"] = secret
    ip.run_line_magic("xmode", "Verbose")  # shows the locals of every frame, the line's too
    try:
        result = ip.run_cell(cell.replace("{t}", secret))
    finally:
        ip.run_line_magic("xmode", "Context")
    error = result.error_in_exec
    assert isinstance(error, UsageError), error
    shown = capsys.readouterr()
    assert said in str(error), str(error)
    for text in (str(error), shown.out, shown.err):
        assert secret not in text and ip.user_ns["tok"] not in text
        assert secret[:16] not in text  # nor a part of it


@pytest.mark.parametrize(
    "name",
    ["work", "ada-2024", "team_archive.prod", "MyArchiveProfile2024", "sunset-2024-q3-export"],
)
def test_a_profile_name_is_still_said_as_typed(ip, served: Emulator, name: str) -> None:
    result = ip.run_cell(f"%mf_connect {name}")
    assert isinstance(result.error_in_exec, UsageError)
    assert f"run `mediaframe login --profile {name} --url" in str(result.error_in_exec)


@pytest.fixture
def capped(tmp_path: Path) -> tuple[mf.Client, str]:
    """A client of a server under a cap of 1, and the options of a search no split gets under
    it: twins of one base, day and type that no status bit tells apart."""
    emu = Emulator(records=400, seed=2, cap=1)
    _, first = make_twins(emu)
    settings = Settings.from_env().replace(
        config_dir=tmp_path / "config", cache_dir=tmp_path / "cache", progress=False
    )
    client = mf.connect(
        emu.inprocess_url, token=emu.token, settings=settings, session=emu.requests_session()
    )
    return client, f"--record-type {first.media_type} --bases {int(first.base_id)}"


def test_a_search_the_cap_cuts_short_is_refused_naming_the_magics_option(ip, capped) -> None:
    client, options = capped
    ip.user_ns["client"] = client
    ip.user_ns.pop("part", None)
    with pytest.raises(UsageError) as raised:
        ip.run_cell_magic("mf_search", f"part {options}", "\n")
    said = str(raised.value)
    assert said.startswith("IncompleteResultError: ") and "cap of 1 hits" in said
    assert "pass --allow-incomplete to accept a partial result" in said
    assert "allow_incomplete=True" not in said and "part" not in ip.user_ns
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_the_search_magic_takes_allow_incomplete(ip, capped, capsys) -> None:
    client, options = capped
    ip.user_ns["client"] = client
    with pytest.warns(mf.IncompleteResultWarning, match="cap of 1"):
        ip.run_cell_magic("mf_search", f"part {options} --allow-incomplete", "\n")
    part = ip.user_ns["part"]
    report = part.media.report()
    assert not report.complete and report.incomplete and 0 < len(part) < report.total_results
    assert "(INCOMPLETE)" in capsys.readouterr().out
    # the partial result is cached: read back only by a call that allows one too
    ip.run_cell_magic("mf_search", f"again {options} --offline --allow-incomplete", "\n")
    assert ip.user_ns["again"].media.report().from_cache
    with pytest.raises(UsageError) as refused:
        ip.run_cell_magic("mf_search", f"refused {options} --offline", "\n")
    said = str(refused.value)
    assert "pass --allow-incomplete to read that partial result, or drop --offline" in said


def test_magics_are_thin_over_plain_functions(served: Emulator) -> None:
    from mediaframe.magics import connect_to, search_into

    with connect_to(served.base_url, token=served.token) as client:
        namespace: dict = {}
        line = search_into(namespace, "df", client, "sunset", bases=[1])
        assert set(namespace["df"]["base_id"]) == {1} and line.startswith("df: ")
        with pytest.raises(mf.InvalidParameterError, match="not a Python name"):
            search_into(namespace, "1df", client, "")
    with pytest.raises(mf.ConfigurationError, match="--token goes with a service URL"):
        connect_to("work", token="x")


@pytest.mark.parametrize(
    "target",
    ["https://ada:s3cret-pw@assets.example.org", "https://a.example/?oauth_token=s3cret-pw"],
)
def test_the_connect_magic_never_repeats_a_secret_in_the_url(tmp_path, monkeypatch, target) -> None:
    from mediaframe.magics import connect_to

    monkeypatch.setenv("HOME", str(tmp_path))  # no stored profile: the magic's own hint
    monkeypatch.delenv("MEDIAFRAME_CONFIG_DIR", raising=False)
    with pytest.raises(mf.ConfigurationError, match="pass a token") as raised:
        connect_to(target)
    assert "s3cret-pw" not in str(raised.value)
