"""Typed pandas DataFrames from decoded Media Asset Service data: dicts in, frames out, no I/O.

Every function takes what the API returned (already decoded from JSON) and returns a frame whose
columns and dtypes are declared once in :mod:`mediaframe.frames.schema` and documented in
``docs/frame-schema.md``.
"""

from mediaframe.frames.records import concat_records, records
from mediaframe.frames.schema import render_markdown
from mediaframe.frames.technical import technical_long, technical_wide

__all__ = [
    "concat_records",
    "records",
    "render_markdown",
    "technical_long",
    "technical_wide",
]
