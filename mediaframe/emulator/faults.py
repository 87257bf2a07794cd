"""Seedable fault injection: 500 answers, dropped connections, truncated bodies, delays."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass


class DropConnection(Exception):
    """Raised by the app when the connection must close without any answer."""


@dataclass(frozen=True)
class Plan:
    """What goes wrong with one request."""

    fail: bool = False
    drop: bool = False
    truncate: bool = False
    delay: float = 0.0  # seconds


class Faults:
    """Rates and ranges of faults, drawn per request from one seeded generator.

    Parameters
    ----------
    fail_rate, drop_rate, truncate_rate
        Probabilities (0 to 1) of a 500 answer, a dropped connection and a truncated body.
    delay_ms
        ``(min, max)`` milliseconds added to each answer.
    seed
        Seed of the draws: the same seed and the same sequence of requests give the same faults.
    """

    def __init__(
        self,
        *,
        fail_rate: float = 0.0,
        drop_rate: float = 0.0,
        truncate_rate: float = 0.0,
        delay_ms: tuple[int, int] = (0, 0),
        seed: int | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self.fail_rate = self.drop_rate = self.truncate_rate = 0.0
        self.delay_ms = (0, 0)
        self.configure(
            fail_rate=fail_rate, drop_rate=drop_rate, truncate_rate=truncate_rate, delay_ms=delay_ms
        )

    def configure(
        self,
        *,
        fail_rate: float | None = None,
        drop_rate: float | None = None,
        truncate_rate: float | None = None,
        delay_ms: tuple[int, int] | None = None,
        seed: int | None = None,
    ) -> None:
        """Change some knobs; the others keep their value."""
        rates = {"fail_rate": fail_rate, "drop_rate": drop_rate, "truncate_rate": truncate_rate}
        for name, value in rates.items():
            if value is not None:
                if not 0.0 <= value <= 1.0:
                    raise ValueError(f"{name} must be between 0 and 1, got {value}")
                setattr(self, name, float(value))
        if delay_ms is not None:
            low, high = delay_ms
            if not 0 <= low <= high:
                raise ValueError(
                    f"delay_ms must be (min, max) with 0 <= min <= max, got {delay_ms}"
                )
            self.delay_ms = (int(low), int(high))
        if seed is not None:
            with self._lock:
                self._random.seed(seed)

    def draw(self) -> Plan:
        """The faults of the next request (four draws, always in the same order)."""
        with self._lock:
            r = self._random
            fail, drop, truncate = r.random(), r.random(), r.random()
            delay = r.uniform(*self.delay_ms) / 1000
        return Plan(
            fail=fail < self.fail_rate,
            drop=drop < self.drop_rate,
            truncate=truncate < self.truncate_rate,
            delay=delay,
        )


def parse_delay(text: str) -> tuple[int, int]:
    """``"MIN-MAX"`` or ``"N"`` milliseconds as a (min, max) pair."""
    low, _, high = text.partition("-")
    try:
        pair = (int(low), int(high or low))
    except ValueError:
        raise ValueError(
            f"delay must be MIN-MAX in milliseconds, e.g. 10-50, got {text!r}"
        ) from None
    if not 0 <= pair[0] <= pair[1]:
        raise ValueError(f"delay must be MIN-MAX with 0 <= MIN <= MAX, got {text!r}")
    return pair
