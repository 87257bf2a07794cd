"""Where an export is written: checked paths, written beside and renamed into place."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from mediaframe.exceptions import ExportError

__all__ = ["atomic_path", "writable"]

_NAME_BYTES = 200


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed over it once the body succeeds.

    A failure (or a kill) leaves any earlier file at ``path`` as it was, never half of a new one.
    A symbolic link is followed (the file it names is replaced, the link kept); a stream such as
    ``/dev/stdout`` or a named pipe is written directly.

    Raises
    ------
    ExportError
        The folder does not exist or the file cannot be written.
    """
    target, stream = writable(path)
    if stream:
        # a stream (/dev/stdout, a named pipe): nothing to rename over, written as it comes
        yield target
        return
    # a file name has at most 255 bytes: a long target name is cut in the partial's name
    stem = target.name.encode()[:_NAME_BYTES].decode(errors="ignore")
    partial = target.with_name(f".{stem}.{uuid.uuid4().hex[:8]}.partial")
    try:
        yield partial
        os.replace(partial, target)
    except UnicodeEncodeError as err:  # a ValueError, from whichever writer encoded the text
        bad = err.object[err.start : err.end]
        raise ExportError(
            f"cannot write {target}: a text holds {bad!r}, which is no character (a lone "
            "surrogate, e.g. from bytes decoded with errors='surrogateescape'); replace it "
            "first, e.g. frame.replace(r'[\\ud800-\\udfff]', '\\ufffd', regex=True)"
        ) from err
    except OSError as err:
        raise ExportError(f"cannot write {target}: {err.strerror or err}") from err
    finally:
        with contextlib.suppress(OSError):  # gone, or never made: the error above says why
            partial.unlink()


def writable(path: str | os.PathLike[str]) -> tuple[Path, bool]:
    """The file a write to ``path`` replaces, and whether it is a stream; checked, so that a
    command can refuse a path it cannot write before its work rather than after.

    Raises
    ------
    ExportError
        ``path`` is a folder, its folder does not exist, or it cannot be resolved.
    """
    try:
        target, stream = _resolved(Path(path))
    except OSError as err:  # a name too long, a loop of links, a folder we may not read
        raise ExportError(f"cannot write {path}: {err.strerror or err}") from err
    if stream:
        return target, True
    if target.is_dir():
        raise ExportError(f"{target} is a folder: give a file name, e.g. {target / 'export.csv'}")
    if not target.parent.is_dir():
        raise ExportError(f"cannot write {target}: the folder {target.parent} does not exist")
    return target, False


def _resolved(target: Path) -> tuple[Path, bool]:
    """The file to replace, and whether it is a stream rather than a file."""
    if target.is_symlink():
        # a link to the export (latest.csv -> 2024-11.csv) stays a link: the file it names is
        # the one replaced
        target = Path(os.path.realpath(target))
    return target, target.exists() and not target.is_file() and not target.is_dir()
