"""Where an export is written: checked paths, written beside and renamed into place."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import functools
import os
import re
import shutil
import stat
import uuid
import warnings
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from mediaframe.exceptions import ExportError, MediaframeWarning

try:
    import fcntl
except ImportError:  # Windows: no flock; see _held and _sweep
    fcntl = None  # type: ignore[assignment]

__all__ = ["MANIFEST", "atomic_folder", "atomic_path", "check_folder", "inherit", "writable"]

_NAME_BYTES = 200
#: The file an exported folder lists its files in, so that the next export into it knows what
#: it may replace.
MANIFEST = ".mediaframe-export"
# renameat2(2): AT_FDCWD and RENAME_EXCHANGE
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed over it once the body succeeds.

    A failure (or a kill) leaves any earlier file at ``path`` as it was, never half of a new one.
    The new file takes the earlier one's permissions (a private export stays private), and its
    owner and group where this process may give them (see :func:`inherit`). A
    symbolic link is followed (the file it names is replaced, the link kept); a stream such as
    ``/dev/stdout`` or a named pipe is written directly.

    Raises
    ------
    ExportError
        The folder does not exist, or the file cannot be written (write-protected included).
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
        inherit(target, partial)
        os.replace(partial, target)
    except UnicodeEncodeError as err:  # a ValueError, from whichever writer encoded the text
        raise ExportError(f"cannot write {target}: {_unencodable(err)}") from err
    except OSError as err:
        raise ExportError(f"cannot write {target}: {err.strerror or err}") from err
    finally:
        with contextlib.suppress(OSError):  # gone, or never made: the error above says why
            partial.unlink()


def inherit(earlier: Path, new: Path) -> None:
    """Give ``new``, about to replace ``earlier``, what ``earlier`` had: its permissions, and
    its owner and group where this process may give them — any owner and group as root, the
    group alone to a file of its own when the group is one of its own (``chown``'s rules).

    Never more access than ``earlier`` allowed: where its group cannot be kept, the group
    ``new`` has gets no more than others had, and no set-group-id bit; where its owner cannot
    be kept, no set-user-id bit. Nothing to inherit from a link, nor where there was none.
    """
    try:
        was = os.stat(earlier, follow_symlinks=False)
    except FileNotFoundError:
        return  # none to replace: the umask's mode, as a file made in place would have
    if stat.S_ISLNK(was.st_mode):
        return  # a link is replaced, never followed: what it names is not the export's
    now = os.stat(new)
    # -1: kept (chown's "leave as it is"); else what could not be given back yet
    uid = -1 if was.st_uid == now.st_uid else was.st_uid
    gid = -1 if was.st_gid == now.st_gid else was.st_gid
    if uid != -1 or gid != -1:
        try:
            os.chown(new, uid, gid)
            uid = gid = -1
        except PermissionError:  # not root: the group alone, if it is one of ours
            if gid != -1 and uid != -1:
                with contextlib.suppress(PermissionError):
                    os.chown(new, -1, gid)
                    gid = -1
    mode = stat.S_IMODE(was.st_mode)
    if gid != -1:  # the group the file has now gets no more than anyone else had
        mode &= ~(stat.S_ISGID | stat.S_IRWXG) | ((mode & stat.S_IRWXO) << 3)
    if uid != -1:
        mode &= ~stat.S_ISUID
    os.chmod(new, mode)  # last: a chown may have cleared the set-id bits


def _unencodable(err: UnicodeEncodeError) -> str:
    """What a text held that could not be written, and what to do."""
    bad = err.object[err.start : err.end]
    if any("\ud800" <= char <= "\udfff" for char in bad):
        return (
            f"a text holds {bad!r}, which is no character (a lone surrogate, e.g. from bytes "
            "decoded with errors='surrogateescape'); replace it first, "
            "e.g. frame.replace(r'[\\ud800-\\udfff]', '\\ufffd', regex=True)"
        )
    return (
        f"a text holds {bad!r}, which the encoding {err.encoding!r} cannot hold; choose one "
        "that holds every character: 'utf-8' (the default), or 'utf-8-sig', which Excel "
        "also opens as UTF-8"
    )


def writable(path: str | os.PathLike[str]) -> tuple[Path, bool]:
    """The file a write to ``path`` replaces, and whether it is a stream; checked, so that a
    command can refuse a path it cannot write before its work rather than after.

    Raises
    ------
    ExportError
        ``path`` is a folder, its folder does not exist, it cannot be resolved, or it is a
        file this process may not write (renamed over, it would be replaced all the same).
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
    if target.exists() and not os.access(target, os.W_OK):
        raise ExportError(
            f"{target} is write-protected: make it writable first (chmod u+w {target}) "
            "if it may be replaced, or write to another name"
        )
    return target, False


def _resolved(target: Path) -> tuple[Path, bool]:
    """The file to replace, and whether it is a stream rather than a file."""
    if target.is_symlink():
        # a link to the export (latest.csv -> 2024-11.csv) stays a link: the file it names is
        # the one replaced
        target = Path(os.path.realpath(target))
    return target, target.exists() and not target.is_file() and not target.is_dir()


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike[str], names: Collection[str]) -> Iterator[Path]:
    """A private folder beside ``path``, published as ``path`` in one step once the body has
    written ``names`` into it.

    A reader of ``path`` sees the earlier folder or the new one, each whole, never a mix of two
    exports nor half of one, however many run at once (threads, notebooks, processes): each
    writes its own folder and publishes it with one rename, the last one published wins. A
    failure leaves the earlier folder as it was; a kill too, at worst beside a hidden
    ``.NAME.partial-*`` folder, an unfinished export to delete. (Where folders cannot be
    swapped, a kill between the two renames leaves no folder at ``path``: the earlier export
    is then the hidden ``.NAME.partial-*.replaced-*`` beside it, to rename back.)

    An existing ``path`` is replaced whole: its files go, so it may hold nothing but what an
    export wrote there (the files its :data:`MANIFEST` lists, or those named ``names``); a folder
    holding anything else is refused, before anything is written. On Linux the two folders are
    swapped in one step; where the system cannot swap them, the earlier folder is moved aside
    first, so that for an instant there is none.

    A folder that cannot be replaced is filled in place instead: a mount point (the system
    will not rename it), or a folder of its own in a folder nothing may be written in (a share
    mounted under a read-only ``/mnt``), where the private folder is made inside it, hidden.
    Every file is written whole there first, so that a failure leaves the earlier files as they
    were; then each is put in place by one rename, its list naming every file of ours at each
    step. Only a reader during those renames (or a kill amid them) may see files of two exports,
    each whole; one export fills a folder at a time.

    Raises
    ------
    ExportError
        ``path`` is a file, holds files of its own, or cannot be written.
    """
    target = _folder_target(path)
    check_folder(target, names)
    published = False
    with contextlib.ExitStack() as held:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            staging, inside = _staging(target, names, held)
            try:
                yield staging
                (staging / MANIFEST).write_text(_list_of(names), encoding="utf-8")
                if inside:
                    _fill(staging, target, names, move=True)
                    replaced = []
                else:
                    replaced = _publish(staging, target, names)
                published = True
            finally:
                if not published:  # once swapped, the staging name holds the earlier folder
                    shutil.rmtree(staging, ignore_errors=True)
        except OSError as err:
            raise ExportError(f"cannot write into {target}: {err.strerror or err}") from err
    for folder in replaced:  # only the files an export wrote: a warning may be an error here
        _remove(folder, names)


