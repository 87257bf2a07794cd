"""The synthetic catalogue: determinism, shapes, typed technical values, ground truth, changes."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from mediaframe.emulator import Catalogue, Emulator
from mediaframe.emulator.columns import typed_value


def test_same_seed_same_catalogue_other_seed_other_catalogue() -> None:
    a, b, c = (
        Catalogue(records=300, seed=4),
        Catalogue(records=300, seed=4),
        Catalogue(records=300, seed=5),
    )
    assert a.record_dicts(range(300)) == b.record_dicts(range(300))
    assert a.record_dicts(range(300)) != c.record_dicts(range(300))
    pd.testing.assert_frame_equal(a.frame(), b.frame())


@pytest.mark.parametrize(
    ("raw", "value"),
    [("5", 5), ("2.8", 2.8), ("-3", "-3"), ("-1.5", -1.5), ("RGB", "RGB"), ("1/250", "1/250")],
)
def test_technical_values_are_typed_per_value(raw, value) -> None:
    assert typed_value(raw) == value and type(typed_value(raw)) is type(value)


def test_catalogue_has_the_variety_clients_must_handle() -> None:
    cat = Catalogue(records=3000, seed=0)
    frame = cat.frame()
    assert frame["databox_id"].nunique() >= 3 and frame["base_id"].nunique() >= 6
    assert set(frame["media_type"].unique()) == {
        "image",
        "video",
        "audio",
        "document",
        "flash",
        "unknown",
    }
    # collection_id is local to a databox: the same id exists in several databoxes.
    assert frame.groupby("collection_id")["databox_id"].nunique().max() > 1
    assert frame["sha256"].duplicated().any()
    assert (frame["updated_on"] >= frame["created_on"]).all()
    assert frame["created_on"].dt.year.nunique() >= 5
    records = cat.record_dicts(range(3000))
    assert any(r["thumbnail"] is None for r in records)
    apertures = {
        type(t["value"])
        for r in records
        for t in r["technical_informations"]
        if t["name"] == "Aperture"
    }
    assert apertures == {int, float}
    names = [{t["name"] for t in r["technical_informations"]} for r in records]
    assert any("Latitude" in n for n in names) and any("Latitude" not in n for n in names)
    permalink = next(r["thumbnail"]["permalink"] for r in records if r["thumbnail"])
    assert permalink["download_url"].endswith("&download=1") and "token=" in permalink["url"]


def test_record_dict_fields_are_well_formed() -> None:
    record = Catalogue(records=50, seed=2).record_dict(7)
    assert re.fullmatch(r"[0-9a-f]{64}", record["sha256"])
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", record["uuid"]
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", record["created_on"])


def test_small_and_empty_catalogues_build() -> None:
    assert Catalogue(records=0).frame().empty
    assert len(Catalogue(records=100).frame()) == 100


def test_ground_truth_visibility() -> None:
    emu = Emulator(records=500, seed=3)
    everything = emu.ground_truth(user="*")
    demo = emu.ground_truth()
    assert len(demo) == int(everything["visible"].sum()) < len(everything)
    assert set(demo["base_id"]) == {1, 2, 3, 4, 5, 6}
    assert set(emu.ground_truth(user="photographer")["base_id"]) == {2}
    assert len(emu.ground_truth(user="auditor")) == len(everything)
    stories = emu.ground_truth("stories")
    assert list(stories.columns)[:3] == ["databox_id", "story_id", "base_id"]
    assert str(stories["created_on"].dtype) == "datetime64[ns, UTC]"


def test_update_and_delete_show_in_answers() -> None:
    emu = Emulator(records=200, seed=3)
    first, second = (row for _, row in emu.ground_truth().head(2).iterrows())
    key = (int(first["databox_id"]), int(first["record_id"]))
    emu.update_record(*key, title="Renamed by a test", keywords=["zzyzx"])
    with emu.requests_session() as session:
        url = f"{emu.inprocess_url}/api/v1/records/{key[0]}/{key[1]}/"
        record = session.get(url, params={"oauth_token": emu.token}).json()["response"]["record"]
        assert record["title"] == "Renamed by a test"
        assert pd.Timestamp(record["updated_on"]) > first["updated_on"]
        found = session.post(
            f"{emu.inprocess_url}/api/v1/search/", data={"oauth_token": emu.token, "query": "zzyzx"}
        )
        assert found.json()["response"]["total_results"] == 1
        emu.delete_record(*key)
        assert session.get(url, params={"oauth_token": emu.token}).status_code == 404
    assert key not in set(
        zip(emu.ground_truth()["databox_id"], emu.ground_truth()["record_id"], strict=True)
    )
    with pytest.raises(ValueError, match="updatable"):
        emu.update_record(int(second["databox_id"]), int(second["record_id"]), colour="red")
