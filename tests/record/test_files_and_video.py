"""Output files appear under their final name only when complete, and stay valid when
the run dies mid-way."""
from __future__ import annotations

import os

import imageio
import numpy as np
import pytest

from robosim.record.files import check_output_path
from robosim.record.video import VideoWriter


def count_frames(path) -> int:
    return sum(1 for _ in imageio.get_reader(path))


def partials(directory) -> list[str]:
    return [name for name in os.listdir(directory) if ".partial" in name]


def test_video_is_written_under_a_temporary_name_then_renamed(tmp_path):
    path = tmp_path / "run.mp4"
    video = VideoWriter(str(path), fps=10)
    for k in range(4):
        video.add_batch(np.full((3, 31, 45, 3), 60 * k, np.uint8), [[f"env {i}"] for i in range(3)])
    assert not path.exists() and len(partials(tmp_path)) == 1
    video.close()
    video.close()                                                  # idempotent
    assert path.exists() and partials(tmp_path) == []
    reader = imageio.get_reader(str(path))
    frames = [f for f in reader]
    assert len(frames) == 4
    assert frames[0].shape == (2 * 31 + 2, 2 * 45 + 2, 3)          # 2x2 grid, 2 px gutters
    assert abs(int(frames[3][20, 40, 0]) - 180) < 12               # tile colour survives encoding
    assert frames[3][3, 3].max() < 100 < frames[3][20, 40].min()   # dark overlay box top-left


def test_an_exception_mid_run_leaves_a_valid_video_of_the_frames_so_far(tmp_path):
    path = tmp_path / "crash.mp4"
    with pytest.raises(RuntimeError, match="policy crashed"):
        with VideoWriter(str(path)) as video:
            for _ in range(3):
                video.add_frame(np.full((32, 32, 3), 100, np.uint8))
            raise RuntimeError("policy crashed")
    assert count_frames(str(path)) == 3 and partials(tmp_path) == []


def test_discard_leaves_nothing(tmp_path):
    video = VideoWriter(str(tmp_path / "gone.mp4"))
    video.add_frame(np.zeros((8, 8, 3), np.uint8))
    video.discard()
    assert os.listdir(tmp_path) == []


def test_frames_must_keep_one_size_and_dtype(tmp_path):
    with VideoWriter(str(tmp_path / "v.mp4")) as video:
        video.add_frame(np.zeros((16, 16, 3), np.uint8))
        with pytest.raises(ValueError, match=r"frame must keep the video's size \(16, 16, 3\), got \(18, 16, 3\)"):
            video.add_frame(np.zeros((18, 16, 3), np.uint8))
        with pytest.raises(ValueError, match="frame must be uint8 of shape"):
            video.add_frame(np.zeros((16, 16, 3), np.float32))


@pytest.mark.parametrize("name, message", [
    ("missing_dir/out.mp4", "must be in an existing directory"),
    ("out.avi", "must end with .mp4"),
    ("a_file.txt/out.mp4", "must be in an existing directory"),
])
def test_bad_output_paths_are_rejected_before_anything_is_written(tmp_path, name, message):
    (tmp_path / "a_file.txt").write_text("x")
    with pytest.raises(ValueError, match=message):
        VideoWriter(str(tmp_path / name))
    assert sorted(os.listdir(tmp_path)) == ["a_file.txt"]
    (tmp_path / "d.mp4").mkdir()
    with pytest.raises(ValueError, match="must be a file path, got the directory"):
        check_output_path("video", str(tmp_path / "d.mp4"), (".mp4",))
    with pytest.raises(TypeError, match="video must be a file path"):
        VideoWriter(42)
    with pytest.raises(ValueError, match="fps must be an int in"):
        VideoWriter(str(tmp_path / "ok.mp4"), fps=0)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into any directory")
def test_unwritable_directory_is_rejected(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ValueError, match="must be in a writable directory"):
        VideoWriter(str(locked / "out.mp4"))


def test_finished_files_get_a_normal_file_mode(tmp_path):
    with VideoWriter(str(tmp_path / "m.mp4")) as video:
        video.add_frame(np.zeros((8, 8, 3), np.uint8))
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "m.mp4").stat().st_mode & 0o777 == 0o666 & ~mask