#: What refuses a folder made beside the export: no permission, an immutable or read-only one.
_NO_WRITE = (errno.EACCES, errno.EPERM, errno.EROFS)


def _staging(target: Path, names: Collection[str], held: contextlib.ExitStack) -> tuple[Path, bool]:
    """The private folder an export into ``target`` is written in, and whether it is inside
    ``target`` (nothing may be made beside it), held for as long as ``held``."""
    stem = target.name.encode()[:_NAME_BYTES].decode(errors="ignore")
    beside = target.with_name(f".{stem}.partial-{uuid.uuid4().hex[:8]}")
    try:
        beside.mkdir()  # the user's umask, as a folder made in place would have
        return beside, False
    except OSError as err:
        if err.errno not in _NO_WRITE:
            raise
        if not target.is_dir():
            raise ExportError(
                f"cannot write into {target}: nothing may be made in {target.parent} "
                f"({err.strerror}): create {target.name} there first, writable by you, or give "
                "a folder you may write in"
            ) from err
    inside = target / f"{MANIFEST}.partial-{uuid.uuid4().hex[:8]}"
    inside.mkdir()
    held.enter_context(_held(inside))  # the next export leaves it be while we write
    # listed first, so that what a kill leaves can be cleared by the next export
    (inside / MANIFEST).write_text(_list_of(names), encoding="utf-8")
    return inside, True


@contextlib.contextmanager
def _held(folder: Path) -> Iterator[None]:
    """``folder`` locked (``flock``) for the body: waited for, if another process holds it."""
    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # and the lock with it


