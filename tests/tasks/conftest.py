"""Shared helpers for the task tests."""
from __future__ import annotations

import pytest
import torch


def _scripted_rollout(env, seed: int):
    """Run the scripted solution for one episode per env; (success (N,), rewards (T, N),
    successes (T, N), live (T, N)) with each env counted until its first termination or
    truncation."""
    env.reset(seed=seed)
    policy = env.task.solution_policy()
    n = env.num_envs
    finished = torch.zeros(n, dtype=torch.bool)
    succeeded = torch.zeros(n, dtype=torch.bool)
    rewards, successes, live = [], [], []
    for _ in range(env.max_episode_steps):
        _, reward, terminated, truncated, info = env.step(policy())
        rewards.append(reward)
        successes.append(info["success"])
        live.append(~finished)
        succeeded |= info["success"] & ~finished
        finished |= terminated | truncated
        if finished.all():
            break
    return succeeded, torch.stack(rewards), torch.stack(successes), torch.stack(live)


@pytest.fixture
def scripted_rollout():
    """rollout(env, seed) -> (succeeded, rewards, successes, live) of the task's scripted solution."""
    return _scripted_rollout


def _assert_state_restored(env, saved, task_state, obs_then) -> None:
    """After env.set_state(saved): physics and task state equal the saved ones and the
    task observations match those taken when saving (atol 1e-5)."""
    env.set_state(saved)
    assert torch.equal(env.get_state(), saved)
    torch.testing.assert_close(env.task.get_task_state(), task_state)
    obs_now = env.task.task_observations(env.task.evaluate())
    for key, value in obs_then.items():
        torch.testing.assert_close(obs_now[key], value, atol=1e-5, rtol=0, msg=key)


@pytest.fixture
def assert_state_restored():
    """assert_state_restored(env, saved, task_state, obs_then): set_state round-trip check."""
    return _assert_state_restored
