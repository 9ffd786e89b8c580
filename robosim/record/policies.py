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
    space = getattr(env, "single_flat_action_space", env.single_action_space)   # a multi-robot env: flat view
    low = torch.as_tensor(space.low)
    high = torch.as_tensor(space.high)

    def act(obs):
        u = torch.rand((env.num_envs, len(low)), generator=gen)
        return low + u * (high - low)

    return act
