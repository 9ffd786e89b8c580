"""The step path and tcp readout of robots that are not a fixed-base arm: hands and
mobile bases (robosim.agents.spec: RobotSpec.fingertip_links, RobotSpec.mobile_base).

`bind_kind_methods(robot)` runs once when a Robot is loaded and binds, on that robot
only, the `apply_action` and `tcp_pose` of its kind; a fixed-base arm keeps the class's
methods, so its step path has no test of the robot's kind.

Mobile base: qpos starts with the base joints [x m, y m, yaw rad] (env frame, from the
spec's base position); the action is [forward, turn] (BaseVelocityController), then the
arm's action, then the gripper's. End-effector actions are along env axes: they are
turned by -yaw into the base frame per env. Hand: tcp_pose is the palm link's pose.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from robosim.core.rotations import yaw_then_quat


def bind_kind_methods(robot: Any) -> None:
    """Bind the hand's or mobile robot's apply_action / tcp_pose on `robot` (a loaded
    robosim.agents.robot.Robot); nothing for a fixed-base arm."""
    if robot.spec.is_hand:
        robot.tcp_pose = lambda qpos=None, copy=True: hand_tcp_pose(robot)
    elif robot.base is not None:
        robot._base_pos_t = robot.base_position.double().to(robot.sim.device)
        robot.apply_action = lambda action: mobile_apply_action(robot, action)
        robot.tcp_pose = lambda qpos=None, copy=True: mobile_tcp_pose(robot, qpos)


def hand_tcp_pose(robot: Any) -> torch.Tensor:
    """float32 (N, 7) pose of the hand's tcp link (its palm: fixed to the root), env frame."""
    return robot.view.link_pose(robot.spec.tcp_link)


def _turn_ee_action(robot: Any, action: Any, yaw: Any) -> Any:
    """End-effector action (N, 3k) from env axes to base axes (a turn by -yaw about z)."""
    c, s = robot.base.heading(yaw)
    stack = np.stack if isinstance(action, np.ndarray) else torch.stack
    parts = []
    for k in range(0, action.shape[1], 3):
        x, y = action[:, k], action[:, k + 1]
        parts.append(stack([c * x + s * y, c * y - s * x, action[:, k + 2]], 1))
    return robot.body.float32(robot.body.cat(parts, 1))


def mobile_apply_action(robot: Any, action: torch.Tensor) -> None:
    """Clipped action (N, 2 + arm + gripper) -> drive targets of base, arm and gripper."""
    body = robot.body
    action = body.array(action)
    qpos = body.array(robot.view.qpos(copy=False))    # only read here
    base_q = qpos[:, :3]
    base = robot.base.targets(action[:, :2], base_q)
    arm_action = action[:, 2:2 + robot.arm.action_dim]
    if robot.chain is not None and robot.control_mode.startswith("pd_ee"):
        arm_action = _turn_ee_action(robot, arm_action, base_q[:, 2])
    arm = robot.arm.targets(arm_action, qpos[:, robot._arm], robot.sim.read_cache.version)
    if robot.gripper is not None:
        arm = body.drive_targets(arm, robot.gripper.width(action[:, -1:]), robot.dof - 3)
    robot.view.set_drive_targets(body.cat([base, arm], 1))


def mobile_tcp_pose(robot: Any, qpos: torch.Tensor | None = None) -> torch.Tensor:
    """float32 (N, 7) tcp pose [xyz, wxyz], env frame: the arm chain's FK in the base
    link's frame, turned by the base yaw and moved by its (x, y) and the spec's base
    position. qpos (N, dof): that configuration instead of the current one."""
    version = None
    if qpos is None:
        version = robot.sim.read_cache.version
        qpos = robot.view.qpos(copy=False)
    body = robot.body
    q = body.array(qpos)
    values = body.chain_values(robot.chain, q[:, robot._arm], version, jacobian=False)
    local = body.tcp_pose(values, None, robot._base_pos)   # base link at the spec's base position
    base_q = torch.as_tensor(q[:, :3]).to(local.device, torch.float64)
    yaw = base_q[:, 2]
    rel = local[:, :3].double() - robot._base_pos_t
    c, s = torch.cos(yaw), torch.sin(yaw)
    pos = torch.stack([c * rel[:, 0] - s * rel[:, 1] + base_q[:, 0],
                       s * rel[:, 0] + c * rel[:, 1] + base_q[:, 1], rel[:, 2]], 1) + robot._base_pos_t
    quat = yaw_then_quat(yaw, local[:, 3:].double())
    return torch.cat([pos, quat], 1).float()
