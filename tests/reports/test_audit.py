"""Each audit check on frames built to hold one problem each, and the audit of a live search."""

from __future__ import annotations

import datetime as dt

import openpyxl
import pandas as pd
import pytest

from mediaframe.client import connect
from mediaframe.config import Settings
from mediaframe.exceptions import ExportError, InvalidParameterError
from mediaframe.reports import CHECKS, audit, checks, fixity

SHA = ["a" * 64, "b" * 64, "c" * 64]


def _records(**columns):
    base = {
        "databox_id": [1, 1, 1, 2, 2, 2],
        "record_id": [1, 2, 3, 1, 2, 3],
        "base_id": [1, 1, 2, 4, 4, 5],
        "collection_id": [1, 1, 2, 1, 1, 2],
        "title": ["a", "b", None, "  ", "e", "f"],
        "original_name": ["a.jpg", "b.JPG", "c.pdf", "d.mp3", "e.tif", "f"],
        "mime_type": ["image/jpeg", "image/jpg", "image/jpeg", "audio/mpeg", "image/tiff", None],
        "MimeType": ["image/jpeg", "image/jpeg", "image/jpeg", "audio/mpeg", "image/png", None],
        "media_type": ["image", "image", "image", "audio", "image", "document"],
        "sha256": [SHA[0], SHA[0].upper(), "", SHA[0], checks.EMPTY_SHA256, None],
        "FileSize": [10, 10, 0, 10, 0, 5],
        "Width": [1, 1, 1, None, 1, None],
        "Height": [1, 1, 1, None, 1, None],
        "Duration": [None, None, None, 3.0, None, None],
        "updated_on": pd.to_datetime(["2024-01-01"] * 6, utc=True),
    }
    base.update(columns)
    frame = pd.DataFrame(base)
    return frame.astype({"databox_id": "Int64", "record_id": "Int64", "base_id": "Int64",
                         "FileSize": "Int64", "sha256": "string", "title": "string"})  # fmt: skip


def test_duplicates_group_by_checksum_across_collections_and_leave_empty_ones_apart():
    check = checks.duplicates(_records())
    assert list(zip(check.frame["databox_id"], check.frame["record_id"], strict=True)) == [
        (1, 1), (1, 2), (2, 1)
    ]  # fmt: skip
    assert set(check.frame["copies"]) == {3} and check.frame["across_collections"].all()
    assert check.counts == {"group(s)": 1, "extra copies": 2, "group(s) across collections": 1}
    apart = checks.no_checksum(_records())
    assert list(apart.frame["record_id"]) == [3, 3] and list(apart.frame["databox_id"]) == [1, 2]


def test_a_record_listed_twice_is_not_a_duplicate_of_itself():
    # two overlapping searches concatenated: records (1, 1) and (1, 2) appear twice
    records = _records()
    both = pd.concat([records, records.iloc[:2]])
    check = checks.duplicates(both)
    assert list(zip(check.frame["databox_id"], check.frame["record_id"], strict=True)) == [
        (1, 1), (1, 2), (2, 1)
    ]  # fmt: skip
    assert check.counts["extra copies"] == 2
    alone = checks.duplicates(pd.concat([records.iloc[[0]], records.iloc[[0]]]))
    assert alone.found == 0


def test_zero_byte_files_by_size_or_by_the_checksum_of_nothing():
    check = checks.zero_byte(_records())
    assert list(zip(check.frame["databox_id"], check.frame["record_id"], strict=True)) == [
        (1, 3), (2, 2)
    ]  # fmt: skip


def test_format_mismatches_compare_declared_technical_and_extension():
    check = checks.format_mismatches(_records())
    problems = dict(zip(check.frame["record_id"] + 10 * check.frame["databox_id"],
                        check.frame["problem"], strict=True))  # fmt: skip
    # jpg/JPG/image/jpg are one format; a .pdf called image/jpeg and a png called tiff are not
    assert problems == {
        13: "extension says application/pdf",
        22: "mime_type and MimeType differ; extension says image/tiff",
    }


