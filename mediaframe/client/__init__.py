"""The façade users hold: ``connect()`` resolves credentials and returns a :class:`Client`.

- ``credentials.py``: :func:`connect` — a token, the password grant or a stored profile;
- ``facade.py``: :class:`Client` (the connection: its token kept fresh and stored, every read
  as a DataFrame) and :class:`Me`;
- ``searches.py``: the user's search as the service takes it (``status_only``, date bounds,
  the date fields ``date_field`` may name).
"""

from mediaframe.client.credentials import connect
from mediaframe.client.facade import Client, Me
from mediaframe.remote import RemoteSearch

__all__ = ["Client", "Me", "RemoteSearch", "connect"]
