"""What the safety tests share: walking an exception's chain for text that must not be there."""

from __future__ import annotations

from collections.abc import Iterator


def chain(error: BaseException | None) -> Iterator[BaseException]:
    """``error`` and every exception reachable from it through ``__cause__``/``__context__``."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [current.__cause__, current.__context__]


def texts_of(error: BaseException) -> str:
    """Every message, argument, attribute and repr along ``error``'s chain, as one text."""
    parts = []
    for item in chain(error):
        parts += [str(item), repr(item), *map(repr, item.args)]
        parts += [repr(value) for value in vars(item).values()]
    return "\n".join(parts)
