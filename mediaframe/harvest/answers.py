"""What a search answer says, read strictly: its counts as integers, and the keys it repeats.

A count that is not an integer is no count: it raises
:class:`~mediaframe.exceptions.ResponseFormatError` rather than being guessed. A page that repeats
a key proves nothing of the whole: the counter does not take it for its shard, and the paging of
a shard judges its pages by it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from mediaframe.exceptions import ResponseFormatError

__all__ = ["int_member", "optional_int_member", "repeated_keys"]


def repeated_keys(frame: pd.DataFrame, key: tuple[str, ...]) -> int:
    """How many rows of ``frame`` repeat the key of an earlier row."""
    if len(frame) < 2 or not all(name in frame.columns for name in key):
        return 0
    columns = [frame[name].to_numpy("int64", na_value=-1) for name in key]
    order = np.lexsort(columns[::-1])
    same = np.ones(len(frame) - 1, dtype=bool)
    for values in columns:  # sorted, a repeated key sits right after its first row
        ordered = values[order]
        same &= ordered[1:] == ordered[:-1]
    return int(same.sum())


def optional_int_member(response: Mapping[str, Any], name: str) -> int | None:
    """:func:`int_member`, or ``None`` where the member is missing or null."""
    return None if response.get(name) is None else int_member(response, name)


def int_member(response: Mapping[str, Any], name: str) -> int:
    value = response.get(name)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ResponseFormatError(f"the search answer has no integer {name} (got {value!r})")
    try:
        return int(value)
    except ValueError:
        raise ResponseFormatError(
            f"the search answer's {name} is not a number: {value!r}"
        ) from None
