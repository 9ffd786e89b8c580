"""Constructors: `make_vec` for robosim tasks, `make_list_vec` for lists of gymnasium envs."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import torch
from gymnasium.vector import AutoresetMode

from robosim.envs import make
from robosim.vector.autoreset import BatchedVectorEnv, to_autoreset_mode
from robosim.vector.list_env import ListBatchedEnv, ListVecEnv
from robosim.vector.unbatched import UnbatchedEnv

# gymnasium's vectorizers: they build their envs in these files (AsyncVectorEnv in its workers too)
_GYM_VECTORIZERS = tuple(os.path.join("gymnasium", "vector", f"{name}_vector_env.py") for name in ("sync", "async"))


def make_vec(task_id: str, num_envs: int = 1, autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
             ignore_terminations: bool = False, **env_kwargs: Any) -> BatchedVectorEnv:
    """A gymnasium VectorEnv of `num_envs` envs of `task_id`, stepped as one batch.
    It is also gymnasium's vector entry point: gym.make_vec("robosim/<task>", num_envs=N)
    returns it. ignore_terminations: episodes end only on truncation (ManiSkill3's option).

    env_kwargs go to `robosim.make` (obs_mode, control_mode, reward_mode,
    max_episode_steps, ...). Outputs are torch tensors with leading dim num_envs on the
    env's device; wrap in `robosim.vector.TorchToNumpy` for numpy consumers."""
    mode = to_autoreset_mode(autoreset_mode)  # fail before the (slow) scene build
    if not isinstance(ignore_terminations, bool):
        raise TypeError(f"ignore_terminations must be a bool, got {ignore_terminations!r}")
    return BatchedVectorEnv(make(task_id, num_envs=num_envs, **env_kwargs), mode, ignore_terminations)


def make_list_vec(envs: ListVecEnv | Sequence[gym.Env] | Sequence[Callable[[], gym.Env]],
                  autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                  device: str | torch.device = "cpu") -> BatchedVectorEnv:
    """A gymnasium VectorEnv (torch outputs) over a list of ordinary gymnasium envs or
    env factories; env i is seeded seed + i, as in gymnasium's SyncVectorEnv."""
    mode = to_autoreset_mode(autoreset_mode)
    return BatchedVectorEnv(ListBatchedEnv(envs, device=device), mode)


def _built_by_gymnasium_vectorizer() -> bool:
    """True when called (through env factories) by gymnasium's SyncVectorEnv/AsyncVectorEnv."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(_GYM_VECTORIZERS):
            return True
        frame = frame.f_back
    return False


def make_gym_env(task_id: str, **env_kwargs: Any) -> Any:
    """gymnasium's entry point for "robosim/<task>": gym.make gives robosim's batched env
    (robosim.make). Built by gymnasium's own vectorizers (gym.make_vec(...,
    vectorization_mode="sync" | "async"), or SyncVectorEnv/AsyncVectorEnv over
    gym.make), each env is an ordinary single env instead, UnbatchedEnv over a 1-env
    batch, so their observations come out (num_envs, ...) as gymnasium users expect."""
    if _built_by_gymnasium_vectorizer():
        if env_kwargs.get("num_envs", 1) != 1:
            raise ValueError(f"num_envs must be 1 for an env built by gymnasium's SyncVectorEnv/AsyncVectorEnv "
                             f"(each is one env; for a batch use gym.make_vec's default vectorization), "
                             f"got num_envs={env_kwargs['num_envs']!r}")
        return UnbatchedEnv(make(task_id, **env_kwargs))
    return make(task_id, **env_kwargs)
