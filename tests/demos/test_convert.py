"""`robosim demos convert`: PickCube demos re-expressed in joint modes still succeed,
pd_joint_pos reproduces the source exactly, and converted files replay exactly."""
from __future__ import annotations

import json
import os

import h5py
import numpy as np
import pytest

from robosim.cli import main
from robosim.demos.convert import convert_demos
from robosim.record import TrajectoryFile, replay


@pytest.fixture(scope="module")
def converted(demos, tmp_path_factory):
    """{mode: (report, path)} of the shared demos converted to both joint modes."""
    out = tmp_path_factory.mktemp("convert")
    return {mode: (convert_demos(demos[0], str(out / f"{mode}.h5"), mode), str(out / f"{mode}.h5"))
            for mode in ("pd_joint_pos", "pd_joint_delta_pos")}


@pytest.mark.parametrize("mode", ["pd_joint_pos", "pd_joint_delta_pos"])
def test_converted_episodes_succeed_and_replay_exactly(converted, mode):
    report, path = converted[mode]
    assert report.success == [True, True, True] and report.to_mode == mode
    traj = TrajectoryFile(path, task_id="PickCube-v1")
    assert traj.spec.control_mode == mode and len(traj) == 3
    low, high = (-1.0, 1.0)
    for k in range(3):
        e = traj.episode(k)
        assert e.success[-1] and e.actions.shape == (e.length, 8)   # 7 arm joints + gripper
        if mode == "pd_joint_delta_pos":
            assert e.actions.min() >= low and e.actions.max() <= high
    assert replay(path, mode="actions").exact


def test_joint_position_targets_reproduce_the_source_exactly(demos, converted):
    # the recorded drive targets, given as pd_joint_pos actions, are the same PD targets
    report, path = converted["pd_joint_pos"]
    source, target = TrajectoryFile(demos[0]), TrajectoryFile(path)
    for k in range(3):
        assert np.array_equal(source.episode(k).states, target.episode(k).states)
    assert report.final_error == [0.0, 0.0, 0.0] and report.final_pose_error == [0.0, 0.0, 0.0]


def test_converts_back_to_end_effector_control(converted, tmp_path):
    report = convert_demos(converted["pd_joint_pos"][1], str(tmp_path / "back.h5"), "pd_ee_delta_pose")
    assert report.success == [True, True, True]
    assert max(report.final_pose_error) < 0.005   # m / rad: the same place, reached by another controller
    with h5py.File(tmp_path / "back.h5", "r") as f:
        assert json.loads(f.attrs["conversion"])["from_control_mode"] == "pd_joint_pos"


@pytest.mark.parametrize("argv, message", [
    (["{demos}", "--to-control-mode", "pd_teleport"], "to_control_mode must be one of"),
    (["{bogus}", "--to-control-mode", "pd_joint_pos"], "TRAJ must be a 'robosim-trajectory' file"),
    (["{missing}", "--to-control-mode", "pd_joint_pos"], "TRAJ must be an existing HDF5 file"),
])
def test_bad_input_is_refused_before_anything_is_written(demos, tmp_path, capsys, argv, message):
    bogus = tmp_path / "bogus.h5"
    with h5py.File(bogus, "w") as f:
        f.attrs["format"] = "something-else"
    out = tmp_path / "out"
    out.mkdir()
    paths = {"demos": demos[0], "bogus": str(bogus), "missing": str(tmp_path / "none.h5")}
    code = main(["demos", "convert", *[a.format(**paths) for a in argv], "--out", str(out / "c.h5")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("robosim demos convert: error: ") and message in err
    assert os.listdir(out) == []
