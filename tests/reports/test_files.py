"""How an export meets the file it replaces: options that would undo the atomic write, its
permissions, its compression, and the text its encoding cannot hold."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile

import pandas as pd
import pytest

from mediaframe.exceptions import ExportError
from mediaframe.reports import to_csv, to_excel, to_json

FRAME = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})


@pytest.mark.parametrize("mode", ["a", "a+", "x"])
def test_csv_refuses_a_mode_other_than_replace_and_keeps_the_earlier_file(tmp_path, mode):
    path = tmp_path / "log.csv"
    to_csv(FRAME, path)
    before = path.read_bytes()
    with pytest.raises(ExportError, match=r"pd\.concat"):
        to_csv(FRAME, path, mode=mode, header=False)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["log.csv"]


@pytest.mark.parametrize("writer", [to_csv, to_excel], ids=["csv", "xlsx"])
def test_a_replaced_export_keeps_its_permissions(tmp_path, writer):
    path = tmp_path / f"private{'.csv' if writer is to_csv else '.xlsx'}"
    writer(FRAME, path)
    path.chmod(0o600)
    writer(FRAME, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


_PROTECTED = """
import sys, pandas as pd
from mediaframe.exceptions import ExportError
from mediaframe.reports import to_csv, to_excel, to_json
try:
    to_csv(pd.DataFrame({"a": [1]}), sys.argv[1])
except ExportError as err:
    print("refused:", err)
"""


def test_a_write_protected_file_is_refused_and_kept(tmp_path):
    path = tmp_path / "protected.csv"
    path.write_text("PROTECTED")
    path.chmod(0o444)
    command = [sys.executable, "-c", _PROTECTED, str(path)]
    if os.access(path, os.W_OK):  # root: as a user without the power to write any file
        capsh = shutil.which("capsh")
        if capsh is None:
            pytest.skip("root, and no capsh to drop the power to write any file")
        command = [capsh, "--drop=cap_dac_override", "--", "-c", shlex.join(command)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert "refused:" in out and "chmod u+w" in out
    assert path.read_text() == "PROTECTED"
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


@pytest.mark.parametrize("name", ["x.csv.gz", "x.csv.bz2", "x.csv.xz", "x.CSV.GZ", "x.csv.zip"])
def test_csv_is_compressed_as_its_name_says_and_reads_back(tmp_path, name):
    path = tmp_path / name
    to_csv(FRAME, path)
    pd.testing.assert_frame_equal(pd.read_csv(path), FRAME)
    if name.endswith(".zip"):
        assert zipfile.ZipFile(path).namelist() == ["x.csv"]


def test_json_is_compressed_as_its_name_says_and_a_tar_names_its_member_as_the_file(tmp_path):
    to_json(FRAME, tmp_path / "x.json.gz")
    pd.testing.assert_frame_equal(pd.read_json(tmp_path / "x.json.gz"), FRAME)
    to_csv(FRAME, tmp_path / "x.csv.tar.gz")
    with tarfile.open(tmp_path / "x.csv.tar.gz", "r:gz") as archive:
        assert archive.getnames() == ["x.csv"]
    to_csv(FRAME, tmp_path / "named.zip", compression="zip")
    assert zipfile.ZipFile(tmp_path / "named.zip").namelist() == ["named"]
    to_csv(FRAME, tmp_path / "plain.csv", compression=None)
    assert (tmp_path / "plain.csv").read_bytes().startswith(b"a,b\r\n")


def test_a_character_the_chosen_encoding_cannot_hold_is_named_with_the_encoding(tmp_path):
    path = tmp_path / "ascii.csv"
    with pytest.raises(ExportError) as caught:
        to_csv(pd.DataFrame({"t": ["caf\u00e9"]}), path, encoding="ascii")
    message = str(caught.value)
    assert "surrogate" not in message
    assert "'\u00e9'" in message and "'ascii'" in message and "utf-8" in message
    assert not path.exists()


def test_a_lone_surrogate_is_still_said_to_be_one(tmp_path):
    text = b"caf\xe9".decode("utf-8", "surrogateescape")
    with pytest.raises(ExportError, match="lone surrogate"):
        to_csv(
            pd.DataFrame({"t": pd.Series([text], dtype=object)}),
            tmp_path / "s.csv",
            encoding="ascii",
        )


@pytest.mark.parametrize("name", ["x.csv.gz", "x.csv.zip", "x.json.bz2", "x.JSON.XZ", "x.csv.tar"])
def test_export_picks_the_format_behind_a_compression_ending_and_reads_back(tmp_path, name):
    from mediaframe.reports import export

    path = export(FRAME, tmp_path / name)
    reader = pd.read_json if ".json" in name.lower() else pd.read_csv
    pd.testing.assert_frame_equal(reader(path), FRAME)
    assert path.read_bytes()[:3] != b"a,b"  # compressed, not plain text under that name


def test_a_zstandard_export_without_the_package_says_how_to_install_it(tmp_path, monkeypatch):
    import importlib.util

    from mediaframe.reports import export

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "zstandard" else find_spec(name, *a),
    )
    with pytest.raises(ExportError, match="pip install zstandard"):
        export(FRAME, tmp_path / "x.csv.zst")
    assert not list(tmp_path.iterdir())


_WRITERS = {"csv": to_csv, "xlsx": to_excel, "json": to_json}
#: An owner and groups no one here has: the tests run as root, which may give a file to anyone.
_OTHER_UID, _OTHER_GID, _OUR_GID = 12345, 23458, 23457


@pytest.mark.parametrize("suffix", sorted(_WRITERS))
def test_a_replaced_export_keeps_its_owner_and_group(tmp_path, suffix):
    path = tmp_path / f"shared.{suffix}"
    _WRITERS[suffix](FRAME, path)
    if os.geteuid() == 0:
        owner, group = _OTHER_UID, _OTHER_GID
    else:  # a user keeps the group of a file of theirs when it is one of their groups
        owner = os.geteuid()
        group = next((g for g in os.getgroups() if g != path.stat().st_gid), None)
        if group is None:
            pytest.skip("this user is in one group only: there is no other group to keep")
    os.chown(path, owner, group)
    path.chmod(0o640)
    _WRITERS[suffix](FRAME, path)
    kept = path.stat()
    assert (kept.st_uid, kept.st_gid) == (owner, group)
    assert stat.S_IMODE(kept.st_mode) == 0o640


_AS_A_USER = """
import os, stat, sys, pandas as pd
from mediaframe.reports import to_csv
for name in sys.argv[1:]:
    to_csv(pd.DataFrame({"a": [1]}), name)
    now = os.stat(name)
    print(name, now.st_uid, now.st_gid, oct(stat.S_IMODE(now.st_mode)))
