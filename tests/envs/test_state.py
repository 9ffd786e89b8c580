"""Batched get_state/set_state and panda-gym's save/restore/remove_state."""
from __future__ import annotations

import pytest
import torch

import robosim


@pytest.fixture(scope="module")
def env():
    env = robosim.make("PickCube-v1", num_envs=3)
    yield env
    env.close()


def _advance(env, steps=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        env.step(torch.rand(env.num_envs, 7, generator=generator) * 2 - 1)


def test_save_restore_round_trips_exactly(env):
    env.reset(seed=0)
    _advance(env)
    saved = env.get_state()
    state_id = env.save_state()
    _advance(env)
    assert not torch.equal(env.get_state(), saved)
    env.restore_state(state_id)
    assert torch.equal(env.get_state(), saved)
    env.remove_state(state_id)
    with pytest.raises(ValueError, match="state_id"):
        env.restore_state(state_id)


def test_state_includes_the_task_goal(env):
    env.reset(seed=0)
    state = env.get_state()
    env.reset(seed=1)
    env.set_state(state)
    assert torch.equal(env.task.goal_pos, state[:, -3:])


def test_set_state_for_a_subset_of_envs(env):
    env.reset(seed=0)
    start = env.get_state()
    _advance(env)
    moved = env.get_state()
    env.set_state(start[[1]], env_idx=torch.tensor([1]))
    now = env.get_state()
    assert torch.equal(now[1], start[1])
    assert torch.equal(now[0], moved[0]) and torch.equal(now[2], moved[2])


def test_restored_state_replays_the_same_transition(env):
    env.reset(seed=4)
    _advance(env, 2)
    state_id = env.save_state()
    action = torch.rand(3, 7, generator=torch.Generator().manual_seed(1)) * 2 - 1
    obs_a, *_ = env.step(action)
    env.restore_state(state_id)
    obs_b, *_ = env.step(action)
    torch.testing.assert_close(obs_a, obs_b, atol=1e-4, rtol=0)
