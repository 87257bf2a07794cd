"""The pure state of a facet filter: a query, values per facet, dates → query, filters, code."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

from mediaframe.exceptions import InvalidParameterError
from mediaframe.parameters import search_params, to_ymd

__all__ = ["DATE_FIELDS", "SEARCH_FILTERS", "Selection"]

#: Date fields the range filters on.
DATE_FIELDS = ("created_on", "updated_on")
#: Filters a FacetFilter passes to every search beside its own; paging and order are its own.
SEARCH_FILTERS = ("bases", "record_type", "status", "fields", "stemme")


# --- the pure state -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Selection:
    """What is picked: the user's query, values per facet, a date range and fixed filters.

    ``values`` maps a facet to ``{value: query}`` in the order of selection; each value's own
    ``query`` (from the server's facets) is what selects it. Pure: methods return new
    selections, and nothing here touches the network.
    """

    query: str = ""
    values: Mapping[str, Mapping[str, str]] = dataclasses.field(default_factory=dict)
    date_field: str = "created_on"
    date_min: str | None = None
    date_max: str | None = None
    filters: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.date_field not in DATE_FIELDS:
            raise InvalidParameterError(
                f"date_field={self.date_field!r}: the date range filters on "
                f"{' or '.join(DATE_FIELDS)}"
            )
        for name in ("date_min", "date_max"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, to_ymd(value, name=name))
        unknown = sorted(set(self.filters) - set(SEARCH_FILTERS))
        if unknown:
            raise InvalidParameterError(
                f"FacetFilter does not take {', '.join(unknown)}: it chooses paging, order and "
                f"dates itself; fixed filters are {', '.join(SEARCH_FILTERS)}"
            )
        search_params(self.full_query(), **self.search_filters())  # refuses what the server would

    # -- changes -----------------------------------------------------------------------------------

    def with_query(self, query: str) -> Selection:
        return dataclasses.replace(self, query=query)

    def select(self, facet: str, value: str, query: str) -> Selection:
        chosen = {**self.values.get(facet, {}), value: query}
        return dataclasses.replace(self, values={**self.values, facet: chosen})

    def deselect(self, facet: str, value: str) -> Selection:
        left = {v: q for v, q in self.values.get(facet, {}).items() if v != value}
        values = {f: left if f == facet else vs for f, vs in self.values.items()}
        return dataclasses.replace(self, values={f: vs for f, vs in values.items() if vs})

    def clear(self, facet: str | None = None) -> Selection:
        """Without the values of ``facet``, or without any value and dates when ``None``."""
        if facet is None:
            return dataclasses.replace(self, values={}, date_min=None, date_max=None)
        return dataclasses.replace(
            self, values={f: vs for f, vs in self.values.items() if f != facet}
        )

    def with_dates(
        self, field: str, low: dt.date | str | None, high: dt.date | str | None
    ) -> Selection:
        """With the range ``low``–``high`` (either may be ``None``) on ``field``."""
        low = None if low is None else to_ymd(low, name="date_min")
        high = None if high is None else to_ymd(high, name="date_max")
        return dataclasses.replace(self, date_field=field, date_min=low, date_max=high)

    # -- what is sent ---------------------------------------------------------------------------

    def full_query(self, *, without: str | None = None) -> str:
        """The query sent: ``(query) AND ((a) OR (b)) AND (c)``, every clause parenthesised.

        Values of one facet are OR-ed, facets AND-ed; the parentheses keep each value's query
        whole whatever operators it holds (AND binds tighter than OR, OR than EXCEPT).
        ``without`` leaves one facet out (its own counts are asked that way).
        """
        clauses = [f"({self.query.strip()})"] if self.query.strip() else []
        for facet, chosen in self.values.items():
            if facet == without or not chosen:
                continue
            ors = " OR ".join(f"({query})" for query in chosen.values())
            clauses.append(f"({ors})" if len(chosen) > 1 else ors)
        return " AND ".join(clauses)

    def search_filters(self) -> dict[str, Any]:
        """The filters sent beside the query: the fixed ones, then the date range if any."""
        given = {k: v for k, v in self.filters.items() if v is not None}
        if self.date_min is None and self.date_max is None:
            return given
        dates = {"date_min": self.date_min, "date_max": self.date_max}
        return {**given, "date_field": self.date_field, **{k: v for k, v in dates.items() if v}}

    def code(self, client: str = "client", target: str = "df") -> str:
        """A Python statement that harvests this selection completely."""
        arguments = [repr(self.full_query())] if self.full_query() else []
        arguments += [f"{name}={value!r}" for name, value in self.search_filters().items()]
        return f"{target} = {client}.records({', '.join(arguments)})"