def test_missing_values_name_each_missing_field_and_required_captions():
    frame = _records(caption_Credit=["x", None, "y", None, None, None])
    check = checks.missing_values(frame, {1: ["Credit"]})
    missing = set(zip(check.frame["databox_id"], check.frame["record_id"], check.frame["missing"],
                      strict=True))  # fmt: skip
    assert {(1, 3, "title"), (2, 1, "title"), (1, 2, "caption Credit")} <= missing
    assert (2, 1, "Width") not in missing  # audio needs no width
    assert (2, 3, "MimeType") in missing and (2, 3, "FileSize") not in missing
    assert not any(m == "caption Credit" and d == 2 for d, _, m in missing)
    assert check.counts["without title"] == 2 and check.note == ""


def test_rights_and_limited_access_from_the_collections():
    collections = pd.DataFrame({
        "databox_id": [1, 1], "base_id": [1, 2], "collection_id": [1, 2], "name": ["A", "B"],
        "actif": [True, False], "candwnldhd": [True, False], "candwnldpreview": [True, True],
        "nowatermark": [True, True], "restrict_dwnld": [False, False],
    })  # fmt: skip
    statuses = pd.DataFrame({"base_id": [1, 1], "position": [4, 6], "restricted": [False, True]})
    matrix = checks.rights_matrix(collections)
    assert list(matrix.frame.columns[:2]) == ["base_id", "name"] and len(matrix.frame) == 2
    limited = checks.limited_access(collections, statuses).frame
    reasons = limited.groupby("base_id")["reason"].apply(list).to_dict()
    assert any("status bit(s) 6" in r for r in reasons[1])
    assert any("actif" in r for r in reasons[2]) and any("candwnldhd" in r for r in reasons[2])


def test_status_usage_labels_bits_and_flags_undefined_ones():
    counts = pd.DataFrame(
        {"base_id": [1, 1], "position": [4, 9], "on": [3, 2], "records": [10, 10]}
    )
    statuses = pd.DataFrame({"base_id": [1], "position": [4], "label_on_en": ["Published"],
                             "label_off_en": ["Unpublished"]})  # fmt: skip
    check = checks.status_usage(counts, statuses)
    assert list(check.frame["label_on"].fillna("?")) == ["Published", "?"]
    assert list(check.frame["off"]) == [7, 8]
    assert check.counts == {"bit(s) in use": 2, "undefined bit(s) in use": 1}
    from_columns = checks.status_counts_from(
        _records(status_4=[True, False, True, None, True, True])
    )
    assert from_columns.set_index("base_id")["on"].to_dict() == {1: 1, 2: 1, 4: 1, 5: 1}


def test_empty_and_stale_feeds_and_stories_without_records():
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    feed_list = pd.DataFrame({"id": [1, 2, 3], "title": ["old", "fresh", "none"],
                              "total_entries": [1, 1, 0]})  # fmt: skip
    entries = pd.DataFrame({"feed_id": [1, 2], "created_on": pd.to_datetime(
        ["2024-01-01", "2025-12-01"], utc=True)})  # fmt: skip
    check = checks.feeds(feed_list, entries, stale_days=100, now=now)
    assert dict(zip(check.frame["feed_id"], check.frame["problem"], strict=True)) == {
        1: "stale: no entry in 731 days", 3: "empty: no entry"
    }  # fmt: skip
    stories = pd.DataFrame({"databox_id": [1, 1], "story_id": [5, 6], "record_count": [0, 2]})
    assert list(checks.stories_without_records(stories).frame["story_id"]) == [5]


def test_fixity_drift_says_changed_missing_and_untracked():
    before = _records()
    now = _records(sha256=[SHA[1], SHA[0], "", SHA[0], checks.EMPTY_SHA256, None]).iloc[1:]
    extra = _records().iloc[:1].assign(record_id=pd.array([99], dtype="Int64"))
    check = fixity.fixity_drift(before, pd.concat([now, extra]))
    states = dict(zip(check.frame["record_id"] + 10 * check.frame["databox_id"],
                      check.frame["state"], strict=True))  # fmt: skip
    # record (1, 2) had SHA[0] in upper case: the same checksum, not a change
    assert states == {11: "missing", 109: "untracked"}
    changed = fixity.fixity_drift(before, _records(sha256=[SHA[2], *before["sha256"][1:]]))
    assert changed.counts == {"changed": 1, "missing": 0, "untracked": 0}


