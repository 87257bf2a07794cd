"""A bundle's folder of CSV files: published whole, whatever runs at once or is killed."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import pandas as pd
import pytest

from mediaframe.exceptions import ExportError
from mediaframe.reports import files
from mediaframe.reports.bundle import Bundle

TABLES = 30


class _Tables(Bundle):
    """A bundle whose every file says which export wrote it."""

    def __init__(self, run: str, tables: int = TABLES) -> None:
        self.run, self.count = run, tables

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        return {f"t{n:02d}": pd.DataFrame({"run": [self.run]}) for n in range(self.count)}

    def readme(self) -> pd.DataFrame:
        return pd.DataFrame({"run": [self.run]})


def _export_many(folder: str, who: str, times: int, start: multiprocessing.synchronize.Event):
    start.wait()
    for n in range(times):
        _Tables(f"{who}-{n}").to_csv(folder)


def _runs_seen(folder: Path) -> tuple[int, set[bytes]] | None:
    """How many CSV files one look at ``folder`` finds, and the exports that wrote them; None
    when they were replaced while read. Read through one handle on the folder, as a reader
    listing it and then opening its files reads one folder."""
    try:
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return None
    try:
        names = [name for name in os.listdir(handle) if name.endswith(".csv")]
        runs = set()
        for name in names:
            with open(os.open(name, os.O_RDONLY, dir_fd=handle), "rb") as file:
                runs.add(file.read().split(b"\r\n")[1])
        return len(names), runs
    except FileNotFoundError:  # an earlier export's folder, removed once replaced
        return None
    finally:
        os.close(handle)


def test_processes_exporting_into_one_folder_never_show_a_mix_of_two(tmp_path):
    # three notebooks re-exporting an audit into one folder while a fourth reads it: each look
    # finds one export's files (the old code renamed them in one by one: a mix)
    folder = tmp_path / "audit-csv"
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    writers = [
        context.Process(target=_export_many, args=(str(folder), who, 15, start))
        for who in ("first", "second", "third")
    ]
    for writer in writers:
        writer.start()
    mixed, looks = [], 0
    try:
        start.set()
        while any(writer.is_alive() for writer in writers):
            seen = _runs_seen(folder)
            if seen is not None:
                looks += 1
                if len(seen[1]) > 1:
                    mixed.append(seen[1])
        assert [writer.exitcode for writer in writers] == [0, 0, 0]
    finally:
        for writer in writers:
            writer.kill()
            writer.join()
    assert not mixed, f"{len(mixed)} of {looks} looks found files of two exports: {mixed[:3]}"
    count, runs = _runs_seen(folder) or (0, set())
    assert count == TABLES + 1 and len(runs) == 1  # the last export published, whole
    # nothing left behind: no staging folder, no replaced one
    assert [p.name for p in tmp_path.iterdir()] == ["audit-csv"]
    assert sorted(p.name for p in folder.iterdir())[0] == files.MANIFEST


def _dies_at_step(folder: str, step: int) -> None:
    """Export into ``folder``, killed at its ``step``-th rename or swap (SIGKILL: no cleanup)."""
    calls = [0]

    def dying(real):
        def call(*args, **kwargs):
            calls[0] += 1
            if calls[0] == step:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        return call

    os.rename, os.replace = dying(os.rename), dying(os.replace)
    files._exchange = dying(files._exchange)
    _Tables("newer", tables=3).to_csv(folder)


def test_an_export_killed_at_any_step_leaves_the_earlier_folder_or_the_new_one_whole(tmp_path):
    folder = tmp_path / "audit-csv"
    context = multiprocessing.get_context("spawn")
    outcomes = []
    for step in range(1, 30):
        _Tables("earlier", tables=3).to_csv(folder)
        child = context.Process(target=_dies_at_step, args=(str(folder), step))
        child.start()
        child.join()
        seen = _runs_seen(folder)
        if seen is None:
            # no swap on this system: killed between moving the earlier folder aside and
            # putting the new one in, there is none, and the earlier one lies aside, whole
            (aside,) = tmp_path.glob(".audit-csv.partial-*.replaced-*")
            seen = _runs_seen(aside)
            aside.rename(tmp_path / f".audit-csv.kept-{step}")
        assert seen is not None and seen[0] == 4, f"killed at step {step}: {seen}"
        assert len(seen[1]) == 1, f"killed at step {step}: files of two exports, {seen[1]}"
        outcomes.append((child.exitcode, seen[1].pop()))
        if child.exitcode == 0:
            break
    # killed before the new folder was in place: the earlier one; after: the new one
    assert outcomes[0] == (-signal.SIGKILL, b"earlier") and outcomes[-1] == (0, b"newer")
    assert {run for _, run in outcomes} == {b"earlier", b"newer"}
    # what the kills left are hidden folders beside it, never a file in it
    assert sorted(p.name for p in folder.iterdir()) == [
        files.MANIFEST,
        "README.csv",
        "t00.csv",
        "t01.csv",
        "t02.csv",
    ]
    assert all(p.name.startswith(".audit-csv.") for p in tmp_path.iterdir() if p != folder)


def test_a_folder_holding_other_files_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "mine.txt").write_text("a file of the user's")
    with pytest.raises(ExportError, match=r"holds mine.txt, which no export wrote"):
        _Tables("run", tables=2).to_csv(folder)
    with pytest.raises(ExportError, match="give a new or empty folder"):
        _Tables.check_export(folder)  # before the work, as the command line checks it
    assert [p.name for p in tmp_path.iterdir()] == ["notes"]
    assert [p.name for p in folder.iterdir()] == ["mine.txt"]
    # the working folder, even empty, is not replaced under the process working in it
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    with pytest.raises(ExportError, match="is the working folder"):
        _Tables("run", tables=2).to_csv(".")
    assert list(empty.iterdir()) == [] and Path.cwd() == empty


def test_an_empty_folder_or_an_earlier_export_is_replaced_and_keeps_its_permissions(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    _Tables("first", tables=3).to_csv(folder)
    folder.chmod(0o750)
    # an earlier export with more tables: the ones it listed go too
    paths = _Tables("second", tables=1).to_csv(folder)
    assert paths == [folder / "README.csv", folder / "t00.csv"]
    assert sorted(p.name for p in folder.iterdir()) == [files.MANIFEST, "README.csv", "t00.csv"]
    assert pd.read_csv(folder / "t00.csv")["run"].tolist() == ["second"]
    assert (folder.stat().st_mode & 0o777) == 0o750
    # a link to the folder stays a link: the folder it names is replaced
    link = tmp_path / "latest"
    link.symlink_to(folder)
    _Tables("third", tables=1).to_csv(link)
    assert link.is_symlink() and pd.read_csv(folder / "t00.csv")["run"].tolist() == ["third"]


def test_where_folders_cannot_be_swapped_the_earlier_one_is_moved_aside_first(
    tmp_path, monkeypatch
):
    # macOS, Windows, a file system without RENAME_EXCHANGE: still never a mix
    monkeypatch.setattr(files, "_exchange", lambda first, second: False)
    folder = tmp_path / "out"
    _Tables("first", tables=2).to_csv(folder)
    _Tables("second", tables=2).to_csv(folder)
    assert _runs_seen(folder) == (3, {b"second"})
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_list_of_files_naming_others_outside_the_folder_removes_none_of_them(tmp_path):
    # the list an export leaves is read by the next: one naming ../x or /x made it delete them
    folder, outside = tmp_path / "out", tmp_path / "precious.txt"
    _Tables("first", tables=1).to_csv(folder)
    outside.write_text("not an export's")
    listed = folder / files.MANIFEST
    listed.write_text(listed.read_text() + f"../precious.txt\n{outside}\nt00.csv\0x\n")
    _Tables("second", tables=1).to_csv(folder)
    assert outside.read_text() == "not an export's"
    assert pd.read_csv(folder / "t00.csv")["run"].tolist() == ["second"]


def test_an_empty_private_folder_stays_private(tmp_path):
    folder = tmp_path / "private"
    folder.mkdir()
    folder.chmod(0o700)
    _Tables("first", tables=1).to_csv(folder)
    assert (folder.stat().st_mode & 0o777) == 0o700


def test_exports_of_different_tables_at_once_are_never_refused_as_foreign(tmp_path):
    # a folder's list of files was read, then its files listed: another export swapping the
    # folder in between paired one export's list with another's files, and refused it
    import threading

    folder, errors = tmp_path / "out", []

    def export(who):
        for n in range(15):
            try:
                _Tables(f"{who}-{n}", tables=1 + (n + who) % 4).to_csv(folder)
            except ExportError as err:
                errors.append(err)

    threads = [threading.Thread(target=export, args=(who,)) for who in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert _runs_seen(folder)[0] >= 2


def test_a_leftover_of_an_earlier_interrupted_export_is_no_foreign_file(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / ".t00.csv.0123abcd.partial").write_text("half a file")  # atomic_path's, killed
    _Tables("run", tables=1).to_csv(folder)
    assert sorted(p.name for p in folder.iterdir()) == [files.MANIFEST, "README.csv", "t00.csv"]


def test_a_name_too_long_is_an_export_error(tmp_path):
    with pytest.raises(ExportError, match="cannot write into"):
        _Tables("run", tables=1).to_csv(tmp_path / ("x" * 300) / "y")


def test_a_file_put_in_the_replaced_folder_meanwhile_survives_a_warning_taken_as_error(
    tmp_path, monkeypatch
):
    # the warning that the replaced folder was kept, raised as an error, made the export
    # delete that folder whole, the user's file in it too
    import warnings

    from mediaframe.exceptions import MediaframeWarning

    folder = tmp_path / "out"
    _Tables("first", tables=1).to_csv(folder)
    real = files._exchange

    def exchange(first, second):
        swapped = real(first, second)
        if swapped:
            (first / "notes.txt").write_text("put there meanwhile")  # in the earlier folder
        return swapped

    monkeypatch.setattr(files, "_exchange", exchange)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(MediaframeWarning, match="was kept"):
            _Tables("second", tables=1).to_csv(folder)
    kept = [p for p in tmp_path.iterdir() if p.name != "out"]
    assert [p.name for p in kept[0].iterdir()] == ["notes.txt"]
    assert pd.read_csv(folder / "t00.csv")["run"].tolist() == ["second"]


def test_a_folder_being_cleared_never_shows_a_file_of_ours_without_its_list(tmp_path, monkeypatch):
    # An export that opened the folder just before it was replaced reads it while the export
    # that replaced it clears it: with the list removed first, the files left looked foreign.
    import pathlib

    folder = tmp_path / "old"
    folder.mkdir()
    names = ["README.csv", "t00.csv", "t01.csv", "t02.csv"]
    for name in names:
        (folder / name).write_text("x")
    (folder / files.MANIFEST).write_text("".join(f"{name}\n" for name in names))
    unlink = pathlib.Path.unlink
    checked = []

    def checked_unlink(self, *args, **kwargs):
        files.check_folder(folder, names=[])  # what a concurrent export sees at this instant
        checked.append(self.name)
        return unlink(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "unlink", checked_unlink)
    files._remove(folder, names[:2])
    assert sorted(checked) == sorted([*names, files.MANIFEST]) and not folder.exists()


@pytest.fixture
def mount_point(tmp_path, monkeypatch):
    """An empty folder the system will not rename or remove, as it does a mount point (EBUSY)."""
    import errno

    folder = tmp_path / "mnt"
    folder.mkdir()
    busy = OSError(errno.EBUSY, "Device or resource busy")

    def refuse_on(target):
        def call(*args, **kwargs):
            if any(Path(arg) == folder for arg in args if isinstance(arg, str | os.PathLike)):
                raise busy
            return target(*args, **kwargs)

        return call

    for name in ("rename", "replace", "rmdir"):
        monkeypatch.setattr(files.os, name, refuse_on(getattr(os, name)))
    monkeypatch.setattr(files, "_exchange", refuse_on(files._exchange))
    return folder


def test_an_empty_mount_point_is_filled_in_place(mount_point):
    inode = mount_point.stat().st_ino
    paths = _Tables("first", tables=3).to_csv(mount_point)
    assert paths == [mount_point / n for n in ("README.csv", "t00.csv", "t01.csv", "t02.csv")]
    assert mount_point.stat().st_ino == inode  # the folder itself, not one put in its place
    assert _runs_seen(mount_point) == (4, {b"first"})
    assert files._listed(mount_point) == {"README.csv", "t00.csv", "t01.csv", "t02.csv"}
    assert [p.name for p in mount_point.parent.iterdir()] == ["mnt"]  # no staging folder left
    # an earlier export of ours there: its files are replaced, the ones it listed go too
    _Tables("second", tables=1).to_csv(mount_point)
    assert sorted(p.name for p in mount_point.iterdir()) == [
        files.MANIFEST,
        "README.csv",
        "t00.csv",
    ]
    assert _runs_seen(mount_point) == (2, {b"second"})
    # anything else there is still refused, before anything is written
    (mount_point / "mine.txt").write_text("a file of the user's")
    with pytest.raises(ExportError, match=r"holds mine\.txt"):
        _Tables("third", tables=1).to_csv(mount_point)
    assert _runs_seen(mount_point) == (2, {b"second"})


def test_a_mount_point_being_filled_never_holds_a_file_of_ours_its_list_does_not_name(
    mount_point, monkeypatch
):
    # a kill at any step leaves a folder the next export may fill again, never a refused one
    _Tables("first", tables=3).to_csv(mount_point)
    steps = []
    copy = files.shutil.copyfile

    def checked_copy(source, destination, *args, **kwargs):
        files.check_folder(mount_point, names=[])  # what the next export would see now
        steps.append(Path(source).name)
        return copy(source, destination, *args, **kwargs)

    monkeypatch.setattr(files.shutil, "copyfile", checked_copy)
    _Tables("second", tables=2).to_csv(mount_point)
    files.check_folder(mount_point, names=[])
    assert steps == ["README.csv", "t00.csv", "t01.csv"]
    assert files._listed(mount_point) == {"README.csv", "t00.csv", "t01.csv"}


def test_a_link_in_a_mount_point_is_replaced_never_written_through(mount_point):
    outside = mount_point.parent / "precious.txt"
    outside.write_text("not an export's")
    (mount_point / "t00.csv").symlink_to(outside)  # bears the name of a file of ours
    _Tables("run", tables=1).to_csv(mount_point)
    assert outside.read_text() == "not an export's"
    assert not (mount_point / "t00.csv").is_symlink()
    assert _runs_seen(mount_point) == (2, {b"run"})


@pytest.fixture
def read_only_parent(tmp_path):
    """A writable folder ``parent/share`` whose parent nothing may be written in, as the
    mount point of a share under a read-only ``/mnt``: immutable (``chattr +i``, which binds
    root too), or, for a user, without write permission."""
    import shutil
    import subprocess

    parent, folder = tmp_path / "parent", tmp_path / "parent" / "share"
    folder.mkdir(parents=True)
    if os.geteuid() == 0:
        chattr = shutil.which("chattr")
        made = chattr and subprocess.run([chattr, "+i", str(parent)], capture_output=True)
        if not made or made.returncode != 0:
            pytest.skip("root ignores permissions, and chattr +i is refused here (not ext4?)")
        undo = [chattr, "-i", str(parent)]
    else:
        parent.chmod(0o555)
        undo = ["chmod", "755", str(parent)]
    try:
        with pytest.raises(OSError):  # as it says: nothing may be made beside the folder
            (parent / "probe").mkdir()
        yield folder
    finally:
        subprocess.run(undo, check=True)


def test_a_writable_folder_in_a_read_only_parent_is_written_in_place(read_only_parent):
    folder = read_only_parent
    inode = folder.stat().st_ino
    paths = _Tables("first", tables=3).to_csv(folder)
    assert paths == [folder / n for n in ("README.csv", "t00.csv", "t01.csv", "t02.csv")]
    assert folder.stat().st_ino == inode
    assert _runs_seen(folder) == (4, {b"first"})
    assert sorted(p.name for p in folder.iterdir()) == [files.MANIFEST, *(p.name for p in paths)]
    assert [p.name for p in folder.parent.iterdir()] == ["share"]
    # the next export replaces it: the earlier export's other files go
    _Tables("second", tables=1).to_csv(folder)
    assert sorted(p.name for p in folder.iterdir()) == [files.MANIFEST, "README.csv", "t00.csv"]
    assert _runs_seen(folder) == (2, {b"second"})


def test_in_a_read_only_parent_no_final_name_changes_before_every_file_is_whole(
    read_only_parent, monkeypatch
):
    folder = read_only_parent
    _Tables("first", tables=3).to_csv(folder)
    seen = []
    put = files._put

    def checked_put(path, write):
        if not seen:  # the first final name about to change: every new file is ready, whole
            (staged,) = [p for p in folder.iterdir() if p.is_dir()]
            seen.append({p.name: p.read_bytes() for p in staged.iterdir()})
            assert _runs_seen(folder) == (4, {b"first"})
        files.check_folder(folder, names=[])  # and a kill now leaves a folder to fill again
        return put(path, write)

    monkeypatch.setattr(files, "_put", checked_put)
    _Tables("second", tables=3).to_csv(folder)
    staged = seen[0]
    assert {name for name in staged if name.endswith(".csv")} == {
        "README.csv",
        "t00.csv",
        "t01.csv",
        "t02.csv",
    }
    assert all(staged[name].split(b"\r\n")[1] == b"second" for name in staged if ".csv" in name)
    assert _runs_seen(folder) == (4, {b"second"})
    assert not [p for p in folder.iterdir() if p.is_dir()]


def test_in_a_read_only_parent_a_failed_export_leaves_the_earlier_files_as_they_were(
    read_only_parent, monkeypatch
):
    from mediaframe.reports import bundle

    folder = read_only_parent
    _Tables("first", tables=3).to_csv(folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    real = bundle.to_csv

    def failing(frame, path, **options):
        if Path(path).name == "t01.csv":
            raise ExportError("the disk is full")
        return real(frame, path, **options)

    monkeypatch.setattr(bundle, "to_csv", failing)
    with pytest.raises(ExportError, match="the disk is full"):
        _Tables("second", tables=3).to_csv(folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_in_a_read_only_parent_what_a_killed_export_left_is_removed_by_the_next(
    read_only_parent,
):
    folder = read_only_parent
    _Tables("first", tables=1).to_csv(folder)
    left = folder / ".mediaframe-export.partial-0123abcd"  # a killed export's, whole or not
    left.mkdir()
    (left / files.MANIFEST).write_text("README.csv\nt00.csv\n")
    (left / "t00.csv").write_text("run\r\nkilled\r\n")
    (left / ".README.csv.89abcdef.partial").write_text("half a fi")
    files.check_folder(folder)  # no foreign file: the next export may go on
    _Tables("second", tables=1).to_csv(folder)
    assert sorted(p.name for p in folder.iterdir()) == [files.MANIFEST, "README.csv", "t00.csv"]
    assert _runs_seen(folder) == (2, {b"second"})


def test_a_new_folder_in_a_read_only_parent_is_refused_saying_what_to_do(read_only_parent):
    with pytest.raises(ExportError, match=r"create .*new.* first|give a folder you may"):
        _Tables("run", tables=1).to_csv(read_only_parent.parent / "new")


_INTO_SHARE = """
import sys, pandas as pd
from mediaframe.reports.bundle import Bundle

