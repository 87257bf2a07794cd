"""The raw bytes of a v1 search answer to the records frame, parsed natively by pyarrow.

Every server generation is read natively: members in any order and either spelling
(``updated-on``, ``phrasea_type``), compact or pretty-printed bodies, ``\\/`` escapes,
placeholder dates, unknown scalar members (kept as the schema's dynamic columns). What cannot be
read natively takes the decoded route, :func:`~mediaframe.frames.records`, which stays the
reference; :func:`read_records` says which route a page took, and why.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from mediaframe.exceptions import InvalidParameterError, ResponseFormatError
from mediaframe.frames import fromarrow
from mediaframe.frames.arrays import TIMESTAMP
from mediaframe.frames.captions import Structure
from mediaframe.frames.flatten import assemble
from mediaframe.frames.fromarrow import Unreadable
from mediaframe.frames.records import records
from mediaframe.frames.schema import RECORDS
from mediaframe.frames.wholefloats import whole_float_names
from mediaframe.futures import run_on
from mediaframe.nesting import DEEP_ADVICE, DEEPEST, nesting, too_deep

__all__ = ["READ", "RecordsPage", "is_described", "read_records", "records_json"]

#: The key of ``frame.attrs`` saying how the page was read: ``{"native": True}``, or
#: ``{"native": False, "kind": ..., "detail": ...}`` for a page that took the decoded route.
READ = "read"

#: The records array's key; a ``"`` after a backslash would sit inside a string.
_RECORDS_KEY = re.compile(rb'(?<!\\)"records"\s*:\s*\[')
#: The first record's first key, and how this server writes the colon after a key.
_FIRST_KEY = re.compile(rb'\s*\{\s*"((?:[^"\\]|\\.)*)"(\s*:\s*)')
_EMPTY_ARRAY = re.compile(rb"\s*\]")
#: Stands in for the records array when the rest of the answer is decoded by orjson; no answer
#: holds it there, so finding it proves the array cut out was ``response.results.records``.
_PLACEHOLDER = "\x00mediaframe-records"

_TECHNICAL = "technical_informations"
#: Records nest a handful of levels (an unknown member that nests at all falls back anyway):
#: deeper pieces are not given to pyarrow (see :func:`_parse`).
_DEEPEST = 32
#: Records are parsed in pieces of about this many bytes, each wrapped as one JSON object.
_PIECE = 1 << 24
_OPEN = b'{"records":['
_CLOSE = b"]}"
_TECHNICAL_ENTRY = pa.struct(
    [("name", pa.string()), ("value", pa.float64()), ("text", pa.string())]
)

_ARROW_TYPES = {
    "Int64": pa.int64(),
    "Float64": pa.float64(),
    "string": pa.string(),
    "category": pa.string(),
    "boolean": pa.bool_(),
    TIMESTAMP: pa.string(),  # parsed after reading: pyarrow's reader takes 1.5x longer with them
}


@dataclasses.dataclass(frozen=True)
class RecordsPage:
    """One search answer read into the records frame, and how it was read.

    Attributes
    ----------
    info : the members of ``response`` other than ``results``.
    frame : the records frame, identical to :func:`~mediaframe.frames.records` of the answer
        (with the structure's ``caption_*``/``status_*`` columns when one was given).
    native : read from the bytes by pyarrow (``True``) or decoded and flattened (``False``).
    fallback : why the decoded route was taken, as ``(kind, detail)``; ``None`` when native.
        ``frame.attrs[READ]`` says the same.
    described : some record carries a non-null ``caption`` or ``status`` (extended records,
        :func:`is_described`); a server that ignores the extended media type sends none.
    """

    info: dict[str, Any]
    frame: pd.DataFrame
    native: bool
    fallback: tuple[str, str] | None = None
    described: bool = False


def records_json(
    body: bytes, structure: Structure | None = None
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Read a v1 search answer from its raw JSON bytes into the records frame.

    The frame is identical, dtypes included, to :func:`~mediaframe.frames.records` of the
    decoded ``response.results.records``, at a fraction of the time and memory: answers of
    every server generation are parsed natively, anything truly unusual takes the decoded
    route (:func:`read_records` says which, and why).

    Parameters
    ----------
    body : the HTTP body of ``/api/v1/search/`` (the whole JSON envelope), as bytes.
    structure : for an extended answer (captions, status bits), the caption fields and status
        bits that become ``caption_<Field>``/``status_<bit>`` columns, as in
        :func:`~mediaframe.frames.records`.

    Returns
    -------
    tuple
        The members of ``response`` other than ``results`` (``offset_start``, ``per_page``,
        ``available_results``, ``total_results``, ``query_time``, …) as plain Python values, and
        the records frame.

    Raises
    ------
    ResponseFormatError
        The body is not JSON, or not a search envelope with a ``response.results.records``
        list, or its envelope says it failed (``meta.http_code`` of 400 or more, whatever the
        HTTP status was); ``snippet`` shows how it begins.
    MalformedItemError
        A record's key does not follow the contract (as :func:`~mediaframe.frames.records`
        says).

    Notes
    -----
    The records array is cut out of the answer (the rest is decoded by orjson) and cut again,
    between two records, into pieces of about 16 MB; each piece is wrapped as one JSON object
    and parsed by pyarrow in C++ against the schema declared for records, the members the
    servers spell otherwise (``updated-on``, ``phrasea_type``) as their own fields, unknown
    members inferred. Nothing depends on the order of members or on whitespace. The one thing
    pyarrow cannot read, a ``technical_informations`` ``value`` that is a number in one entry and
    text in another, is renamed byte-wise first: text values become ``text``, numbers keep
    ``value``. pyarrow reads every number as a float; a name whose numbers are all whole is
    ``Int64`` in records() unless one was written as a float (``5.0``, ``1e3``), which a
    regular-expression scan finds, ``value`` keys written with escapes too (run only for such a
    name outside the contract's stable technical names, whose dtype is declared). What falls
    back: nested unknown members, a member of another type than declared (records() then mends
    or warns), a technical name repeated in a record or spelled with escapes, integers at or
    beyond 2**53 among technical values, an unknown member's number at or beyond 2**63 (an
    integer there keeps its digits in records()), a member named ``text`` outside the technical
    values, a member named as a declared member's path (``thumbnail.name``), dates pyarrow
    reads differently from pandas, ``NaN`` and ``Infinity`` (pyarrow reads them, JSON has not:
    the decoded route refuses the answer), invalid UTF-8.

    Why the byte rewrites are safe: inside a JSON string every ``"`` is escaped as ``\\"``, so
    a pattern holding an unescaped ``"`` right after another character than ``\\`` only ever
    matches structure, never text. The renamed text values are counted as they are renamed
    and checked against the texts pyarrow parsed (an entry with a ``text`` of its own differs);
    a text value the rename missed, or a repeated member, makes pyarrow refuse the piece, and a
    wrong cut between two records leaves a piece that is not JSON, which pyarrow refuses too.

    Examples
    --------
    >>> body = (b'{"meta": {}, "response": {"total_results": 1, "results": {"records": '
    ...         b'[{"databox_id": 1, "record_id": 7}], "stories": []}}}')
    >>> info, frame = records_json(body)
    >>> info["total_results"], frame[["databox_id", "record_id"]].to_numpy().tolist()
    (1, [[1, 7]])
    """
    page = read_records(body, structure)
    return page.info, page.frame


def read_records(body: bytes, structure: Structure | None = None) -> RecordsPage:
    """:func:`records_json`, also saying whether the page was read natively, and if not why."""
    if isinstance(body, bytearray | memoryview):
        body = bytes(body)
    if not isinstance(body, bytes):
        raise InvalidParameterError(
            f"records_json() takes the answer's raw bytes, got {type(body).__name__}; pass "
            "response.content"
        )
    try:
        info, opening, end, layout = _locate(body)
        frame, described = _native(body, opening, end, layout, structure)
    except Unreadable as why:
        info, items = _decoded(body)
        frame = records(items, structure)
        frame.attrs[READ] = {"native": False, "kind": why.kind, "detail": why.detail}
        fallback = (why.kind, why.detail)
        return RecordsPage(info, frame, False, fallback, described=is_described(items))
    frame.attrs[READ] = {"native": True}
    return RecordsPage(info, frame, native=True, described=described)


def is_described(items: list[Any]) -> bool:
    """Whether a decoded record carries ``caption`` or ``status`` (extended records).

    The one rule of both routes (the native reader counts nulls alike): a server that ignores
    the extended media type sends no caption and no status, and ``null`` means the same as
    absent — a member present but null describes nothing.
    """
    return any(
        isinstance(item, dict)
        and (item.get("caption") is not None or item.get("status") is not None)
        for item in items
    )


def _decoded(body: bytes) -> tuple[dict[str, Any], list[Any]]:
    """The reference route: decode everything with orjson, flatten with :func:`records`."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise _not_an_answer(body, f"is not JSON ({error})") from error
    if (depth := nesting(body)) > DEEPEST:  # orjson read it; the cache and exports could not
        raise _not_an_answer(body, too_deep(depth), DEEP_ADVICE)
    parts = _search_parts(document, body)
    if parts is None or not isinstance(parts[1], list):
        raise _not_an_answer(body, "is not a search envelope with a response.results.records list")
    return parts[0], parts[1]


_PASS_A_SEARCH = (
    "Pass the body of a /api/v1/search/ answer (a proxy page or a truncated download cannot "
    "be read)"
)


def _not_an_answer(body: bytes, problem: str, advice: str = _PASS_A_SEARCH) -> ResponseFormatError:
    snippet = body[:120].decode("utf-8", errors="replace")
    return ResponseFormatError(
        f"the search answer {problem}; it begins {snippet!r}. {advice}", snippet=snippet
    )


def _search_parts(document: Any, body: bytes) -> tuple[dict[str, Any], Any] | None:
    """``response`` without ``results``, and ``results.records``; ``None`` without them.

    An envelope whose ``meta.http_code`` (an integer, or one written as text) is 400 or more
    says the search failed, whatever HTTP status carried it: it holds no page, and is refused.
    """
    meta = document.get("meta") if isinstance(document, dict) else None
    code = meta.get("http_code") if isinstance(meta, dict) else None
    code = int(code) if isinstance(code, str) and code.isascii() and code.isdigit() else code
    if isinstance(code, int) and not isinstance(code, bool) and code >= 400:
        said = f"says it failed (HTTP {code} in its envelope): it holds no page of records"
        error = _not_an_answer(body, said, "Ask the service again later")
        error.status_code = code
        raise error
    response = document.get("response") if isinstance(document, dict) else None
    if not isinstance(response, dict) or not isinstance(response.get("results"), dict):
        return None
    info = {name: value for name, value in response.items() if name != "results"}
    return info, response["results"].get("records")


# ------------------------------------------------------------------ finding the records


@dataclasses.dataclass(frozen=True)
class _Layout:
    """How this answer writes its records: what lies between two, and a key's colon."""

    separator: re.Pattern[bytes]
    colon: bytes


@functools.lru_cache(maxsize=64)
def _layout(first_key: bytes, colon: bytes) -> _Layout:
    """Records are cut where ``}``, ``,``, ``{`` and the first record's first key meet (any
    whitespace): servers write every record's members in one order, so that key starts each."""
    separator = re.compile(rb'\}\s*,\s*(\{\s*"' + re.escape(first_key) + rb'"\s*:)')
    return _Layout(separator, colon)


def _locate(body: bytes) -> tuple[dict[str, Any], int, int, _Layout | None]:
    """The rest of the answer decoded, and the records array (from ``[`` to past ``]``)."""
    found = _RECORDS_KEY.search(body)
    if found is None:
        raise Unreadable("no records array", 'the answer holds no "records": [ ... ] member')
    opening = found.end() - 1
    empty = _EMPTY_ARRAY.match(body, opening + 1)
    if empty is not None:
        info = _skeleton(body, opening, empty.end())
        if info is None:
            raise Unreadable("records array", "it is not response.results.records")
        return info, opening, empty.end(), None
    first = _FIRST_KEY.match(body, opening + 1)
    if first is None:
        raise Unreadable("records array", "it does not hold objects")
    layout = _layout(first[1], first[2])
    # The array ends at a "]" right after a record's "}": in a records search only a few such
    # "]" follow it (the answer's tail is small), and only the right one leaves the rest of the
    # answer whole with the array cut out. pyarrow then checks the array itself.
    end = len(body)
    for _ in range(_END_CANDIDATES):
        end = body.rfind(b"]", opening, end)
        if end < 0:
            break
        if not _after_object(body, end):
            continue
        info = _skeleton(body, opening, end + 1)
        if info is not None:
            return info, opening, end + 1, layout
    raise Unreadable("records array", "its end could not be told from the rest of the answer")


#: How many closing brackets from the answer's end are tried as the records array's end.
_END_CANDIDATES = 16
_WHITESPACE = frozenset(b" \t\r\n")


def _after_object(body: bytes, at: int) -> bool:
    """Whether the ``]`` at ``at`` comes right after an object's ``}`` (whitespace aside)."""
    before = at - 1
    while before >= 0 and body[before] in _WHITESPACE:
        before -= 1
    return before >= 0 and body[before] == ord("}")


def _skeleton(body: bytes, opening: int, end: int) -> dict[str, Any] | None:
    """The answer's ``response`` members with ``body[opening:end]`` cut out, if that is exactly
    ``response.results.records``; ``None`` otherwise."""
    rest = b"".join((body[:opening], orjson.dumps(_PLACEHOLDER), body[end:]))
    try:
        parts = _search_parts(orjson.loads(rest), body)
    except orjson.JSONDecodeError:
        return None
    return parts[0] if parts is not None and parts[1] == _PLACEHOLDER else None


# -------------------------------------------------------------------- reading natively


def _native(
    body: bytes, opening: int, end: int, layout: _Layout | None, structure: Structure | None
) -> tuple[pd.DataFrame, bool]:
    """The records frame from the array at ``body[opening:end]``, and whether a record carries
    ``caption`` or ``status``; :class:`Unreadable` if unsure."""
    if layout is None:  # an empty array
        return records([], structure), False
    schema = _SCHEMA if structure is None else _EXTENDED_SCHEMA
    try:  # a member's name that is not UTF-8 fails wherever it is read (pyarrow checks values)
        struct, whole_floats, texts = _read_pieces(body, opening, end, layout, schema)
        scanned = fromarrow.scan(struct)
        if not scanned.finite:  # pyarrow reads NaN and Infinity, which JSON has not
            raise Unreadable("numbers", "a number is not finite (NaN or Infinity are not JSON)")
        return _frame(struct, whole_floats, texts, scanned.texts, structure)
    except UnicodeDecodeError:
        raise Unreadable("unexpected type or shape", "a member name is not UTF-8") from None


def _frame(
    struct: pa.ChunkedArray,
    whole_floats: Callable[[], set[str]],
    texts: int,
    held: int,
    structure: Structure | None,
) -> tuple[pd.DataFrame, bool]:
    """The records frame of the parsed records (see :func:`_native`): ``texts`` values were
    renamed ``text``, and ``held`` members of that name hold something."""
    known = fromarrow.KNOWN if structure is None else fromarrow.KNOWN_EXTENDED
    members, unknown = fromarrow.members(struct, known)
    renamed = texts
    for alias, member in RECORDS.aliases.items():  # the older spelling fills what is missing
        members[member] = pc.coalesce(members[member], members.pop(alias))
    columns = fromarrow.convert_all(members, RECORDS.columns)
    dynamic = {name: fromarrow.dynamic(values, name) for name, values in unknown.items()}
    taken = set(dynamic)
    n = len(struct)
    if structure is not None:  # captions flattened once, for both calls below
        captions = fromarrow.entries(members["caption"])
        texts -= fromarrow.extended_texts(members, captions)  # the texts renamed in them
    lists = members[_TECHNICAL].combine_chunks()
    technical = fromarrow.technical(lists, n, texts, whole_floats, taken=taken)
    if held != renamed:  # a renamed value outside the entries counted
        raise Unreadable("technical values", "a member named 'text' outside the entries' values")
    if structure is None:  # caption or status, if any, are unknown members (is_described)
        described = any(unknown[m].null_count < n for m in ("caption", "status") if m in unknown)
        return assemble(RECORDS, columns, {**dynamic, **technical}), described
    taken |= technical.keys()  # a caption_* column beside a technical name of that name
    extended = fromarrow.extended(members, n, structure, captions, taken=taken)  # it may warn
    described = any(members[m].null_count < n for m in ("caption", "status"))
    return assemble(RECORDS, columns, {**dynamic, **technical, **extended}), described


def _read_pieces(
    body: bytes, opening: int, end: int, layout: _Layout, schema: pa.Schema
) -> tuple[pa.ChunkedArray, Callable[[], set[str]], int]:
    """Rewrite, parse and scan the records; the records as structs, what tells the technical
    names holding a float written whole, and how many technical values are text.

    A big answer is cut between two records into pieces of about ``_PIECE`` bytes: pyarrow
    parses pieces (without the GIL, on the other core) while the next is rewritten and scanned,
    rather than every parse waiting for the whole rewrite. A page is parsed inline (a thread
    would cost more than it saves) and scanned for whole floats only if a name needs it.
    """
    patterns = _patterns(layout.colon)
    big = end - opening >= _PIECE
    names: set[str] = set()
    texts = 0
    parsing: list[Future] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for first, last in _pieces(body, opening + 1, end - 1, layout):
            data = b"".join((_OPEN, memoryview(body)[first:last], _CLOSE))
            renamed, renames = patterns.text_value.subn(patterns.text, data)
            parsing.append(run_on(pool if big else None, _parse, renamed, schema))
            if big:  # scanned while the pieces before are parsed
                names.update(whole_float_names(renamed))
            texts += renames
        chunks = [future.result() for future in parsing]
    if len({chunk.type for chunk in chunks}) > 1:
        raise Unreadable("unknown member", "pieces of the answer hold different unknown members")
    if big:
        return pa.chunked_array(chunks), lambda: names, texts
    return (
        pa.chunked_array(chunks),
        functools.cache(lambda: whole_float_names(body, opening, end)),
        texts,
    )


@dataclasses.dataclass(frozen=True)
class _Patterns:
    """The byte patterns of technical text values, written with this server's colon.

    ``text_value`` is a literal searched by the regular-expression engine: ``bytes.replace``
    skips ahead only past bytes absent from its pattern, so a colon written ``": "`` made it
    crawl through the indentation of pretty-printed answers (three times slower there).
    """

    text_value: re.Pattern[bytes]
    text: bytes


@functools.lru_cache(maxsize=8)
def _patterns(colon: bytes) -> _Patterns:
    """Text values are renamed ``text``, so that ``value`` holds only numbers: a text value left
    unrenamed (another colon) makes pyarrow refuse the piece; an entry holding ``text`` of its
    own makes the count of texts differ from the renames."""
    literal = re.compile(re.escape(b'"value"' + colon + b'"'))
    return _Patterns(literal, b'"text"' + colon + b'"')


def _pieces(body: bytes, first: int, stop: int, layout: _Layout) -> Iterator[tuple[int, int]]:
    """``(first, last)`` spans of whole records between ``[`` and ``]``, about ``_PIECE`` long.

    A piece ends after a record's ``}`` and the next begins at its ``{``; a cut in the wrong
    place leaves a piece whose braces do not balance, which pyarrow refuses.
    """
    while True:
        cut = layout.separator.search(body, first + _PIECE, stop) if stop - first > _PIECE else None
        if cut is None:
            yield first, stop
            return
        yield first, cut.start() + 1
        first = cut.start(1)


def _parse(data: bytes, schema: pa.Schema) -> pa.StructArray:
    """pyarrow's reading of one piece (``{"records": [...]}``) as an array of record structs.

    Unknown members are inferred; one that pyarrow takes for a timestamp is read again as the
    text it is. pyarrow infers by recursion: a member nested ten thousand levels deep overflows
    the C stack and kills the process. So a piece is read with unknown members refused first
    (most hold none; the read stops at the first), and one holding some is measured
    (:func:`~mediaframe.nesting.nesting`) before they are inferred: one nested deeper
    than records nest takes the decoded route (orjson refuses beyond 1,024 levels).

    The parse allocates from the C library's allocator rather than pyarrow's default
    (mimalloc), which hands freed pages back to the system within milliseconds: every parse
    then faulted its pages in afresh, 0.2-0.4 s of CPU for 200,000 records.
    """
    try:
        table = _read(data, schema, unknown="error")
    except _UnknownMember:
        if nesting(data) > _DEEPEST:
            raise Unreadable("unknown member", f"nested deeper than {_DEEPEST} levels") from None
        table = _read(data, schema, unknown="infer")
    if fromarrow.holds(table.schema.field("records").type, pa.types.is_timestamp):
        table = _read(data, pa.schema([_as_text(table.schema.field("records"))]))
    return pc.list_flatten(table.column("records")).combine_chunks()


class _UnknownMember(Exception):
    """The piece holds a member its schema does not declare (read with ``unknown="error"``)."""


def _read(data: bytes, schema: pa.Schema, *, unknown: str = "infer") -> pa.Table:
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(block_size=len(data) + 1, use_threads=False),
            parse_options=pj.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior=unknown
            ),
            memory_pool=pa.system_memory_pool(),
        )
        # pyarrow's reader has built inconsistent arrays from odd nesting (a list of nulls in
        # an inferred member), and lets invalid UTF-8 through (orjson refuses it): the cheap
        # check finds the first, the full one (needless for ASCII bytes) the second
        table.validate(full=not data.isascii())
    except pa.ArrowException as error:
        said = str(error).splitlines()[0][:200]
        if unknown == "error" and said.endswith("unexpected field"):
            raise _UnknownMember(said) from None
        raise Unreadable("unexpected type or shape", said) from None
    return table


