"""`robosim demos` on bad input and a full disk: one `robosim demos CMD: error: ...` line,
a non-zero status, never a traceback, and nothing under the output name.

Damaged input is a copy of the shared real demos file with random bytes written over
its middle (an episode's group header, or its states data). The full disk is a real
one: a tiny tmpfs (mounting needs root, which CI has)."""
from __future__ import annotations

import hashlib
import os
import shutil

import h5py
import numpy as np
import pytest

from robosim.cli import main
from robosim.record import RecordEpisode

SMALL = "16x16"   # camera size for render/export: the cost is in the checks, not the pixels


def _one_error_line(capsys, command: str) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "%|" not in line]   # tqdm bars
    assert len(lines) == 1 and lines[0].startswith(f"robosim demos {command}: error: "), err
    assert "Traceback" not in err
    return lines[0]


def _digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


# -- damaged input ------------------------------------------------------------------
def _damaged(demos_path: str, tmp_path, where: str) -> str:
    """A copy of the demos file with 512 random bytes over episode_00001's group header
    ('metadata') or over the middle of its states ('data')."""
    with h5py.File(demos_path, "r") as f:
        group = f["episode_00001"]
        states = group["states"].id
        offset = (states.get_offset() + states.get_storage_size() // 2 if where == "data"
                  else h5py.h5o.get_info(group.id).addr)
    path = tmp_path / f"damaged_{where}.h5"
    shutil.copy(demos_path, path)
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(np.random.default_rng(0).integers(0, 256, 512, dtype=np.uint8).tobytes())
    return str(path)


COMMANDS = {
    "convert": lambda src, out: ["demos", "convert", src, "--to-control-mode", "pd_joint_pos", "--out", f"{out}.h5"],
    "render": lambda src, out: ["demos", "render", src, "--obs-mode", "rgb", "--sensor-size", SMALL, "--out",
                                f"{out}.h5"],
    "export": lambda src, out: ["demos", "export", src, "--format", "lerobot", "--no-video", "--out", str(out)],
}


@pytest.mark.parametrize("where, field", [("metadata", "episode_00001"), ("data", "'states'")])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_random_bytes_in_the_middle_are_refused_naming_episode_and_field(demos, tmp_path, capsys, command,
                                                                          where, field):
    if command == "export":
        pytest.importorskip("pyarrow")
    src = _damaged(demos[0], tmp_path, where)
    out = tmp_path / "out"
    out.mkdir()
    code = main(COMMANDS[command](src, out / "result"))
    line = _one_error_line(capsys, command)
    assert code == 2 and src in line and "episode_00001" in line and field in line, line
    assert os.listdir(out) == []


def test_a_file_without_episodes_is_refused(tmp_path, capsys):
    import robosim

    empty = tmp_path / "empty.h5"
    RecordEpisode(robosim.make("PickCube-v1", num_envs=1), trajectory=str(empty)).close()   # a real 0-episode file
    for command in ("convert", "render"):
        code = main(COMMANDS[command](str(empty), tmp_path / "result"))
        line = _one_error_line(capsys, command)
        assert code == 2 and "must hold at least one episode, got 0 episodes" in line and str(empty) in line
    assert sorted(os.listdir(tmp_path)) == ["empty.h5"]


# -- full disk ----------------------------------------------------------------------
def _names(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if not n.startswith("."))


# command: (tmpfs bytes, argv(fs), what the error line must add, hidden leftovers allowed)
FULL_DISK = {
    "generate": (8192, lambda fs, src, data: ["demos", "generate", "PickCube-v1", "-n", "20", "--num-envs", "2",
                                              "--out", str(fs / "g.h5")], "robosim recover", True),
    "convert": (8192, lambda fs, src, data: COMMANDS["convert"](src, fs / "c"), "robosim recover", True),
    "render": (16384, lambda fs, src, data: COMMANDS["render"](src, fs / "r"), "is unchanged", False),
    "export": (8192, lambda fs, src, data: COMMANDS["export"](src, fs / "e"), "", False),
    "import": (8192, lambda fs, src, data: ["demos", "import", str(data), "--out", str(fs / "i.h5")], "", True),
}


@pytest.fixture(scope="module")
def dataset(demos, tmp_path_factory):
    """The demos exported as a LeRobot dataset (the input of import), while there is room."""
    pytest.importorskip("pyarrow")
    out = tmp_path_factory.mktemp("dataset") / "pick"
    assert main(["demos", "export", demos[0], "--format", "lerobot", "--no-video", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("command", list(FULL_DISK))
def test_a_full_disk_is_one_error_line_and_no_final_file(demos, dataset, tmpfs, capsys, command):
    size, argv, says, hidden = FULL_DISK[command]
    before = _digest(demos[0])
    fs = tmpfs(f"size={size}")
    capsys.readouterr()
    code = main(argv(fs, demos[0], dataset))
    line = _one_error_line(capsys, command)
    assert code == 1 and "No space left on device" in line and says in line, line
    assert (_names(fs) if hidden else os.listdir(fs)) == [], os.listdir(fs)   # nothing under a final name
    assert _digest(demos[0]) == before   # the input is untouched
