"""A search no split gets under a cap of one hit: twins of one base, day and type."""

from __future__ import annotations

from typing import Any

import pandas as pd

from mediaframe.emulator import Emulator


def make_twins(emu: Emulator) -> tuple[pd.DataFrame, pd.Series]:
    """Give the first group of twins of ``emu`` (records of one base, creation day and media
    type) the same status bits, so that nothing tells them apart; the twins, and one of them."""
    truth = emu.ground_truth()
    truth = truth.assign(day=truth.created_on.dt.date)
    twins = truth.groupby(["base_id", "day", "media_type"], observed=True).filter(
        lambda group: len(group) >= 2
    )
    first = twins.iloc[0]
    same = twins[
        (twins.base_id == first.base_id)
        & (twins.day == first.day)
        & (twins.media_type == first.media_type)
    ]
    for row in same.itertuples():  # nothing left to tell them apart: not even a status bit
        emu.update_record(int(row.databox_id), int(row.record_id), status=0)
    return same, first


def search_of(first: Any) -> dict[str, Any]:
    """The search options that select the twins of ``first``."""
    return {"record_type": str(first.media_type), "bases": [int(first.base_id)]}
