"""Each built-in task is solvable: its scripted policy succeeds on >= 90% of 64 seeded
episodes (64 envs, one episode each, seeds 0..63)."""
from __future__ import annotations

import pytest
import torch

import robosim

EPISODES = 64


@pytest.mark.parametrize("task_id", ["Reach-v1", "PushCube-v1", "PickCube-v1", "StackCube-v1"])
def test_scripted_policy_success_rate(task_id):
    env = robosim.make(task_id, num_envs=EPISODES)
    try:
        env.reset(seed=0)
        policy = env.task.solution_policy()
        finished = torch.zeros(EPISODES, dtype=torch.bool)
        succeeded = torch.zeros(EPISODES, dtype=torch.bool)
        for _ in range(env.max_episode_steps):
            _, _, terminated, truncated, info = env.step(policy())
            succeeded |= info["success"] & ~finished
            finished |= terminated | truncated
            if finished.all():
                break
        assert finished.all()
        rate = succeeded.float().mean().item()
        assert rate >= 0.9, f"{task_id}: scripted success {rate:.0%} < 90%"
    finally:
        env.close()