def _as_text(field: pa.Field) -> pa.Field:
    """``field`` with every timestamp pyarrow inferred declared as the string it was."""
    kind = field.type
    if pa.types.is_timestamp(kind):
        return field.with_type(pa.string())
    if pa.types.is_struct(kind):
        return field.with_type(pa.struct([_as_text(child) for child in kind]))
    if pa.types.is_list(kind):
        return field.with_type(pa.list_(_as_text(kind.value_field)))
    return field


def _declared_schema(*, extended: bool = False) -> pa.Schema:
    """A piece as pyarrow must find it: every declared member (and older spelling) typed; for
    extended records also their captions, status bits, metadata values and subdefs (their
    other members inferred). Caption and metadata values are renamed like technical ones."""
    tree: dict[str, Any] = {}
    for column in RECORDS.columns:
        *parents, member = column.path.split(".")
        node = tree
        for parent in parents:
            node = node.setdefault(parent, {})
        node[member] = pa.list_(pa.string()) if column.joined else _ARROW_TYPES[column.dtype]
    for alias, member in RECORDS.aliases.items():
        tree[alias] = tree[member]
    tree[_TECHNICAL] = pa.list_(_TECHNICAL_ENTRY)
    if extended:
        value = [("value", pa.float64()), ("text", pa.string())]
        tree["caption"] = pa.list_(pa.struct([("name", pa.string()), *value]))
        tree["metadata"] = pa.list_(pa.struct(value))
        tree["status"] = pa.list_(pa.struct([("bit", pa.int64()), ("state", pa.bool_())]))

    def struct(node: dict[str, Any]) -> pa.StructType:
        return pa.struct(
            [
                (name, struct(value) if isinstance(value, dict) else value)
                for name, value in node.items()
            ]
        )

    if extended:
        tree["subdefs"] = pa.list_(struct(tree["thumbnail"]))
    return pa.schema([("records", pa.list_(struct(tree)))])


_SCHEMA = _declared_schema()
_EXTENDED_SCHEMA = _declared_schema(extended=True)
