"""The built-in learners on a multi-robot task (TwoArmReach-v1: a Dict action space of
two 4-dim slots): examples/ppo.py, sac.py, bc.py and rlpd.py learn in its flat view and
save policies whose (N, 8) actions the env splits between the arms, moving both.
Mechanics on tens to hundreds of env steps, not learning."""
from __future__ import annotations

import os
import sys

import pytest
import torch

import robosim
from robosim.demos import generate_demos
from robosim.rollout.checkpoint import load_policy

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import bc  # noqa: E402
import ppo  # noqa: E402
import rlpd  # noqa: E402
import sac  # noqa: E402

TASK = "TwoArmReach-v1"


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("two_arm") / "reach.h5")
    generate_demos(TASK, 2, path, num_envs=2, seed=0)
    return path


@pytest.fixture(scope="module")
def env():
    env = robosim.make(TASK, num_envs=2)
    yield env
    env.close()


def _drives_both_arms(env, checkpoint) -> None:
    obs, _ = env.reset(seed=0)
    policy = load_policy(checkpoint, env)
    before = {slot: robot.qpos.clone() for slot, robot in env.robots.items()}
    for _ in range(3):
        action = policy(obs)
        assert action.shape == (2, 8) and action.dtype == torch.float32
        obs, *_ = env.step(action)
    moved = [slot for slot, robot in env.robots.items() if not torch.equal(robot.qpos, before[slot])]
    assert moved == list(env.robots), moved


def test_ppo_learns_in_the_flat_action_view(env, tmp_path):
    out = tmp_path / "ppo"
    summary = ppo.main(["--task", TASK, "--num-envs", "4", "--num-steps", "8", "--total-steps", "256",
                        "--eval-every", "256", "--eval-episodes", "2", "--seed", "0", "--out", str(out)])
    assert summary["env_steps"] == 256
    _drives_both_arms(env, out / "policy.pt")


def test_sac_learns_in_the_flat_action_view(env, tmp_path):
    out = tmp_path / "sac"
    summary = sac.main(["--task", TASK, "--num-envs", "2", "--total-steps", "64", "--learning-starts", "16",
                        "--eval-every", "64", "--eval-episodes", "2", "--out", str(out)])
    assert summary["env_steps"] == 64
    _drives_both_arms(env, out / "policy.pt")


def test_bc_learns_from_two_arm_demos(demos, env, tmp_path):
    out = tmp_path / "bc"
    summary = bc.main(["--demos", demos, "--steps", "4", "--eval-every", "4", "--eval-episodes", "2",
                       "--eval-envs", "2", "--out", str(out)])
    assert summary["grad_steps"] == 4 and summary["demos"] == 2
    _drives_both_arms(env, out / "policy.pt")


def test_rlpd_learns_from_two_arm_demos(demos, env, tmp_path):
    out = tmp_path / "rlpd"
    rlpd.main(["--demos", demos, "--num-envs", "2", "--total-steps", "32", "--learning-starts", "8",
               "--eval-every", "32", "--eval-episodes", "2", "--eval-envs", "2", "--out", str(out)])
    _drives_both_arms(env, out / "policy.pt")
