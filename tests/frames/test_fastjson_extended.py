"""read_records on extended answers: captions, status bits, metadata and subdefs read natively,
exactly as records(items, structure) reads the decoded answer, whatever the server's encoding."""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import orjson
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mediaframe.exceptions import MalformedItemError
from mediaframe.frames import Structure, fastjson, read_records, records

from .test_fastjson import RECORD, STYLES, TRICKY, catalogue_items, envelope

STRUCTURE = Structure(
    {"Date": "date", "Keywords": "string", "Rating": "number", "Title": "string"}, (4, 5, 6, 7)
)
LABELS = {"fr": "Titre", "en": "Title", "de": "Titel", "nl": "Titel"}


def expected(body: bytes, structure: Structure) -> tuple[dict[str, Any], pd.DataFrame]:
    response = orjson.loads(body)["response"]
    info = {name: value for name, value in response.items() if name != "results"}
    return info, records(response["results"]["records"], structure)


def assert_same(body: bytes, structure: Structure = STRUCTURE) -> fastjson.RecordsPage | None:
    """The same info, frame and warnings as records() on the decoded body, or the same error."""
    try:
        with warnings.catch_warnings(record=True) as wanted:
            warnings.simplefilter("always")
            want_info, want = expected(body, structure)
    except MalformedItemError as error:
        with pytest.raises(MalformedItemError, match=re.escape(str(error))):
            read_records(body, structure)
        return None
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        page = read_records(body, structure)
    assert [str(w.message) for w in got] == [str(w.message) for w in wanted]
    assert page.info == want_info
    pd.testing.assert_frame_equal(page.frame, want, check_exact=True)
    return page


def extend(record: dict[str, Any], caption: list[Any], status: list[Any]) -> dict[str, Any]:
    """``record`` as an extended answer writes it: its caption, one metadata entry per value,
    its status bits and subdefs."""
    metadata = [
        {"meta_structure_id": i, "name": e.get("name"), "labels": LABELS, "meta_id": i * 7,
         "value": e.get("value")}
        for i, e in enumerate(caption, start=1) if isinstance(e, dict)
    ]  # fmt: skip
    subdefs = [record["thumbnail"]] if record.get("thumbnail") else []
    return {
        **record,
        "caption": caption,
        "metadata": metadata,
        "status": status,
        "subdefs": subdefs,
    }


def dumps(document: Any, style: str = "compact", escaped: bool = False) -> bytes:
    text = json.dumps(document, ensure_ascii=escaped, **STYLES[style])
    return (text.replace("/", "\\/") if escaped else text).encode()


def emulator_answer(flavour: str, per_page: int = 200) -> tuple[bytes, Structure]:
    from mediaframe.emulator import Emulator
    from mediaframe.emulator.descriptive import EXTENDED_TYPE
    from mediaframe.emulator.structures import STRUCTURES

    emu = Emulator(records=600, seed=4, flavour=flavour)
    with emu.requests_session() as session:
        body = session.post(
            f"{emu.inprocess_url}/api/v1/search/",
            data={"oauth_token": emu.token, "per_page": per_page},
            headers={"Accept": f"{EXTENDED_TYPE}+json"},
        ).content
    fields = {f.name: f.type for d in sorted(STRUCTURES) for f in STRUCTURES[d]}
    return body, Structure(dict(sorted(fields.items())), (4, 5, 6, 7))


@pytest.mark.parametrize("flavour", ["contract", "current", "legacy"])
def test_every_generation_s_extended_answer_is_read_natively(flavour):
    body, structure = emulator_answer(flavour)
    page = assert_same(body, structure)
    assert page is not None and page.native, page and page.fallback
    assert page.described
    assert page.frame["caption_Title"].notna().all()
    assert str(page.frame["caption_Date"].dtype).startswith("datetime64")
    assert page.frame["status_4"].dtype == "boolean"


def test_a_plain_answer_read_with_a_structure_has_every_extended_column_missing():
    items = catalogue_items(20, 1)
    page = assert_same(dumps(envelope(items)))
    assert page is not None and page.native and not page.described
    assert page.frame["caption_Title"].isna().all() and page.frame["status_7"].isna().all()


def test_an_extended_answer_without_a_structure_keeps_its_members_raw():
    # records() without a structure keeps caption & co. as raw object columns: so does the
    # reader, by taking the decoded route.
    items = [extend(item, [{"name": "Title", "value": "t"}], []) for item in catalogue_items(5, 1)]
    body = dumps(envelope(items))
    page = read_records(body)
    assert not page.native
    want = records(orjson.loads(body)["response"]["results"]["records"])
    pd.testing.assert_frame_equal(page.frame, want, check_exact=True)


@pytest.mark.parametrize(
    ("caption", "status"),
    [
        pytest.param([{"name": "Rating", "value": 4}], [], id="a number as caption value"),
        pytest.param([{"name": "Title", "value": ["a", "b"]}], [], id="values as an array"),
        pytest.param([{"name": "Rating", "value": {}}], [], id="an object as caption value"),
        pytest.param([{"name": "Title"}, {"name": "Title", "value": "x"}], [], id="name twice"),
        pytest.param([{"value": "x"}], [], id="entry without a name"),
        pytest.param([None], [], id="null entry"),
        pytest.param([], [{"bit": 4, "state": "1"}], id="state as text"),
        pytest.param([], [{"bit": 4, "state": True}, {"bit": 4, "state": False}], id="bit twice"),
        pytest.param([], [{"state": True}], id="status entry without a bit"),
        pytest.param({"Title": "x"}, [], id="caption as an object"),
    ],
)
def test_unusual_captions_and_status_fall_back_to_the_same_frame(caption, status):
    items = catalogue_items(6, 2)
    items = [extend(item, [{"name": "Title", "value": "ok"}], []) for item in items]
    items[3] = {**items[3], "caption": caption, "status": status}
    page = assert_same(dumps(envelope(items)))
    assert page is None or not page.native


