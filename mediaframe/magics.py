"""IPython magics, loaded with ``%load_ext mediaframe``: thin layers over plain functions.

``%mf_connect <url or profile> [--token TOKEN] [--name client]``
    Connect (:func:`connect_to`) and put the client in the notebook as ``client`` (or
    ``--name``); later ``%%mf_search`` cells use it. Give a token as ``--token $variable`` so
    that the notebook's history keeps the variable's name, not the token.

``%%mf_search <var> [--client NAME] [--stories] [--record-type T] [--bases 1,2] ...``
    The cell's body is the query; every record it matches (the complete harvest, with
    progress) is stored in ``<var>`` without being displayed, and one summary line printed.
    ``--allow-incomplete`` keeps what the server's cap lets through of a search no split gets
    under it (``allow_incomplete=True``), with a warning, rather than refusing it.

A bad argument (a name, an id, a date, a profile, a URL, a quote left open, a query the
server refuses), and any other mediaframe error, is said as IPython says its own: a
``UsageError`` shown as its message alone, which still stops a notebook run; its advice names
the magic's options (``--allow-incomplete`` for ``allow_incomplete=True``).
Nothing is chained, so that even ``%xmode Verbose`` shows no more than the message, and the
message is redacted (:func:`mediaframe.tokens.redact`): the ``--token`` value, and any word of
the line that looks like a token (a token typed, or a ``$variable`` holding one expanded, where
a profile, a URL or a name was expected), is registered as a secret and said as ``***`` — here
and in any later message or log of the process.

Loading the extension also registers ``df.media`` (:mod:`mediaframe.accessor`).
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Iterator
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

import mediaframe.accessor  # noqa: F401  (registers df.media)
from mediaframe.auth import shown_url
from mediaframe.client import Client, connect
from mediaframe.exceptions import ConfigurationError, InvalidParameterError, MediaframeError
from mediaframe.harvest import HarvestReport
from mediaframe.tokens import redact, register_secret

__all__ = ["MediaframeMagics", "connect_to", "load_ipython_extension", "search_into"]


def connect_to(target: str, *, token: str | None = None) -> Client:
    """A client for ``target``: a service URL (with ``token``, else the stored default profile
    — ``MEDIAFRAME_PROFILE`` or ``default`` — which must be of that URL) or the name of a
    stored profile (see ``mediaframe login``)."""
    target = target.strip()
    if not target:
        raise ConfigurationError("name a service URL or a stored profile: %mf_connect work")
    if "://" in target:
        if token is not None:
            return connect(target, token=token)
        try:
            return connect(target)
        except ConfigurationError as err:  # no stored login for it: the magic's own way out
            said = str(err).split("; or pass connect() a token")[0]  # connect()'s way out
            raise ConfigurationError(
                # not "token: ...", which redact() would take for a token's value
                f"{said}; or pass a token, as in %mf_connect {shown_url(target)} --token $token"
            ) from err
    if token is not None:
        raise ConfigurationError(
            f"--token goes with a service URL, not with the profile {target!r}: "
            f"%mf_connect https://... --token $token"
        )
    return connect(profile=target)


def search_into(
    namespace: dict[str, Any], var: str, client: Client, query: str, **filters: Any
) -> str:
    """Harvest ``query`` into ``namespace[var]`` and return the harvest's one-line summary."""
    if not var.isidentifier():
        raise InvalidParameterError(f"{var!r} is not a Python name to store the result in")
    stories = filters.pop("stories", False)
    frame = (client.stories if stories else client.records)(query, **filters)
    namespace[var] = frame
    try:
        return f"{var}: {HarvestReport.from_frame(frame).summary()}"
    except KeyError:
        return f"{var}: {len(frame)} rows"


@contextlib.contextmanager
def _said_as_usage() -> Iterator[None]:
    """A bad argument of a magic (a name, an id, a date, a profile, a URL, a query the server
    refuses) and any other mediaframe error (the server unreachable, a refused token) as
    IPython says its own: the message, which says what to do, redacted, without a traceback
    through mediaframe's code (not even chained: under ``%xmode Verbose`` it would show the
    line, token expanded)."""
    try:
        yield
    except MediaframeError as err:  # a query the server refused too: the likeliest mistake
        raise _usage(_said_for_magic(f"{type(err).__name__}: {err}")) from None


#: The library's words for what ``%%mf_search`` takes as options, and the magic's, applied in
#: this order (longer phrases first). Only options the magic has: the command line's own
#: (``--ttl``, ``--status``, ...) are not the magic's to name.
_OPTION_NAMES: tuple[tuple[str, str], ...] = (
    (r"\bdrop offline=True / MEDIAFRAME_OFFLINE\b", "drop --offline / MEDIAFRAME_OFFLINE"),
    (r"\ballow_incomplete=True\b", "--allow-incomplete"),
    (r"\boffline=True\b", "--offline"),
    (r"\brefresh=True\b", "--refresh"),
)
_TRANSLATIONS = tuple((re.compile(pattern), said) for pattern, said in _OPTION_NAMES)


def _said_for_magic(message: str) -> str:
    """``message`` with the library's argument names said as ``%%mf_search``'s options.

    Examples
    --------
    >>> _said_for_magic("narrow the query, or pass allow_incomplete=True to accept it")
    'narrow the query, or pass --allow-incomplete to accept it'
    """
    for pattern, said in _TRANSLATIONS:
        message = pattern.sub(said, message)
    return message


def _usage(message: str) -> UsageError:
    """The ``UsageError`` every error of a magic is said as, its message redacted."""
    return UsageError(redact(message))


