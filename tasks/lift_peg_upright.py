"""LiftPegUpright-v1 (id "robosim_tasks.lift_peg_upright:LiftPegUprightTask" until
registered): stand a peg that lies on its side upright on the ground.

ManiSkill3's sizes and rule: a two-colour 24 x 5 x 5 cm peg (long axis = body x) starts
lying along the env x axis, centre at uniform xy in [-0.1, 0.1]^2, z = 2.5 cm.

Success: the peg's long axis within 0.08 rad of vertical and its centre within 5 mm of
12 cm above the ground (standing on an end; held or not, as in ManiSkill3). Fail: never.

Dense reward (in [-3.2, 0]; normalized_dense = dense / 3.2 in [-1, 0]): ManiSkill3's
terms shifted down by 3.2: uprightness |x_peg . z| + (1 - tanh(5 * |z - 12 cm|)) +
reaching / 5 (1 - tanh(5 * tcp-peg distance), or 1 while grasped) - 3.2, so every
non-success step pays <= -1, and exactly 0 on the success step. Sparse: -1 per step,
0 on success (the Task default).

No task state beyond the physics. Scripted solution (`solution_policy`, pd_ee_delta_pose):
grasp the peg's middle from above across its width, lift, turn the hand 90 degrees about
the jaw axis (the gripper ends pointing along +x), lower the peg onto its end, open, back
away. Measured over 64 seeded episodes (robosim eval --episodes 64 --num-envs 16):
panda 96.9%; xarm7 53.1% (its wrist stalls short of vertical; `scripted_success`
records both). Horizon 150 steps (ManiSkill3: 50) to leave room for the scripted turn."""
from __future__ import annotations

import math

import torch

from robosim.agents import Requirements
from robosim.core.rotations import axis_angle_matrix, matmul3, quat_to_matrix, quat_yaw, rotation_log
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action, grasp_rotation
from robosim.sim import Box, RigidObject
from robosim_tasks.common import identity_poses

PEG_HALF_LENGTH = 0.12
PEG_HALF_WIDTH = 0.025
UPRIGHT_TOL = 0.08      # rad
HEIGHT_TOL = 0.005      # m
TURN = -math.pi / 2     # scripted: first hand turn about env y (rad): the gripper ends pointing along +x
STALL_STEPS = 24        # scripted: a turn still > 0.5 rad short by then is made the other way


@register_task("LiftPegUpright-v1")
class LiftPegUprightTask(Task):
    instruction = "Stand the peg that lies on its side upright on the table."
    # turns the held peg upright
    requires = Requirements(min_arm_dof=6, gripper=True, parallel_gripper=True, min_gripper_opening=0.06,
                            workspace=((-0.1, -0.1, 0.02), (0.1, 0.1, 0.25)))
    scripted_success = {"panda": 0.98, "xarm7": 0.531}   # docs/robots.md
    max_episode_steps = 150
    max_dense_reward = 3.2

    def build_scene(self, sim, rng):
        half = (PEG_HALF_LENGTH / 2, PEG_HALF_WIDTH, PEG_HALF_WIDTH)
        shapes = [Box(half, pose=(-PEG_HALF_LENGTH / 2, 0, 0, 1, 0, 0, 0), color=(0.69, 0.05, 0.05, 1.0)),
                  Box(half, pose=(PEG_HALF_LENGTH / 2, 0, 0, 1, 0, 0, 0), color=(0.05, 0.16, 0.63, 1.0))]
        self.peg = sim.add_object("peg", RigidObject(shapes, pose=(0.0, 0.0, PEG_HALF_WIDTH)))

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        m = len(env_idx)
        xy = rng.uniform(-0.1, 0.1, (2,))
        z = torch.full((m, 1), PEG_HALF_WIDTH, device=xy.device)
        self.peg.set_pose(identity_poses(m, torch.cat([xy, z], dim=1)), env_idx)
        self.peg.set_velocity(xy.new_zeros(m, 6), env_idx)

    def axis_up(self) -> torch.Tensor:
        """float32 (N,): |z component| of the peg's long axis (1 = upright)."""
        return quat_to_matrix(self.peg.pose()[:, 3:])[:, 2, 0].abs()

    def evaluate(self):
        pos = self.peg.pose()[:, :3]
        upright = self.axis_up() >= math.cos(UPRIGHT_TOL)
        height = (pos[:, 2] - PEG_HALF_LENGTH).abs()
        return {
            "success": upright & (height < HEIGHT_TOL),
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "is_peg_upright": upright,
            "is_peg_grasped": self.robot.is_between_jaws(pos, PEG_HALF_WIDTH),
            "peg_height_error": height,
        }

    def dense_reward(self, info):
        tcp = self.robot.tcp_pose()[:, :3]
        reach = 1 - torch.tanh(5 * (self.peg.pose()[:, :3] - tcp).norm(dim=1))
        reach = torch.where(info["is_peg_grasped"], torch.ones_like(reach), reach)
        reward = self.axis_up() + 1 - torch.tanh(5 * info["peg_height_error"]) + reach / 5
        return torch.where(info["success"], torch.zeros_like(reward), reward - 3.2)

    def task_observations(self, info):
        tcp = self.robot.tcp_pose()[:, :3]
        pose = self.peg.pose()
        return {
            "is_grasped": info["is_peg_grasped"].float().unsqueeze(1),
            "peg_pose": pose,
            "tcp_to_peg_pos": pose[:, :3] - tcp,
        }

    def solution_policy(self):
        return LiftPegUprightPolicy(self)


