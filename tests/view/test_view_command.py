"""`robosim view` as a person types it: a task runs (and records), a recording plays, and
bad input is one `robosim view: error: ...` line with exit status 2."""
from __future__ import annotations

import os
import socket

import pytest

from robosim.cli import main
from robosim.record.trajectory import TrajectoryFile


def test_a_task_runs_records_and_plays_back(tmp_path, port, capsys):
    demos = str(tmp_path / "demos.h5")
    assert main(["view", "PickCube-v1", "-n", "2", "--max-steps", "80", "--time-scale", "0",
                 "--port", str(port), "--record", demos]) == 0
    out = capsys.readouterr().out
    assert f"http://127.0.0.1:{port}" in out
    recorded = TrajectoryFile(demos)
    assert len(recorded) >= 1                                  # the scripted solution finishes episodes
    assert all(recorded.episode(k).success[-1] for k in range(len(recorded)))
    assert main(["view", "--trajectory", demos, "--max-steps", "3", "--port", str(port)]) == 0
    assert f"({len(recorded)} episodes)" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["NoSuchTask-v9"], "task_id must be one of"),
    ([], "give a TASK or --trajectory FILE"),
    (["PickCube-v1", "--trajectory", "x.h5"], "give a TASK or --trajectory FILE"),
    (["PickCube-v1", "--policy", "nosuchmodule:policy"], "policy"),
    (["PickCube-v1", "--teleop", "-n", "2"], "--num-envs must be >= 1 (1 with --teleop), got 2"),
    (["PickCube-v1", "--time-scale", "-1"], "--time-scale must be in [0, 4]"),
    (["PickCube-v1", "--record", "out.mp4"], "--record must end with .h5"),
])
def test_bad_arguments(argv, message, port, capsys):
    assert main(["view", *argv, "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("robosim view: error:") and message in err and "\n" not in err


def test_a_file_that_is_not_a_trajectory(tmp_path, port, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    assert main(["view", "--trajectory", str(bad), "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("robosim view: error: --trajectory must be an HDF5 file written by robosim")
    assert "\n" not in err


LEROBOT_FIXTURE = os.path.join(os.path.dirname(__file__), "..", "demos", "fixtures", "lerobot_pickcube")


def test_a_lerobot_dataset_plays_after_its_import(port, capsys):
    """A dataset written by LeRobot's own writer (tests/demos/fixtures) is imported, as
    `robosim demos import` reads it, and played; the task names what the dataset cannot."""
    assert main(["view", "PickCube-v1", "--trajectory", LEROBOT_FIXTURE, "--max-steps", "3",
                 "--port", str(port)]) == 0
    out = capsys.readouterr().out
    assert f"robosim view: {LEROBOT_FIXTURE} (" in out and " episodes) at http://" in out


def test_a_directory_that_is_not_a_dataset(tmp_path, port, capsys):
    assert main(["view", "--trajectory", str(tmp_path), "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("robosim view: error: ") and "\n" not in err


def test_a_port_in_use(port, capsys):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        assert main(["view", "PickCube-v1", "-n", "1", "--max-steps", "1", "--port", str(port)]) == 2
    assert f"port {port} on 127.0.0.1 is in use" in capsys.readouterr().err


def test_teleop_starts_with_the_gizmo_on_the_tcp(port, capsys):
    assert main(["view", "PickCube-v1", "--teleop", "--max-steps", "3", "--time-scale", "0",
                 "--port", str(port)]) == 0
    assert "PickCube-v1 on 1 envs" in capsys.readouterr().out