def _sweep(folder: Path) -> None:
    """Remove the private folders that killed exports left inside ``folder`` (those no
    running export holds), with only the files an export wrote there."""
    if fcntl is None:
        return  # which are in use cannot be told: left, hidden, accepted by check_folder
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(folder):
            if not (_STAGED.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)):
                continue
            try:
                handle = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                continue
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # an export writes in it now
            finally:
                os.close(handle)  # closing releases a lock taken: _remove sees the folder
            _remove(Path(entry.path), ())


def check_folder(path: str | os.PathLike[str], names: Collection[str] | None = None) -> None:
    """Refuse a folder an export cannot replace: a file, or a folder that holds anything but
    what an export wrote there (its :data:`MANIFEST`'s files, or ``names``; with ``names``
    ``None``, any CSV file, as a check before the work, when the names are not known yet).

    Raises
    ------
    ExportError
        What is in the way, and what to do.
    """
    target = _folder_target(path)
    if target.exists() and not target.is_dir():
        raise ExportError(f"{target} is a file: give a folder for one CSV per table")
    if not target.is_dir():
        return
    if target.samefile(Path.cwd()):  # replaced, it would leave this process in a removed folder
        raise ExportError(
            f"{path} is the working folder: give a folder for the export, e.g. {Path('export')}"
        )
    try:
        listed, entries = _contents(target)
    except FileNotFoundError:
        return  # replaced by another export meanwhile: that one is checked when met
    except OSError as err:
        raise ExportError(f"cannot read {target}: {err.strerror or err}") from err
    ours = [
        entry.name == MANIFEST
        or _LEFTOVER.fullmatch(entry.name) is not None
        or (_STAGED.fullmatch(entry.name) is not None and entry.is_dir(follow_symlinks=False))
        or (
            not entry.is_dir(follow_symlinks=False)
            and (
                entry.name in listed
                or (entry.name.endswith(".csv") if names is None else entry.name in names)
            )
        )
        for entry in entries
    ]
    foreign = [entry.name for entry, mine in zip(entries, ours, strict=True) if not mine]
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3:,} more" if foreign[3:] else "")
        raise ExportError(
            f"{target} holds {shown}, which no export wrote: an export replaces its folder "
            "whole, so give a new or empty folder (or move those files out)"
        )


#: A file an interrupted export of an earlier version left in its folder (see atomic_path).
_LEFTOVER = re.compile(r"\..+\.[0-9a-f]{8}\.partial")
#: The private folder an export writes in inside the folder it fills (see _staging).
_STAGED = re.compile(re.escape(MANIFEST) + r"\.partial-[0-9a-f]{8}")


def _folder_target(path: str | os.PathLike[str]) -> Path:
    target = Path(path)
    # a link to the export folder (latest -> 2024-11) stays a link: the folder it names is the
    # one replaced; "." and ".." by their names, to put the new folder beside
    try:
        return Path(os.path.realpath(target) if target.is_symlink() else os.path.abspath(target))
    except (OSError, ValueError) as err:  # a name too long, a NUL in it
        raise ExportError(
            f"cannot write into {path}: {getattr(err, 'strerror', None) or err}"
        ) from err


def _contents(folder: Path) -> tuple[set[str], list[os.DirEntry[str]]]:
    """What ``folder``'s :data:`MANIFEST` lists, and its entries, read from one opening of it:
    an export that replaced it meanwhile cannot pair one folder's list with another's files."""
    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        listed = _listed(folder, handle)
        return listed, sorted(os.scandir(handle), key=lambda entry: entry.name)
    finally:
        os.close(handle)


def _listed(folder: Path, handle: int | None = None) -> set[str]:
    """The files ``folder``'s :data:`MANIFEST` lists (none without one): plain names only, so
    that a list written by someone else cannot name a file outside the folder (``../x``)."""

    def opener(name: str, flags: int) -> int:
        return os.open(name if handle is not None else folder / name, flags, dir_fd=handle)

    try:
        with open(MANIFEST, encoding="utf-8", opener=opener) as manifest:
            lines = manifest.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return set()
    return {line for line in lines if _plain_name(line) and not line.startswith("#")}


def _plain_name(name: str) -> bool:
    """Whether ``name`` names a file right in a folder (no folder, no parent, no NUL)."""
    return name not in ("", ".", "..") and not any(part in name for part in ("/", "\\", "\0"))


