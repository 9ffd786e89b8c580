"""TorchToNumpy: robosim's torch vector envs for numpy consumers (gymnasium's vector
wrappers, Stable-Baselines3, plain numpy training loops)."""
from __future__ import annotations

import operator
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from robosim.core.tree import to_numpy_tree, tree_map
from robosim.envs.protocol import checked_device


def to_torch(value: Any, device: torch.device) -> Any:
    """Every numeric numpy array in a dict/tuple tree -> torch tensor on device."""
    def convert(x: Any) -> Any:
        return torch.as_tensor(x, device=device) if isinstance(x, np.ndarray) and x.dtype.kind in "biuf" else x

    return tree_map(convert, value)


def _unbatch_final_obs(final_obs: Any, mask: np.ndarray) -> np.ndarray:
    """Gymnasium's layout: an object array (N,) with env i's final obs where mask[i], else None."""
    out = np.full(mask.shape[0], None, dtype=object)
    for i in np.flatnonzero(mask):
        out[i] = tree_map(operator.itemgetter(i), final_obs)
    return out


class TorchToNumpy(gym.vector.VectorWrapper):
    """Numpy in, numpy out over a torch vector env (e.g. robosim.make_vec(...)).

    actions: numpy (N, ...) -> torch on the env's device. Outputs: obs (N, ...),
    reward (N,), terminated/truncated bool (N,) and info as numpy. In SAME_STEP mode
    info["final_obs"] becomes gymnasium's object array (N,) of per-env obs (None where
    `_final_obs` is False), so code written for gymnasium's SyncVectorEnv runs
    unchanged; everything else keeps its batched layout."""

    def __init__(self, env: gym.vector.VectorEnv):
        super().__init__(env)
        self.device = checked_device(env)

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        return to_numpy_tree(obs), self._info(info)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        obs, reward, terminated, truncated, info = self.env.step(to_torch(actions, self.device))
        return (to_numpy_tree(obs), to_numpy_tree(reward), to_numpy_tree(terminated), to_numpy_tree(truncated),
                self._info(info))

    def _info(self, info: dict) -> dict:
        info = dict(info)
        final_obs = info.pop("final_obs", None)
        info = to_numpy_tree(info)
        if final_obs is not None:
            info["final_obs"] = _unbatch_final_obs(to_numpy_tree(final_obs), info["_final_obs"])
        return info

    def render(self) -> tuple[np.ndarray, ...] | None:
        """One numpy frame per env, as a tuple (gymnasium's vector render layout)."""
        frames = self.env.render()
        if frames is None:
            return None
        return tuple(to_numpy_tree(frame) for frame in frames)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """One entry per env (see BatchedVectorEnv.call), tensors as numpy."""
        return to_numpy_tree(self.env.unwrapped.call(name, *args, **kwargs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """One entry per env (see BatchedVectorEnv.get_attr), tensors as numpy."""
        return to_numpy_tree(self.env.unwrapped.get_attr(name))

    def set_attr(self, name: str, values: Any) -> None:
        self.env.unwrapped.set_attr(name, values)

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """Reward of goal pairs (..., goal_dim) -> (...), numpy in, numpy out."""
        reward = self.env.unwrapped.compute_reward(to_torch(np.asarray(achieved_goal), self.device),
                                                   to_torch(np.asarray(desired_goal), self.device), info)
        return to_numpy_tree(reward)
