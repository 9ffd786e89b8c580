"""robosim.core.atomic: a file appears under its name only complete, a failed write
leaves the old file and no temporary file, and cache writes can ignore errors."""
from __future__ import annotations

import os
import stat

import pytest

from robosim.core.atomic import (
    current_umask,
    make_temp_beside,
    replace_dir_into_place,
    replace_into_place,
    write_bytes_atomic,
)


def test_write_replaces_the_file_with_a_normal_mode_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "out.json"
    path.write_bytes(b"old")
    assert write_bytes_atomic(str(path), b"new contents") is True
    assert path.read_bytes() == b"new contents"
    assert os.listdir(tmp_path) == ["out.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~current_umask()


def test_an_exception_mid_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    with pytest.raises(TypeError):
        write_bytes_atomic(path, ["not", "bytes"])   # fails after the temporary file exists
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.bin"]


def test_missing_directories_raise_or_are_made(tmp_path):
    path = tmp_path / "a" / "b" / "c.bin"
    with pytest.raises(FileNotFoundError):
        write_bytes_atomic(path, b"x")
    assert write_bytes_atomic(path, b"x", make_dirs=True) and path.read_bytes() == b"x"


def test_ignore_errors_returns_false_and_writes_nothing(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"a file where a directory should be")
    path = blocker / "cache" / "x.npz"
    with pytest.raises(OSError):
        write_bytes_atomic(path, b"x", make_dirs=True)
    assert write_bytes_atomic(path, b"x", make_dirs=True, ignore_errors=True) is False
    assert os.listdir(tmp_path) == ["file"] and blocker.read_bytes() == b"a file where a directory should be"


def test_streaming_writers_fill_a_temporary_file_then_rename_it(tmp_path):
    path = tmp_path / "video.mp4"
    tmp = make_temp_beside(str(path), ".video.", ".partial.mp4")
    assert os.path.dirname(tmp) == str(tmp_path) and os.path.basename(tmp).startswith(".video.")
    with open(tmp, "wb") as f:
        f.write(b"frames")
    assert not path.exists()
    replace_into_place(tmp, str(path))
    assert path.read_bytes() == b"frames" and os.listdir(tmp_path) == ["video.mp4"]


def test_a_vanished_temporary_file_is_named_in_the_error(tmp_path):
    tmp = make_temp_beside(str(tmp_path / "x.h5"), ".x.", ".partial.h5")
    os.unlink(tmp)
    with pytest.raises(FileNotFoundError, match="its temporary file .* disappeared"):
        replace_into_place(tmp, str(tmp_path / "x.h5"))
    assert os.listdir(tmp_path) == []


def test_a_directory_is_renamed_into_place_or_removed(tmp_path):
    built = tmp_path / ".dataset.partial"
    built.mkdir()
    (built / "meta.json").write_text("{}")
    replace_dir_into_place(str(built), str(tmp_path / "dataset"))
    assert os.listdir(tmp_path) == ["dataset"] and (tmp_path / "dataset" / "meta.json").read_text() == "{}"
    again = tmp_path / ".again.partial"
    again.mkdir()
    (again / "data").write_text("new")
    with pytest.raises(OSError):   # the target exists and is not empty: nothing is replaced
        replace_dir_into_place(str(again), str(tmp_path / "dataset"))
    assert os.listdir(tmp_path) == ["dataset"] and os.listdir(tmp_path / "dataset") == ["meta.json"]