def _listed(keys, sha256, updated=None):
    frame = pd.DataFrame(
        {
            "databox_id": pd.array([k[0] for k in keys], dtype="Int64"),
            "record_id": pd.array([k[1] for k in keys], dtype="Int64"),
            "sha256": pd.array(sha256, dtype="string"),
            "title": [f"t{k[1]}" for k in keys],
        }
    )
    if updated is not None:
        frame["updated_on"] = pd.to_datetime(updated, utc=True)
    return frame


def test_fixity_drift_compares_each_record_once_however_often_it_is_listed():
    before = _listed([(1, 1), (1, 2), (1, 3), (1, 4), (1, 4)], [*SHA, SHA[0], SHA[0]])
    # (1, 1) in two baskets, (1, 2) twice with its new checksum, (1, 4) gone
    now = _listed([(1, 1), (1, 2), (1, 1), (1, 3), (1, 2)], [SHA[0], SHA[2], SHA[0], "", SHA[2]])
    check = fixity.fixity_drift(before, now)
    assert list(zip(check.frame["record_id"], check.frame["state"], strict=True)) == [
        (2, "changed"), (3, "changed"), (4, "missing")
    ]  # fmt: skip
    assert check.counts == {"changed": 2, "missing": 1, "untracked": 0}
    assert "2 in this harvest" in check.note and "1 in the baseline" in check.note
    # a harvest compared with itself has not drifted, whatever it repeats
    assert fixity.fixity_drift(now, now).found == 0
    assert fixity.fixity_drift(before, before).found == 0
    # nothing repeated: nothing said; an empty checksum and none at all are the same absence
    assert fixity.fixity_drift(before.iloc[:3], before.iloc[:3]).note == ""
    blank, none = _listed([(1, 5)], [""]), _listed([(1, 5)], [None])
    assert fixity.fixity_drift(blank, none).found == 0


def test_fixity_drift_never_matches_rows_without_an_id_and_lists_them_apart():
    # a baseline edited by hand: two different records without a record_id (and one without a
    # databox_id) looked like one record, changed; two in one harvest like one listed twice
    before = _listed([(1, 1), (1, None), (None, 3)], [SHA[0], SHA[0], SHA[0]])
    now = _listed([(1, 1), (1, None), (1, None), (None, 3)], [SHA[0], SHA[1], SHA[2], SHA[1]])
    check = fixity.fixity_drift(before, now)
    assert check.counts == {"changed": 0, "missing": 0, "untracked": 0, "unkeyed": 5}
    assert set(check.frame["state"]) == {"unkeyed"} and check.found == 5
    # each row kept with the checksum of its side, none dropped or merged
    assert sorted(check.frame["sha256_before"].dropna()) == [SHA[0], SHA[0]]
    assert sorted(check.frame["sha256_now"].dropna()) == [SHA[1], SHA[1], SHA[2]]
    assert check.frame[["sha256_before", "sha256_now"]].notna().sum(axis=1).eq(1).all()
    assert "without a databox_id or record_id: 3 in this harvest, 2 in the baseline" in check.note
    assert "more than once" not in check.note  # (1, None) twice: two rows, not one record
    # the records with their ids are still compared
    now.loc[0, "sha256"] = SHA[2]
    assert fixity.fixity_drift(before, now).counts["changed"] == 1


def test_rows_without_an_id_are_never_taken_for_copies_of_one_record():
    # two zero-byte files without a record_id were read as one record listed twice: one went
    records = _listed([(1, None), (1, None), (1, 5)], ["1f" * 32, "2f" * 32, "2f" * 32])
    records["FileSize"] = pd.array([0, 0, 3], dtype="Int64")
    assert len(checks.latest_copies(records)) == 3
    result = audit(records)
    assert result.checks["zero_byte"].found == 2
    assert result.checks["duplicates"].counts["extra copies"] == 1
    twice = pd.concat([records, records.iloc[[2]]], ignore_index=True)
    assert checks.latest_copies(twice).index.tolist() == [0, 1, 3]  # (1, 5) once, the last