def _publish(staging: Path, target: Path, names: Collection[str]) -> list[Path]:
    """Put ``staging`` in place of ``target`` in one step; the earlier folders it replaced, for
    :func:`_remove` (the staging name holds the last one once they are swapped)."""
    aside: list[Path] = []  # earlier folders, replaced
    try:
        while True:
            with contextlib.suppress(OSError):  # a replaced folder, even empty, keeps its mode
                inherit(target, staging)  # and its owner and group
            try:
                os.rename(staging, target)  # none there, or an empty folder: one step
                break
            except OSError as err:
                if err.errno == errno.EBUSY:  # a mount point: it cannot be replaced, only filled
                    _fill(staging, target, names)
                    return []
                if err.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
            # another export's folder (or an earlier one): checked again, as it may have changed
            check_folder(target, names)
            if _exchange(staging, target):
                aside.append(staging)  # which now holds the earlier folder
                break
            # no swap here: the earlier folder is moved aside, then the new one put in its place
            moved = staging.with_name(f"{staging.name}.replaced-{len(aside)}")
            try:
                os.rename(target, moved)
            except FileNotFoundError:
                continue  # another export moved it aside first
            aside.append(moved)
    except (OSError, ExportError):
        if aside and not target.exists():  # the earlier folder back in place, else kept aside
            earlier = aside.pop()
            with contextlib.suppress(OSError):
                os.rename(earlier, target)
        for folder in aside:  # each replaced by another export, whole
            _remove(folder, names)
        raise
    return aside


def _fill(staging: Path, target: Path, names: Collection[str], *, move: bool = False) -> None:
    """Put the files of ``staging`` into ``target``, a folder that cannot be replaced (see
    :func:`atomic_folder`), then delete ``staging``: moved where ``staging`` is inside
    ``target``, else copied.

    Each file is put in place whole, and at every step the list names every file of ours
    there: it is widened to the new files first, and cut to them last, once the earlier
    export's other files are gone. A kill thus leaves a folder the next export may fill again.
    Unlike a folder put in place in one step, a reader meanwhile may see files of two exports.
    One fill at a time: two would cut each other's lists.
    """
    with _held(target):
        check_folder(target, names)  # again: files may have been put there since it began
        _sweep(target)
        earlier = _listed(target)

        def listing(names: Collection[str]) -> Callable[[Path], object]:
            return lambda partial: partial.write_text(_list_of(names), encoding="utf-8")

        _put(target / MANIFEST, listing({*earlier, *names}))
        for name in sorted(names):
            put = os.rename if move else shutil.copyfile
            _put(target / name, functools.partial(put, staging / name))
        for name in earlier - set(names) - {MANIFEST}:
            with contextlib.suppress(FileNotFoundError):
                (target / name).unlink()
        _put(target / MANIFEST, listing(names))
    shutil.rmtree(staging, ignore_errors=True)


def _put(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` a hidden partial file beside ``path``, then rename it over ``path``: a link
    there is replaced, never followed to a file elsewhere."""
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.partial")  # a _LEFTOVER
    try:
        write(partial)
        inherit(path, partial)
        os.replace(partial, path)
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()


def _list_of(names: Collection[str]) -> str:
    """The text of a :data:`MANIFEST` naming ``names``."""
    return "# written by mediaframe: the next export into this folder replaces these files\n" + (
        "".join(f"{name}\n" for name in sorted(names))
    )


def _remove(folder: Path, names: Collection[str]) -> None:
    """Delete a replaced export folder: only the files an export wrote (and the leftovers of
    one interrupted), and the folder once empty; a file someone put there while it was
    replaced is kept, and said so."""
    _sweep(folder)  # what an export killed while filling it in place left in it
    leftovers: list[str] = []
    with contextlib.suppress(OSError):
        leftovers = [name for name in os.listdir(folder) if _LEFTOVER.fullmatch(name)]
    # The list goes last: another export checking this folder (it held the folder open as it
    # was replaced) must never see a file of ours without the list that names it.
    for name in [*({*_listed(folder), *names, *leftovers} - {MANIFEST}), MANIFEST]:
        with contextlib.suppress(OSError):  # one it cannot remove keeps the folder (said below)
            (folder / name).unlink()
    try:
        folder.rmdir()
    except FileNotFoundError:
        pass
    except OSError:
        warnings.warn(
            f"the replaced export folder {folder} was kept: files were put in it while it "
            "was replaced; move them out and delete it",
            MediaframeWarning,
            stacklevel=2,
        )


def _exchange(first: Path, second: Path) -> bool:
    """Swap two folders in one step (Linux's ``renameat2`` with ``RENAME_EXCHANGE``); False
    where the system or its file system cannot."""
    swap = _renameat2()
    if swap is None:
        return False
    if swap(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False  # an old kernel, or a file system without it (EINVAL, or EPERM on some)
    raise OSError(code, os.strerror(code), str(second))


@functools.cache
def _renameat2() -> Callable[[int, bytes, int, bytes, int], int] | None:
    """glibc's ``renameat2``, or ``None`` where the C library has none (macOS, musl, Windows)."""
    try:
        swap = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    swap.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    swap.restype = ctypes.c_int
    return swap
