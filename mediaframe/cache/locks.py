"""The lock files of one local harvest folder: one writer at a time (``.writer``); readers, who
pass through ``.readers`` to choose the version they read and then hold that version's own lock
(``.readers-<version>``), which keeps it from being removed while they read it.

:class:`~mediaframe.cache.store.HarvestStore` decides when to take which; this module only
opens and takes them (``flock``), so that a lock that cannot be taken reaches the user as a
:class:`~mediaframe.exceptions.CacheError` saying what to do, never a bare ``OSError``.
"""

from __future__ import annotations

import errno
import fcntl
import os
import posixpath
from collections.abc import Callable

from mediaframe.cache.datasets import write_error
from mediaframe.exceptions import CacheError

__all__ = ["READERS", "VERSION_READERS", "WRITER", "LockFiles", "release", "version_lock"]

#: Held exclusively by the one process (and thread) writing the folder.
WRITER = ".writer"
#: The readers' gate: held shared by a reader only while it reads the manifest and takes the
#: lock of the version it names; exclusively by whoever decides which versions to remove.
READERS = ".readers"
#: The prefix of a version's readers' lock (:func:`version_lock`).
VERSION_READERS = ".readers-"


def version_lock(version: str) -> str:
    """The lock file of the dataset version ``version`` (a ``data-<stamp>`` name): held shared
    by each of its readers for as long as they read it, exclusively by its remover."""
    return f"{VERSION_READERS}{version}"


class LockFiles:
    """Takes the lock files of the folder ``root`` (named ``url`` to the user).

    ``local`` is false for a remote (fsspec) cache, which takes no locks; ``make_root`` creates
    the folder, privately, before a lock file is made in it.
    """

    def __init__(self, root: str, url: str, *, local: bool, make_root: Callable[[], None]) -> None:
        self.root, self.url, self.local = root, url, local
        self._make_root = make_root

    def take(self, name: str, mode: int, *, create: bool = True) -> int | None:
        """The lock ``name`` taken with ``mode``: its open handle (:func:`release` frees it).

        ``None`` when a non-blocking ``mode`` finds it held elsewhere, on a remote cache (no
        locks), and without ``create`` when there is nothing to protect (no folder, or a
        read-only one). A lock file unlinked while this waited for it (the harvest was
        removed) is never taken for the folder that replaced it.
        """
        if not self.local:
            return None
        while True:
            if create:
                self._make_root()
            elif not os.path.isdir(self.root):
                return None  # nothing to read, so nothing to protect
            try:
                handle = os.open(posixpath.join(self.root, name), os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as err:
                if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM) and not create:
                    return None  # a read-only cache can still be read; nothing removes from it
                raise write_error(self.url, err) from err
            if not self._flock(handle, mode):
                return None
            if os.fstat(handle).st_nlink:
                return handle
            # the harvest was removed (remove_unused) while this waited: lock its new folder
            os.close(handle)

    def _flock(self, handle: int, mode: int) -> bool:
        """Lock the open ``handle``; ``False`` (handle closed) if a non-blocking ``mode`` finds
        it held. A filesystem that cannot lock (``ENOLCK`` on some network mounts) is a
        :class:`CacheError` saying what to do: two writers there could break the cache."""
        try:
            fcntl.flock(handle, mode)
        except BlockingIOError:
            os.close(handle)
            return False
        except OSError as err:
            os.close(handle)
            raise CacheError(
                f"could not lock the cache at {self.url} ({err.strerror or err}): its "
                "filesystem does not support locks; point cache_dir (MEDIAFRAME_CACHE_DIR) at a "
                "local disk"
            ) from err
        return True


def release(handle: int | None) -> None:
    """Free a lock :meth:`LockFiles.take` gave (``None``: none was taken)."""
    if handle is not None:
        os.close(handle)  # closing releases the flock
