"""What the baskets hold: elements (records in an order) and, in validation baskets, each
participant's agreement and note.

Drawn from the catalogue's seed on a random stream of their own, so the rest of the catalogue is
the same with or without them. An element's record is one its basket's owner may see.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mediaframe.emulator import vocabulary as vocab
from mediaframe.emulator.catalogue import Catalogue
from mediaframe.emulator.feeds import Basket

_NOTES = ("", "Good for the cover", "Too dark", "Rights unclear", "Use the crop", "")


@dataclass(frozen=True)
class Choice:
    """One participant's say on one element of a validation basket."""

    user_id: int
    agreement: bool | None  # None: not decided yet
    updated: int
    note: str


@dataclass(frozen=True)
class Element:
    """One record in a basket, at its place."""

    id: int
    basket_id: int
    order: int
    row: int
    choices: tuple[Choice, ...] = field(default=())


class BasketContents:
    """The elements of every basket, and who takes part in each validation basket."""

    def __init__(self, catalogue: Catalogue, visible: Callable[[int], frozenset[int]]) -> None:
        """``visible(user_id)`` gives the base ids that user may see."""
        records = catalogue.records
        rng = np.random.default_rng([catalogue.seed, 15])
        self.elements: dict[int, list[Element]] = {}
        self.participants: dict[int, tuple[int, ...]] = {}
        element_id = 0
        base_index = {c[0]: k for k, c in enumerate(vocab.COLLECTIONS)}
        for basket in catalogue.feeds.baskets:
            people = _participants(basket)
            self.participants[basket.id] = people
            allowed = [base_index[b] for b in visible(basket.owner)]
            pool = np.flatnonzero(np.isin(records.base_index, allowed))
            count = min(int(rng.integers(3, 9)), len(pool))
            picked = rng.choice(pool, size=count, replace=False) if count else pool[:0]
            elements = []
            for order, row in enumerate(picked.tolist(), start=1):
                element_id += 1
                choices: tuple[Choice, ...] = ()
                if basket.validation:
                    choices = tuple(_choice(rng, user, basket) for user in people)
                elements.append(Element(element_id, basket.id, order, int(row), choices))
            self.elements[basket.id] = elements

    def can_read(self, basket: Basket, user_id: int) -> bool:
        """The owner and the participants of a validation basket may read it."""
        return user_id == basket.owner or user_id in self.participants.get(basket.id, ())


def _participants(basket: Basket) -> tuple[int, ...]:
    if not basket.validation:
        return ()
    return tuple(dict.fromkeys(u for u in (basket.owner, basket.pusher) if u is not None))


def _choice(rng: np.random.Generator, user_id: int, basket: Basket) -> Choice:
    decided = rng.random() < 0.75
    agreement = bool(rng.random() < 0.6) if decided else None
    note = _NOTES[int(rng.integers(0, len(_NOTES)))] if decided else ""
    return Choice(user_id, agreement, basket.created + int(rng.integers(0, 864_000)), note)