def test_fixity_drift_takes_the_latest_of_copies_that_disagree_and_says_so():
    # a record changed while the harvest was read: its pages hold the old and the new checksum
    updated = ["2024-01-02", "2024-01-01", "2024-01-01"]
    now = _listed([(1, 1), (1, 1), (1, 2)], [SHA[1], SHA[0], SHA[0]], updated)
    before = _listed([(1, 1), (1, 2)], [SHA[0], SHA[0]], updated[1:])
    check = fixity.fixity_drift(before, now)
    assert list(check.frame["state"]) == ["changed"] and check.frame["sha256_now"][0] == SHA[1]
    assert "1 with differing checksums" in check.note
    assert fixity.fixity_drift(now, now).found == 0


def test_frames_already_harvested_are_audited_with_what_is_given(tmp_path):
    result = audit(_records())
    assert set(result.checks) | set(result.skipped) == set(CHECKS)
    assert "rights_matrix" in result.skipped and result.duplicates is not None
    assert result.rights_matrix is None
    assert "duplicates" in repr(result) and "<table" in result._repr_html_()
    with pytest.raises(ExportError):
        result.export(tmp_path / "a.pdf")


@pytest.fixture
def client_of(tmp_path):
    def make(emu):
        settings = Settings.from_env().replace(cache_dir=tmp_path / "cache", progress=False)
        return connect(emu.base_url, token=emu.token, settings=settings)

    return make


def test_a_live_audit_finds_the_emulators_duplicates_and_exports_them(
    fresh_emulator, client_of, tmp_path, flavour
):
    emu = fresh_emulator(records=1500, cap=200)
    with client_of(emu) as client:
        result = audit(client)
    truth = emu.ground_truth()
    shared = truth[truth["sha256"].duplicated(keep=False)]
    assert len(result.duplicates) == len(shared) > 0
    assert result.skipped == {}
    bits = result.status_usage.set_index(["base_id", "position"])["on"]
    assert bits.sum() > 0 and result.status_usage["label_on"].notna().all()
    assert len(result.rights_matrix) == truth["base_id"].nunique()
    # harvested extended: required caption fields come from the field structure
    if flavour == "legacy":  # its structures route gives no field types: the audit says so
        assert "not checked" in result.checks["missing_values"].note
    else:
        assert result.checks["missing_values"].note == ""
        assert result.missing_values["missing"].str.startswith("caption ").any()
    result.to_excel(tmp_path / "audit.xlsx")
    book = openpyxl.load_workbook(tmp_path / "audit.xlsx")
    assert book.sheetnames[:2] == ["README", "duplicates"] and "fixity_drift" in book.sheetnames
    page = result.to_html(tmp_path / "audit.html").read_text()
    assert "Duplicate files" in page and emu.base_url in page
    assert page.count("<svg") == 2  # records per collection, and the rights
    assert len(result.to_csv(tmp_path / "csv")) == len(CHECKS) + 1


def test_fixity_drift_compares_with_the_cached_harvest_before_syncing(fresh_emulator, client_of):
    emu = fresh_emulator(records=400, cap=100)
    with client_of(emu) as client:
        first = audit(client)
        assert "baseline" in first.checks["fixity_drift"].note
        row = emu.catalogue.row_of(1, int(first.duplicates["record_id"].iloc[0]))
        emu.catalogue.records.sha256[row] = b"f" * 64
        key = emu.ground_truth().iloc[0]
        emu.update_record(int(key["databox_id"]), int(key["record_id"]), title="touched")
        emu.update_record(1, int(first.duplicates["record_id"].iloc[0]), title="touched too")
        second = audit(client)
    drift = second.fixity_drift
    assert list(drift["state"]) == ["changed"]
    assert drift["sha256_now"].iloc[0] == "f" * 64


