"""records_json: raw answer bytes give exactly what records() gives for the decoded answer."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mediaframe.emulator.catalogue import Catalogue
from mediaframe.exceptions import InvalidParameterError, MalformedItemError, ResponseFormatError
from mediaframe.frames import fastjson, records, records_json
from mediaframe.frames.schema import RECORDS

DATA = Path(__file__).parent.parent / "data" / "frames"


def envelope(items: list[Any], **response: Any) -> dict[str, Any]:
    """A v1 search answer holding ``items``, members in the order servers send them."""
    return {
        "meta": {"api_version": "2.0.0", "request": "POST /api/v1/search/", "http_code": 200},
        "response": {
            "offset_start": 0,
            "per_page": len(items),
            "available_results": len(items),
            "total_results": len(items),
            "error": "",
            "warning": "",
            "query_time": 12,
            "facets": [{"name": "_iso", "values": [{"value": "100", "count": 3}]}],
            "query": "",
            **response,
            "results": {"records": items, "stories": []},
        },
    }


def dumps(document: Any) -> bytes:
    """Compact JSON as servers send it (json, not orjson: integers beyond 64 bits too)."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def expected(body: bytes) -> tuple[dict[str, Any], pd.DataFrame]:
    response = orjson.loads(body)["response"]
    info = {name: value for name, value in response.items() if name != "results"}
    return info, records(response["results"]["records"])


def assert_same(body: bytes) -> pd.DataFrame | None:
    """Same info, frame and warnings as records() on the decoded body, or the same error."""
    try:
        with warnings.catch_warnings(record=True) as wanted:
            warnings.simplefilter("always")
            want_info, want = expected(body)
    except MalformedItemError as error:
        with pytest.raises(MalformedItemError, match=re.escape(str(error))):
            records_json(body)
        return None
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        info, frame = records_json(body)
    assert [str(w.message) for w in got] == [str(w.message) for w in wanted]
    assert info == want_info
    pd.testing.assert_frame_equal(frame, want, check_exact=True)
    return frame


def catalogue_items(n: int, seed: int) -> list[dict[str, Any]]:
    return Catalogue(records=n, seed=seed).record_dicts(range(n))


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_emulator_catalogue_is_read_natively_and_identically(seed, fallbacks):
    frame = assert_same(dumps(envelope(catalogue_items(300, seed))))
    assert fallbacks == []
    assert len(frame) == 300


def test_server_escapes_are_read_natively(fallbacks):
    # PHP writes "/" as "\/" and non-ASCII as \uXXXX.
    items = catalogue_items(50, 3)
    items[0]["title"] = 'Zürich / «quoted» "title"'
    items[0]["technical_informations"].append({"name": "Lens/Ö", "value": '35mm "f/2"'})
    text = json.dumps(envelope(items), separators=(",", ":")).replace("/", "\\/")
    assert_same(text.encode())
    assert fallbacks == []


@pytest.mark.parametrize("name", ["search_v1_current", "search_v1_old", "search_v1_stories"])
def test_golden_search_answers(name):
    assert_same((DATA / f"{name}.json").read_bytes())


NATIVE_VARIATIONS = [
    pytest.param(lambda r: r.update({"updated-on": r.pop("updated_on")}), id="updated-on"),
    pytest.param(lambda r: r.update({"phrasea_type": r.pop("media_type")}), id="phrasea_type"),
    pytest.param(
        lambda r: r.update({"created_on": "-0001-11-30T00:00:00+00:09"}), id="placeholder"
    ),
    pytest.param(
        lambda r: r["thumbnail"].update({"updated_on": "0000-01-01T00:00:00+00:00"}),
        id="year 0 placeholder",
    ),
    pytest.param(lambda r: r.update({"rating": 4}), id="unknown integer member"),
    pytest.param(lambda r: r.update({"score": 0.5}), id="unknown float member"),
    pytest.param(lambda r: r.update({"flag": True}), id="unknown boolean member"),
    pytest.param(lambda r: r.update({"note": None}), id="unknown null member"),
    pytest.param(
        lambda r: r.update({"shot_at": "2020-01-01T00:00:00+00:00"}), id="unknown date-like text"
    ),
    pytest.param(lambda r: r["thumbnail"].update({"cdn": "x"}), id="unknown thumbnail member"),
    pytest.param(lambda r: r.update({"resource_id": "x_1_2"}), id="resource_id"),
    pytest.param(
        lambda r: r.update(
            technical_informations=[
                {"value": e["value"], "name": e["name"]} for e in r["technical_informations"]
            ]
        ),
        id="value before name",
    ),
    pytest.param(lambda r: r.update({"ISO": "x"}), id="unknown member named as a technical name"),
]


