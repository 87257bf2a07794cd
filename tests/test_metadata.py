"""Descriptive metadata end to end: fields, extended harvests, one record or story, stories'
members, baskets' contents and the stable technical columns, against the emulator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mediaframe as mf
from mediaframe.config import Settings
from mediaframe.emulator import Emulator
from mediaframe.emulator.flavours import FLAVOURS
from mediaframe.frames import split_values
from mediaframe.frames.schema import TECHNICAL

CAPTION_NAMES = {
    "Title", "Keywords", "Description", "Creator", "City", "Country", "Date", "Copyright",
    "Credit", "Rating", "InternalNote", "People", "Programme", "Department",
}  # fmt: skip


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env({"HOME": str(tmp_path)}).replace(
        cache_dir=tmp_path / "cache", progress=False, backoff=0.01
    )


@pytest.fixture(scope="module")
def emu():
    with Emulator(records=1500, seed=21, cap=200) as served:
        yield served


def connect(emu, settings, login="demo"):
    return mf.connect(emu.base_url, token=emu.token_for(login), settings=settings)


def truth(emu, frame: pd.DataFrame) -> pd.DataFrame:
    """The emulator's captions and status bits of the records of ``frame``, in its order."""
    rows = [
        emu.catalogue.row_of(int(d), int(r))
        for d, r in zip(frame["databox_id"], frame["record_id"], strict=True)
    ]
    return emu.app.routes.captions.frame(np.array(rows, dtype=np.int64))


def test_fields_describe_every_readable_databox(emu, settings):
    fields = connect(emu, settings).fields()
    assert list(fields.columns[:7]) == [
        "databox_id", "id", "name", "type", "multivalue", "required", "business",
    ]  # fmt: skip
    assert set(fields["databox_id"]) == {1, 2, 3}
    assert len(fields) == 36 and fields["label_fr"].notna().all()
    date = fields[(fields.databox_id == 1) & (fields.name == "Date")].iloc[0]
    assert date["type"] == "date" and not date["multivalue"]
    assert fields.set_index(["databox_id", "name"]).loc[(1, "Keywords"), "multivalue"]


def test_a_business_field_is_hidden_from_one_user_and_shown_to_another(emu, settings):
    demo = connect(emu, settings)
    photographer = connect(emu, settings, "photographer")
    assert "InternalNote" in set(demo.fields()["name"])
    assert "InternalNote" not in set(photographer.fields()["name"])
    shown = demo.records("collection:Nature", extended=True)
    hidden = photographer.records("collection:Nature", extended=True)
    assert shown["caption_InternalNote"].notna().any()
    assert "caption_InternalNote" not in hidden.columns
    expected = truth(emu, shown)["caption_InternalNote"]
    assert shown["caption_InternalNote"].tolist() == expected.tolist()


def test_extended_harvest_reads_captions_and_status_bits(emu, settings):
    client = connect(emu, settings)
    frame = client.records(extended=True)
    plain = client.records()
    assert mf.HarvestReport.from_frame(frame).complete and len(frame) == len(plain)
    assert len(mf.HarvestReport.from_frame(frame).shards) > 1  # past the cap of 200
    expected = truth(emu, frame)
    for name in ("Title", "Keywords", "Creator", "Copyright", "People", "Department"):
        got = frame[f"caption_{name}"]
        assert got.dtype == "string"
        assert got.tolist() == expected[f"caption_{name}"].tolist(), name
    assert str(frame["caption_Date"].dtype).startswith("datetime64") and (
        frame["caption_Date"].dt.tz is not None
    )
    dates = pd.to_datetime(expected["caption_Date"], format="%Y/%m/%d", utc=True)
    assert (frame["caption_Date"].dt.tz_convert("UTC") == dates).all()
    assert frame["caption_Rating"].dtype == "Float64"
    ratings = pd.to_numeric(expected["caption_Rating"]).astype("Float64")
    pd.testing.assert_series_equal(frame["caption_Rating"], ratings, check_names=False)
    for bit in (4, 5, 6, 7):
        assert frame[f"status_{bit}"].dtype == "boolean"
        assert frame[f"status_{bit}"].tolist() == expected[f"status_{bit}"].tolist()
    assert frame["caption_Copyright"].isna().any()  # a required field some records miss
    # the extended columns are added, the rest is the plain harvest
    pd.testing.assert_frame_equal(frame[plain.columns], plain)


