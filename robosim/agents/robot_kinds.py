"""The step path and tcp readout of robots that are not a fixed-base arm: hands and
mobile bases (robosim.agents.spec: RobotSpec.fingertip_links, RobotSpec.mobile_base).

`bind_kind_methods(robot)` runs once when a Robot is loaded and binds, on that robot
only, the `apply_action` and `tcp_pose` of its kind; a fixed-base arm keeps the class's
methods, so its step path has no test of the robot's kind.

Mobile base: qpos starts with the base joints [x m, y m, yaw rad] (env frame, from the
spec's base position); the action is [forward, turn] (BaseVelocityController), then the
arm's action, then the gripper's. End-effector actions are along env axes: they are
turned by -yaw into the base frame per env. Hand: tcp_pose is the tcp link's pose moved
by the spec's tcp_offset (in that link's frame). A hand with passive joints
(`mimic_joints`, robosim.agents.hand_robots.MimicHandSpec) also gets an apply_action
that writes the passive joints' drive targets from their drivers' and a reset that
places the passive joints where their drivers put them.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from robosim.core.rotations import matvec3, quat_to_matrix, yaw_then_quat


def bind_kind_methods(robot: Any) -> None:
    """Bind the hand's or mobile robot's apply_action / tcp_pose (and a mimic hand's
    reset) on `robot` (a loaded robosim.agents.robot.Robot); nothing for a fixed-base arm."""
    if robot.spec.is_hand:
        offset = torch.tensor(robot.spec.tcp_offset, dtype=torch.float32)
        robot._tcp_offset = offset.to(robot.sim.device) if bool(offset.any()) else None
        robot.tcp_pose = lambda qpos=None, copy=True: hand_tcp_pose(robot)
        if getattr(robot.spec, "mimic_joints", ()):
            _bind_mimic(robot)
    elif robot.base is not None:
        robot._base_pos_t = robot.base_position.double().to(robot.sim.device)
        robot.apply_action = lambda action: mobile_apply_action(robot, action)
        robot.tcp_pose = lambda qpos=None, copy=True: mobile_tcp_pose(robot, qpos)


def hand_tcp_pose(robot: Any) -> torch.Tensor:
    """float32 (N, 7) pose of the hand's tcp (its palm link, fixed to the root, moved by
    tcp_offset in that link's frame), env frame."""
    pose = robot.view.link_pose(robot.spec.tcp_link)
    if robot._tcp_offset is not None:
        rot = quat_to_matrix(pose[:, 3:])
        pose[:, :3] += matvec3(rot, robot._tcp_offset.to(pose.device).expand(len(pose), 3))
    return pose


def _bind_mimic(robot: Any) -> None:
    """Keep, per passive joint, its driver's column and its multiplier, offset and limits
    (tensors on the scene's device, and the same in the step-math body's arrays); bind
    apply_action and reset."""
    spec = robot.spec
    limits = robot.view.qlimits().to(robot.sim.device)[robot.arm_dof:]
    robot._mimic_drivers = [list(spec.arm_joints).index(m.driver) for m in spec.mimic_joints]
    robot._mimic = tuple(t.to(robot.sim.device).contiguous() for t in (
        torch.tensor([m.multiplier for m in spec.mimic_joints], dtype=torch.float32),
        torch.tensor([m.offset for m in spec.mimic_joints], dtype=torch.float32), limits[:, 0], limits[:, 1]))
    robot._mimic_body = tuple(robot.body.array(t) for t in robot._mimic)
    robot.apply_action = lambda action: mimic_apply_action(robot, action)
    robot.reset = lambda qpos, env_idx: mimic_reset(robot, qpos, env_idx)


def mimic_apply_action(robot: Any, action: Any) -> None:
    """Clipped action (N, driven joints) -> drive targets of the driven joints, and of
    the passive ones: multiplier * driver target + offset, within their limits."""
    body = robot.body
    qpos = body.array(robot.view.qpos(copy=False))    # only read here
    arm = robot.arm.targets(body.array(action), qpos[:, :robot.arm_dof], robot.sim.read_cache.version)
    mult, offset, low, high = robot._mimic_body
    passive = body.clamp(arm[:, robot._mimic_drivers] * mult + offset, low, high)
    robot.view.set_drive_targets(body.cat([arm, body.float32(passive)], 1))


def mimic_reset(robot: Any, qpos: torch.Tensor, env_idx: torch.Tensor) -> None:
    """Robot.reset with each passive joint's column of qpos (M, dof) replaced by
    multiplier * its driver's + offset, within its limits (whatever the caller gave)."""
    mult, offset, low, high = (t.to(qpos.device) for t in robot._mimic)
    q = qpos.clone()
    q[:, robot.arm_dof:] = torch.clamp(q[:, robot._mimic_drivers] * mult + offset, low, high)
    type(robot).reset(robot, q, env_idx)


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
