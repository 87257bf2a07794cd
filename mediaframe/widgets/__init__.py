"""A facet filter for notebooks: pick facet values and dates, watch the server's counts follow.

Two layers. :class:`Selection` is pure state — the user's query, the values selected per facet
(each with the value's own ``query``), a date range — that turns into the query string, the
search filters and a ``client.records(...)`` statement; it sends nothing and is tested
exhaustively. :class:`FacetFilter` holds a selection, asks the server (debounced, with a guard
against stale answers) and binds core ipywidgets to it, so it works in JupyterLab, Notebook 7,
Voilà, VS Code and Colab without front-end code. ipywidgets and matplotlib are imported when a
filter is built, not with this module.

>>> from mediaframe.widgets import FacetFilter
>>> picker = FacetFilter(client)                    # doctest: +SKIP
>>> picker                                          # displays the widget  # doctest: +SKIP
>>> picker.select("Type_Name", "image")             # doctest: +SKIP
>>> picker.total, picker.code                       # doctest: +SKIP
(959, "df = client.records('(type:image)')")
"""

from mediaframe.widgets.facet_filter import Answer, FacetFilter, ask
from mediaframe.widgets.selection import DATE_FIELDS, SEARCH_FILTERS, Selection

__all__ = ["DATE_FIELDS", "SEARCH_FILTERS", "Answer", "FacetFilter", "Selection", "ask"]
