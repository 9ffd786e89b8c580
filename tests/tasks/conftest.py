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