def test_extended_columns_come_from_the_structure_hits_or_not(emu, settings):
    client = connect(emu, settings)
    everything = client.records(extended=True)
    audio = client.records(record_type="audio", extended=True)
    none = client.records("nothingmatchesthisxyz", extended=True)
    assert len(none) == 0

    def extended(frame):
        return {c: str(t) for c, t in frame.dtypes.items() if c.startswith(("caption_", "status_"))}

    assert extended(audio) == extended(everything) == extended(none)
    names = {c.removeprefix("caption_") for c in everything.columns if c.startswith("caption_")}
    assert names == CAPTION_NAMES


def test_extended_is_cached_apart_and_read_back_whole(emu, settings):
    client = connect(emu, settings)
    assert client.cache_path("records") != client.cache_path("records", extended=True)
    first = client.records("sunset", extended=True)
    again = client.records("sunset", extended=True)
    assert mf.HarvestReport.from_frame(again).from_cache
    pd.testing.assert_frame_equal(again, first)
    with pytest.raises(mf.InvalidParameterError, match="extended"):
        client.records(extended="yes")


def test_an_extended_sync_keeps_the_columns_and_sees_new_captions(settings):
    with Emulator(records=400, seed=3) as emu:
        client = connect(emu, settings)
        before = client.records(extended=True)
        record_id = int(before["record_id"].iloc[0])
        databox_id = int(before["databox_id"].iloc[0])
        emu.update_record(databox_id, record_id, keywords=["renamed", "sea"])
        after = client.records(extended=True, ttl=0)
        assert list(after.columns) == list(before.columns)
        row = after[(after.databox_id == databox_id) & (after.record_id == record_id)]
        assert row["caption_Keywords"].tolist() == ["renamed ; sea"]


def test_one_record_and_one_story_have_the_harvests_columns(emu, settings):
    client = connect(emu, settings)
    frame = client.records(extended=True)
    first = frame.iloc[[0]].reset_index(drop=True)
    one = client.record(int(first.databox_id[0]), int(first.record_id[0]), extended=True)
    # the declared, technical and extended columns of a harvest, in its order; names outside
    # the contract's list follow the whole-result rule, so one record has its own only
    assert len(one) == 1 and [c for c in frame.columns if c in one.columns] == list(one.columns)
    for name in (*TECHNICAL, *(c for c in frame.columns if c.startswith(("caption_", "status_")))):
        assert one[name].dtype == frame[name].dtype, name
    pd.testing.assert_frame_equal(
        one, first[one.columns], check_categorical=False, check_dtype=False
    )
    plain = client.record(int(first.databox_id[0]), int(first.record_id[0]))
    assert not any(c.startswith("caption_") for c in plain.columns)
    stories = client.stories()
    story = client.story(int(stories.databox_id[0]), int(stories.story_id[0]))
    assert list(story.columns) == list(stories.columns) and len(story) == 1
    assert story["story_id"].tolist() == [stories.story_id[0]]


def test_story_records_are_every_member_of_every_story_past_the_cap(settings):
    with Emulator(records=2000, seed=5, cap=20) as emu:
        client = connect(emu, settings)
        members = client.story_records(extended=True)
        stories = emu.ground_truth("stories")
        assert len(stories) > 20  # more stories than one search may retrieve
        cat = emu.catalogue
        expected = []
        for row in range(cat.stories.size):
            if int(cat.stories.base_id[row]) not in emu.accounts.users["demo"].visible_bases:
                continue
            for position, member in enumerate(cat.member_rows_alive(row).tolist()):
                expected.append(
                    (int(cat.stories.ident[row]), position, int(cat.records.ident[member]))
                )
        got = list(zip(members.story_id, members.position, members.record_id, strict=True))
        assert sorted(got) == sorted(expected)
        assert list(members.columns[:5]) == [
            "story_databox_id", "story_id", "position", "databox_id", "record_id",
        ]  # fmt: skip
        assert "caption_Title" in members.columns
        assert mf.HarvestReport.from_frame(members).complete