def test_an_audit_of_a_search_that_matches_nothing_runs_every_check(
    fresh_emulator, client_of, tmp_path
):
    emu = fresh_emulator(records=100)
    with client_of(emu) as client:
        assert client.stories("nothing-matches-this").empty  # was "No objects to concatenate"
        result = audit(client, "nothing-matches-this")
        again = audit(client, "nothing-matches-this")  # the empty harvest is the baseline
    assert result.skipped == {} and result.provenance["rows"].startswith("0 ")
    for name in ("duplicates", "no_checksum", "zero_byte", "format_mismatches", "missing_values"):
        assert result.checks[name].found == 0, name
    assert again.checks["fixity_drift"].counts == {"changed": 0, "missing": 0, "untracked": 0}
    assert len(again.to_csv(tmp_path / "csv")) == len(CHECKS) + 1
    again.to_excel(tmp_path / "audit.xlsx")
    assert "Fixity drift" in again.to_html(tmp_path / "audit.html").read_text()


def test_a_frame_of_a_few_columns_is_audited_by_the_checks_it_allows(tmp_path):
    # a CSV of ids and checksums: the checks needing other columns say why they did not run
    # (checksums other than "a" * 64, which holds the "aaaaaaaa" another test uses as a token:
    # the secret sweep reads every file a test writes)
    sha = ["1f" * 32, "1F" * 32, "", "1f" * 32, checks.EMPTY_SHA256, None]
    few = _records(sha256=sha)[["databox_id", "record_id", "sha256"]]
    result = audit(few, previous=few.drop(columns=["sha256"]))
    assert result.skipped["format_mismatches"] == "no mime_type column in the records"
    assert result.skipped["missing_values"] == "no title column in the records"
    assert result.skipped["fixity_drift"] == "no sha256 column in the earlier harvest"
    assert result.checks["duplicates"].counts["extra copies"] == 2
    assert result.duplicates["across_collections"].isna().all()  # no collection to tell
    assert "not run: no title column" in result.to_html(tmp_path / "a.html").read_text()
    nothing = audit(pd.DataFrame())
    assert set(nothing.skipped) >= {"duplicates", "no_checksum", "zero_byte", "fixity_drift"}


def test_fixity_drift_matches_a_baseline_read_back_with_ids_as_text():
    # an auditor's baseline, kept as CSV and read with dtype=str so that nothing is rounded
    now = _records()
    before = now.astype({"databox_id": str, "record_id": str, "sha256": str})
    before.loc[0, "sha256"] = SHA[2]
    check = fixity.fixity_drift(before, now)
    assert list(zip(check.frame["record_id"], check.frame["state"], strict=True)) == [
        (1, "changed")
    ]
    with pytest.raises(InvalidParameterError, match="record_id holds 'x'"):
        fixity.fixity_drift(before.assign(record_id="x"), now)


def test_records_keyed_by_their_index_or_with_odd_column_labels_are_audited():
    records = _records()
    keyed = audit(records.set_index(["databox_id", "record_id"]), previous=records)
    assert "fixity_drift" in keyed.checks and keyed.fixity_drift.empty
    assert keyed.checks["duplicates"].counts == audit(records).checks["duplicates"].counts
    labelled = pd.concat([records, pd.Series(1, index=records.index, name=0)], axis=1)
    assert audit(labelled).checks["duplicates"].found == 3  # was: 'int' has no 'startswith'
    with pytest.raises(InvalidParameterError, match=r"two columns named 'sha256'"):
        audit(pd.concat([records, records[["sha256"]]], axis=1))


def test_feed_entries_read_back_from_csv_or_without_offsets_are_checked():
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    feed_list = pd.DataFrame({"id": [1, 2], "title": ["old", "fresh"], "total_entries": [1, 1]})
    dates = ["2024-01-01 00:00:00+00:00", "2025-12-01 00:00:00+00:00"]
    for created_on in (dates, pd.to_datetime(dates).tz_localize(None)):
        entries = pd.DataFrame({"feed_id": [1, 2], "created_on": created_on})
        check = checks.feeds(feed_list, entries, stale_days=100, now=now)
        assert check.frame["problem"].tolist() == ["stale: no entry in 731 days"]