@pytest.mark.parametrize("change", NATIVE_VARIATIONS)
def test_variations_of_every_generation_are_read_natively(change, fallbacks):
    items = catalogue_items(20, 5)
    for item in items:
        if item.get("thumbnail") is None:
            item["thumbnail"] = {"name": "thumbnail"}
    for item in items:  # servers write every record alike
        change(item)
    assert_same(dumps(envelope(items)))
    assert fallbacks == []


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        pytest.param(lambda r: r.update({"updated_on": "2021-06-30"}), "dates", id="date only"),
        pytest.param(
            lambda r: r["technical_informations"].append({"name": "ISO", "value": None}),
            "technical values",
            id="null technical value",
        ),
        pytest.param(
            lambda r: r["technical_informations"].append({"name": "Grid", "value": [1, 2]}),
            "unexpected type or shape",
            id="nested technical value",
        ),
        pytest.param(
            lambda r: r.update({"rights": {"a": 1}}), "unknown member", id="nested unknown member"
        ),
        pytest.param(
            lambda r: r.update({"collection_id": "12"}),
            "unexpected type or shape",
            id="numeric string for an integer",
        ),
    ],
)
def test_what_cannot_be_read_natively_falls_back_and_says_why(change, kind, fallbacks):
    items = catalogue_items(20, 5)
    change(items[-1])
    assert_same(dumps(envelope(items)))
    assert len(fallbacks) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the decoded route's, compared above
        page = fastjson.read_records(dumps(envelope(items)))
    assert not page.native and page.fallback is not None and page.fallback[0] == kind


def test_pretty_printed_answers_are_read_natively(fallbacks):
    items = catalogue_items(30, 4)
    assert_same(json.dumps(envelope(items), indent=4).encode())
    assert_same(json.dumps(envelope(items), indent=2, separators=(",", " : ")).encode())
    assert fallbacks == []


@pytest.mark.parametrize("flavour", ["contract", "current", "legacy"])
def test_every_server_generation_of_the_emulator_is_read_natively(flavour, fallbacks):
    from mediaframe.emulator import Emulator

    emu = Emulator(records=400, seed=3, flavour=flavour)
    with emu.requests_session() as session:
        body = session.post(
            f"{emu.inprocess_url}/api/v1/search/",
            data={"oauth_token": emu.token, "per_page": 300},
        ).content
    frame = assert_same(body)
    assert fallbacks == [] and len(frame) == 300
    page = fastjson.read_records(body)
    assert page.native and page.fallback is None


def test_an_empty_page():
    info, frame = records_json(dumps(envelope([])))
    assert info["total_results"] == 0
    pd.testing.assert_frame_equal(frame, records([]))


def test_a_story_search_has_no_records():
    body = (DATA / "search_v1_stories.json").read_bytes()
    info, frame = records_json(body)
    assert len(frame) == len(orjson.loads(body)["response"]["results"]["records"])
    assert "results" not in info


def test_a_repeated_technical_name_falls_back_and_keeps_the_last_value(fallbacks):
    items = catalogue_items(5, 1)
    items[2]["technical_informations"] += [
        {"name": "Mode", "value": 1},
        {"name": "Mode", "value": "manual"},
        {"name": "Flash", "value": "on"},
        {"name": "Flash", "value": 2},
    ]
    frame = assert_same(dumps(envelope(items)))
    assert frame.loc[2, "Mode"] == "manual"
    assert frame.loc[2, "Flash"] == 2  # records() types by the values that survive
    assert len(fallbacks) == 1


def test_a_technical_name_repeated_in_a_record_is_the_reason_given():
    items = catalogue_items(5, 1)
    items[2]["technical_informations"] += [
        {"name": "Mode", "value": 1},
        {"name": "Mode", "value": 2},
    ]
    page = fastjson.read_records(dumps(envelope(items)))
    assert page.fallback == ("technical values", "'Mode' repeated in a record")


def test_each_name_is_typed_by_how_its_numbers_are_written(fallbacks):
    items = catalogue_items(4, 2)
    for index, item in enumerate(items):
        item["technical_informations"] += [
            {"name": "Whole", "value": index},
            {"name": "Written", "value": 5.0 if index == 3 else index},
            {"name": "Huge", "value": 1e20 + index},
            {"name": "Both", "value": "n/a" if index else 2.5},
        ]
    frame = assert_same(dumps(envelope(items)))
    assert fallbacks == []
    assert str(frame["Whole"].dtype) == "Int64"
    assert str(frame["Written"].dtype) == "Float64"
    assert frame["Both"].tolist() == ["2.5", "n/a", "n/a", "n/a"]


