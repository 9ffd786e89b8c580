"""Teleoperated demonstrations train like scripted ones: PickCube episodes recorded by
examples/teleop_operator.py (the gizmo's server-side handle and the gripper button drive
Teleop.policy, the viewer's DemoRecorder writes them) replay exactly, `robosim demos
convert/export` take them, and examples/bc.py
takes the file as it takes `robosim demos generate`'s, with a checkpoint that `robosim
eval --policy` runs."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from robosim.cli import main as robosim_main
from robosim.cli.eval import demo_seeds
from robosim.demos import generate_demos
from robosim.record.replay import replay
from robosim.record.trajectory import TrajectoryFile
from robosim.view.teleop import CLOSED, OPEN

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import bc  # noqa: E402
import teleop_operator  # noqa: E402

EPISODES = 2
TINY = ["--steps", "4", "--eval-every", "4", "--eval-episodes", "2", "--eval-envs", "2", "--seed", "0"]


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory):
    """(teleoperated, scripted) PickCube demos files of the same seeds 0 and 1."""
    root = tmp_path_factory.mktemp("teleop_bc")
    teleop, scripted = str(root / "teleop.h5"), str(root / "scripted.h5")
    report = teleop_operator.record_teleop_demos(teleop, EPISODES, seed=0, progress=False)
    assert (report.episodes, report.successes) == (EPISODES, EPISODES)
    generate_demos("PickCube-v1", EPISODES, scripted, control_mode="pd_ee_delta_pose", num_envs=1, seed=0)
    return teleop, scripted


def test_the_teleoperated_episodes_came_through_the_gizmo_and_replay_exactly(demo_files, tmp_path):
    teleop, _ = demo_files
    recorded = TrajectoryFile(teleop)
    assert len(recorded) == EPISODES and recorded.attrs["control_mode"] == "pd_ee_delta_pose"
    for k in range(EPISODES):
        episode = recorded.episode(k)
        assert episode.seed == k and episode.success[-1] and not episode.success[:-1].any()
        # each episode starts with the gizmo snapped onto the TCP: a hold action, gripper open
        assert (episode.actions[0, :-1] == 0).all() and episode.actions[0, -1] == OPEN
        grip = episode.actions[:, -1]
        closed_from = int(np.argmax(grip == CLOSED))   # one click of the gripper button
        assert closed_from > 1 and (grip[:closed_from] == OPEN).all() and (grip[closed_from:] == CLOSED).all()
    report = replay(teleop)
    assert report.exact, report.summary()
    joint, lerobot = str(tmp_path / "joint.h5"), str(tmp_path / "lerobot")
    assert robosim_main(["demos", "convert", teleop, "--to-control-mode", "pd_joint_pos", "--out", joint]) == 0
    assert len(TrajectoryFile(joint)) == EPISODES   # every converted episode succeeded (exit status 0 says so too)
    assert robosim_main(["demos", "export", teleop, "--format", "lerobot", "--out", lerobot, "--no-video"]) == 0
    assert os.path.isfile(os.path.join(lerobot, "meta", "info.json"))


def test_bc_trains_on_teleoperated_demos_as_on_scripted_ones(demo_files, tmp_path, monkeypatch):
    teleop, scripted = demo_files
    loaded = [bc.load_demos(path, progress=False) for path in demo_files]
    for demos in loaded:
        assert demos.diverged == 0 and demos.seeds == [0, 1] and demos.action_noise == 0.0
        assert demos.make_kwargs["control_mode"] == "pd_ee_delta_pose"
    for k in range(EPISODES):   # same seeds: the same first observation, then each operator's own path
        np.testing.assert_array_equal(loaded[0].obs[k][0], loaded[1].obs[k][0])
        assert loaded[0].obs[k].shape[1] == loaded[1].obs[k].shape[1]

    summaries = {}
    for name, path in (("teleop", teleop), ("scripted", scripted)):
        out = str(tmp_path / name)
        summaries[name] = bc.main(["--demos", path, "--out", out, *TINY])
        monkeypatch.setenv("ROBOSIM_POLICY", os.path.join(out, "policy.pt"))
        assert demo_seeds("robosim.rollout.checkpoint:from_env_var") == [0, 1]   # robosim eval holds them out
    for name, summary in summaries.items():
        assert summary["grad_steps"] == 4 and summary["demos"] == EPISODES and summary["demos_diverged"] == 0, name

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("ROBOSIM_POLICY", str(tmp_path / "teleop" / "policy.pt"))
    trajectory = str(tmp_path / "eval.h5")
    assert robosim_main(["eval", "PickCube-v1", "--policy", "robosim.rollout.checkpoint:from_env_var",
                         "--episodes", "2", "--num-envs", "2", "--trajectory", trajectory]) == 0
    evaluated = TrajectoryFile(trajectory)   # the teleop-trained policy drove 2 episodes of held-out seeds
    assert len(evaluated) == 2 and not {evaluated.episode(k).seed for k in range(2)} & {0, 1}
