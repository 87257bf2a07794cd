"""A report and a user's rights, as a notebook cell shows them: short, escaped, never a token."""

from __future__ import annotations

import dataclasses
import re

import pandas as pd

import mediaframe as mf
from mediaframe import frames
from mediaframe.client import Me

HOSTILE = "<script>alert('x')</script>"


def _report(shards: int, **changes) -> mf.HarvestReport:
    members = {
        "kind": "records",
        "query": HOSTILE,
        "filters": {"bases": list(range(50)), "date_min": "2024/01/01"},
        "total_results": 82216,
        "fetched": 82216,
        "complete": True,
        "requests": 379,
        "seconds": 8.74,
        "shards": [
            {"id": f"b{i}_d20240101-20240131", "shard": {"bases": [i]}, "expected": 700}
            for i in range(shards)
        ],
    }
    return mf.HarvestReport(**{**members, **changes})


def test_the_repr_is_a_few_lines_however_many_shards():
    small, big = repr(_report(3)), repr(_report(355))
    assert len(big.splitlines()) <= 6 and len(big) < 600, big
    assert big.replace("355", "3") == small  # the shards change only their count
    assert "82216 records of 82216 (complete) from 355 shard(s)" in big
    assert ".plan" in big


def test_the_repr_names_what_went_wrong_briefly():
    text = repr(
        _report(
            355,
            complete=False,
            fetched=80000,
            incomplete=[{"id": f"s{i}", "missing": 5} for i in range(40)],
            duplicates=3,
        )
    )
    assert "INCOMPLETE" in text and "incomplete shards: 40 (s0, s1, s2, ...)" in text
    assert "duplicates dropped: 3" in text and len(text.splitlines()) <= 7


def test_the_html_is_a_small_escaped_table():
    page = _report(355, from_cache=True)._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert page.count("<tr>") <= 10
    for label, value in [
        ("complete", "yes"),
        ("rows", "82,216 of 82,216 records"),
        ("shards", "355"),
        ("requests", "379"),
        ("seconds", "8.7"),
        ("cache", "read from the cache"),
    ]:
        assert re.search(f"<th[^>]*>{label}</th><td>{value}</td>", page), (label, page)
    assert len(page) < 2000


def test_a_member_added_later_is_shown_bounded_and_escaped():
    @dataclasses.dataclass(repr=False)
    class Later(mf.HarvestReport):
        pages: dict = dataclasses.field(default_factory=dict)

    base = dataclasses.asdict(_report(355))
    report = Later(**base, pages={"native": 120, "fallback": 3, "why": HOSTILE * 20})
    text, page = repr(report), report._repr_html_()
    assert "pages: {'fallback': 3, 'native': 120, 'why':" in text and len(text) < 800
    assert "<script>" not in page and "<th style='text-align:left'>pages</th>" in page


def test_the_full_plan_is_there_on_request():
    plan = _report(355).plan
    assert len(plan) == 355 and {"shard", "bases", "expected"} <= set(plan.columns)


def _me(login: str) -> Me:
    collections = [
        {
            "databox_id": 1,
            "base_id": base,
            "collection_id": base,
            "name": HOSTILE,
            "rights": ["actif", "canreport"] if base < 3 else ["canreport"],
            "statuses": [{"position": 4, "labels": {"on": {"en": HOSTILE}}}],
        }
        for base in range(1, 6)
    ]
    return Me(
        user=frames.user({"id": 3, "login": login, "email": "a@example.org"}),
        collections=frames.collections(collections),
        statuses=frames.statuses(collections),
        databoxes=frames.databoxes([{"databox_id": 1, "rights": ["bas_manage"]}]),
    )


def test_me_in_a_cell_is_a_short_summary():
    text = repr(_me("ada"))
    assert text.startswith("<Me ada (id 3)>")
    assert "5 collection(s) in 1 databox(es), 2 searchable (actif)" in text
    assert "canreport 5, actif 2" in text and "status bits: 5 defined in 5 collection(s)" in text
    assert len(text.splitlines()) <= 6
    assert "DataFrame" not in text and "dtype" not in text


def test_me_as_html_escapes_every_value():
    page = _me(HOSTILE)._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "a@example.org" in page and "canreport (5)" in page
    assert isinstance(_me("ada").user, pd.Series)


def test_no_token_in_what_a_client_shows(emulator, tmp_path):
    from mediaframe.config import Settings

    settings = Settings.from_env({"HOME": str(tmp_path)}).replace(progress=False)
    client = mf.connect(emulator.base_url, token=emulator.token, settings=settings)
    me = client.me()
    for shown in (repr(me), me._repr_html_()):
        assert emulator.token not in shown