def test_feed_entries_with_ids_read_back_as_text_match_their_feeds():
    # read with dtype=str: no entry matched its feed, both were called empty, the stale one missed
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    feed_list = pd.DataFrame({"id": [1, 2], "title": ["old", "fresh"]})
    entries = pd.DataFrame({"feed_id": ["1", "2"], "created_on": ["2024-01-01", "2025-12-01"]})
    for listed in (feed_list, feed_list.astype({"id": str})):
        check = checks.feeds(listed, entries, stale_days=100, now=now)
        assert check.frame["problem"].tolist() == ["stale: no entry in 731 days"]


def test_statuses_read_back_as_text_label_and_restrict_their_bits():
    # status_usage: a bare "You are trying to merge on int64 and str columns";
    # limited_access: the restricted bit went unseen
    counts = pd.DataFrame(
        {"base_id": [1, 1], "position": [4, 9], "on": [3, 2], "records": [10, 10]}
    )
    statuses = pd.DataFrame({"base_id": ["1"], "position": ["4"], "label_on_en": ["Published"],
                             "label_off_en": ["Unpublished"], "restricted": [True]})  # fmt: skip
    check = checks.status_usage(counts, statuses)
    assert list(check.frame["label_on"].fillna("?")) == ["Published", "?"]
    collections = pd.DataFrame({"base_id": [1], "name": ["A"], "databox_id": [1]})
    for given in (collections, collections.astype({"base_id": str})):
        reasons = checks.limited_access(given, statuses).frame["reason"].tolist()
        assert reasons == ["records with status bit(s) 4 may be hidden (restricted)"]


def test_duplicates_read_a_record_listed_twice_by_its_latest_copy():
    # (1, 1) changed while the harvest was read: its newer copy no longer shares (1, 2)'s file
    updated = ["2024-01-02", "2024-01-01", "2024-01-01"]
    records = _listed([(1, 1), (1, 1), (1, 2)], [SHA[1], SHA[0], SHA[0]], updated)
    assert checks.duplicates(records).found == 0
    assert fixity.fixity_drift(records, records).found == 0
    older_first = records.iloc[[1, 2, 0]]  # the order listed does not matter, the dates do
    assert checks.duplicates(older_first).found == 0


def test_every_check_of_an_audit_lists_a_record_listed_twice_once():
    # baskets concatenated: records (1, 3) and (2, 2) are in two of them
    records = _records()
    twice = pd.concat([records, records.iloc[[2, 4]]], ignore_index=True)
    once, result = audit(records), audit(twice, previous=records)
    for name in ("duplicates", "no_checksum", "zero_byte", "format_mismatches", "missing_values"):
        assert result.checks[name].counts == once.checks[name].counts, name
        assert result.checks[name].found == once.checks[name].found, name
    assert "2 in this harvest" in result.checks["fixity_drift"].note


def test_audit_options_of_the_wrong_type_are_refused_with_advice():
    feed_list = pd.DataFrame({"id": [1], "title": ["old"], "total_entries": [1]})
    entries = pd.DataFrame({"feed_id": [1], "created_on": pd.to_datetime(["2024-01-01"], utc=True)})
    for stale_days in ("30", -1, 1.5):  # "30": a bare TypeError; -1: every feed called stale
        with pytest.raises(InvalidParameterError, match="stale_days"):
            audit(_records(), feeds=feed_list, feed_entries=entries, stale_days=stale_days)
    # a field name for a list of them: its letters were checked as fields ("caption T", ...)
    with pytest.raises(InvalidParameterError, match=r"required_fields\[1\] must be a list"):
        audit(_records(caption_Credit=["x"] * 6), required_fields={1: "Credit"})
    with pytest.raises(InvalidParameterError, match="required_fields must map"):
        audit(_records(), required_fields=["Credit"])
    fine = audit(_records(caption_Credit=["x", None] * 3), required_fields={"1": ("Credit",)})
    assert "caption Credit" in set(fine.missing_values["missing"])