@pytest.mark.parametrize(
    "written",
    [
        # a server may space one member's colon otherwise than the first record's first key
        pytest.param(b'"value" :\t4.0}', id="spaced-colon"),
        # pyarrow reads an escaped key as "value": the scan for floats written whole must too
        pytest.param(b'"v\\u0061lue":4.0}', id="escaped-key"),
    ],
)
def test_a_float_written_whole_is_found_however_its_value_is_written(fallbacks, written):
    # records() makes a name holding one 4.0 among integers Float64
    items = catalogue_items(3, 2)
    for index, item in enumerate(items):
        item["technical_informations"].append({"name": "Pages", "value": 4 + index})
    body = dumps(envelope(items)).replace(b'"value":4}', written)
    assert written in body
    frame = assert_same(body)
    assert frame is not None and str(frame["Pages"].dtype) == "Float64"
    assert fallbacks == []


def test_a_name_key_spelled_with_escapes_is_read_natively(fallbacks):
    items = catalogue_items(3, 2)
    items[1]["technical_informations"].append({"name": "Exposure", "value": 2.0})
    body = dumps(envelope(items)).replace(b'{"name":"Exposure"', b'{"n\\u0061me":"Exposure"')
    assert b"n\\u0061me" in body
    assert_same(body)
    assert fallbacks == []


def test_an_entry_with_a_text_member_instead_of_a_value_falls_back(fallbacks):
    items = catalogue_items(3, 2)
    items[1]["technical_informations"].append({"name": "Caption", "text": "a note"})
    frame = assert_same(dumps(envelope(items)))
    assert frame["Caption"].isna().all()
    assert len(fallbacks) == 1


@pytest.mark.parametrize("big", [2**53 + 1, 2**63, 2**64, -(2**70)])
def test_integers_beyond_a_float_s_precision_read_as_records_reads_them(big):
    items = catalogue_items(3, 2)
    items[0]["technical_informations"].append({"name": "Big", "value": big})
    items[1]["technical_informations"].append({"name": "Big", "value": 7})
    assert_same(dumps(envelope(items)))


def test_a_malformed_record_is_named():
    items = catalogue_items(5, 1)
    items[4]["record_id"] = "seven"
    with pytest.raises(MalformedItemError, match="record #4"):
        records_json(dumps(envelope(items)))


@pytest.mark.parametrize("key", ["databox_id", "record_id"])
def test_a_record_lacking_a_key_is_named_as_records_names_it(key):
    items = catalogue_items(5, 1)
    del items[3][key]
    with pytest.raises(MalformedItemError, match=f"record #3.*{key}"):
        records_json(dumps(envelope(items)))


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<html><body>502 Bad Gateway</body></html>",
        b'{"meta": {"http_code": 200}, "response": {"results": {"records": [{"databox',
        b'{"meta": {"http_code": 200}, "response": {}}',
        b'{"meta": {}, "response": {"results": {"records": {"databox_id": 1}}}}',
        b"[1, 2, 3]",
        b'{"response": {"results": {"records": [{"databox_id": 1, "record_id": 2, "title": "\xff'
        b'"}], "stories": []}}}',
    ],
)
def test_what_is_not_a_search_answer_is_refused_with_a_snippet(body):
    with pytest.raises(ResponseFormatError) as caught:
        records_json(body)
    assert not isinstance(caught.value, MalformedItemError)
    assert caught.value.snippet == body[:120].decode(errors="replace")
    assert "/api/v1/search/" in str(caught.value)


FAILED_META = {"http_code": 503, "error_type": "Service Temporarily Unavailable"}


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(None, id="empty-response"),  # the decoded route
        pytest.param("records", id="records-beside-the-failure"),  # the native route
    ],
)
@pytest.mark.parametrize("http_code", [503, "503", 404])
def test_an_envelope_that_says_it_failed_is_not_read_as_a_page(response, http_code):
    """An HTTP 200 answer may carry a failure in its envelope (``meta.http_code`` of 400 or
    more); whatever its ``response`` holds, it is no page of records."""
    document = envelope(catalogue_items(3, 1))
    if response is None:
        document["response"] = {}
    document["meta"].update(FAILED_META, http_code=http_code)
    with pytest.raises(
        ResponseFormatError, match=f"says it failed \\(HTTP {http_code} in its envelope"
    ):
        records_json(dumps(document))


def test_text_is_not_bytes():
    with pytest.raises(InvalidParameterError, match="raw bytes"):
        records_json('{"response": {}}')  # type: ignore[arg-type]