def test_basket_records_with_validation_choices(emu, settings):
    client = connect(emu, settings)
    frame = client.basket_records(extended=True)
    baskets = client.baskets()
    contents = emu.app.routes.basket_contents
    assert set(frame["basket_id"]) == set(baskets["basket_id"])
    assert len(frame) == sum(len(contents.elements[int(b)]) for b in baskets["basket_id"])
    assert "caption_Keywords" in frame.columns
    validation = frame[frame.basket_id == 2].reset_index(drop=True)
    elements = contents.elements[2]
    assert validation["order"].tolist() == [e.order for e in elements]
    for i, element in enumerate(elements):
        demo, auditor = element.choices
        assert _value(validation["agreement_demo"][i]) == demo.agreement
        assert _value(validation["agreement_auditor"][i]) == auditor.agreement
        assert _value(validation["agreement"][i]) == demo.agreement  # the reader's own
        assert validation["note_auditor"][i] == auditor.note
    plain = frame[frame.basket_id == 1]
    assert plain["agreement_demo"].isna().all() and not plain["validation_item"].any()
    one = client.basket_records(1)
    assert set(one["basket_id"]) == {1} and "caption_Title" not in one.columns
    with pytest.raises(mf.NotFoundError):
        client.basket_records(99)
    with pytest.raises(mf.ForbiddenError):
        client.basket_records(4)


def _value(value):
    return None if value is pd.NA else bool(value)


def test_feed_items_extended(emu, settings):
    items = connect(emu, settings).feed_items(extended=True)
    assert len(items) and items["caption_Title"].notna().all()
    assert items["status_4"].dtype == "boolean"


def test_split_values_into_lists_or_long_form(emu, settings):
    frame = connect(emu, settings).records("Keywords=sunset", extended=True)
    lists = split_values(frame["caption_Keywords"])
    assert all(isinstance(v, list) for v in lists)
    assert all("sunset" in v for v in lists)
    long = split_values(frame["caption_Keywords"], long=True)
    assert len(long) == sum(len(v) for v in lists)
    assert set(long["row"]) <= set(frame.index)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_every_server_flavour(flavour, settings):
    with Emulator(records=500, seed=9, cap=100, flavour=flavour) as emu:
        demo = connect(emu, settings)
        frame = demo.records(extended=True)
        assert len(frame) == len(emu.ground_truth())
        reads = mf.HarvestReport.from_frame(frame).page_reads
        assert reads["native"] > 0 and not reads.get("decoded"), reads  # every page natively
        # base ids of every generation, legacy ones read from /me/'s (databox, collection) pairs
        bases = frame.merge(emu.ground_truth(), on=["databox_id", "record_id"])
        assert bases["base_id_x"].tolist() == bases["base_id_y"].tolist()
        records = [demo.record(1, int(frame["record_id"][frame["databox_id"] == 1].iloc[0]))]
        assert all(r["base_id"].notna().all() for r in records)
        assert demo.basket_records()["base_id"].notna().all()
        expected = truth(emu, frame)
        assert frame["caption_Title"].tolist() == expected["caption_Title"].tolist()
        assert frame["status_5"].tolist() == expected["status_5"].tolist()
        auditor = connect(emu, settings, "auditor").records(extended=True)
        # the administrators' route tells every generation's auditor which fields are dates
        assert str(auditor["caption_Date"].dtype).startswith("datetime64")
        if flavour == "legacy":  # no field types for a normal user on old servers: text
            assert demo.fields()["type"].isna().all()
            assert frame["caption_Date"].dtype == "string"
        else:
            assert str(frame["caption_Date"].dtype).startswith("datetime64")
        assert len(demo.basket_records()) and len(demo.story_records())


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_every_flavour_gives_the_other_calls_of_the_issue(flavour, settings):
    """What a user tries beyond the harvests, once per server generation: suggestions, the
    status filter and its option, date bounds alone, the stable technical columns, one story,
    feed items."""
    with Emulator(records=500, seed=9, cap=100, flavour=flavour) as emu:
        client = connect(emu, settings)
        hits = len(client.records("sunset"))
        with pytest.warns(mf.NoHitsWarning) as caught:
            none = client.records("sunsett")
        said = f"no record matches 'sunsett'; the server suggests 'sunset' ({hits:,} hits)"
        assert [str(w.message) for w in caught] == [said]
        assert [s["hits"] for s in mf.HarvestReport.from_frame(none).suggestions] == [hits]
        for frame in (none, client.records(record_type="audio")):
            assert {n: str(frame[n].dtype) for n in TECHNICAL} == dict(TECHNICAL)
        truth = emu.ground_truth()
        on = (truth.status.to_numpy(dtype="int64") >> 4) & 1 == 1
        every = client.records(status={4: {"on": [1]}})
        assert len(every) == int(((truth.databox_id != 1) | on).sum())
        only = client.records(status={4: {"on": [1]}}, status_only=True)
        assert set(only.databox_id) == {1}
        assert len(only) == int(((truth.databox_id == 1) & on).sum())
        bounded = client.records(date_min="2020/01/01", date_max="2020/12/31")
        assert len(bounded) and bounded["created_on"].dt.year.eq(2020).all()
        assert "filtered on created_on" in mf.HarvestReport.from_frame(bounded).notes[0]
        stories = client.stories()
        story = client.story(int(stories.databox_id[0]), int(stories.story_id[0]))
        assert list(story.columns) == list(stories.columns) and len(story) == 1
        items = client.feed_items(extended=True)
        assert len(items) and items["status_4"].dtype == "boolean"