def test_checks_read_frames_read_back_as_text_and_odd_values():
    # a CSV read back with dtype=str: required captions and empty stories were silently missed
    records = _records(caption_Credit=["x", None, "y", None, None, None]).astype(
        {"databox_id": str, "record_id": str}
    )
    check = checks.missing_values(records, {1: ["Credit"]})
    found = check.frame[["databox_id", "record_id", "missing"]].itertuples(index=False)
    assert ("1", "2", "caption Credit") in set(found)
    stories = pd.DataFrame({"databox_id": ["1", "1"], "story_id": ["5", "6"],
                            "record_count": ["0", "2"]})  # fmt: skip
    assert list(checks.stories_without_records(stories).frame["story_id"]) == ["5"]
    # a total that is no number is counted from the entries (was: invalid literal for int())
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    feed_list = pd.DataFrame({"id": [1, 2], "title": ["a", "b"], "total_entries": ["many", None]})
    entries = pd.DataFrame({"feed_id": [1], "created_on": pd.to_datetime(["2025-12-01"], utc=True)})
    found = checks.feeds(feed_list, entries, stale_days=100, now=now).frame
    assert found["feed_id"].tolist() == [2] and found["problem"].tolist() == ["empty: no entry"]
    # a status bit without a position says nothing (was: int() ... not 'NoneType')
    collections = pd.DataFrame({"base_id": [1], "name": ["A"], "databox_id": [1]})
    statuses = pd.DataFrame({"base_id": [1, 1], "position": [None, 6], "restricted": [True, True]})
    reasons = checks.limited_access(collections, statuses).frame["reason"].tolist()
    assert reasons == ["records with status bit(s) 6 may be hidden (restricted)"]


def test_a_page_takes_the_users_notes_and_figures_beside_its_own(tmp_path):
    # was: to_html() got multiple values for keyword argument 'notes'
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>'
    # checksums other than "a" * 64, which holds a token of another test (the secret sweep)
    result = audit(_records(sha256=["1f" * 32] * 6))
    page = result.to_html(tmp_path / "a.html", notes=["checked by Ada"], figures={"mine": svg})
    text = page.read_text()
    assert "checked by Ada" in text and "not run: no collection rights given" in text
    assert "<figcaption>mine</figcaption>" in text


@pytest.mark.parametrize("source", ["records.csv", None, 42])
def test_an_audit_of_something_else_than_a_client_or_a_frame_says_what_to_give(source):
    # was: AttributeError: 'str' object has no attribute 'records'
    with pytest.raises(InvalidParameterError, match="a records DataFrame"):
        audit(source)


def test_fixity_drift_against_a_baseline_of_ids_and_checksums_keeps_todays_title_and_date():
    # an auditor's checksum manifest: ids and sha256 only. The title and update date of today's
    # harvest were dropped (the merge left them unsuffixed, then a missing title_before blanked
    # the title)
    now = _records()
    before = now[["databox_id", "record_id", "sha256"]].copy()
    before.loc[0, "sha256"] = SHA[2]
    row = fixity.fixity_drift(before, now).frame.iloc[0]
    assert (row["record_id"], row["state"], row["title"]) == (1, "changed", "a")
    assert row["updated_on_now"] == pd.Timestamp("2024-01-01", tz="UTC")
    assert pd.isna(row["updated_on_before"])
    with pytest.raises(InvalidParameterError, match="no sha256 column in the earlier harvest"):
        fixity.fixity_drift(before.drop(columns=["sha256"]), now)


def test_an_audit_of_the_cache_alone_reads_the_earlier_harvest_once(fresh_emulator, client_of):
    # offline=True was passed twice to client.records: a bare "got multiple values"
    emu = fresh_emulator(records=100)
    with client_of(emu) as client:
        first = audit(client)
        again = audit(client, offline=True)
    assert again.checks["fixity_drift"].counts == {"changed": 0, "missing": 0, "untracked": 0}
    assert len(again.records) == len(first.records) > 0