# Text that looks like the JSON the rewrites look for, inside names and values.
TRICKY = st.one_of(
    st.text(max_size=10),
    st.sampled_from(
        [
            '","value":"',
            '","value":',
            '},{"name":"',
            '[{"name":"',
            "\\u0000",
            "\x00",
            "a\\",
            '"',
            "é/ü",
            "}]",
            '"records":[',
            '},{"databox_id":',
        ]
    ),
)
NUMBER = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([-3, 2.8, 1e5, 5.0, 0.0, -0.0, 1e16, 12345678901234567890, 2**53 + 1]),
)
VALUE = st.one_of(NUMBER, TRICKY, st.booleans())
ENTRY = st.builds(
    lambda name, value: {"name": name, "value": value},
    st.one_of(st.sampled_from(["ISO", "Aperture", "title", "Mode", "value", "name"]), TRICKY),
    VALUE,
)
DATE = st.sampled_from(
    [
        "2020-01-14T17:59:02+00:00",
        "2013-05-02T14:11:09+02:00",
        "1999-12-31T23:59:59-05:30",
        "2021-06-30T10:21:26.250000+00:00",
    ]
)
RECORD = st.fixed_dictionaries(
    {"databox_id": st.integers(1, 4), "record_id": st.integers(1, 10**9)},
    optional={
        "mime_type": st.sampled_from(["image/jpeg", "video/mp4"]),
        "title": st.one_of(st.none(), TRICKY),
        "updated_on": DATE,
        "created_on": st.one_of(st.none(), DATE),
        "collection_id": st.integers(1, 9),
        "thumbnail": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {"name": TRICKY},
                optional={
                    "permalink": st.fixed_dictionaries(
                        {"id": st.integers(0, 99), "label": TRICKY, "is_activated": st.booleans()}
                    ),
                    "height": st.integers(0, 5000),
                    "devices": st.lists(st.sampled_from(["screen", "print"]), max_size=2),
                    "mime_type": st.sampled_from(["image/jpeg", "image/png"]),
                },
            ),
        ),
        "technical_informations": st.lists(ENTRY, max_size=6),
        "media_type": st.sampled_from(["image", "video"]),
        "base_id": st.integers(1, 20),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(RECORD, max_size=8), escaped=st.booleans())
def test_any_well_formed_records_read_as_records_reads_them(items, escaped):
    if escaped:  # how PHP servers write JSON
        body = json.dumps(envelope(items), separators=(",", ":")).replace("/", "\\/").encode()
    else:
        body = dumps(envelope(items))
    assert_same(body)


UNKNOWN_NAMES = ("rating", "resource_id", "extra", "ISO", "title_fr", "cdn")
SCALAR = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    TRICKY,
)
STYLES = {
    "compact": {"separators": (",", ":")},
    "pretty": {"indent": 4},  # as PHP's JSON_PRETTY_PRINT writes it
    "spaced": {"separators": (", ", " : ")},
    "tabs": {"indent": "\t", "separators": (",", ": ")},
}


def write(items: list[dict[str, Any]], style: str, escaped: bool) -> bytes:
    text = json.dumps(envelope(items), ensure_ascii=escaped, **STYLES[style])
    return (text.replace("/", "\\/") if escaped else text).encode()


@st.composite
def answers(
    draw: st.DrawFn, values: st.SearchStrategy = SCALAR, names: tuple[str, ...] = UNKNOWN_NAMES
) -> bytes:
    """A search answer as some server generation could write it: members in one order of its
    own, unknown members of its own, compact or pretty-printed, slashes escaped or not."""
    items = draw(st.lists(RECORD, max_size=8))
    unknown = draw(st.lists(st.sampled_from(names), unique=True, max_size=3))
    for item in items:
        for name in unknown:
            item[name] = draw(values)
        if "updated_on" in item and draw(st.booleans()):
            item["updated-on"] = item.pop("updated_on")
    members = sorted({name for item in items for name in item})
    order = draw(st.permutations(members))
    reordered = [{name: item[name] for name in order if name in item} for item in items]
    return write(reordered, draw(st.sampled_from(sorted(STYLES))), draw(st.booleans()))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=answers())
def test_any_generation_s_answer_reads_as_the_decoded_route_reads_it(body):
    assert_same(body)


SAFE_ENTRIES = st.dictionaries(
    st.sampled_from(["ISO", "Aperture", "Mode", "value", "name", "Lens/Ö"]),
    st.one_of(st.integers(-(2**52), 2**52), st.floats(-1e6, 1e6), st.text(max_size=5)),
    max_size=5,
).map(lambda entries: [{"name": n, "value": v} for n, v in entries.items()])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=answers(
        values=st.one_of(st.integers(-(2**63), 2**63 - 1), st.none()),
        names=tuple(name for name in UNKNOWN_NAMES if name not in RECORDS.dtypes),
    ),
    entries=st.data(),
)
def test_well_formed_answers_of_any_generation_are_read_natively(body, entries):
    document = json.loads(body)
    for item in document["response"]["results"]["records"]:
        item["technical_informations"] = entries.draw(SAFE_ENTRIES)
    pretty = b"\n" in body
    rewritten = json.dumps(document, indent=4 if pretty else None).replace("/", "\\/").encode()
    assert_same(rewritten)
    page = fastjson.read_records(rewritten)
    assert page.native, page.fallback
