"""The only door to the network: timeouts, retries, token placement, envelopes and errors.

- ``transport.py``: :class:`Transport` — retries with backoff and jitter, the token (refresh,
  placement with fallback), one attempt built and sent;
- ``wire.py``: one request on the wire — no redirect followed, the body streamed under the size
  limit and the attempt's deadline, library failures translated without a secret;
- ``failures.py``: what went wrong on a connection in plain words ("cannot resolve host x",
  "connection refused by x:443"), read from the library's exception chain, and whether it was
  a host name that does not exist (not worth a retry);
- ``answers.py``: what an answer says — the envelope in JSON, YAML or JSONP
  (:func:`decode_envelope`), and the error an answer stands for (status → exception);
- ``slots.py``: requests in flight bounded apart from the threads that send them (a slot is
  held only while a request is on the wire, not while its answer is read into a frame).
"""

from __future__ import annotations

from mediaframe.http.answers import REPRESENTATIONS, RETRY_STATUSES, decode_envelope
from mediaframe.http.transport import Params, Transport

__all__ = ["REPRESENTATIONS", "RETRY_STATUSES", "Params", "Transport", "decode_envelope"]
