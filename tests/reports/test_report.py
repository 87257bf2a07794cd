"""The periodic report: counts per period, collection and media type, checked by hand."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

from mediaframe.client import connect
from mediaframe.config import Settings
from mediaframe.exceptions import InvalidParameterError
from mediaframe.reports import report


def _records():
    return pd.DataFrame(
        {
            "databox_id": [1, 1, 1, 1],
            "record_id": [1, 2, 3, 4],
            "base_id": pd.array([1, 1, 2, 1], dtype="Int64"),
            "media_type": ["image", "image", "video", "image"],
            "FileSize": pd.array([10, 20, 300, None], dtype="Int64"),
            "created_on": pd.to_datetime(
                ["2024-01-05", "2024-01-20", "2024-02-01", "2024-03-31T23:30:00-02:00"],
                utc=True,
                format="ISO8601",
            ),
            "updated_on": pd.to_datetime(
                ["2024-01-06", "2024-03-02", "2024-02-01", "2024-04-01T01:30:00Z"],
                utc=True,
                format="ISO8601",
            ),
        }
    )


def test_created_updated_and_storage_per_month_collection_and_type():
    entries = pd.DataFrame(
        {"feed_id": [7, 7], "feed_title": ["News", "News"], "item_count": [2, 3],
         "created_on": pd.to_datetime(["2024-01-02", "2024-01-30"], utc=True)}
    )  # fmt: skip
    names = pd.DataFrame({"base_id": [1, 2], "name": ["Press", "Video"]})
    result = report(_records(), feed_entries=entries, collections=names)
    rows = result.activity.astype({"period": str}).to_dict("records")
    # record 1 was updated in its creation month: not an update of a later period;
    # record 4 was created 2024-04-01 01:30 UTC, whatever its offset said
    assert rows == [
        {"period": "2024-01", "base_id": 1, "collection": "Press", "media_type": "image",
         "created": 2, "updated": 0, "storage_added": 30},
        {"period": "2024-02", "base_id": 2, "collection": "Video", "media_type": "video",
         "created": 1, "updated": 0, "storage_added": 300},
        {"period": "2024-03", "base_id": 1, "collection": "Press", "media_type": "image",
         "created": 0, "updated": 1, "storage_added": 0},
        {"period": "2024-04", "base_id": 1, "collection": "Press", "media_type": "image",
         "created": 1, "updated": 0, "storage_added": 0},
    ]  # fmt: skip
    assert result.totals["created"].tolist() == [2, 1, 0, 1]
    assert result.feeds.to_dict("records") == [
        {"period": "2024-01", "feed_id": 7, "feed": "News", "entries": 2, "items": 5}
    ]


def test_start_end_and_period_bound_the_rows():
    # whole periods: a start in February reports the whole first quarter
    result = report(_records(), period="quarter", start="2024-02-01", end="2024-03-31")
    assert result.totals.to_dict("records") == [
        {"period": "2024Q1", "created": 3, "updated": 0, "storage_added": 330}
    ]
    monthly = report(_records(), start="2024-02-01", end="2024-03-31")
    assert monthly.totals["period"].tolist() == ["2024-02", "2024-03"]
    with pytest.raises(InvalidParameterError, match="period"):
        report(_records(), period="fortnight")
    with pytest.raises(InvalidParameterError, match="YYYY-MM-DD"):
        report(_records(), start="2024-13-01")
    # a quiet period is a row of zeros, between active ones and up to the end asked for
    quiet = report(_records().iloc[[0, 2]], start="2023-12-01", end="2024-03-31")
    assert quiet.totals.to_dict("records") == [
        {"period": "2023-12", "created": 0, "updated": 0, "storage_added": 0},
        {"period": "2024-01", "created": 1, "updated": 0, "storage_added": 10},
        {"period": "2024-02", "created": 1, "updated": 0, "storage_added": 300},
        {"period": "2024-03", "created": 0, "updated": 0, "storage_added": 0},
    ]
    gaps = report(_records().iloc[[0, 3]], period="month").totals
    assert gaps["period"].tolist() == ["2024-01", "2024-02", "2024-03", "2024-04"]
    assert gaps["created"].tolist() == [1, 0, 0, 1]
    weekly = report(_records().iloc[:0], period="week", start="2024-01-01", end="2024-01-14")
    assert weekly.totals["period"].tolist() == ["2024-01-01/2024-01-07", "2024-01-08/2024-01-14"]
    assert weekly.totals["created"].tolist() == [0, 0]
    with pytest.raises(InvalidParameterError, match="after end=2024-01-31: swap them"):
        report(_records(), start="2024-03-01", end="2024-01-31")
    assert report(_records(), start="2024-03-01", end="2024-03-01").totals["created"].sum() == 0


def test_an_empty_frame_gives_empty_tables_and_a_page(tmp_path):
    empty = _records().iloc[:0]
    result = report(empty)
    assert result.totals.empty and result.activity.empty
    assert "No rows." in result.to_html(tmp_path / "r.html").read_text()


def test_an_end_in_the_future_lists_no_period_yet_to_come():
    today = pd.Timestamp.now(tz="UTC")
    result = report(_records(), period="month", end=(today + pd.DateOffset(years=1)).date())
    last = pd.Period(result.totals["period"].iloc[-1], "M")
    assert last <= pd.Period(today.date(), "M")  # a month to come is not a quiet month


def test_a_notebook_shows_a_bounded_part_of_many_periods():
    result = report(_records(), period="day", start="1990-01-01", end="2024-12-31")
    assert len(result.totals) > 10_000
    shown = result._repr_html_()
    assert shown.count("<tr>") < 100 and "more period(s)" in shown


def test_records_read_back_from_csv_are_reported_as_the_frame_they_came_from(tmp_path):
    # dates read back from a CSV are text ("2024-01-05 00:00:00+00:00"): not a bare
    # "Can only use .dt accessor with datetimelike values"
    original = _records()
    original.to_csv(tmp_path / "records.csv", index=False)
    back = pd.read_csv(tmp_path / "records.csv")
    assert back["created_on"].dtype != original["created_on"].dtype
    assert report(back).activity.equals(report(original).activity)
    with pytest.raises(InvalidParameterError, match=r"created_on.*'soon'"):
        report(back.assign(created_on="soon"))
    # dates without an offset are read as UTC, as the service writes its own
    naive = {name: original[name].dt.tz_localize(None) for name in ("created_on", "updated_on")}
    assert report(original.assign(**naive)).activity.equals(report(original).activity)


def test_a_frame_of_a_few_columns_is_reported_and_its_page_says_which_figure_is_missing(
    tmp_path,
):
    few = _records()[["created_on", "updated_on", "FileSize"]]
    page = report(few).to_html(tmp_path / "few.html").read_text()
    assert "no figure &#39;media types&#39;: this frame has no &#39;media_type&#39; column" in page
    assert page.count("<svg") == 2  # created and updated are still drawn
    with pytest.raises(InvalidParameterError, match="no created_on column"):
        report(few.drop(columns=["created_on"]))


def test_feeds_are_named_from_the_feed_list_when_entries_do_not_say(tmp_path):
    # legacy servers send entries without feed_title: the report named no feed
    entries = pd.DataFrame(
        {"feed_id": pd.array([7, 8], dtype="Int64"), "feed_title": pd.array([None, "Told"]),
         "item_count": [2, 3], "created_on": pd.to_datetime(["2024-01-02"] * 2, utc=True)}
    )  # fmt: skip
    feed_list = pd.DataFrame({"id": pd.array([7, 8], dtype="Int64"), "title": ["News", "Other"]})
    result = report(_records(), feed_entries=entries, feeds=feed_list)
    assert result.feeds["feed"].tolist() == ["News", "Told"]


def test_a_live_report_names_every_feed_on_every_server(fresh_emulator, tmp_path):
    emu = fresh_emulator(records=100)
    settings = Settings.from_env().replace(cache_dir=tmp_path / "cache", progress=False)
    with connect(emu.base_url, token=emu.token, settings=settings) as client:
        result = report(client)
    assert len(result.feeds) and result.feeds["feed"].notna().all()


@pytest.mark.parametrize(
    ("start", "end", "first", "told"),
    [
        # was: Cannot compare Timestamp with datetime.date
        (pd.Timestamp("2024-02-01"), "2024-03-31", "2024-02", "2024-02-01"),
        # was: can't compare datetime.datetime to datetime.date
        (dt.datetime(2024, 2, 1, 12), dt.date(2024, 3, 31), "2024-02", "2024-02-01"),
        # the day a time falls on in UTC, as records are counted: 01:00+02:00 is January 31st
        (pd.Timestamp("2024-02-01T01:00+02:00"), pd.Timestamp("2024-03-31", tz="UTC"),
         "2024-01", "2024-01-31"),
    ],
)  # fmt: skip
def test_start_and_end_may_be_datetimes_as_pandas_users_hold_them(start, end, first, told):
    result = report(_records(), start=start, end=end)
    periods = ["2024-01", "2024-02", "2024-03"]
    assert result.totals["period"].tolist() == periods[periods.index(first) :]
    assert result.provenance["from"] == told and result.provenance["to"] == "2024-03-31"
    assert report(_records(), start=pd.NaT).totals.equals(report(_records()).totals)


def test_a_fractional_file_size_is_added_in_whole_bytes():
    # a server (or a CSV) with "10.5" bytes: was a bare "cannot safely cast non-equivalent"
    records = _records().assign(FileSize=pd.array([10.5, 20.25, 300, None], dtype="Float64"))
    result = report(records)
    assert result.totals["storage_added"].tolist() == [31, 300, 0, 0]
    assert str(result.totals["storage_added"].dtype) == "Int64"


def test_feed_entries_read_back_as_text_are_counted_and_checked():
    dates = ["2024-01-02 00:00:00+00:00", "2024-01-30 00:00:00+00:00"]
    entries = pd.DataFrame({"feed_id": ["7", "7"], "feed_title": ["News", "News"],
                            "item_count": ["2", "3"], "created_on": dates})  # fmt: skip
    # the items were joined as text ("2" + "3"): 23, not 5
    assert report(_records(), feed_entries=entries).feeds["items"].tolist() == [5]
    # named from the feed list though their ids are text (were left unnamed)
    feed_list = pd.DataFrame({"id": [7], "title": ["Told"]})
    untitled = entries.drop(columns=["feed_title"])
    named = report(_records(), feed_entries=untitled, feeds=feed_list).feeds
    assert named[["feed_id", "feed"]].to_dict("records") == [{"feed_id": 7, "feed": "Told"}]
    for name in ("feed_id", "created_on"):  # was a bare KeyError
        with pytest.raises(InvalidParameterError, match=f"no {name} column in the feed entries"):
            report(_records(), feed_entries=entries.drop(columns=[name]))


def test_a_collection_without_an_id_or_a_name_leaves_the_others_named():
    # was: int() argument must be ... not 'NAType'
    names = pd.DataFrame(
        {"base_id": pd.array([1, None, 2], dtype="Int64"), "name": ["Press", "Lost", None]}
    )
    result = report(_records(), collections=names)
    named = dict(zip(result.activity["base_id"], result.activity["collection"], strict=True))
    assert named[1] == "Press" and pd.isna(named[2])


def test_a_report_page_takes_the_users_notes_beside_its_own(tmp_path):
    # was: to_html() got multiple values for keyword argument 'notes'
    few = _records()[["created_on", "updated_on", "FileSize"]]
    # one sentence given alone is one note (was: one note per character)
    text = report(few).to_html(tmp_path / "r.html", notes="for the board").read_text()
    assert "for the board" in text and "no figure &#39;media types&#39;" in text


@pytest.mark.parametrize("source", ["records.csv", None])
def test_a_report_of_something_else_than_a_client_or_a_frame_says_what_to_give(source):
    with pytest.raises(InvalidParameterError, match="a records DataFrame"):
        report(source)
