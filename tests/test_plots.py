"""The one-call plots, drawn under Agg and checked on their artists."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

import mediaframe as mf
from mediaframe import plots
from mediaframe.emulator import Emulator

# every test draws off-screen and has its figures closed after it (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("pyplot")


@pytest.fixture(scope="module")
def client(inprocess_emulator: Emulator, tmp_path_factory: pytest.TempPathFactory) -> mf.Client:
    settings = mf.config.Settings.from_env().replace(
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
    return client.records()


def _bars(ax: matplotlib.axes.Axes) -> dict[str, float]:
    labels = [tick.get_text() for tick in ax.get_yticklabels()]
    return dict(zip(labels, [bar.get_width() for bar in ax.patches], strict=True))


def test_media_types_bars_are_the_counts(records: pd.DataFrame) -> None:
    ax = plots.media_types(records)
    expected = records["media_type"].astype("string").value_counts()
    assert _bars(ax) == {str(k): float(v) for k, v in expected.items()}
    assert ax.get_title() == "Records per media type"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("records", "media type")
    # most frequent on top: barh draws the first bar at the bottom
    assert ax.patches[-1].get_width() == expected.max()


def test_collections_named_from_me_and_equal_to_the_facet_counts(
    client: mf.Client, records: pd.DataFrame
) -> None:
    ax = plots.collections(records, names=client.me().collections)
    facets = client.facets()
    by_collection = facets[facets["facet"] == "Collection_Name"].set_index("value")["count"]
    assert _bars(ax) == {name: float(count) for name, count in by_collection.items()}
    # client.me() itself names them too, as plots.rights takes it
    assert _bars(plots.collections(records, names=client.me())) == _bars(ax)


def test_collections_without_names_say_base_and_style_reaches_the_bars(
    records: pd.DataFrame,
) -> None:
    ax = plots.collections(records, color="red")
    assert all(label.startswith("base ") for label in _bars(ax))
    assert ax.patches[0].get_facecolor() == matplotlib.colors.to_rgba("red")


def test_timeline_counts_every_month_including_empty_ones() -> None:
    frame = pd.DataFrame(
        {"created_on": pd.to_datetime(["2024-01-03", "2024-01-30", "2024-03-01", None], utc=True)}
    )
    ax = plots.timeline(frame)
    (line,) = ax.get_lines()
    assert list(line.get_ydata()) == [2, 0, 1]
    assert ax.get_title() == "Records created per month (1 without a date)"
    assert ax.get_ylabel() == "records"


def test_timeline_by_updated_year_on_records(records: pd.DataFrame) -> None:
    ax = plots.timeline(records, by="updated_on", period="Y")
    (line,) = ax.get_lines()
    assert line.get_ydata().sum() == records["updated_on"].notna().sum()
    assert "updated" in ax.get_title()


def test_timeline_refuses_an_unknown_period(records: pd.DataFrame) -> None:
    with pytest.raises(mf.InvalidParameterError, match="period='fortnight'"):
        plots.timeline(records, period="fortnight")


def test_technical_numbers_are_a_histogram_and_text_bars(records: pd.DataFrame) -> None:
    ax = plots.technical(records, "FileSize", bins=10)
    assert len(ax.patches) == 10
    assert sum(p.get_height() for p in ax.patches) == records["FileSize"].notna().sum()
    assert ax.get_xlabel() == "FileSize"
    ax = plots.technical(records, "CameraModel")
    counts = records["CameraModel"].value_counts()
    assert _bars(ax) == {str(k): float(v) for k, v in counts.items()}
    missing = records["CameraModel"].isna().sum()
    assert missing and ax.get_title() == f"CameraModel of records ({missing} without a value)"


@pytest.mark.parametrize("name", ["ISO", "CameraModel"])
def test_technical_of_an_all_missing_value_warns_for_numbers_and_text(
    records: pd.DataFrame, name: str
) -> None:
    blank = records.assign(
        **{name: pd.Series(pd.NA, index=records.index, dtype=records[name].dtype)}
    )
    with pytest.warns(mf.EmptyPlotWarning, match=f"no record has a value for '{name}'"):
        ax = plots.technical(blank, name)
    assert not ax.patches and f"({len(records)} without a value)" in ax.get_title()


def test_technical_names_a_missing_column(records: pd.DataFrame) -> None:
    with pytest.raises(mf.InvalidParameterError, match="'NoSuchValue'"):
        plots.technical(records, "NoSuchValue")


def test_positions_scatter_every_record_with_coordinates(records: pd.DataFrame) -> None:
    ax = plots.positions(records)
    (points,) = ax.collections
    has = records["Latitude"].notna() & records["Longitude"].notna()
    assert len(points.get_offsets()) == has.sum()
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("longitude (°)", "latitude (°)")


def _technical(**values: object) -> list[dict[str, object]]:
    return [{"name": name, "value": value} for name, value in values.items()]


def test_positions_leave_out_a_coordinate_sent_as_text() -> None:
    """Text stays text in records(): the Latitude column is then a string column."""
    frame = mf.frames.records(
        [
            {
                "databox_id": 1,
                "record_id": 1,
                "technical_informations": _technical(Latitude=48.85, Longitude=2.35),
            },
            {
                "databox_id": 1,
                "record_id": 2,
                "technical_informations": _technical(Latitude="48 deg 51' N", Longitude=2.35),
            },
        ]
    )
    assert frame["Latitude"].dtype == "string"
    ax = plots.positions(frame)
    (points,) = ax.collections
    assert points.get_offsets().tolist() == [[2.35, 48.85]]
    assert ax.get_title() == "Record positions (1 without a value)"


def test_collections_named_by_collections_some_without_a_base_id() -> None:
    """/me/ collections of older servers carry coll_id and no base_id."""
    mine = mf.frames.collections(
        [
            {"databox_id": 1, "coll_id": 1, "name": "Press photos", "rights": ["actif"]},
            {"databox_id": 1, "base_id": 2, "collection_id": 2, "name": "Events"},
        ]
    )
    assert mine["base_id"].isna().any()
    frame = mf.frames.records(
        [
            {"databox_id": 1, "record_id": 1, "base_id": 2},
            {"databox_id": 1, "record_id": 2, "base_id": 3},
        ]
    )
    assert _bars(plots.collections(frame, names=mine)) == {"Events": 1.0, "base 3": 1.0}
    extended = frame.assign(status_4=pd.array([True, False], dtype="boolean"))
    ax = plots.status_usage(extended, names=mine)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Events", "base 3"]


def test_rights_heat_map_of_me(client: mf.Client) -> None:
    me = client.me()
    ax = plots.rights(me)
    (image,) = ax.images
    columns = [t.get_text() for t in ax.get_xticklabels()]
    assert columns[: len(mf.frames.COLLECTION_RIGHTS)] == list(mf.frames.COLLECTION_RIGHTS)
    assert "name" not in columns
    expected = me.collections[columns].astype(float).to_numpy()
    assert np.array_equal(image.get_array().filled(np.nan), expected, equal_nan=True)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(me.collections["name"])
    assert ax.get_title() == "Collection rights"


def test_status_usage_shares_per_collection_and_bit() -> None:
    frame = pd.DataFrame(
        {
            "base_id": [1, 1, 2, 2],
            "status_4": [True, False, True, True],
            "status_5": pd.array([False, None, True, False], dtype="boolean"),
        }
    )
    statuses = pd.DataFrame(
        {"position": [4, 4, 5, 5], "label_on_en": ["published", "published", "a", "b"]}
    )
    ax = plots.status_usage(frame, names={1: "One", 2: "Two"}, statuses=statuses)
    (image,) = ax.images
    assert image.get_array().tolist() == [[0.5, 0.0], [1.0, 0.5]]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4 · published", "5"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["One", "Two"]
    assert "50%" in [t.get_text() for t in ax.texts]


def test_feed_activity_one_line_per_feed(client: mf.Client) -> None:
    entries = client.feed_entries()
    ax = plots.feed_activity(entries, period="Y")
    drawn = {bars.get_label(): sum(b.get_height() for b in bars) for bars in ax.containers}
    assert drawn == entries.groupby("feed_title", observed=True).size().to_dict()
    years = entries["created_on"].dt.year
    assert len(ax.containers[0]) == years.max() - years.min() + 1
    assert ax.get_legend() is not None


@pytest.mark.parametrize(
    "draw",
    [
        lambda f: plots.timeline(f),
        lambda f: plots.media_types(f),
        lambda f: plots.collections(f),
        lambda f: plots.technical(f, "ISO"),
        lambda f: plots.positions(f),
        lambda f: plots.status_usage(f),
        lambda f: plots.feed_activity(f.rename(columns={"title": "feed_title"})),
    ],
)
def test_empty_input_warns_and_returns_titled_axes(records: pd.DataFrame, draw) -> None:
    with pytest.warns(mf.EmptyPlotWarning, match="nothing to plot"):
        ax = draw(records.iloc[0:0])
    assert isinstance(ax, matplotlib.axes.Axes)
    assert ax.get_title()


def test_the_empty_warning_points_at_the_users_line(records: pd.DataFrame) -> None:
    """Not at a line of mediaframe: a notebook shows the cell's line that drew nothing."""
    import mediaframe.accessor  # noqa: F401  (df.media)

    empty = records.iloc[0:0]
    with pytest.warns(mf.EmptyPlotWarning) as caught:
        plots.timeline(empty)  # warns from the plot function itself
        plots.media_types(empty)  # from a helper of it
        empty.media.media_types()  # through the accessor
        empty.media.technical("CameraModel")
    assert [Path(w.filename).name for w in caught] == [Path(__file__).name] * 4


