"""The policy of the restore and replay sweeps: the task's scripted solution, or for a
task without one (the hand tasks) seeded uniform actions in the action space (a sweep
needs actions, not success)."""
from __future__ import annotations

from collections.abc import Callable

import torch


def solution_or_random(env, seed: int = 0) -> Callable:
    """pol(obs=None) -> (N, action_dim) actions of `env`'s task solution, else seeded
    uniform actions in [low, high] of the env's single action space."""
    try:
        return env.task.solution_policy()
    except NotImplementedError:
        gen = torch.Generator().manual_seed(seed)
        low, high = (torch.as_tensor(b) for b in (env.single_flat_action_space.low, env.single_flat_action_space.high))
        return lambda obs=None: low + (high - low) * torch.rand(env.num_envs, len(low), generator=gen)
