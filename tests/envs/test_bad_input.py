"""Every bad input is a ValueError/TypeError naming the argument; the env keeps working."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import robosim

N = 3


@pytest.fixture(scope="module")
def env():
    env = robosim.make("PickCube-v1", num_envs=N)
    env.reset(seed=0)
    yield env
    env.close()


def _still_works(env):
    obs, reward, *_ = env.step(torch.zeros(N, 7))
    assert obs.shape[0] == N and torch.isfinite(obs).all() and torch.isfinite(reward).all()
    env.reset(options={"env_idx": torch.tensor([0])})


BAD_ACTIONS = [
    (torch.zeros(N, 6), ValueError, r"action must have shape \(3, 7\), got \(3, 6\)"),
    (torch.zeros(N + 1, 7), ValueError, r"action must have shape \(3, 7\), got \(4, 7\)"),
    (torch.zeros(7), ValueError, r"action must have shape \(3, 7\), got \(7,\)"),
    (torch.zeros(N, 7, dtype=torch.int64), ValueError, r"action must have a floating dtype"),
    (torch.full((N, 7), float("nan")), ValueError, r"action must be finite"),
    (torch.full((N, 7), float("inf")), ValueError, r"action must be finite"),
    ([[0.0] * 7] * N, TypeError, r"action must be a torch.Tensor or numpy array"),
]


@pytest.mark.parametrize("action,error,message", BAD_ACTIONS)
def test_bad_actions(env, action, error, message):
    state = env.get_state()
    with pytest.raises(error, match=message):
        env.step(action)
    assert torch.equal(env.get_state(), state)  # rejected before anything moved
    _still_works(env)


@pytest.mark.parametrize("env_idx,message", [
    (torch.tensor([0, 3]), r"options\['env_idx'\] entries must be in \[0, 2\], got \[0, 3\]"),
    (torch.tensor([-1]), r"entries must be in \[0, 2\]"),
    (torch.tensor([1, 1]), r"options\['env_idx'\] must not repeat an env, got \[1, 1\]"),
    (torch.tensor([], dtype=torch.int64), r"must name at least one env"),
    (torch.tensor([0.0]), r"must have an integer dtype"),
    (torch.tensor([[0]]), r"must be 1-D"),
])
def test_bad_env_idx(env, env_idx, message):
    with pytest.raises(ValueError, match=message):
        env.reset(options={"env_idx": env_idx})
    _still_works(env)


@pytest.mark.parametrize("seed,error,message", [
    (-1, ValueError, r"seed must be >= 0"),
    ([1, 2], ValueError, r"seed list must have one seed per env being reset \(3\), got 2"),
    ("7", TypeError, r"seed must be an int, a list of ints or None"),
])
def test_bad_seeds(env, seed, error, message):
    with pytest.raises(error, match=message):
        env.reset(seed=seed)
    _still_works(env)


def test_unknown_option_and_partial_reconfigure(env):
    with pytest.raises(ValueError, match=r"options keys must be among"):
        env.reset(options={"env_ids": [0]})
    with pytest.raises(ValueError, match=r"reconfigure.*env_idx"):
        env.reset(options={"env_idx": [0], "reconfigure": True})
    _still_works(env)


@pytest.mark.parametrize("state_shape", [(N, 5), (N - 1, None), (N,)])
def test_bad_state_shape(env, state_shape):
    dim = env.state_dim
    shape = tuple(dim if s is None else s for s in state_shape)
    with pytest.raises(ValueError, match=rf"state must have shape \(3, {dim}\)"):
        env.set_state(torch.zeros(shape))
    _still_works(env)


def test_state_of_another_task_is_rejected(env):
    other = robosim.make("StackCube-v1", num_envs=N)
    try:
        other.reset(seed=0)
        with pytest.raises(ValueError, match="state must have shape"):
            env.set_state(other.get_state())
    finally:
        other.close()
    _still_works(env)


def test_nan_state_is_rejected(env):
    state = env.get_state()
    state[0, 0] = float("nan")
    with pytest.raises(ValueError, match="state must be finite"):
        env.set_state(state)
    _still_works(env)


@pytest.mark.parametrize("kwargs,message", [
    ({"obs_mode": "pixels"}, r"obs_mode must be one of \['state', 'state_dict', 'none'.*got 'pixels'"),
    ({"reward_mode": "shaped"}, r"reward_mode must be one of .*got 'shaped'"),
    ({"control_mode": "pd_joint_vel"}, r"control_mode must be one of .*got 'pd_joint_vel'"),
    ({"sim_backend": "mujoco"}, r"sim_backend must be one of .*got 'mujoco'"),
    ({"render_mode": "human"}, r"render_mode must be one of .*got 'human'"),
    ({"num_envs": 0}, r"num_envs must be a positive int, got 0"),
    ({"max_episode_steps": 0}, r"max_episode_steps must be a positive int or None, got 0"),
])
def test_bad_constructor_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        robosim.make("PickCube-v1", **kwargs)


def test_unknown_task():
    with pytest.raises(ValueError, match=r"task_id must be one of \[.*'PickCube-v1'.*\], got 'PickBanana-v1'"):
        robosim.make("PickBanana-v1")


def test_numpy_env_idx_and_list_env_idx_are_accepted(env):
    env.reset(options={"env_idx": np.array([2])})
    env.reset(options={"env_idx": [0, 1]})
    _still_works(env)
