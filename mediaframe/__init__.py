"""mediaframe: a Media Asset Service as typed pandas DataFrames.

>>> import mediaframe as mf
>>> client = mf.connect("https://assets.example.org", profile="work")  # doctest: +SKIP
>>> client.records(query="sunset")                                     # doctest: +SKIP
"""

# Defined before the imports below: cache provenance reads it while the package initialises.
__version__ = "0.1.0"

from mediaframe._process import process_tricks
from mediaframe.cache import to_dask, to_duckdb
from mediaframe.client import Client, connect
from mediaframe.exceptions import *  # noqa: F403  (the error tree is public)
from mediaframe.exceptions import __all__ as _errors
from mediaframe.harvest import HarvestReport

__all__ = [
    "Client",
    "HarvestReport",
    "connect",
    "process_tricks",
    "to_dask",
    "to_duckdb",
    *_errors,
    "__version__",
]