"""


def test_where_the_owner_or_group_cannot_be_kept_no_one_gains_access(tmp_path):
    """As a user (root without the power to give files away, in a group of its own): the
    group of a file of its own is kept when it is one of its groups; a group it cannot give
    the file gets no more than others had, and a new owner no set-user-id bit."""
    capsh = shutil.which("capsh")
    if os.geteuid() != 0 or capsh is None:
        pytest.skip("needs root and capsh to act as a user without the power to chown")
    ours, theirs = tmp_path / "ours.csv", tmp_path / "theirs.csv"
    for path, (uid, gid, mode) in {
        ours: (0, _OUR_GID, 0o660),
        theirs: (_OTHER_UID, _OTHER_GID, 0o4674),  # others read; its group could write
    }.items():
        to_csv(FRAME, path)
        os.chown(path, uid, gid)
        path.chmod(mode)
    script = shlex.join([sys.executable, "-c", _AS_A_USER, str(ours), str(theirs)])
    command = [capsh, "--drop=cap_chown,cap_fowner", f"--groups=0,{_OUR_GID}", "--", "-c", script]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()
    assert out[:4] == [str(ours), "0", str(_OUR_GID), "0o660"]  # ours, in our group: all kept
    # theirs: now ours, in our own group, which gets what others had (read), not the write
    # its earlier group had; no set-user-id for a file whose owner changed
    assert out[4:] == [str(theirs), "0", "0", "0o644"]
    assert pd.read_csv(theirs).to_dict("list") == {"a": [1]}


def test_a_replaced_export_folder_keeps_its_owner_and_group(tmp_path):
    from mediaframe.reports.bundle import Bundle

    class _One(Bundle):
        tables = {"t": FRAME}  # noqa: RUF012

        def readme(self) -> pd.DataFrame:
            return FRAME

    folder = tmp_path / "export"
    _One().to_csv(folder)
    if os.geteuid() != 0:
        pytest.skip("a folder given to another owner: needs root")
    os.chown(folder, _OTHER_UID, _OTHER_GID)
    folder.chmod(0o750)
    _One().to_csv(folder)
    kept = folder.stat()
    assert (kept.st_uid, kept.st_gid, stat.S_IMODE(kept.st_mode)) == (
        _OTHER_UID,
        _OTHER_GID,
        0o750,
    )