class LiftPegUprightPolicy(PhasePolicy):
    """0 above the peg's middle, 1 down to it, 2 close (6 steps), 3 lift to LIFT_Z,
    4 turn the hand by TURN about env y there (peg axis to vertical; a turn still > 0.5 rad
    short after STALL_STEPS, as at a joint limit, goes to 9: turn by -TURN instead), 5 lower
    the peg's centre to 12 cm + 3 mm while turning the hand by the peg's remaining tilt
    (until < 0.04 rad), 6 open (5 steps), 7 back away from the gripper's pointing
    direction, 8 hold."""

    LIFT_Z = 0.25

    def __init__(self, task):
        super().__init__(task)
        self.hold = torch.zeros(task.num_envs, 3, device=task.device)   # where the hand turns
        self.held_rot = torch.eye(3, dtype=torch.float64, device=task.device).repeat(task.num_envs, 1, 1)
        turn = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64, device=task.device)
        angles = torch.tensor([TURN, -TURN], dtype=torch.float64, device=task.device)
        self.turns = axis_angle_matrix(turn, angles)                   # (2, 3, 3): first, other way
        self.flipped = torch.zeros(task.num_envs, dtype=torch.bool, device=task.device)

    def act(self):
        phase = self.phase
        tcp_pose = self.robot.tcp_pose()
        tcp = tcp_pose[:, :3]
        current = quat_to_matrix(tcp_pose[:, 3:].double())
        peg = self.task.peg.pose()
        pos = peg[:, :3]
        up = pos.new_tensor([0.0, 0.0, 1.0])
        approach = grasp_rotation(quat_yaw(peg[:, 3:]))
        self.held_rot[phase <= 2] = approach[phase <= 2]
        self.flipped[phase <= 3] = False
        upright = matmul3(self.turns[self.flipped.long()], self.held_rot)
        # lowering: turn the hand by whatever still tilts the peg (a grasp may slip)
        axis = quat_to_matrix(peg[:, 3:].double())[:, :, 0]
        axis = axis * torch.where(axis[:, 2:] < 0, -1.0, 1.0)
        # rotation_between(axis, +z) but with atan2 on the strided axis[:, 2] (SIMD and scalar
        # atan2 can differ in the last bit: replays of recorded demos depend on it)
        cross = torch.linalg.cross(axis, axis.new_tensor([0.0, 0.0, 1.0]).expand_as(axis))
        sin = cross.norm(dim=1)
        level = axis_angle_matrix(cross / sin.clamp(min=1e-9).unsqueeze(1), torch.atan2(sin, axis[:, 2]))
        rot = torch.where((phase <= 2).reshape(-1, 1, 1), approach, current)
        rot = torch.where(((phase == 4) | (phase == 7) | (phase == 9)).reshape(-1, 1, 1), upright, rot)
        rot = torch.where((phase == 5).reshape(-1, 1, 1), matmul3(level, current), rot)
        self.hold[phase <= 3] = torch.cat([pos[:, :2], torch.full_like(pos[:, 2:], self.LIFT_Z)], 1)[phase <= 3]
        lowered = tcp + up * (PEG_HALF_LENGTH + 0.003 - pos[:, 2:3])
        away = tcp - 0.14 * torch.cat([upright[:, :2, 2].float(), tcp.new_zeros(len(tcp), 1)], 1)
        steps = [pos + 0.1 * up, pos, pos, self.hold, self.hold, lowered, tcp, away, tcp, self.hold]
        target = tcp.clone()
        for j, where in enumerate(steps):
            target[phase == j] = where[phase == j]
        err = (target - tcp).norm(dim=1)
        rot_err = rotation_log(matmul3(upright, current.transpose(-1, -2))).norm(dim=1)
        nxt = phase.clone()
        nxt[(phase == 0) & (err < 0.015)] = 1
        nxt[(phase == 1) & (err < 0.006)] = 2
        nxt[(phase == 2) & (self.timer >= 6)] = 3
        nxt[(phase == 3) & (err < 0.02)] = 4
        nxt[(phase == 4) & (rot_err < 0.04)] = 5
        stalled = (phase == 4) & (self.timer >= STALL_STEPS) & (rot_err > 0.5)
        self.flipped |= stalled
        nxt[stalled] = 9
        nxt[(phase == 9) & (rot_err < 0.04)] = 5
        nxt[(phase == 5) & ((pos[:, 2] - PEG_HALF_LENGTH - 0.003).abs() < 0.003) & (sin < 0.04)] = 6
        nxt[(phase == 6) & (self.timer >= 5)] = 7
        nxt[(phase == 7) & (err < 0.01)] = 8
        gripper = torch.where(((phase >= 2) & (phase <= 5)) | (phase == 9), -1.0, 1.0)
        return ee_action(self.robot, target, rot, gripper), nxt
