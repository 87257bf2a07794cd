"""Where an export is written: checked paths, written beside and renamed into place."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from mediaframe.exceptions import ExportError

__all__ = ["atomic_path"]


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
    target = Path(path)
    if target.is_symlink():
        # a link to the export (latest.csv -> 2024-11.csv) stays a link: the file it names is
        # the one replaced
        target = Path(os.path.realpath(target))
    if target.exists() and not target.is_file() and not target.is_dir():
        # a stream (/dev/stdout, a named pipe): nothing to rename over, written as it comes
        yield target
        return
    if target.is_dir():
        raise ExportError(f"{target} is a folder: give a file name, e.g. {target / 'export.csv'}")
    if not target.parent.is_dir():
        raise ExportError(f"cannot write {target}: the folder {target.parent} does not exist")
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        yield partial
        os.replace(partial, target)
    except OSError as err:
        raise ExportError(f"cannot write {target}: {err.strerror or err}") from err
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
