"""Observation assembly for the obs modes `state`, `state_dict` and `none`.

state_dict: {"agent": {"qpos": (N, 9), "qvel": (N, 9)},
             "extra": {"tcp_pose": (N, 7), <task entries (N, k)>}}
state:      the state_dict leaves concatenated in that order, float32 (N, D).
            Goal-conditioned tasks return {"observation": (N, D), "achieved_goal":
            (N, G), "desired_goal": (N, G)} instead (panda-gym's GoalEnv layout).
none:       float32 (N, 0).
Units m, rad, m/s, rad/s; poses [xyz, wxyz] in the env frame.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch

if TYPE_CHECKING:
    from robosim.envs.base_env import BaseEnv

OBS_MODES = ("state", "state_dict", "none")


def flatten_obs(tree: dict[str, Any]) -> torch.Tensor:
    """Concatenate the leaves of a nested dict of (N, k) tensors in insertion order."""
    leaves = []
    for value in tree.values():
        leaves.append(flatten_obs(value) if isinstance(value, dict) else value.reshape(value.shape[0], -1))
    return torch.cat(leaves, dim=1)


def _space_of(value: Any) -> gym.spaces.Space:
    if isinstance(value, dict):
        return gym.spaces.Dict({k: _space_of(v) for k, v in value.items()})
    return gym.spaces.Box(-np.inf, np.inf, tuple(value.shape[1:]), dtype=np.float32)


class ObservationBuilder:
    """Builds the obs of one env batch for its obs mode."""

    def __init__(self, env: "BaseEnv"):
        self.env = env

    def state_dict(self, info: dict[str, Any]) -> dict[str, Any]:
        robot = self.env.robot
        qpos, qvel = robot.view.qpos(), robot.view.qvel()
        extra = {"tcp_pose": robot.tcp_pose(qpos)}
        extra.update(self.env.task.task_observations(info))
        return {"agent": {"qpos": qpos, "qvel": qvel}, "extra": extra}

    def build(self, info: dict[str, Any]) -> Any:
        mode = self.env.obs_mode
        if mode == "none":
            return torch.zeros(self.env.num_envs, 0, device=self.env.device)
        tree = self.state_dict(info)
        if mode == "state_dict":
            return tree
        task = self.env.task
        if task.goal_conditioned:
            return {
                "observation": flatten_obs(tree),
                "achieved_goal": task.achieved_goal(),
                "desired_goal": task.desired_goal(),
            }
        return flatten_obs(tree)

    def single_space(self) -> gym.spaces.Space:
        """Space of one env's obs, from the shapes of a freshly built batch."""
        return _space_of(_first_row(self.build(self.env.task.evaluate())))


def _first_row(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: _first_row(v) for k, v in obs.items()}
    return obs[:1]
