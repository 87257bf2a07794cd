"""Local files written so that a kill or a power cut leaves the old content or the new, never a
mix, in folders and files only their owner may open (the cache's and the token store's alike),
and read back only as regular files of bounded size."""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
import uuid
from collections.abc import Callable

__all__ = ["flush_file", "flush_tree", "private_dirs", "read_regular", "replace_atomically"]


def private_dirs(path: str) -> None:
    """Create ``path`` and any missing parent as folders only their owner may enter (0700)."""
    missing = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)


def replace_atomically(
    path: str,
    data: bytes,
    *,
    durable: bool = False,
    staged: Callable[[], object] | None = None,
) -> None:
    """Write a private sibling of ``path`` and rename it over ``path``.

    ``durable`` also flushes the file before the rename and the folder after it, so that a
    power cut cannot leave the name pointing at unwritten blocks. ``staged`` is called between
    the write and the rename (tests kill the process there). Raises ``OSError`` as it comes,
    the sibling removed.
    """
    partial = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        private_dirs(posixpath.dirname(path))
        handle = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            _write_all(handle, data)
            if durable:
                os.fsync(handle)
        finally:
            os.close(handle)
        if staged is not None:
            staged()
        os.replace(partial, path)
        if durable:
            fsync_dir(posixpath.dirname(path))
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def flush_tree(path: str) -> None:
    """Make a written folder private and durable: every file 0600 and flushed, every folder
    0700 and flushed, and the folder holding it flushed."""
    for folder, _, files in os.walk(path, topdown=False):
        for name in files:
            flush_file(os.path.join(folder, name))
        os.chmod(folder, 0o700)
        fsync_dir(folder)
    fsync_dir(posixpath.dirname(path))


def flush_file(path: str) -> None:
    """Make a written file private (0600) and durable (flushed to disk)."""
    os.chmod(path, 0o600)
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _write_all(handle: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view) :]


def fsync_dir(path: str) -> None:
    """Flush a folder's entries (a rename in it) to disk, where the filesystem can."""
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    except OSError as err:  # some filesystems cannot flush a folder: the rename still stands
        if err.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(handle)


def read_regular(path: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path``; OSError if it is anything else (a symlink, a FIFO,
    a device) or over ``limit`` bytes: never followed, waited on or read without end."""
    # O_NOFOLLOW: a symlink is refused (ELOOP); O_NONBLOCK: a FIFO opens without waiting for a
    # writer, then fails the regular-file check. The size is checked before reading (asking
    # read() for at most limit + 1 bytes would allocate that much on every read).
    handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(handle, "rb", buffering=0) as file:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{posixpath.basename(path)} is not a regular file")
        if limit is not None and info.st_size > limit:
            raise OSError(f"{posixpath.basename(path)} is over {limit:,} bytes")
        return file.read()
