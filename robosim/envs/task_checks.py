"""Checks on what a task's hooks return, run on a new env's first reset and first step.

A task author's mistake (a reward of shape (N, 1), a missing "fail" key, a float
success flag, NaN in an observation) would otherwise surface far from its cause or not
at all. `TaskOutputCheck` looks once at evaluate(), the reward, the observations and the
goals, raises a `TaskOutputError` naming the hook, the key, the expected and the given
value, and then switches itself off, so the step path pays nothing afterwards.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch


class TaskOutputError(ValueError):
    """A task hook returned something of the wrong type, shape, dtype or value."""


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)} on {value.device}"
    return f"{type(value).__name__} {value!r}"[:120]


class TaskOutputCheck:
    """Validates a task's outputs until both a reset and a step have been checked."""

    def __init__(self, task_name: str, num_envs: int, device: torch.device):
        self.task_name = task_name
        self.num_envs = num_envs
        self.device = device
        self.pending = {"reset", "step"}

    @property
    def active(self) -> bool:
        return bool(self.pending)

    def _fail(self, hook: str, key: str, expected: str, value: Any) -> None:
        raise TaskOutputError(f"{self.task_name}.{hook} returned {key} as {_describe(value)}; "
                              f"expected {expected}")

    def _tensor(self, hook: str, key: str, value: Any, dtype_ok, dtype_name: str, shape: tuple) -> None:
        expected = f"a {dtype_name} tensor of shape {shape} on {self.device}"
        if not isinstance(value, torch.Tensor) or not dtype_ok(value.dtype) or tuple(value.shape) != shape:
            self._fail(hook, key, expected, value)
        if value.device.type != self.device.type:
            self._fail(hook, key, expected, value)
        if value.is_floating_point() and not torch.isfinite(value).all():
            self._fail(hook, key, "finite values (no NaN or inf)", value)

    def check_info(self, info: dict, hook: str = "evaluate()") -> None:
        if not isinstance(info, dict):
            self._fail(hook, "its result", "a dict with bool (N,) 'success' and 'fail'", info)
        for key in ("success", "fail"):
            if key not in info:
                raise TaskOutputError(f"{self.task_name}.{hook} must return the key {key!r} (a bool tensor of "
                                      f"shape ({self.num_envs},)); it returned the keys {sorted(info)}")
            self._tensor(hook, f"[{key!r}]", info[key], lambda d: d == torch.bool, "bool", (self.num_envs,))

    def check_reward(self, reward: Any, reward_mode: str) -> None:
        hook = "sparse_reward(info)" if reward_mode == "sparse" else "dense_reward(info)"
        self._tensor(hook, "the reward", reward, lambda d: d.is_floating_point, "float", (self.num_envs,))

    def check_obs(self, obs: Any, space: gym.Space, hook: str = "observations") -> None:
        if isinstance(space, gym.spaces.Dict):
            if not isinstance(obs, dict) or set(obs) != set(space.spaces):
                self._fail(hook, "the observation", f"a dict with keys {sorted(space.spaces)}", obs)
            for key, sub in space.spaces.items():
                self.check_obs(obs[key], sub, f"{hook}[{key!r}]")
            return
        if isinstance(space, gym.spaces.Box):
            shape = (self.num_envs, *space.shape)
            ok = (lambda d: d.is_floating_point) if space.dtype.kind == "f" else (lambda d: True)
            self._tensor("task_observations(info) / obs", hook, obs, ok, str(space.dtype), shape)

    def check_goals(self, task: Any) -> None:
        achieved, desired = task.achieved_goal(), task.desired_goal()
        for key, goal in (("achieved_goal()", achieved), ("desired_goal()", desired)):
            if not isinstance(goal, torch.Tensor) or goal.ndim != 2 or goal.shape[0] != self.num_envs:
                self._fail(key, "the goal", f"a float tensor of shape ({self.num_envs}, goal_dim)", goal)
        if achieved.shape != desired.shape:
            raise TaskOutputError(f"{self.task_name}: achieved_goal() has shape {tuple(achieved.shape)} but "
                                  f"desired_goal() has {tuple(desired.shape)}; they must match")

    def after(self, event: str, info: dict, obs: Any, space: gym.Space, task: Any,
              reward: Any = None, reward_mode: str = "none") -> None:
        """Check one reset ("reset") or step ("step") once; no-op afterwards."""
        if event not in self.pending:
            return
        self.check_info(info)
        if reward is not None and reward_mode != "none":
            self.check_reward(reward, reward_mode)
        self.check_obs(obs, space)
        if getattr(task, "goal_conditioned", False):
            self.check_goals(task)
        self.pending.discard(event)
