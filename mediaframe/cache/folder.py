"""The files of one harvest folder: names that never lead out of it, documents read as regular
files of bounded size, atomic writes, and removal (what :mod:`~mediaframe.cache.shards` and
:mod:`~mediaframe.cache.store` build on)."""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import uuid
from collections.abc import Callable

from fsspec.implementations.local import LocalFileSystem

from mediaframe.cache.datasets import filesystem, remove_tree, write_error
from mediaframe.exceptions import CacheCorruptError
from mediaframe.files import flush_tree, private_dirs, read_regular, replace_atomically

__all__ = ["MAX_DOCUMENT_BYTES", "HarvestFolder"]

#: The most read of one document (manifest, plan, entry, page): far above any written, and a
#: bound on what a hostile or damaged folder can make a read take.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


class HarvestFolder:
    """The folder of one harvest (local path or fsspec URL) and the file operations on it.

    Parameters
    ----------
    root : folder of the harvest (local path or fsspec URL), e.g. ``cache_dir/records/<key>``.
    """

    def __init__(self, root: str) -> None:
        self.fs, self.root = filesystem(root)
        self.url = str(root)
        self.local = isinstance(self.fs, LocalFileSystem)

    def _url(self, *parts: str) -> str:
        return posixpath.join(self.url.rstrip("/"), *parts)

    def _path(self, *parts: str) -> str:
        # Names may come from files of the folder (shard ids): none may lead out of it.
        for part in parts:
            if part.startswith("/") or ".." in part.split("/"):
                raise CacheCorruptError(f"{part!r} names no file inside {self.url}: damage")
        return posixpath.join(self.root, *parts)

    def _read_bytes(self, name: str, *, document: bool = True) -> bytes | None:
        """The bytes of the file ``name``; ``None`` if it is missing. A symlink, FIFO or device
        in its place, or a ``document`` over MAX_DOCUMENT_BYTES, is damage: never followed,
        waited on or read without end."""
        path, data, limit = self._path(name), b"", MAX_DOCUMENT_BYTES if document else None
        try:
            if self.local:
                data = read_regular(path, limit)
            else:
                with self.fs.open(path, "rb") as handle:
                    data = handle.read(-1 if limit is None else limit + 1)
        except FileNotFoundError:
            return None
        except OSError as err:
            raise CacheCorruptError(f"{name} of {self.url} cannot be read ({err})") from err
        if limit is not None and len(data) > limit:
            raise CacheCorruptError(f"{name} of {self.url} is over {limit:,} bytes: damage")
        return data

    def _make_root(self) -> None:
        if self.local:
            private_dirs(self.root)
        else:
            self.fs.makedirs(self.root, exist_ok=True)

    def _write_atomic(
        self,
        path: str,
        data: bytes,
        *,
        durable: bool = False,
        staged: Callable[[], None] | None = None,
    ) -> None:
        """Write a sibling and rename it over ``path``: a kill leaves the old file or the new.

        ``durable`` also flushes the file before the rename and the folder after it, so that
        a power cut cannot leave the name pointing at unwritten blocks: the manifest's due.
        Checkpoints are not flushed: one lost to a power cut fails its checksum and is fetched
        again, while flushing each would cost a disk round trip per shard. ``staged`` is
        called once the sibling is written, before the rename (local caches only).
        """
        try:
            if self.local:
                replace_atomically(path, data, durable=durable, staged=staged)
                return
            partial = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
            self.fs.makedirs(posixpath.dirname(path), exist_ok=True)
            with self.fs.open(partial, "wb") as handle:
                handle.write(data)
            self.fs.mv(partial, path)
        except OSError as err:
            raise write_error(self.url, err) from err

    def _flush_tree(self, path: str) -> None:
        """Make a written dataset private and durable (local caches only)."""
        if not self.local:
            return
        try:
            flush_tree(path)
        except OSError as err:
            raise write_error(self.url, err) from err

    def _remove(self, name: str) -> None:
        path = self._path(name)
        if self.local:  # past what another remover took first
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            return
        with contextlib.suppress(FileNotFoundError):
            remove_tree(self.fs, path)

    def remove(self) -> None:
        """Forget this harvest entirely."""
        remove_tree(self.fs, self.root)