def test_the_contracts_technical_names_are_always_columns_in_one_dtype(emu, settings):
    client = connect(emu, settings)
    for frame in (
        client.records(),
        client.records(record_type="audio"),
        client.records("nothingmatchesthisxyz"),
        client.records(record_type="image"),
    ):
        for name, dtype in TECHNICAL.items():
            assert str(frame[name].dtype) == dtype, name
    assert client.records(record_type="audio")["Aperture"].isna().all()
    columns = [list(f.columns) for f in (client.records(), client.records("nothingmatchesthisxyz"))]
    assert set(TECHNICAL) <= set(columns[1]) and set(columns[1]) <= set(columns[0])


def test_a_search_with_no_hits_warns_with_the_servers_suggestions(emu, settings):
    client = connect(emu, settings)
    hits = len(client.records("sunset"))
    message = f"no record matches 'sunsett'; the server suggests 'sunset' ({hits:,} hits)"
    with pytest.warns(mf.NoHitsWarning) as caught:
        frame = client.records("sunsett")
    assert str(caught[0].message) == message
    assert caught[0].filename == __file__  # points at the caller
    assert len(frame) == 0
    assert mf.HarvestReport.from_frame(frame).suggestions == [
        {"suggestion": "sunset", "query": "sunset", "hits": hits}
    ]
    with pytest.warns(mf.NoHitsWarning):  # read back from the cache: said again
        client.records("sunsett")
    assert mf.HarvestReport.from_frame(client.records("zzzzqqqq")).suggestions == []


def test_date_fields_of_the_structure_filter_and_bounds_default_to_created_on(emu, settings):
    client = connect(emu, settings)
    window = client.records(date_field="Date", date_min="2020/01/01", date_max="2020/12/31",
                            extended=True)  # fmt: skip
    assert len(window) and window["caption_Date"].dt.year.eq(2020).all()
    with pytest.raises(mf.InvalidParameterError, match="not a date field"):
        client.records(date_field="Rating")  # a number field
    defaulted = client.records(date_min="2020/01/01", date_max="2020/12/31")
    explicit = client.records(date_min="2020/01/01", date_max="2020/12/31", date_field="created_on")
    pd.testing.assert_frame_equal(defaulted, explicit, check_like=True)
    assert defaulted["created_on"].dt.year.eq(2020).all()
    notes = mf.HarvestReport.from_frame(defaulted).notes
    assert notes == ["date_min/date_max given without date_field: filtered on created_on"]


def test_status_filter_contract_semantics_and_status_only(emu, settings):
    client = connect(emu, settings)
    truth = emu.ground_truth()
    contract = client.records(status={4: {"on": [1]}})
    # databox 1's records with bit 4 on, and every record of the other databoxes
    on = (truth.status.to_numpy(dtype="int64") >> 4) & 1 == 1
    expected = truth[(truth.databox_id != 1) | on]
    assert len(contract) == len(expected) and set(contract.databox_id) == {1, 2, 3}
    only = client.records(status={4: {"on": [1]}}, status_only=True, extended=True)
    assert set(only.databox_id) == {1} and only["status_4"].all()
    assert len(only) == int(((truth.databox_id == 1) & on).sum())
    assert "status_only=True" in mf.HarvestReport.from_frame(only).notes[0]
    narrowed = client.records(status={4: {"on": [1]}}, status_only=True, bases=[2, 4])
    assert set(narrowed.base_id) == {2}
    with pytest.raises(mf.InvalidParameterError, match="give status= too"):
        client.records(status_only=True)
    with pytest.raises(mf.InvalidParameterError, match="no collection"):
        client.records(status={4: {"on": [1]}}, status_only=True, bases=[4])


