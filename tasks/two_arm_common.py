"""What the two-arm tasks share: their robot slots, a bar lying along its own y axis,
and grasp helpers. Two pandas face +x side by side: "left" at y = +0.3 m, "right" at
y = -0.3 m (env frame)."""
from __future__ import annotations

import math

import torch

from robosim.core.rotations import matmul3, quat_to_matrix, rotation_log, yaw_quat
from robosim.envs.robots import RobotSlot
from robosim.envs.solutions import ee_action, grasp_rotation
from robosim.randomization import BatchRandom
from robosim.sim import ActorView, Box, Material, RigidObject, SimScene

TWO_PANDAS = {"left": RobotSlot("panda", base_position=(-0.615, 0.3, 0.0)),
              "right": RobotSlot("panda", base_position=(-0.615, -0.3, 0.0))}


def build_bar(sim: SimScene, name: str, half_size: tuple[float, float, float], color, density: float) -> ActorView:
    """A dynamic box of half extents `half_size` (m; its long side along its own y), grippy
    (friction 1.0, as rubber on wood) so the jaws hold it by friction."""
    grip = Material(static_friction=1.0, dynamic_friction=1.0)
    return sim.add_object(name, RigidObject([Box(half_size, color=color)], pose=(0.0, 0.0, half_size[2]),
                                            density=density, material=grip))


def place_bar(rng: BatchRandom, half_size: tuple[float, float, float], x: tuple[float, float],
              y: tuple[float, float], yaw: float) -> torch.Tensor:
    """(M, 7) poses of bars resting on the ground at uniform x, y (m) and yaw in [-yaw, yaw] rad."""
    px = rng.uniform(x[0], x[1], (1,))
    py = rng.uniform(y[0], y[1], (1,))
    angle = rng.uniform(-yaw, yaw)
    z = torch.full((len(rng), 1), half_size[2], device=rng.device)
    return torch.cat([px, py, z, yaw_quat(angle)], dim=1)


def bar_axis(pose: torch.Tensor) -> torch.Tensor:
    """float32 (N, 3) unit vector of a bar's long (own y) axis in the env frame."""
    return quat_to_matrix(pose[:, 3:].double())[:, :, 1].float()


def along(pose: torch.Tensor, offset: float) -> torch.Tensor:
    """float32 (N, 3) point `offset` m from a bar's centre along its long axis."""
    return pose[:, :3] + offset * bar_axis(pose)


def tilt(pose: torch.Tensor) -> torch.Tensor:
    """float32 (N,) angle (rad) between a bar's long axis and the horizontal plane."""
    return torch.asin(bar_axis(pose)[:, 2].abs().clamp(max=1.0))


def across_bar(bar_yaw: torch.Tensor, tcp_pose: torch.Tensor) -> torch.Tensor:
    """float64 (N, 3, 3) downward gripper rotations with the jaws across a bar of yaw
    `bar_yaw` (N,) rad: of the two that do (a bar looks the same every half turn), the one
    nearest the tcp's current yaw (N, 7 pose), so the wrist never turns more than a
    quarter turn (and never flips at a fold of the angle)."""
    current = quat_to_matrix(tcp_pose[:, 3:].double())
    # grasp_rotation(psi) = Rz(psi) @ DOWN, and DOWN is its own inverse: Rz(psi) = R @ DOWN
    tcp_yaw = torch.atan2(current[:, 1, 0], current[:, 0, 0])
    target = bar_yaw.double() + math.pi / 2
    target = target + math.pi * torch.round((tcp_yaw - target) / math.pi)
    return grasp_rotation(target, symmetry=2 * math.pi)


def rotation_error(target: torch.Tensor, tcp_pose: torch.Tensor) -> torch.Tensor:
    """float32 (N,) angle (rad) from a tcp pose (N, 7) to target rotations (N, 3, 3)."""
    current = quat_to_matrix(tcp_pose[:, 3:].double())
    return rotation_log(matmul3(target, current.transpose(-1, -2))).norm(dim=1).float()


def arm_action(robot, target: torch.Tensor, rot: torch.Tensor, closed: torch.Tensor) -> torch.Tensor:
    """ee_action toward target (N, 3) at rot (N, 3, 3); closed bool (N,) -> gripper -1."""
    return ee_action(robot, target, rot, torch.where(closed, -1.0, 1.0))


class HandoverScoring:
    """evaluate / dense_reward / task_observations of a two-arm handover of one held bar.

    The task sets `held` (the attribute naming its ActorView, also the info/obs key
    prefix), `held_half_height` (m), `lift_for_full_reward` (m of lift worth 1 of reward)
    and `goal_radius` (m, xy), and defines `grasp_points(pose) -> {"left", "right": (N, 3)}`
    and `goal_pos` (N, 3). Success: the bar's centre within goal_radius of the goal (xy),
    resting on the ground, both arms static. Dense reward in [-4, 0], 0 on success."""

    held: str
    held_half_height: float
    lift_for_full_reward: float
    goal_radius: float

    def evaluate(self):
        pose = getattr(self, self.held).pose()
        robots = self.ctx.robots
        points = self.grasp_points(pose)
        reach = {slot: torch.linalg.vector_norm(points[slot] - robots[slot].tcp_pose(copy=False)[:, :3], dim=1)
                 for slot in robots}
        xy = torch.linalg.vector_norm(pose[:, :2] - self.goal_pos[:, :2], dim=1)
        placed = (xy < self.goal_radius) & (pose[:, 2] < self.held_half_height + 0.005)
        static = robots["left"].is_static(0.2) & robots["right"].is_static(0.2)
        return {
            "success": placed & static,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "is_placed": placed,
            f"{self.held}_height": pose[:, 2] - self.held_half_height,   # m above resting
            f"{self.held}_to_goal_dist": xy,
            "left_to_end_dist": reach["left"],
            "right_to_end_dist": reach["right"],
        }

    def dense_reward(self, info):
        reward = 1 - torch.tanh(5 * info["left_to_end_dist"])
        reward = reward + torch.clamp(info[f"{self.held}_height"] / self.lift_for_full_reward, 0.0, 1.0)
        reward = reward + (1 - torch.tanh(5 * info["right_to_end_dist"]))
        reward = reward + (1 - torch.tanh(5 * info[f"{self.held}_to_goal_dist"]))
        return torch.where(info["success"], 0.0, reward - 4.0)

    def task_observations(self, info):
        pose = getattr(self, self.held).pose()
        points = self.grasp_points(pose)
        robots = self.ctx.robots
        return {f"{self.held}_pose": pose, "goal_pos": self.goal_pos.clone(),
                **{f"{slot}_tcp_to_end": points[slot] - robots[slot].tcp_pose(copy=False)[:, :3] for slot in robots}}
