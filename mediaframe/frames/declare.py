"""How a frame is declared: columns with their dtype, API member and meaning, and the rules
for the columns nobody declares. The declarations themselves are in :mod:`.schema`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

__all__ = [
    "BOOL",
    "CATEGORY",
    "FLOAT",
    "INT",
    "OBJECT",
    "RULE",
    "TEXT",
    "UNKNOWN",
    "Column",
    "Frame",
]

INT = "Int64"
FLOAT = "Float64"
TEXT = "string"
BOOL = "boolean"
CATEGORY = "category"
OBJECT = "object"


@dataclasses.dataclass(frozen=True)
class Column:
    """One declared column.

    ``member`` is the dotted path of the API member it is read from (default: the column name);
    an empty ``member`` marks a column the frame function computes itself.
    """

    name: str
    dtype: str
    doc: str
    member: str | None = None
    required: bool = False
    joined: bool = False  # an array of strings, kept as one text joined with ","

    @property
    def path(self) -> str:
        return self.name if self.member is None else self.member


@dataclasses.dataclass(frozen=True)
class Frame:
    """One frame: its columns in order and the API variations it reads.

    Attributes
    ----------
    name : the function of :mod:`mediaframe.frames` that builds it.
    row : what one row is, used to name a malformed item (``record #3 (...)``).
    key : members that identify a row, shown in error messages.
    nested : member paths flattened into prefixed columns, path → prefix.
    aliases : member spellings of older servers, alias → the contract's name.
    ignored : members that are deliberately not columns, with the reason in ``notes``.
    extras : how columns beyond the declared ones are named and typed.
    stable : dynamic columns that are always there, each in one dtype, whatever the input.
    """

    name: str
    summary: str
    row: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()
    nested: Mapping[str, str] = dataclasses.field(default_factory=dict)
    aliases: Mapping[str, str] = dataclasses.field(default_factory=dict)
    ignored: tuple[str, ...] = ()
    extras: str = ""
    notes: str = ""
    stable: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)

    @property
    def dtypes(self) -> dict[str, str]:
        return {column.name: column.dtype for column in self.columns}


#: Said of every frame that keeps unknown members.
UNKNOWN = (
    "Unknown members (newer servers, extensions) are kept, never dropped: one column each, named "
    "with the prefix of the object they sit in, typed over the whole input by the rule below; "
    "one whose name is already a column's is prefixed `unknown_` until it is free, so no value "
    "takes another's place."
)

#: The typing rule of dynamic columns, shown at the top of the schema's page.
RULE = (
    "Typing rule for dynamic columns, decided over every value of the whole input: all integers "
    "→ `Int64`; integers and floats → `Float64`; all booleans → `boolean`; any string among "
    "scalars → `string`, the other values written as their JSON text (integral floats without "
    "`.0`, booleans as `true`/`false`); objects or arrays → `object` holding the raw values; "
    "only nulls → `object` holding `None`."
)
