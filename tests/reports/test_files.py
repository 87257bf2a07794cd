"""How an export meets the file it replaces: options that would undo the atomic write, its
permissions, its compression, and the text its encoding cannot hold."""

from __future__ import annotations

import pandas as pd
import pytest

from mediaframe.exceptions import ExportError
from mediaframe.reports import to_csv

FRAME = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})


@pytest.mark.parametrize("mode", ["a", "a+", "x"])
def test_csv_refuses_a_mode_other_than_replace_and_keeps_the_earlier_file(tmp_path, mode):
    path = tmp_path / "log.csv"
    to_csv(FRAME, path)
    before = path.read_bytes()
    with pytest.raises(ExportError, match=r"pd\.concat"):
        to_csv(FRAME, path, mode=mode, header=False)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["log.csv"]
