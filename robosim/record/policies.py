"""Policy factories for `robosim eval --policy module:callable`.

A factory takes the env and returns `policy(obs) -> action` (N, A)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def scripted(env) -> Callable[[Any], torch.Tensor]:
    """The task's scripted solution (it reads the simulator's state, not the obs)."""
    solution = env.task.solution_policy()
    return lambda obs: solution()


def random(env, seed: int = 0) -> Callable[[Any], torch.Tensor]:
    """Uniform random actions within the action space, from a seeded generator."""
    gen = torch.Generator().manual_seed(seed)
    low = torch.as_tensor(env.single_action_space.low)
    high = torch.as_tensor(env.single_action_space.high)

    def act(obs):
        u = torch.rand((env.num_envs, len(low)), generator=gen)
        return low + u * (high - low)

    return act
