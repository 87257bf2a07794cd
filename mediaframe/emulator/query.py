"""The search query language: a parser to a small tree and a vectorised evaluator over columns.

Grammar (EXCEPT binds loosest, then OR, then AND; adjacent terms are AND-ed)::

    query  := or ("EXCEPT" or)*
    or     := and ("OR" and)*
    and    := unary (["AND"] unary)*
    unary  := "(" query ")" | term
    term   := "phrase" | key op value | word
    op     := ":" | "=" | "<" | "<=" | ">" | ">="
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mediaframe.emulator import vocabulary as vocab
from mediaframe.emulator.columns import TextField, normalise

DAY = 86_400
#: Bounds on what one query may ask, so that no query can exhaust the server's stack or time:
#: terms and operators together, and parentheses nested in one another.
MAX_TOKENS = 500
MAX_DEPTH = 50
#: Ids are 64-bit integers: a longer digit string is refused, not converted.
MAX_ID_DIGITS = 18
OPERATORS = ("AND", "OR", "EXCEPT")
KEYS = ("type", "collection", "database", "recordid", "sha256", "uuid", "created_on", "updated_on")
TOKEN = re.compile(
    r"""\s*(?:
      (?P<open>\() | (?P<close>\)) |
      (?P<key>[A-Za-z_][\w.]*)\s*(?P<op><=|>=|:|=|<|>)\s*(?P<value>"[^"]*"|[^\s()"]+) |
      (?P<phrase>"[^"]*") |
      (?P<word>[^\s()"]+)
    )""",
    re.VERBOSE,
)


class QueryError(ValueError):
    """The query cannot be parsed or names something unknown; the message says what to fix."""


@dataclass(frozen=True)
class Word:
    text: str


@dataclass(frozen=True)
class Phrase:
    text: str


@dataclass(frozen=True)
class Compare:
    key: str
    op: str
    value: str


@dataclass(frozen=True)
class Boolean:
    op: str  # AND, OR or EXCEPT
    left: Any
    right: Any


@dataclass(frozen=True)
class Everything:
    pass


def parse(query: str) -> Any:
    """Parse ``query`` into a tree of Word, Phrase, Compare, Boolean and Everything nodes.

    Raises
    ------
    QueryError
        With the position and what to change.

    Examples
    --------
    >>> parse('sunset OR "golden hour"')
    Boolean(op='OR', left=Word(text='sunset'), right=Phrase(text='golden hour'))
    """
    tokens = _tokenise(query)
    if len(tokens) > MAX_TOKENS:
        raise QueryError(
            f"the query has {len(tokens)} terms and operators; at most {MAX_TOKENS} are read: "
            "split it into several searches"
        )
    if not tokens or (len(tokens) == 1 and tokens[0][1] == "all"):
        return Everything()
    parser = _Parser(tokens, query)
    tree = parser.expression()
    if parser.pos < len(tokens):
        where = tokens[parser.pos][2]
        raise QueryError(f"unexpected ')' at position {where} of the query; remove it or add a '('")
    return tree


def _tokenise(query: str) -> list[tuple[str, Any, int]]:
    tokens: list[tuple[str, Any, int]] = []
    pos = 0
    while pos < len(query):
        if not query[pos:].strip():
            break
        match = TOKEN.match(query, pos)
        if match is None or match.end() == pos:
            where = pos + len(query[pos:]) - len(query[pos:].lstrip())
            raise QueryError(
                f'unterminated quote at position {where} of the query; close it with "'
            )
        where = match.start(match.lastgroup or 0)
        pos = match.end()
        if match["open"]:
            tokens.append(("open", "(", where))
        elif match["close"]:
            tokens.append(("close", ")", where))
        elif match["key"]:
            value = match["value"]
            value = value[1:-1] if value.startswith('"') else value
            tokens.append(("term", Compare(match["key"], match["op"], value), where))
        elif match["phrase"]:
            tokens.append(("term", Phrase(match["phrase"][1:-1]), where))
        else:
            word = match["word"]
            if word.upper() in OPERATORS:
                tokens.append(("op", word.upper(), where))
            elif word[-1] in ":=<>":
                if query[pos:].lstrip().startswith('"'):
                    raise QueryError(f'unterminated quote after {word!r}; close it with "')
                raise QueryError(f"missing value after {word!r} at position {where} of the query")
            else:
                tokens.append(("term", Word(word), where))
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, Any, int]], query: str) -> None:
        self.tokens = tokens
        self.pos = 0
        self.query = query
        self.depth = 0

    def peek(self) -> tuple[str, Any, int] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def binary(self, op: str, operand: Any) -> Any:
        left = operand()
        while (tok := self.peek()) is not None and tok[:2] == ("op", op):
            self.pos += 1
            left = Boolean(op, left, operand())
        return left

    def expression(self) -> Any:
        return self.binary("EXCEPT", lambda: self.binary("OR", self.conjunction))

    def conjunction(self) -> Any:
        left = self.unary()
        while (
            (tok := self.peek()) is not None
            and tok[0] != "close"
            and tok[1] not in ("OR", "EXCEPT")
        ):
            if tok[:2] == ("op", "AND"):
                self.pos += 1
            left = Boolean("AND", left, self.unary())
        return left

    def unary(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise QueryError(
                "the query ends where a search term was expected; complete or remove the operator"
            )
        kind, value, where = tok
        self.pos += 1
        if kind == "term":
            return value
        if kind == "open":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise QueryError(
                    f"parentheses nest deeper than {MAX_DEPTH} at position {where} of the query"
                )
            inner = self.expression()
            self.depth -= 1
            closing = self.peek()
            if closing is None or closing[0] != "close":
                raise QueryError(f"missing ')' for the '(' at position {where} of the query")
            self.pos += 1
            return inner
        if kind == "op":
            raise QueryError(f"{value} at position {where} needs a search term on both sides")
        raise QueryError(f"unexpected ')' at position {where} of the query; remove it or add a '('")


def words_of(tree: Any) -> list[str]:
    """Free words of a tree, in query order (for suggestions)."""
    words, todo = [], [tree]
    while todo:  # a stack, not recursion: a long query is a deep (left-leaning) tree
        node = todo.pop()
        if isinstance(node, Word):
            words.append(node.text)
        elif isinstance(node, Boolean):
            todo += [node.right, node.left]
    return words


# -------------------------------------------------------------------- evaluation


class Evaluator:
    """Evaluates a tree over one table (records or stories) into a boolean row mask.

    Parameters
    ----------
    table
        RecordTable or StoryTable.
    fields
        Metadata fields where free words and phrases are looked for (default: all text fields).
    stemme
        Match words by a naive stem (plural endings dropped), like the engine's stemmed search.
    """

    def __init__(
        self,
        table: Any,
        *,
        fields: tuple[str, ...] = (),
        stemme: bool = False,
        captions: Mapping[str, CaptionField] | None = None,
    ) -> None:
        self.table = table
        self.stemme = stemme
        self.free_fields = [table.texts[f] for f in (fields or tuple(table.texts))]
        self.captions = captions or {}

    def mask(self, tree: Any) -> np.ndarray:
        """Rows of the table matching ``tree``."""
        if isinstance(tree, Everything):
            return np.ones(self.table.size, dtype=bool)
        if isinstance(tree, Boolean):
            # A chain of terms leans left as deep as it is long: walk its spine in a loop, and
            # recurse only into right operands (whose depth the parentheses bound).
            spine = []
            while isinstance(tree, Boolean):
                spine.append(tree)
                tree = tree.left
            result = self.mask(tree)
            for node in reversed(spine):
                right = self.mask(node.right)
                if node.op == "AND":
                    result = result & right
                elif node.op == "OR":
                    result = result | right
                else:
                    result = result & ~right
            return result
        if isinstance(tree, Word):
            return self._word(tree.text)
        if isinstance(tree, Phrase):
            return self._phrase(tree.text)
        return self._compare(tree)

    def _any_field(self, predicate: Any) -> np.ndarray:
        out = np.zeros(self.table.size, dtype=bool)
        for field in self.free_fields:
            out |= field.mask(predicate)
        return out

    def _word(self, text: str) -> np.ndarray:
        parts = normalise(text.rstrip("*")).split()
        if len(parts) != 1:  # "black-and-white" is the phrase "black and white"
            return self._phrase(text) if parts else np.ones(self.table.size, dtype=bool)
        word = parts[0]
        if text.endswith("*"):
            return self._any_field(lambda v: any(t.startswith(word) for t in v.split()))
        if self.stemme:
            stem = _stem(word)
            return self._any_field(lambda v: any(_stem(t) == stem for t in v.split()))
        return self._any_field(lambda v: word in v.split())

    def _phrase(self, text: str) -> np.ndarray:
        phrase = f" {normalise(text)} "
        return self._any_field(lambda v: phrase in f" {v} ")

    def _compare(self, node: Compare) -> np.ndarray:
        key = node.key.lower()
        t = self.table
        if key in ("type", "collection", "database", "recordid", "sha256", "uuid"):
            if node.op not in (":", "="):
                raise QueryError(f"{node.key}{node.op} is not allowed: use {node.key}:value")
            return getattr(self, f"_key_{key}")(node.value)
        if key in ("created_on", "updated_on"):
            return _compare_dates(getattr(t, key.removesuffix("_on")), node, unit=1)
        if key.startswith("meta."):
            return self._meta(node)
        return self._field(node)

    def _key_type(self, value: str) -> np.ndarray:
        name = value.lower()
        if name not in vocab.MEDIA_TYPES:
            raise QueryError(
                f"unknown type {value!r} in the query; types are {', '.join(vocab.MEDIA_TYPES)}"
            )
        return self.table.media == vocab.MEDIA_TYPES.index(name)

    def _key_collection(self, value: str) -> np.ndarray:
        wanted = normalise(value)
        picked = [
            i
            for i, c in enumerate(vocab.COLLECTIONS)
            if normalise(c[3]) == wanted or str(c[0]) == value
        ]
        return np.isin(self.table.base_index, picked)

    def _key_database(self, value: str) -> np.ndarray:
        wanted = normalise(value)
        picked = [d for d, name in vocab.DATABOXES if normalise(name) == wanted or str(d) == value]
        return np.isin(self.table.databox_id, picked)

    def _key_recordid(self, value: str) -> np.ndarray:
        if not (value.isascii() and value.isdigit()) or len(value) > MAX_ID_DIGITS:
            raise QueryError(f"recordid:{value[:40]} needs a record id (an integer)")
        return self.table.ident == int(value)

    def _key_sha256(self, value: str) -> np.ndarray:
        return self.table.sha256 == value.lower().encode("ascii", "replace")

    def _key_uuid(self, value: str) -> np.ndarray:
        return self.table.uuid == value.lower().encode("ascii", "replace")

    def _meta(self, node: Compare) -> np.ndarray:
        name = node.key[len("meta.") :]
        known = {n.lower(): n for n in TECH_NAMES}
        if name.lower() not in known:
            raise QueryError(f"unknown technical field {name!r}; known: {', '.join(TECH_NAMES)}")
        column = self.table.tech.get(known[name.lower()])
        if column is None:  # stories carry no technical information
            return np.zeros(self.table.size, dtype=bool)
        wanted = normalise(node.value)
        number = _number(node.value)
        if node.op == ":":
            return column.text_mask(lambda v: wanted in v)
        if node.op == "=" and number is None:
            return column.text_mask(lambda v: v == wanted)
        if number is None:
            raise QueryError(f"{node.key}{node.op}{node.value}: comparing needs a number")
        values = column.numeric()
        with np.errstate(invalid="ignore"):
            return _apply(node.op, values, number) & ~np.isnan(values)

    def _field(self, node: Compare) -> np.ndarray:
        name = node.key[len("field.") :] if node.key.lower().startswith("field.") else node.key
        t = self.table
        texts = {n.lower(): n for n in t.texts}
        dates = {n.lower(): n for n in t.dates}
        captions = {n.lower(): n for n in self.captions}
        if name.lower() in dates:
            return _compare_dates(t.dates[dates[name.lower()]], node, unit=DAY)
        if name.lower() in captions:
            return self._caption(self.captions[captions[name.lower()]], node, name)
        if name.lower() not in texts:
            raise QueryError(
                f"unknown field {name!r} in the query; fields are "
                f"{', '.join([*t.texts, *t.dates, *self.captions])}, "
                f"or the keys {', '.join(KEYS)} and meta.<name>"
            )
        return _match_text(t.texts[texts[name.lower()]], node, name)

    def _caption(self, caption: CaptionField, node: Compare, name: str) -> np.ndarray:
        """A caption field of the structures: only records of a databox that has the field,
        and for a business field only where the searching user may see it."""
        t = self.table
        where = np.isin(t.databox_id, list(caption.databoxes))
        if caption.bases is not None:
            where &= np.isin(t.base_id, list(caption.bases))
        number = _number(node.value)
        if not caption.numeric or node.op == ":" or (node.op == "=" and number is None):
            return _match_text(caption.text, node, name) & where
        if number is None:
            raise QueryError(f"{node.key}{node.op}{node.value}: comparing needs a number")
        found = caption.text.mask(
            lambda v: _compares(node.op, _number(v), number), normalised=False
        )
        return found & where


def _compares(op: str, value: float | None, bound: float) -> bool:
    if value is None:
        return False
    return bool(_apply(op, np.array([value]), bound)[0])


@dataclass(frozen=True)
class CaptionField:
    """A caption field searchable as ``Field:value``: its values, the databoxes whose structure
    has it, whether its values are numbers, and for a business field the bases where the
    searching user may see it (``None``: everywhere)."""

    text: TextField
    databoxes: frozenset[int]
    numeric: bool = False
    bases: frozenset[int] | None = None


def _match_text(field: TextField, node: Compare, name: str) -> np.ndarray:
    wanted = normalise(node.value)
    if node.op == ":":
        return field.mask(lambda v: wanted in v)
    if node.op == "=":
        return field.mask(lambda v: v == wanted)
    raise QueryError(f"{node.key}{node.op}: {name} is text; use {name}:value or {name}=value")


TECH_NAMES = (
    "Aperture", "CameraModel", "Channels", "ColorDepth", "ColorSpace", "Duration", "FileSize",
    "FlashFired", "FocalLength", "FrameRate", "Height", "HyperfocalDistance", "ISO", "Latitude",
    "LightValue", "Longitude", "MimeType", "Pages", "SampleRate", "ShutterSpeed", "Width",
)  # fmt: skip


def _stem(word: str) -> str:
    for ending in ("ies", "es", "s"):
        if word.endswith(ending) and len(word) > len(ending) + 2:
            return word[: -len(ending)]
    return word


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _apply(op: str, values: np.ndarray, bound: float) -> np.ndarray:
    if op in (":", "="):
        return values == bound
    return {"<": values < bound, "<=": values <= bound, ">": values > bound, ">=": values >= bound}[
        op
    ]


def date_interval(text: str) -> tuple[int, int]:
    """Start and end (exclusive), in seconds, of ``YYYY``, ``YYYY/MM`` or ``YYYY/MM/DD`` (UTC)."""
    match = re.fullmatch(r"(\d{4})(?:[/-](\d{1,2})(?:[/-](\d{1,2}))?)?", text.strip())
    if match is None:
        raise QueryError(f"invalid date {text!r} in the query; use YYYY, YYYY/MM or YYYY/MM/DD")
    year = int(match[1])
    month, day = (int(g) if g else None for g in match.groups()[1:])
    try:
        start = datetime(year, month or 1, day or 1, tzinfo=UTC)
    except ValueError as err:
        raise QueryError(f"invalid date {text!r} in the query: {err}") from None
    if day is not None:
        end = int(start.timestamp()) + DAY
    elif month is not None:
        end = _month_start(year + month // 12, month % 12 + 1)
    else:
        end = _month_start(year + 1, 1)
    return int(start.timestamp()), end


def _month_start(year: int, month: int) -> int:
    """Seconds at the first of ``month`` (UTC); year 10000, past what datetime holds, too: the
    end of ``created_on<9999``'s period."""
    if year > datetime.max.year:
        return int(datetime(datetime.max.year, 12, 31, tzinfo=UTC).timestamp()) + DAY
    return int(datetime(year, month, 1, tzinfo=UTC).timestamp())


def _compare_dates(values: np.ndarray, node: Compare, *, unit: int) -> np.ndarray:
    start, end = date_interval(node.value)
    start, end = start // unit, end // unit
    if node.op in (":", "="):
        return (values >= start) & (values < end)
    return {"<": values < start, "<=": values < end, ">": values >= end, ">=": values >= start}[
        node.op
    ]
