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