class Two(Bundle):
    tables = {"t": pd.DataFrame({"run": [sys.argv[2]]})}
    def readme(self): return pd.DataFrame({"run": [sys.argv[2]]})

Two().to_csv(sys.argv[1])
"""


def test_a_share_mounted_under_a_read_only_mount_is_filled(tmp_path):
    """The case itself: a writable file system mounted at ``parent/share``, ``parent`` a
    read-only mount (in a mount namespace of its own: nothing outside the test sees them)."""
    import shlex
    import shutil
    import subprocess
    import sys

    parent, store = tmp_path / "parent", tmp_path / "store"
    (parent / "share").mkdir(parents=True)
    store.mkdir()
    share = parent / "share"
    exports = " && ".join(
        shlex.join([sys.executable, "-c", _INTO_SHARE, str(share), run]) for run in ("a", "b")
    )
    script = (
        f"mount --make-rprivate / && mount --bind {parent} {parent} && "
        f"mount -o remount,ro,bind {parent} && mount --bind {store} {share} && "
        f"! mkdir {parent / 'probe'} 2>/dev/null && {exports}"
    )
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare to mount file systems in a namespace of its own")
    probe = subprocess.run([unshare, "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace here: {probe.stderr.decode().strip()}")
    subprocess.run([unshare, "-m", "sh", "-c", script], check=True, capture_output=True)
    assert sorted(p.name for p in store.iterdir()) == [files.MANIFEST, "README.csv", "t.csv"]
    assert _runs_seen(store) == (2, {b"b"})
    assert [p.name for p in parent.iterdir()] == ["share"]  # nothing made beside it
