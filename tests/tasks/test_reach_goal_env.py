"""Reach-v1 is goal-conditioned the panda-gym way. (gymnasium's env checker on it runs
in tests/vector/test_consumers.py, through robosim.vector.UnbatchedEnv.)"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import robosim


@pytest.fixture(scope="module")
def env():
    env = robosim.make("Reach-v1", num_envs=2, reward_mode="sparse")
    yield env
    env.close()


def test_dict_observation_layout(env):
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"observation", "achieved_goal", "desired_goal"}
    assert obs["achieved_goal"].shape == obs["desired_goal"].shape == (2, 3)
    tcp = env.robot.tcp_pose(env.robot.view.qpos())[:, :3]
    assert torch.equal(obs["achieved_goal"], tcp)


def test_compute_reward_relabels_any_batch_shape(env):
    obs, _ = env.reset(seed=0)
    _, reward, _, _, info = env.step(torch.zeros(2, 4))
    obs = env._obs.build(info)
    recomputed = env.compute_reward(obs["achieved_goal"], obs["desired_goal"], info)
    assert torch.equal(recomputed, reward)
    # hindsight: the achieved goal as desired goal is always a success
    achieved = obs["achieved_goal"].numpy()
    relabeled = env.compute_reward(achieved[None].repeat(5, 0), achieved[None].repeat(5, 0), {})
    assert isinstance(relabeled, np.ndarray) and relabeled.shape == (5, 2) and (relabeled == 0).all()
    far = env.compute_reward(np.zeros((3, 3)), np.ones((3, 3)), {})
    assert (far == -1).all()  # sparse: -1 per step, 0 on success
