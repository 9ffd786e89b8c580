"""Observation assembly for the obs modes `state`, `state_dict` and `none`.

state_dict: {"agent": {"qpos": (N, 9), "qvel": (N, 9)},
             "extra": {"tcp_pose": (N, 7), <task entries (N, k)>}}
            A multi-robot task (robosim.envs.robots) names each robot's entries by slot:
            {"agent": {slot: {"qpos", "qvel", "tcp_pose"}, ...}, "extra": {<task entries>}}.
state:      the state_dict leaves concatenated in that order, float32 (N, D).
            Goal-conditioned tasks return {"observation": (N, D), "achieved_goal":
            (N, G), "desired_goal": (N, G)} instead (panda-gym's GoalEnv layout).
none:       float32 (N, 0).
Camera modes (rgb, depth, rgbd, segmentation) add to the state_dict tree
            "sensor_param": {camera: {intrinsic_cv, extrinsic_cv, cam2env_gl}} and
            "sensor_data": {camera: {rgb uint8 (N, H, W, 3) | depth float32 (N, H, W, 1) m
            | segmentation int16 (N, H, W, 1)}}; rgbd = rgb + depth.
pointcloud: the state_dict tree plus "pointcloud": {xyzw float32 (N, P, 4), rgb uint8
            (N, P, 3), segmentation int16 (N, P, 1)}, xyz in the env frame.
            Dtypes, units and frames of camera data: robosim/sensors/sensor_cameras.py.
Units m, rad, m/s, rad/s; poses [xyz, wxyz] in the env frame.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch

from robosim.core.tree import flatten_obs, tree_map
from robosim.envs.robots import SINGLE_SLOT

if TYPE_CHECKING:
    from robosim.envs.parts import EnvParts
    from robosim.envs.task import Task

IMAGE_OBS_KINDS = {"rgb": ("rgb",), "depth": ("depth",), "rgbd": ("rgb", "depth"),
                   "segmentation": ("segmentation",)}
CAMERA_OBS_MODES = (*IMAGE_OBS_KINDS, "pointcloud")
OBS_MODES = ("state", "state_dict", "none", *CAMERA_OBS_MODES)


def _space_of(value: Any) -> gym.spaces.Space:
    """The single-env space of one env's obs tree; Dict spaces keep the obs's key order
    (sort_keys=False: gymnasium would sort a plain dict's keys), so iterating a space
    walks its observations in the order robosim.core.tree.flatten_obs concatenates."""
    if isinstance(value, dict):
        return gym.spaces.Dict({k: _space_of(v) for k, v in value.items()}, sort_keys=False)
    shape = tuple(value.shape[1:])
    if value.dtype == torch.uint8:
        return gym.spaces.Box(0, 255, shape, dtype=np.uint8)
    if value.dtype == torch.int16:
        return gym.spaces.Box(0, np.iinfo(np.int16).max, shape, dtype=np.int16)
    return gym.spaces.Box(-np.inf, np.inf, shape, dtype=np.float32)


class ObservationBuilder:
    """Builds the obs of one built scene (`parts`: robot, cameras, num_envs, device) and
    `task` (task_observations, goals) for `obs_mode` (one of OBS_MODES)."""

    def __init__(self, parts: EnvParts, task: Task, obs_mode: str):
        self.parts = parts
        self.task = task
        self.obs_mode = obs_mode
        self._multi = list(parts.robots) != [SINGLE_SLOT]
        self._robot = None if self._multi else parts.robots[SINGLE_SLOT]

    def state_dict(self, info: dict[str, Any], copies: bool = True) -> dict[str, Any]:
        """The obs tree; `copies=False` (a flattened obs: its concatenation copies) puts
        the scene's kept joint reads in it instead of copies of them."""
        if self._multi:
            agent = {slot: {"qpos": r.view.qpos(copy=copies), "qvel": r.view.qvel(copy=copies),
                            "tcp_pose": r.tcp_pose(copy=copies)} for slot, r in self.parts.robots.items()}
            return {"agent": agent, "extra": dict(self.task.task_observations(info))}
        robot = self._robot
        qpos, qvel = robot.view.qpos(copy=copies), robot.view.qvel(copy=copies)
        extra = {"tcp_pose": robot.tcp_pose(copy=copies)}   # FK of the current joint positions, kept per step
        extra.update(self.task.task_observations(info))
        return {"agent": {"qpos": qpos, "qvel": qvel}, "extra": extra}

    def build(self, info: dict[str, Any]) -> Any:
        mode = self.obs_mode
        if mode == "none":
            return torch.zeros(self.parts.num_envs, 0, device=self.parts.device)
        tree = self.state_dict(info, copies=mode != "state")
        if mode == "state_dict":
            return tree
        if mode in CAMERA_OBS_MODES:
            sensors = self.parts.cameras.sensors
            if mode == "pointcloud":
                tree["pointcloud"] = sensors.pointcloud()
            else:
                tree["sensor_param"] = sensors.params()
                tree["sensor_data"] = sensors.capture(IMAGE_OBS_KINDS[mode])
            return tree
        task = self.task
        if task.goal_conditioned:
            return {
                "observation": flatten_obs(tree),
                "achieved_goal": task.achieved_goal(),
                "desired_goal": task.desired_goal(),
            }
        return flatten_obs(tree)

    def single_space(self) -> gym.spaces.Space:
        """Space of one env's obs, from the shapes of a freshly built batch (calls
        task.evaluate() once, then builds an obs from its info)."""
        return _space_of(tree_map(lambda x: x[:1], self.build(self.task.evaluate())))