#: A word of a magic's line that could be a token: token68 characters (RFC 7235: base64,
#: base64url, hex, a JWT's dots), padding last.
_WORD = re.compile(r"[A-Za-z0-9._~+/-]+=*")
_CLASS = (str.islower, str.isupper, str.isdigit)
_LOWER, _UPPER = 0, 1


def _looks_like_token(word: str) -> bool:
    """Whether ``word``, typed where a magic expects a profile, a URL or a name, could be a
    token: long, and switching between letters and digits, or to upper case, as random text
    does (a 32-hex token some 14 times) where names rarely do (``production-2024-archive``:
    never; ``MyArchiveProfile2024``: three times, an upper-case letter's own word not counted).
    A 32-hex token is caught 20,000 times out of 20,000, a 32-character base64url one all but
    once in 10,000 (``secrets.token_hex(16)``, ``secrets.token_urlsafe(24)``)."""
    kinds = [next((n for n, test in enumerate(_CLASS) if test(char)), None) for char in word]
    switches = sum(
        1
        for a, b in itertools.pairwise(kinds)
        if None not in (a, b) and a != b and (a, b) != (_UPPER, _LOWER)
    )
    return len(word) >= 16 and switches >= 4


def _typed_secrets(line: str) -> None:
    """Register the words of ``line`` that look like tokens as secrets (each part between
    ``/`` too, as a message may quote a path's last part): :func:`redact` then hides them in
    the magic's message, and in every later one."""
    for word in _WORD.findall(line):
        for part in {word, *word.split("/")}:
            if _looks_like_token(part):
                register_secret(part)


def _arguments(magic: Any, line: str) -> Any:
    """The magic's arguments in ``line``, its secrets registered first; a line it cannot read
    (a quote left open, an argument it does not take) is said as a usage error, redacted."""
    _typed_secrets(line)
    try:
        args = parse_argstring(magic, line)
    except ValueError as err:  # shlex's "No closing quotation", which holds none of the line
        raise _usage(f"{err} in the magic's line: close the quote or remove it") from None
    except UsageError as err:  # argparse's, which may quote an argument: a token typed there
        raise _usage(str(err)) from None
    register_secret(getattr(args, "token", None))
    return args


@magics_class
class MediaframeMagics(Magics):
    """``%mf_connect`` and ``%%mf_search``."""

    @magic_arguments()
    @argument("target", help="a service URL or a stored profile name")
    @argument("--token", help="a token for the URL (pass it as $variable)")
    @argument("--name", default="client", help="the notebook variable of the client")
    @line_magic
    def mf_connect(self, line: str) -> None:
        args = _arguments(self.mf_connect, line)
        if not args.name.isidentifier():
            raise _usage(f"--name {args.name!r} is not a Python name to store the client in")
        with _said_as_usage():
            client = connect_to(args.target, token=args.token)
        self.shell.user_ns[args.name] = client  # type: ignore[union-attr]
        print(f"{args.name} = {client!r}")

    @magic_arguments()
    @argument("var", help="the notebook variable the result is stored in")
    @argument("--client", default="client", help="the notebook variable holding the client")
    @argument("--stories", action="store_true", help="search stories instead of records")
    @argument("--record-type", help="image, video, audio, document, flash or unknown")
    @argument("--bases", help="collection (base) ids, comma-separated")
    @argument("--date-field", help="created_on or updated_on")
    @argument("--date-min", "--since", dest="date_min", help="first day, Y/m/d or Y-m-d")
    @argument("--date-max", "--until", dest="date_max", help="last day, Y/m/d or Y-m-d")
    @argument("--refresh", action="store_true", help="harvest again, ignoring the cache")
    @argument("--offline", action="store_true", help="read only the cache")
    @argument(
        "--allow-incomplete",
        action="store_true",
        help="keep what the server's cap lets through when the search cannot be split under it",
    )
    @argument("--no-progress", action="store_true", help="hide the progress bar")
    @cell_magic
    def mf_search(self, line: str, cell: str) -> None:
        args = _arguments(self.mf_search, line)
        namespace = self.shell.user_ns  # type: ignore[union-attr]
        with _said_as_usage():
            client = namespace.get(args.client)
            if not isinstance(client, Client):
                raise ConfigurationError(
                    f"no client in {args.client!r}: run %mf_connect <url or profile> first"
                )
            print(search_into(namespace, args.var, client, _query(cell), **_filters(args)))


def _query(cell: str) -> str:
    # one query over several lines reads as one line; spaces inside a line are kept
    return " ".join(line.strip() for line in cell.strip().splitlines() if line.strip())


def _filters(args: Any) -> dict[str, Any]:
    filters: dict[str, Any] = {
        "stories": args.stories,
        "record_type": args.record_type,
        "date_field": args.date_field,
        "date_min": args.date_min,
        "date_max": args.date_max,
    }
    if args.bases:
        try:
            filters["bases"] = [int(b) for b in args.bases.split(",") if b.strip()]
        except ValueError:
            raise InvalidParameterError(f"--bases {args.bases!r}: give ids like 1,2") from None
    for flag in ("refresh", "offline", "allow_incomplete"):
        if getattr(args, flag):
            filters[flag] = True
    if args.no_progress:
        filters["progress"] = False
    return {k: v for k, v in filters.items() if v is not None}


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext mediaframe``: register the magics (``df.media`` is registered on import)."""
    ipython.register_magics(MediaframeMagics)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext mediaframe``: remove the magics (``df.media`` stays, as pandas keeps it)."""
    magics = ipython.magics_manager.magics
    magics["line"].pop("mf_connect", None)
    magics["cell"].pop("mf_search", None)
