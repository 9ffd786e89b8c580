"""`robosim eval/solve/replay --robot NAME --task-param KEY=VALUE` as a user runs them."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import h5py
import imageio.v3 as iio
import pytest

import robosim

ROBOSIM = os.path.join(os.path.dirname(sys.executable), "robosim")


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([ROBOSIM, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One eval run with the robot and a task parameter given before the task id."""
    out = tmp_path_factory.mktemp("eval")
    result = run("eval", "--robot", "xarm7", "--task-param", "cube_half_size=0.025", "PickCube-v1",
                 "--video", "x.mp4", "--trajectory", "x.h5", "--episodes", "2", "--num-envs", "2",
                 "--render-size", "64x64", cwd=out)
    return out, result


def test_eval_takes_robot_and_task_params(recorded):
    out, result = recorded
    assert result.returncode == 0, result.stderr
    assert "success rate" in result.stdout
    assert iio.imread(out / "x.mp4", index=0).shape[0] == 64   # --render-size 64x64 tiles
    with h5py.File(out / "x.h5", "r") as h5:
        header = json.loads(h5.attrs["env_spec"])
        state_dim = int(h5.attrs["state_dim"])
    assert header["task_params"]["cube_half_size"] == 0.025 and header["robot"] == "xarm7"
    env = robosim.make("PickCube-v1", num_envs=1, robot="xarm7")   # the recording ran the xarm7
    try:
        assert state_dim == env.state_dim
    finally:
        env.close()


@pytest.mark.parametrize("args, words", [
    (["eval", "--task-param", "bogus=1", "PickCube-v1"], ["bogus", "cube_half_size"]),
    (["eval", "--task-param", "cube_half_size=big", "PickCube-v1"], ["cube_half_size", "'big'"]),
    (["solve", "--robot", "koch", "--no-video"], ["robot", "'koch'", "xarm7"]),
    (["eval", "--task-param", "nokey", "PickCube-v1"], ["KEY=VALUE", "'nokey'"]),
    (["demos", "generate", "PickCube-v1", "-n", "1", "--out", "x.h5", "--task-param", "bogus=1"],
     ["robosim demos generate: error:", "bogus", "cube_half_size"]),
    (["eval", "PickCube-v1", "--workers", "2", "--robot", "xarm7"], ["--robot and --task-param", "--workers"]),
    (["eval", "PickCube-v1", "--render-size", "64by64"], ["WIDTHxHEIGHT", "'64by64'"]),
    (["eval", "PickCube-v1", "--camera", "[90]"], ["JSON object", "'[90]'"]),
    (["eval", "TwoArmLift-v1", "--robot", "left=,x"], ["SLOT=NAME", "'left=,x'"]),
    (["eval", "TwoArmLift-v1", "--robot", "middle=panda"], ["'middle'", "['left', 'right']"]),
    (["eval", "TwoArmLift-v1", "--control-mode", "left=pd_ee_delta_pose,right"], ["SLOT=MODE", "'left="]),
    (["eval", "TwoArmLift-v1", "--control-mode", "left=pd_ee_delta_pose"], ["control_mode", "missing: ['right']"]),
    (["demos", "generate", "TwoArmLift-v1", "-n", "1", "--out", "x.h5", "--control-mode",
      "left=pd_ee_delta_pose,right=pd_joint_delta_pos"], ["control_mode must be one the scripted", "'right'"]),
    # the scripted solution steers each arm by ee_action: it refuses the joint-mode arm
    (["eval", "TwoArmLift-v1", "--control-mode", "left=pd_ee_delta_pose,right=pd_joint_delta_pos", "--episodes", "1",
      "--num-envs", "1"], ["scripted policies need", "got 'pd_joint_delta_pos' (robot 'right_panda')"]),
])
def test_bad_robot_or_task_param_is_named(args, words, tmp_path):
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    assert list(tmp_path.iterdir()) == []   # refused before anything was written


def test_eval_takes_a_robot_per_slot(tmp_path):
    result = run("eval", "TwoArmLift-v1", "--robot", "right=xarm7", "--trajectory", "x.h5", "--episodes", "1",
                 "--num-envs", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with h5py.File(tmp_path / "x.h5", "r") as h5:
        assert json.loads(h5.attrs["env_spec"])["robot"] == {"left": "panda", "right": "xarm7"}


def test_eval_takes_a_control_mode_per_slot(tmp_path):
    result = run("eval", "TwoArmLift-v1", "--control-mode", "left=pd_ee_delta_pose,right=pd_joint_delta_pos",
                 "--policy", "robosim.record.policies:random", "--trajectory", "x.h5", "--episodes", "1",
                 "--num-envs", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with h5py.File(tmp_path / "x.h5", "r") as h5:
        assert json.loads(h5.attrs["env_spec"])["control_mode"] == {"left": "pd_ee_delta_pose",
                                                                    "right": "pd_joint_delta_pos"}
        assert int(h5.attrs["action_dim"]) == 15   # panda: 6 ee + gripper, 7 joint deltas + gripper


def test_solve_takes_robot_and_task_params(tmp_path):
    result = run("solve", "--robot", "xarm7", "--task-param", "cube_half_size=0.025", "--episodes", "2",
                 "--num-envs", "2", "--no-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "success rate" in result.stdout


def test_replay_refuses_robot_and_task_params(recorded):
    out, _ = recorded
    result = run("replay", str(out / "x.h5"), "--robot", "panda", "--task-param", "cube_half_size=0.03")
    assert result.returncode == 2
    for word in ("trajectory's header", "--robot panda", "cube_half_size"):
        assert word in result.stderr, (word, result.stderr)


def test_replay_rebuilds_the_recorded_robot_and_task_params(recorded):
    out, _ = recorded
    result = run("replay", str(out / "x.h5"), "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(exact)" in result.stdout