def test_a_date_caption_that_is_no_date_warns_as_the_decoded_route_does():
    items = [
        extend(item, [{"name": "Date", "value": "circa 1900" if i == 2 else "2020/01/02"}], [])
        for i, item in enumerate(catalogue_items(4, 3))
    ]
    page = assert_same(dumps(envelope(items)))
    assert page is not None and page.native
    assert page.frame["caption_Date"].isna().sum() == 1


def test_a_metadata_entry_holding_text_of_its_own_falls_back():
    # "text" is what the reader renames text values to: a member of that name must not pass
    # for a renamed value.
    items = [extend(item, [{"name": "Title", "value": "t"}], []) for item in catalogue_items(3, 1)]
    items[1]["metadata"][0]["text"] = "a note"
    page = assert_same(dumps(envelope(items)))
    assert page is not None and not page.native


NAMES = st.one_of(st.sampled_from(["Title", "Keywords", "Date", "Rating", "People"]), TRICKY)
CAPTION_VALUE = st.one_of(
    st.none(),
    TRICKY,
    st.sampled_from(["2020/01/02", "2021-06-30T10:21:26+02:00", "5", "2,5", "", "circa 1900"]),
)
CAPTIONS = st.lists(
    st.fixed_dictionaries(
        {"name": NAMES},
        optional={
            "value": CAPTION_VALUE,
            "meta_structure_id": st.integers(1, 12),
            "source": TRICKY,  # an extra member a server may add
        },
    ),
    max_size=5,
    unique_by=lambda entry: entry["name"],
)
STATUS = st.lists(
    st.fixed_dictionaries(
        {"bit": st.integers(0, 9)}, optional={"state": st.one_of(st.booleans(), st.none())}
    ),
    max_size=4,
    unique_by=lambda entry: entry["bit"],
)


@st.composite
def extended_answers(draw: st.DrawFn) -> bytes:
    """An extended answer as some server could write it: entries' members in any order, extra
    members, nulls, compact or pretty, escaped or not."""
    items = draw(st.lists(RECORD, max_size=6))
    extended = []
    for item in items:
        caption = [_shuffled(draw, entry) for entry in draw(CAPTIONS)]
        status = [_shuffled(draw, entry) for entry in draw(STATUS)]
        record = extend(item, caption, status)
        if draw(st.booleans()):  # extended members first, or in their usual place
            record = {name: record[name] for name in draw(st.permutations(list(record)))}
        extended.append(record)
    style = draw(st.sampled_from(sorted(STYLES)))
    return dumps(envelope(extended), style, escaped=draw(st.booleans()))


def _shuffled(draw: st.DrawFn, entry: dict[str, Any]) -> dict[str, Any]:
    return {name: entry[name] for name in draw(st.permutations(list(entry)))}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=extended_answers())
def test_any_extended_answer_reads_as_the_decoded_route_reads_it(body):
    assert_same(body)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=extended_answers())
def test_well_formed_extended_answers_are_read_natively(body):
    document = json.loads(body)
    for item in document["response"]["results"]["records"]:
        item["technical_informations"] = [{"name": "ISO", "value": 100}]
        for key in ("title", "thumbnail"):
            item.pop(key, None)  # the tricky texts of the plain members are tested elsewhere
    pretty = b"\n" in body
    rewritten = json.dumps(document, indent=4 if pretty else None).replace("/", "\\/").encode()
    page = assert_same(rewritten)
    assert page is not None and page.native, page and page.fallback


def test_caption_warnings_come_in_the_decoded_route_s_order():
    # the structure's fields in its order, whatever order the records hold them in
    items = catalogue_items(2, 3)
    items[0] = extend(items[0], [{"name": "Rating", "value": "high"}], [])
    items[1] = extend(items[1], [{"name": "Date", "value": "circa 1900"}], [])
    page = assert_same(dumps(envelope(items)))
    assert page is not None and page.native


@pytest.mark.parametrize(
    "members",
    [
        pytest.param({}, id="a technical name"),
        pytest.param({"caption_Title": "a record's"}, id="and an unknown member"),
        pytest.param(
            {"caption_Title": "a record's", "technical_caption_Title": "a record's too"},
            id="and its prefixed name",
        ),
    ],
)
def test_a_caption_column_named_as_a_technical_name_keeps_both_values(members):
    # the caption_Title column took the place of a technical name caption_Title
    caption, status = [{"name": "Title", "value": "t"}], [{"bit": 4, "state": True}]
    items = [extend(item, caption, status) for item in catalogue_items(4, 1)]
    for item in items:
        item["technical_informations"] += [
            {"name": "caption_Title", "value": "technical"},
            {"name": "status_4", "value": "technical too"},
        ]
        item.update(members)
    page = assert_same(dumps(envelope(items)))
    assert page is not None
    values = {value for column in page.frame.columns for value in page.frame[column].tolist()}
    assert {"t", True, "technical", "technical too", *members.values()} <= values
