"""A plain (unbatched, numpy) gymnasium.Env view of a 1-env robosim env.

Tools written for ordinary gymnasium envs (gymnasium's env checker, scalar wrappers,
single-env training code) expect numpy observations without a batch dim, float rewards
and bool flags; BaseEnv returns batched torch tensors. `SingleEnv` converts both ways."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch


def _to_numpy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    if isinstance(value, torch.Tensor):
        return value[0].cpu().numpy()
    return value


class SingleEnv(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Wrap a BaseEnv with num_envs == 1: obs/info entries lose their batch dim and
    become numpy, reward becomes float, terminated/truncated become bool."""

    def __init__(self, env: gym.Env):
        if getattr(env.unwrapped, "num_envs", None) != 1:
            raise ValueError(f"env must have num_envs == 1, got {getattr(env.unwrapped, 'num_envs', None)}")
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        self.observation_space = env.unwrapped.single_observation_space
        self.action_space = env.unwrapped.single_action_space

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return _to_numpy(obs), _to_numpy(info)

    def step(self, action: Any):
        action = torch.as_tensor(np.asarray(action, dtype=np.float32)).reshape(1, -1)
        obs, reward, terminated, truncated, info = self.env.step(action)
        return _to_numpy(obs), float(reward[0]), bool(terminated[0]), bool(truncated[0]), _to_numpy(info)

    def render(self):
        frames = self.env.render()
        return None if frames is None else frames[0].cpu().numpy()
