"""Scripted solution policies: per-env phase machines that emit end-effector deltas.

They read the simulator's ground truth (object poses, goals) and work with the
pd_ee_delta_pos and pd_ee_delta_pose control modes."""
from __future__ import annotations

import math

import torch

from robosim.agents.kinematics import axis_angle_matrix, matmul3, quat_to_matrix, rotation_log
from robosim_tasks.common import quat_yaw

# Gripper pointing down (tcp z axis along world -z), fingers along world y at yaw 0.
_DOWN = torch.tensor([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]], dtype=torch.float64)


def grasp_rotation(object_yaw: torch.Tensor) -> torch.Tensor:
    """(N, 3, 3) downward gripper rotations aligned with a cube's faces (90-degree symmetric)."""
    yaw = torch.remainder(object_yaw.double() + math.pi / 4, math.pi / 2) - math.pi / 4
    axis = yaw.new_tensor([0.0, 0.0, 1.0])
    return matmul3(axis_angle_matrix(axis, yaw), _DOWN.to(yaw.device).expand(len(yaw), 3, 3))


def ee_action(env, target_pos: torch.Tensor, target_rot: torch.Tensor | None, gripper: torch.Tensor) -> torch.Tensor:
    """Action (N, A) moving the tcp toward target_pos (N, 3) [and target_rot (N, 3, 3)],
    with gripper command (N,) in [-1, 1] (-1 closes)."""
    if env.control_mode not in ("pd_ee_delta_pos", "pd_ee_delta_pose"):
        raise ValueError(f"scripted policies need an end-effector control mode, got {env.control_mode!r}")
    tcp = env.robot.tcp_pose(env.robot.view.qpos())
    pos_action = torch.clamp((target_pos - tcp[:, :3]) / 0.1, -1.0, 1.0)
    parts = [pos_action]
    if env.control_mode == "pd_ee_delta_pose":
        current = quat_to_matrix(tcp[:, 3:].double())
        target = current if target_rot is None else target_rot
        rot_err = rotation_log(matmul3(target, current.transpose(-1, -2))).float()
        parts.append(torch.clamp(rot_err / 0.1, -1.0, 1.0))
    parts.append(gripper.reshape(-1, 1).float())
    return torch.cat(parts, dim=1)


class PhasePolicy:
    """Base for phase-machine policies: tracks each env's phase and time in phase,
    restarting both when the env's episode restarts (elapsed_steps == 0)."""

    def __init__(self, env):
        self.env = env
        n = env.num_envs
        self.phase = torch.zeros(n, dtype=torch.int64, device=env.device)
        self.timer = torch.zeros(n, dtype=torch.int64, device=env.device)

    def __call__(self, env=None) -> torch.Tensor:
        fresh = self.env.elapsed_steps == 0
        self.phase[fresh] = 0
        self.timer[fresh] = 0
        action, next_phase = self.act()
        changed = next_phase != self.phase
        self.timer = torch.where(changed, torch.zeros_like(self.timer), self.timer + 1)
        self.phase = next_phase
        return action

    def act(self) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def tcp_position(self) -> torch.Tensor:
        return self.env.robot.tcp_pose(self.env.robot.view.qpos())[:, :3]


class PickAndPlacePolicy(PhasePolicy):
    """Grasp the cube from above, then carry it to `place_target()`; optional release."""

    lift = 0.08

    def cube(self):
        raise NotImplementedError

    def place_target(self) -> torch.Tensor:
        raise NotImplementedError

    release = False

    def act(self):
        cube_pose = self.cube().pose()
        cube_pos = cube_pose[:, :3]
        phase = self.phase.clone()
        tcp_pose = self.env.robot.tcp_pose(self.env.robot.view.qpos())
        tcp = tcp_pose[:, :3]
        # align with the cube while approaching; once it is held, keep the current wrist
        # rotation (aligning to a yaw the grasp itself changes would chase its own tail)
        holding = (phase >= 2).reshape(-1, 1, 1)
        grasp_rot = torch.where(holding, quat_to_matrix(tcp_pose[:, 3:].double()),
                                grasp_rotation(quat_yaw(cube_pose[:, 3:])))
        above = cube_pos + cube_pos.new_tensor([0.0, 0.0, self.lift])
        # carry so that the cube (not the tcp) reaches the goal: keep the grasp offset
        goal = self.place_target() + (tcp - cube_pos) * (phase >= 3).unsqueeze(1)
        target = torch.where((phase == 0).unsqueeze(1), above, cube_pos)
        target = torch.where((phase >= 3).unsqueeze(1), goal, target)
        if self.release:
            lifted = goal + goal.new_tensor([0.0, 0.0, 0.08])
            target = torch.where((phase == 5).unsqueeze(1), lifted, target)
        gripper = torch.where(phase >= 2, -1.0, 1.0)
        if self.release:
            gripper = torch.where(phase >= 4, 1.0, gripper)
        err = (target - tcp).norm(dim=1)
        nxt = phase.clone()
        nxt[(phase == 0) & (err < 0.015)] = 1
        nxt[(phase == 1) & (err < 0.006)] = 2
        nxt[(phase == 2) & (self.timer >= 5)] = 3
        if self.release:
            nxt[(phase == 3) & (err < 0.006)] = 4
            nxt[(phase == 4) & (self.timer >= 4)] = 5
        return ee_action(self.env, target, grasp_rot, gripper), nxt