@pytest.mark.parametrize("representation", ["yaml", "jsonp"])
def test_extended_records_in_every_representation(emu, settings, representation):
    client = mf.connect(
        emu.base_url, token=emu.token, settings=settings, representation=representation
    )
    frame = client.records("collection:Nature", extended=True)
    plain_json = connect(emu, settings.replace(cache_dir=settings.cache_dir / "json"))
    expected = plain_json.records("collection:Nature", extended=True)
    pd.testing.assert_frame_equal(frame, expected)
    assert len(client.basket_records(extended=True)) == len(plain_json.basket_records())


def test_stories_refuse_extended_and_point_to_story_records(emu, settings):
    with pytest.raises(mf.InvalidParameterError, match="story_records"):
        connect(emu, settings).stories(extended=True)


def test_a_server_ignoring_extended_mode_is_told_not_silent(settings):
    emu = Emulator(records=200, seed=2)
    emu.app.routes.extend = lambda response, user: response  # a server without extended mode
    with emu:
        client = connect(emu, settings)
        with pytest.warns(mf.MetadataWarning, match="does not support extended records"):
            frame = client.records(extended=True, concurrency=1)
        assert frame["caption_Title"].isna().all()


@pytest.mark.parametrize("representation", ["json", "yaml"])  # the native route; the decoded
def test_caption_and_status_null_are_no_extended_records_on_either_route(settings, representation):
    # null means absent: a server that ignores the extended media type sends no caption and
    # no status, and one that writes them as null describes nothing either
    def nulls(response, user):
        for record in response["results"]["records"]:
            record.update(caption=None, status=None)
        return response

    emu = Emulator(records=50, seed=2)
    emu.app.routes.extend = nulls
    with emu:
        client = mf.connect(
            emu.base_url, token=emu.token, settings=settings, representation=representation
        )
        with pytest.warns(mf.MetadataWarning, match="does not support extended records"):
            _, frame = client.api.search_records_frame(extended=True, per_page=10)
    assert len(frame) == 10 and frame["caption_Title"].isna().all()
    assert frame.attrs["read"]["native"] is (representation == "json")


def test_a_server_without_structures_still_gives_its_captions_as_text(settings):
    from mediaframe.emulator.envelope import ApiError

    def missing(params, user):
        raise ApiError(404, "No route found")

    emu = Emulator(records=200, seed=2)
    emu.app.routes.me_structures = missing
    with emu:
        client = connect(emu, settings)
        with pytest.warns(mf.MetadataWarning, match="no /api/v1/me/structures/"):
            frame = client.records(extended=True, concurrency=1)
        assert client.fields().empty
        assert frame["caption_Title"].notna().all() and frame["caption_Date"].dtype == "string"
        assert frame["status_4"].dtype == "boolean"


def test_an_interrupted_extended_harvest_resumes_with_its_columns(settings):
    with Emulator(records=1500, seed=4, cap=100) as emu:
        options = {"extended": True, "concurrency": 1, "per_page": 100}
        whole = connect(emu, settings.replace(cache_dir=settings.cache_dir / "whole"))
        requests = mf.HarvestReport.from_frame(whole.records(**options)).requests
        client = connect(emu, settings.replace(retries=0))
        calls = {"n": 0}
        extend = emu.app.routes.extend

        def failing(response, user):  # the service breaks down late in the harvest
            calls["n"] += 1
            if calls["n"] > requests * 3 // 4:
                from mediaframe.emulator.envelope import ApiError

                raise ApiError(500, "Injected fault")
            return extend(response, user)

        emu.app.routes.extend = failing
        with pytest.raises(mf.MediaframeError):
            client.records(**options)
        emu.app.routes.extend = extend
        frame = client.records(**options)
        report = mf.HarvestReport.from_frame(frame)
        assert report.complete and report.resumed_shards > 0
        assert len(frame) == len(emu.ground_truth())
        assert frame["caption_Title"].tolist() == truth(emu, frame)["caption_Title"].tolist()


def test_a_caption_warning_shows_the_server_s_field_name_inert():
    # review 15s, finding 3: the name was repr'd once and shown raw in ``caption_<name>``
    from mediaframe.frames.captions import typed_caption

    name = "Da\x1b]0;PWNED\x07te\u202e"
    with pytest.warns(mf.MetadataWarning) as caught:
        typed_caption(name, ["not a number"], "number")
    said = str(caught[0].message)
    assert not any(char in said for char in "\x1b\x07\u202e"), repr(said)
