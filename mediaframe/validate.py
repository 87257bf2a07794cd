"""Checking what users pass, where they pass it: one helper per kind of option.

Every public call checks its options through these before anything is sent, so that a bad value
fails with an :class:`~mediaframe.exceptions.InvalidParameterError` that names the option and
says what to give instead — never a ``TypeError`` naming an internal function, and never a value
quietly read as "the default" or "no filter". Iterables are materialised once, here, so that a
generator given as a filter is not consumed by the check and then found empty.

Examples
--------
>>> check_keywords({"recordtype": "image"}, ["record_type", "bases"], where="records")
Traceback (most recent call last):
...
mediaframe.exceptions.InvalidParameterError: records() has no option 'recordtype': did you mean \
'record_type'? Its options: bases, record_type
>>> duration("1h", "ttl")
datetime.timedelta(seconds=3600)
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import inspect
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from mediaframe.exceptions import InvalidParameterError

_SECONDS = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")

__all__ = [
    "check_keywords",
    "choice",
    "count",
    "date_field",
    "duration",
    "flag",
    "items",
    "keywords_checked",
    "name",
    "path",
    "status",
    "suggest",
]

_F = TypeVar("_F", bound=Callable[..., Any])

#: The dates every record has; a databox may define more (date-typed fields of its structure).
RECORD_DATE_FIELDS = ("created_on", "updated_on")


def suggest(value: str, allowed: Iterable[str]) -> str:
    """`` did you mean 'x'?`` for the closest of ``allowed``, or ``""`` when none is close."""
    close = difflib.get_close_matches(str(value), list(allowed), n=1, cutoff=0.6)
    return f" did you mean {close[0]!r}?" if close else ""


def check_keywords(given: Iterable[str], allowed: Iterable[str], *, where: str) -> None:
    """Refuse option names ``where()`` does not take, suggesting the closest valid one."""
    allowed = sorted(allowed)
    for option in given:
        if option not in allowed:
            raise InvalidParameterError(
                f"{where}() has no option {option!r}:{suggest(option, allowed)} "
                f"Its options: {', '.join(allowed)}"
            )


def keywords_checked(func: _F) -> _F:
    """Decorate a function whose options are keyword parameters: a misspelt keyword raises
    :class:`InvalidParameterError` naming the public function and the closest option."""
    parameters = inspect.signature(func).parameters
    allowed = [p.name for p in parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]

    @functools.wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        check_keywords(kwargs, allowed, where=func.__name__)
        return func(*args, **kwargs)

    return checked  # type: ignore[return-value]


def count(value: Any, option: str, *, minimum: int, maximum: int | None = None) -> int:
    """An integer (not a bool, not a string) within bounds."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameterError(
            f"{option} must be an integer, not {type(value).__name__} {value!r}"
        )
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        raise InvalidParameterError(f"{option} must be {bound}, not {value}")
    return value


def flag(value: Any, option: str) -> bool:
    """``True``/``False`` (or 1/0); a string such as ``'0'`` would read as true: refused."""
    if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise InvalidParameterError(f"{option} must be True or False, not {value!r}")


def choice(value: Any, option: str, allowed: Iterable[str]) -> str:
    """One of ``allowed``, with the closest suggested for a near miss."""
    allowed = list(allowed)
    if not isinstance(value, str) or value not in allowed:
        hint = suggest(value, allowed) if isinstance(value, str) else ""
        raise InvalidParameterError(
            f"{option} must be one of {', '.join(allowed)}; not {value!r}.{hint}".rstrip(".")
        )
    return value


def items(values: Any, option: str) -> list[Any]:
    """A list from any iterable (read once: generators and iterators work), not a string."""
    if values is None:
        return []
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise InvalidParameterError(
            f"{option} must be a list (or another iterable), not {type(values).__name__} {values!r}"
        )
    return list(values)


def name(value: Any, option: str) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameterError(f"{option} must hold non-empty strings, not {value!r}")
    return value


def path(value: Any, option: str) -> str:
    """A path or URL as a string (``str`` or ``os.PathLike``)."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameterError(f"{option} must be a path, not {value!r}")
    return value


def duration(value: Any, option: str) -> dt.timedelta:
    """A duration: seconds (a number, or a string of one: ``'3600'``), a ``timedelta``, or a
    string pandas reads (``'1h'``, ``'30min'``, ``'2 days'``); not negative."""
    if isinstance(value, dt.timedelta):
        delta = value
    elif isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        try:
            delta = dt.timedelta(seconds=value)
        except OverflowError:
            raise InvalidParameterError(f"{option}={value!r} seconds is too long") from None
    elif isinstance(value, str) and _SECONDS.fullmatch(value.strip()):
        # a number without a unit is seconds, as everywhere else (pandas would read nanoseconds)
        return duration(float(value), option)
    elif isinstance(value, str) and value.strip():
        import pandas as pd  # pandas reads durations the way notebook users write them

        try:
            parsed = pd.Timedelta(value.strip())
        except (ValueError, OverflowError):
            parsed = None
        if parsed is None or parsed is pd.NaT:
            raise InvalidParameterError(
                f"{option}={value!r} is not a duration: give seconds, a timedelta, or a string "
                "such as '1h', '30min' or '2 days'"
            ) from None
        delta = parsed.to_pytimedelta()
    else:
        raise InvalidParameterError(
            f"{option} must be seconds, a timedelta or a string such as '1h'; not {value!r}"
        )
    if delta < dt.timedelta(0):
        raise InvalidParameterError(f"{option} must not be negative, not {value!r}")
    return delta


def status(value: Any) -> dict[int, dict[str, list[int]]]:
    """``{bit: {"on"|"off": [databox_id, ...]}}``, checked and materialised, in a plain form.

    A bit with no state, or a state with no databox, would filter nothing: both are refused.
    """
    if not isinstance(value, Mapping):
        raise InvalidParameterError(
            "status must be a mapping {bit: {'on': [databox_id, ...], 'off': [...]}}, "
            f"not {value!r}"
        )
    plain: dict[int, dict[str, list[int]]] = {}
    for bit, states in value.items():
        bit = count(bit, "status bit", minimum=0, maximum=31)
        if not isinstance(states, Mapping) or not states or not set(states) <= {"on", "off"}:
            raise InvalidParameterError(
                f"status[{bit}] must map 'on' and/or 'off' to databox ids, not {states!r}"
            )
        for state, databoxes in states.items():
            ids = [databoxes] if isinstance(databoxes, int) else items(databoxes, "status")
            if isinstance(databoxes, bool) or databoxes is None or not ids:
                raise InvalidParameterError(
                    f"status[{bit}][{state!r}] must name at least one databox id, not {databoxes!r}"
                )
            plain.setdefault(bit, {})[state] = list(
                dict.fromkeys(count(i, "status databox_id", minimum=0) for i in ids)
            )
    return plain


def date_field(value: Any, known: Iterable[str]) -> str:
    """A date field the service offers (a typo would go out and filter nothing)."""
    known = list(known)
    field = name(value, "date_field")
    if field not in known:
        raise InvalidParameterError(
            f"date_field={field!r} is not a date field of this service:{suggest(field, known)} "
            f"Use one of {', '.join(known)}"
        )
    return field
