"""mediaframe: a Media Asset Service as typed pandas DataFrames.

>>> import mediaframe as mf
>>> client = mf.connect("https://assets.example.org", profile="work")  # doctest: +SKIP
>>> client.records(query="sunset")                                     # doctest: +SKIP
"""

from mediaframe.client import Client, connect
from mediaframe.exceptions import *  # noqa: F403  (the error tree is part of the public surface)
from mediaframe.exceptions import __all__ as _errors

__version__ = "0.1.0"

__all__ = ["Client", "connect", *_errors, "__version__"]
