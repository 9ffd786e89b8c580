"""PickObject-v1: pick up a procedurally generated object that differs per env and per episode.

Every env holds a pool of `pool_size` objects drawn at build time from its own random
stream: a box, an upright cylinder or a random convex hull, 3-6 cm across and 3-6 cm
tall, 0.02-0.2 kg, in a random colour. Each episode activates one of them (a pool swap,
no rebuild) at a random place and yaw. Success: the object's lowest point at least
`lift_height` (default 0.08 m) above the ground. pool_size is 1 to MAX_POOL_SIZE = 64:
every env builds each object as its own actor, so the build time grows with
num_envs * pool_size (100000 would build for minutes).

Dense reward (<= 0, exactly 0 on success, max_dense_reward 2): -tanh(5 * tcp-to-object
distance) + (clamp(lift / lift_height, 0, 1) - 1), so no state pays more than success.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import trimesh

from robosim.agents import Requirements
from robosim.core.rotations import yaw_quat
from robosim.envs import Task, register_task
from robosim.envs.solutions import PickAndPlacePolicy
from robosim.sim import Box, Cylinder, Mesh, RigidObject

SHAPES = ("box", "cylinder", "hull")
MAX_POOL_SIZE = 64   # the pool_size bound (module docstring)
UPRIGHT = (math.sqrt(0.5), 0.0, -math.sqrt(0.5), 0.0)   # turns a cylinder's x axis to +z


def make_object(kind: int, half: np.ndarray, mass: float, color: np.ndarray, points: np.ndarray) -> RigidObject:
    """One object: kind 0 box (half extents `half`), 1 upright cylinder (radius half[0],
    half height half[2]), 2 convex hull of `points` scaled by `half`; body origin at its
    centre."""
    rgb = tuple(float(c) for c in color)
    if kind == 0:
        shape = Box(tuple(float(h) for h in half), color=rgb)
    elif kind == 1:
        shape = Cylinder(float(half[0]), float(half[2]), pose=(0, 0, 0, *UPRIGHT), color=rgb)
    else:
        hull = trimesh.convex.convex_hull(points * half)
        shape = Mesh(hull, collision="convex_hull", color=rgb)
    return RigidObject([shape], mass=float(mass))


def rest_height(kind: int, half: np.ndarray, points: np.ndarray) -> float:
    """Height (m) of the body origin above the ground when the object rests upright."""
    return float(-(points[:, 2] * half[2]).min()) if kind == 2 else float(half[2])


@register_task("PickObject-v1")
class PickObjectTask(Task):
    instruction = "Pick up the object and lift it off the table."
    max_episode_steps = 60
    max_dense_reward = 2.0
    randomizes_build = True
    # objects up to 6 cm across
    requires = Requirements(min_arm_dof=5, gripper=True, parallel_gripper=True, min_gripper_opening=0.065,
                            workspace=((-0.1, -0.1, 0.015), (0.1, 0.1, 0.15)))
    scripted_success = {"panda": 1.0, "xarm7": 0.98}   # docs/imitation.md (yield table)
    parameters = {"pool_size": 4, "lift_height": 0.08}
    human_camera = {"target_position": (0.0, 0.0, 0.05), "distance": 0.9, "pitch": -35.0}

    @classmethod
    def check_parameters(cls, given):
        given = super().check_parameters(given)
        if not 1 <= given.get("pool_size", 4) <= MAX_POOL_SIZE:
            raise ValueError(f"task parameter pool_size must be in [1, {MAX_POOL_SIZE}] (MAX_POOL_SIZE: each object "
                             f"is built in every env), got {given['pool_size']!r}")
        if not 0 < given.get("lift_height", 0.08) < 0.5:
            raise ValueError(f"task parameter lift_height must be in (0, 0.5) m, got {given['lift_height']!r}")
        return given

    def build_scene(self, sim, rng):
        n, k = sim.num_envs, self.pool_size
        kinds = rng.integers(0, len(SHAPES), (k,)).cpu().numpy()
        half_xy = rng.uniform(0.015, 0.028, (k, 1)).cpu().numpy()
        half_z = rng.uniform(0.015, 0.03, (k, 1)).cpu().numpy()
        stretch = rng.uniform(0.8, 1.0, (k, 1)).cpu().numpy()
        halves = np.concatenate([half_xy, half_xy * stretch, half_z], axis=2)
        masses = rng.uniform(0.02, 0.2, (k,)).cpu().numpy()
        colors = rng.uniform(0.1, 1.0, (k, 3)).cpu().numpy()
        points = rng.uniform(-1.0, 1.0, (k, 24, 3)).cpu().numpy()
        points[..., :2] = np.clip(points[..., :2], -1.0, 1.0)
        points[:, :, :4, 2] = [-1.0, -1.0, 1.0, 1.0]        # a flat-ish top and bottom: stands up
        self.rest_z = torch.tensor([[rest_height(kinds[i, j], halves[i, j], points[i, j]) for j in range(k)]
                                    for i in range(n)], dtype=torch.float32, device=self.device)
        self.kinds = torch.as_tensor(kinds, device=self.device)
        self._start_z = torch.zeros(n, device=self.device)
        self.obj = sim.add_object_pool(
            "object", lambda i, j: make_object(kinds[i, j], halves[i, j], masses[i, j], colors[i, j], points[i, j]),
            size=k)

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        variant = rng.integers(0, self.pool_size)
        self.obj.activate(variant, env_idx)
        xy = rng.uniform(-0.1, 0.1, (2,))
        z = self.rest_z[env_idx, variant].unsqueeze(1)
        yaw = rng.uniform(0.0, 2 * math.pi)
        pose = torch.cat([xy, z, yaw_quat(yaw)], dim=1)
        self.obj.set_pose(pose, env_idx)
        self.obj.set_velocity(torch.zeros(len(env_idx), 6, device=self.device), env_idx)
        self._start_z[env_idx] = z[:, 0]

    def _lift(self) -> torch.Tensor:
        return self.obj.pose()[:, 2].to(self.device) - self._start_z

    def evaluate(self):
        lift = self._lift()
        return {"success": lift >= self.lift_height,
                "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
                "lift": lift}

    def dense_reward(self, info):
        tcp = self.robot.tcp_pose()[:, :3]
        reach = -torch.tanh(5 * (self.obj.pose()[:, :3].to(tcp) - tcp).norm(dim=1))
        lift = torch.clamp(info["lift"] / self.lift_height, 0.0, 1.0) - 1.0
        return torch.where(info["success"], torch.zeros_like(reach), reach + lift)

    def task_observations(self, info):
        return {"obj_pose": self.obj.pose().to(self.device), "lift": info["lift"].unsqueeze(1)}

    def get_task_state(self) -> torch.Tensor:
        return self._start_z.unsqueeze(1).clone()

    def set_task_state(self, state: torch.Tensor, env_idx: torch.Tensor) -> None:
        self._start_z[env_idx] = state[:, 0].to(self.device)

    def solution_policy(self):
        return PickObjectPolicy(self)


class PickObjectPolicy(PickAndPlacePolicy):
    """Grasp the active object from above at its centre and lift it straight up."""

    def cube(self):
        return self.task.obj

    def place_target(self):
        task = self.task
        target = task.obj.pose()[:, :3].clone()
        target[:, 2] = task._start_z + task.lift_height + 0.04
        return target
