"""The public contract of docs/design.md: shapes, dtypes, devices, spaces, step pipeline."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import robosim

N = 4


@pytest.fixture(scope="module")
def env():
    env = robosim.make("PickCube-v1", num_envs=N, obs_mode="state", control_mode="pd_ee_delta_pose",
                       reward_mode="dense", sim_backend="physx_cpu", max_episode_steps=5)
    yield env
    env.close()


def test_list_tasks_has_the_four_builtins():
    assert {"Reach-v1", "PushCube-v1", "PickCube-v1", "StackCube-v1"} <= set(robosim.list_tasks())


def test_reset_and_step_shapes_dtypes_devices(env):
    obs, info = env.reset(seed=0)
    assert env.num_envs == N and env.device == torch.device("cpu")
    assert obs.shape == (N, *env.single_observation_space.shape) and obs.dtype == torch.float32
    assert env.observation_space.shape == (N, *env.single_observation_space.shape)
    assert env.action_space.shape == (N, *env.single_action_space.shape) == (N, 7)
    for key in ("success", "fail", "elapsed_steps"):
        assert info[key].shape == (N,)
    action = torch.zeros(N, 7)
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs.shape == (N, env.single_observation_space.shape[0]) and obs.device == env.device
    assert reward.shape == (N,) and reward.dtype == torch.float32
    assert terminated.dtype == torch.bool and truncated.dtype == torch.bool and terminated.shape == (N,)
    assert torch.equal(info["elapsed_steps"], torch.ones(N, dtype=torch.int32))
    assert torch.equal(terminated, info["success"] | info["fail"])


def test_obs_is_inside_its_space(env):
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs.numpy())


def test_truncation_at_max_episode_steps(env):
    env.reset(seed=0)
    for step in range(1, 6):
        _, _, _, truncated, info = env.step(None)
        assert bool(truncated.all()) == (step >= 5), step
    assert torch.equal(info["elapsed_steps"], torch.full((N,), 5, dtype=torch.int32))


def test_step_none_advances_time_and_keeps_targets(env):
    env.reset(seed=3)
    targets = env.robot.view.drive_targets()
    env.step(None)
    assert torch.equal(env.robot.view.drive_targets(), targets)
    assert int(env.elapsed_steps[0]) == 1


def test_actions_are_clipped_to_the_action_space(env):
    env.reset(seed=5)
    state = env.get_state()
    env.step(torch.full((N, 7), 50.0))
    clipped_targets = env.robot.view.drive_targets()
    env.set_state(state)
    env.step(torch.ones(N, 7))
    assert torch.equal(env.robot.view.drive_targets(), clipped_targets)


def test_numpy_actions_are_accepted(env):
    env.reset(seed=0)
    obs, *_ = env.step(np.zeros((N, 7), dtype=np.float32))
    assert isinstance(obs, torch.Tensor)


@pytest.mark.parametrize("obs_mode", ["state_dict", "none"])
def test_other_obs_modes(obs_mode):
    env = robosim.make("PickCube-v1", num_envs=2, obs_mode=obs_mode)
    try:
        obs, _ = env.reset(seed=0)
        if obs_mode == "none":
            assert obs.shape == (2, 0)
        else:
            assert obs["agent"]["qpos"].shape == (2, 9) and obs["extra"]["tcp_pose"].shape == (2, 7)
            assert env.single_observation_space["agent"]["qpos"].shape == (9,)
    finally:
        env.close()


@pytest.mark.parametrize("reward_mode", ["normalized_dense", "sparse", "none"])
def test_reward_modes(reward_mode):
    env = robosim.make("PickCube-v1", num_envs=2, reward_mode=reward_mode)
    try:
        env.reset(seed=0)
        _, reward, *_ = env.step(torch.zeros(2, 7))
        if reward_mode == "normalized_dense":
            assert ((reward >= -1) & (reward <= 0)).all() and (reward < 0).any()  # <= 0, 0 only on success
        else:
            # nobody succeeds in one step: sparse pays -1 per non-success step, none pays 0
            assert torch.equal(reward, torch.full((2,), -1.0 if reward_mode == "sparse" else 0.0))
    finally:
        env.close()


def test_gym_make_returns_the_batched_env_unwrapped():
    env = gym.make("robosim/PickCube-v1", num_envs=2)
    try:
        assert env.num_envs == 2  # no OrderEnforcing/TimeLimit wrapper hiding attributes
        obs, _ = env.reset(seed=0)
        _, reward, terminated, truncated, _ = env.step(torch.zeros(2, 7))
        assert obs.shape[0] == reward.shape[0] == terminated.shape[0] == truncated.shape[0] == 2
    finally:
        env.close()


def test_close_is_idempotent():
    env = robosim.make("Reach-v1", num_envs=1)
    env.close()
    env.close()


def test_a_closed_env_says_so():
    env = robosim.make("Reach-v1", num_envs=1)
    env.close()
    with pytest.raises(RuntimeError, match="env was closed"):
        env.reset(seed=0)
    with pytest.raises(RuntimeError, match="env was closed"):
        env.step(None)