def test_one_category_and_thousands_of_values(records: pd.DataFrame) -> None:
    images = records[records["media_type"] == "image"]
    assert _bars(plots.media_types(images)) == {"image": float(len(images))}
    many = records.assign(CameraModel=[f"cam {i}" for i in range(len(records))])
    bars = _bars(plots.technical(many, "CameraModel"))
    assert len(bars) == plots.TOP and bars["other"] == len(records) - (plots.TOP - 1)


def test_a_heat_map_of_many_collections_gets_a_row_per_label(records: pd.DataFrame) -> None:
    """300 collections on a default 4.8-inch figure overprint their labels into a smear."""
    many = records.assign(collection=[f"c{i % 300}" for i in range(len(records))], status_4=True)
    ax = plots.status_usage(many)
    height = ax.figure.get_size_inches()[1]
    assert len(ax.get_yticks()) == 300 and height >= 300 * 0.2
    few = records.assign(collection="one", status_4=True)
    assert plots.status_usage(few).figure.get_size_inches()[1] == pytest.approx(4.8)


def test_rights_of_no_collection_warns(client: mf.Client) -> None:
    with pytest.warns(mf.EmptyPlotWarning):
        plots.rights(client.me().collections.iloc[0:0])


def test_draws_on_the_given_axes_and_leaves_rcparams(records: pd.DataFrame, pyplot) -> None:
    before = dict(matplotlib.rcParams)
    _fig, ax = pyplot.subplots()
    assert plots.media_types(records, ax=ax) is ax
    assert plots.timeline(records, ax=ax) is ax
    assert dict(matplotlib.rcParams) == before


def test_missing_matplotlib_names_the_extra() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["matplotlib"] = None
        sys.modules["matplotlib.pyplot"] = None
        import pandas as pd
        from mediaframe import plots
        try:
            plots.media_types(pd.DataFrame({"media_type": ["image"]}))
        except ImportError as err:
            print(err)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert 'pip install -e ".[notebook]" in the mediaframe folder' in out


def test_facet_counts_are_the_servers_counts(client: mf.Client) -> None:
    facets = client.facets()
    ax = plots.facet_counts(facets, "Type_Name")
    expected = facets[facets["facet"] == "Type_Name"].set_index("value")["count"]
    assert _bars(ax) == {str(k): float(v) for k, v in expected.items()}
    assert ax.get_title() == "Records per Type_Name (server counts)"
    with pytest.warns(mf.EmptyPlotWarning):
        plots.facet_counts(facets, "NoSuchFacet")
