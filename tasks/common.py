"""Building blocks shared by the built-in tasks: cubes, goal markers, pose helpers."""
from __future__ import annotations

import math

import torch

from robosim.core import rotations
from robosim.core.rotations import IDENTITY_QUAT
from robosim.randomization import BatchRandom
from robosim.sim import ActorView, Box, RigidObject, SimScene, Sphere


def build_cube(sim: SimScene, name: str, half_size: float, color, density: float = 1000.0) -> ActorView:
    """A dynamic cube of edge 2 * half_size (m) in every env, resting at the env origin."""
    return sim.add_object(name, RigidObject([Box(half_size, color=color)], pose=(0.0, 0.0, half_size),
                                            density=density))


def build_goal_marker(sim: SimScene, name: str, radius: float, color) -> ActorView:
    """A visual-only kinematic sphere (no collision) in every env."""
    return sim.add_object(name, RigidObject([Sphere(radius, color=color, collision=False)], body="kinematic"))


class GoalPointMixin:
    """For Task subclasses whose only non-physics state is a goal point per env.

    Provides `goal_pos` float32 (N, 3) (env frame, m), a visual marker `goal_marker`
    that follows it, and get_task_state/set_task_state over the goal."""

    goal_pos: torch.Tensor
    goal_marker: ActorView

    def build_goal(self, sim: SimScene, radius: float, color) -> None:
        self.goal_marker = build_goal_marker(sim, "goal", radius, color)
        self.goal_pos = torch.zeros(sim.num_envs, 3, device=self.device)

    def set_goal(self, positions: torch.Tensor, env_idx: torch.Tensor) -> None:
        self.goal_pos[env_idx] = positions
        self.goal_marker.set_pose(identity_poses(len(env_idx), positions), env_idx)

    def get_task_state(self) -> torch.Tensor:
        return self.goal_pos.clone()

    def set_task_state(self, state: torch.Tensor, env_idx: torch.Tensor) -> None:
        self.set_goal(state, env_idx)


def place_on_ground(rng: BatchRandom, half_size: float, xy_low: float, xy_high: float) -> torch.Tensor:
    """(M, 7) poses of cubes resting on the ground at uniform xy with uniform yaw."""
    xy = rng.uniform(xy_low, xy_high, (2,))
    yaw = rng.uniform(0.0, 2 * math.pi)
    z = torch.full((len(rng), 1), half_size, device=rng.device)
    return torch.cat([xy, z, rotations.yaw_quat(yaw)], dim=1)


def yaw_to_tcp(obj_pose: torch.Tensor, tcp_pose: torch.Tensor, folds: int = 4) -> torch.Tensor:
    """float32 (N, 2): (sin, cos) of `folds` times the object's yaw about +z relative to the
    tcp's (each the yaw of its body x axis). Poses (N, 7) env frame, quaternion wxyz;
    `folds`: the object looks the same after 1/folds of a turn (a cube: 4). The scripted
    grasps turn the wrist the shorter way to the object's nearest face pair, a sawtooth
    of the raw quaternions; in these two numbers it is smooth except at the fold itself,
    so a learner can read the turn. Both yaws in one batch of ops: it runs every step."""
    yaw = rotations.quat_yaw(torch.stack([obj_pose[:, 3:], tcp_pose[:, 3:]], 1))   # (N, 2)
    turn = folds * (yaw[:, 0] - yaw[:, 1])
    return torch.stack([turn.sin(), turn.cos()], 1)


def identity_poses(n: int, positions: torch.Tensor) -> torch.Tensor:
    """(n, 7) poses at `positions` (n, 3) with identity rotation."""
    quat = positions.new_tensor(IDENTITY_QUAT).expand(n, 4)
    return torch.cat([positions, quat], dim=1)


class CubeToGoalMixin(GoalPointMixin):
    """For tasks that move `self.cube` into a goal region on the ground (ManiSkill3's
    PushCube / PullCube): success when the cube's centre is within `goal_radius` (m) of
    `goal_pos` in xy. Dense reward: ManiSkill3's reach-then-move terms shifted to
    [-3, 0], exactly 0 on success. The task defines `contact_pose(obj_pos)` -> (N, 3), the
    tcp position (env frame, m) from which it moves the cube."""

    goal_radius: float

    def contact_pose(self, obj_pos: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def evaluate(self):
        xy_dist = (self.cube.pose()[:, :2] - self.goal_pos[:, :2]).norm(dim=1)
        return {
            "success": xy_dist < self.goal_radius,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "obj_to_goal_dist": xy_dist,
        }

    def dense_reward(self, info):
        tcp = self.robot.tcp_pose()[:, :3]
        reach = (self.contact_pose(self.cube.pose()[:, :3]) - tcp).norm(dim=1)
        reward = 1 - torch.tanh(5 * reach)
        reward = reward + (1 - torch.tanh(5 * info["obj_to_goal_dist"])) * (reach < 0.02).float()
        return torch.where(info["success"], torch.zeros_like(reward), reward - 3.0)

    def task_observations(self, info):
        tcp = self.robot.tcp_pose()[:, :3]
        obj_pose = self.cube.pose()
        return {"goal_pos": self.goal_pos.clone(), "obj_pose": obj_pose, "tcp_to_obj_pos": obj_pose[:, :3] - tcp}


# robosim 0.1.0 defined the yaw helpers here; they moved to robosim.core.rotations. Both
# names are shims (this module binds neither itself).
from robosim.core.deprecation import moved_names  # noqa: E402  (the shim stays at the end, apart)

__getattr__ = moved_names(__name__, {"quat_yaw": "robosim.core.rotations:quat_yaw",
                                     "yaw_quat": "robosim.core.rotations:yaw_quat"})
