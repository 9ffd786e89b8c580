"""PegInsertionSide-v1 (id "robosim_tasks.peg_insertion_side:PegInsertionSideTask" until
registered): pick up a peg and push its orange head sideways into the hole of a box.

ManiSkill3's sizes, drawn per env at build time (randomizes_build): peg half length L in
U(0.085, 0.125) m, half width r in U(0.015, 0.025) m; the box is 2L deep (along its x,
the hole's axis) with a 2L x 2L face and a square hole of half width r + 3 mm whose centre
sits at (0, cy, cz) in the box frame, (cy, cz) = 0.5 (L - r) U(-1, 1)^2. Per episode:
the peg lies on the ground, centre xy in [-0.1, 0.1] x [-0.3, 0], yaw in pi/2 +- pi/3;
the kinematic box stands on the ground, xy in [-0.05, 0.05] x [0.2, 0.4], yaw in
pi/2 +- pi/8. The head is the peg's +x end.

Success: the head, in the hole frame (the box's axes at the hole's centre), has
x >= -1.5 cm and |y|, |z| <= r + 3 mm (inserted half way). Fail: never.

Dense reward (in [-11, 0]; normalized_dense = dense / 11 in [-1, 0]): ManiSkill3's terms
shifted down by 11: reaching (1 - tanh(4 * tcp-to-grasp-point distance), the grasp point
6 cm from the centre toward the tail) + grasped + grasped * 3 * (1 - tanh(0.5 (dh + dc)
+ 4.5 max(dh, dc))) with dh, dc the head's and centre's distances from the hole axis +
(grasped and dh, dc < 1 cm) * 5 * (1 - tanh(5 * head-to-hole-centre distance)) - 11, so
every non-success step pays <= -1, and exactly 0 on the success step. Sparse: 1 on
success, else 0 (the Task default).

The task observation adds, for learners, the peg's head and centre and its x and y axes
in the hole frame and the grasp point relative to the tcp (what the scripted solution
steers by). No task state beyond the physics and the build (sizes come from the build
seeds). Scripted solution (`solution_policy`, pd_ee_delta_pose; its phase read from the
state alone every step): grasp near the tail from above, lift to the hole's height, turn
and carry the peg (closed loop on the peg's own pose) to 4 cm in front of the hole on its
axis, then push it in while it stays aligned. Measured over 64 seeded episodes (robosim
eval --episodes 64 --num-envs 16): panda 98.4%; xarm7 76.6%
(`scripted_success`). Horizon 150 steps (ManiSkill3: 100) for the careful push."""
from __future__ import annotations

import math

import torch

from robosim.agents import Requirements
from robosim.core.rotations import (
    axis_angle_matrix,
    matmul3,
    quat_to_matrix,
    quat_yaw,
    rotation_between,
    rotation_log,
    wrap_angle,
    yaw_quat,
)
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action, grasp_rotation, grip_flags
from robosim.sim import Box, RigidObject

CLEARANCE = 0.003
GRASP_OFFSET = 0.06     # m from the peg centre toward the tail
HEAD_COLOR, TAIL_COLOR, BOX_COLOR = (0.93, 0.45, 0.34, 1.0), (0.93, 0.96, 0.98, 1.0), (1.0, 0.82, 0.54, 1.0)


def box_with_hole(inner: float, outer: float, depth: float, cy: float, cz: float) -> RigidObject:
    """A kinematic 2 depth x 2 outer x 2 outer box (m, half sizes depth, outer, outer) with a
    square hole of half width `inner` along its x axis, centred at (0, cy, cz)."""
    t = (outer - inner) / 2
    hy, hz = cy / 2, cz / 2
    off = t + inner
    walls = [((depth, t - hy, outer), (0, off + hy, 0)), ((depth, t + hy, outer), (0, -off + hy, 0)),
             ((depth, outer, t - hz), (0, 0, off + hz)), ((depth, outer, t + hz), (0, 0, -off + hz))]
    return RigidObject([Box(h, pose=(*p, 1, 0, 0, 0), color=BOX_COLOR) for h, p in walls], body="kinematic")


def peg_object(half_length: float, half_width: float) -> RigidObject:
    """A dynamic peg, body x along its length, orange head at +x, white tail at -x."""
    half = (half_length / 2, half_width, half_width)
    return RigidObject([Box(half, pose=(half_length / 2, 0, 0, 1, 0, 0, 0), color=HEAD_COLOR),
                        Box(half, pose=(-half_length / 2, 0, 0, 1, 0, 0, 0), color=TAIL_COLOR)])


@register_task("PegInsertionSide-v1")
class PegInsertionSideTask(Task):
    instruction = "Pick up the peg and insert its orange head sideways into the hole in the box."
    # turns the peg onto the hole axis
    requires = Requirements(min_arm_dof=6, gripper=True, parallel_gripper=True, min_gripper_opening=0.06,
                            workspace=((-0.1, -0.3, 0.02), (0.1, 0.2, 0.2)))   # peg to the hole
    scripted_success = {"panda": 0.98, "xarm7": 0.77}   # docs/robots.md
    max_episode_steps = 150
    max_dense_reward = 11.0
    randomizes_build = True

    def build_scene(self, sim, rng):
        lengths = rng.uniform(0.085, 0.125)
        radii = rng.uniform(0.015, 0.025)
        centers = 0.5 * (lengths - radii).unsqueeze(1) * rng.uniform(-1.0, 1.0, (2,))
        zeros = torch.zeros_like(lengths)
        self.peg_half = torch.stack([lengths, radii, radii], dim=1).to(self.device)         # (N, 3)
        self.hole_offset = torch.stack([zeros, centers[:, 0], centers[:, 1]], 1).to(self.device)
        self.hole_radius = (radii + CLEARANCE).to(self.device)                               # (N,)
        L, r, c = lengths.tolist(), radii.tolist(), centers.tolist()
        self.peg = sim.add_object("peg", lambda i: peg_object(L[i], r[i]))
        self.box = sim.add_object("box_with_hole",
                                  lambda i: box_with_hole(r[i] + CLEARANCE, L[i], L[i], c[i][0], c[i][1]))

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        m = len(env_idx)
        xy = rng.uniform(0.0, 1.0, (2,)) * const([0.2, 0.3], rng) + const([-0.1, -0.3], rng)
        yaw = rng.uniform(math.pi / 2 - math.pi / 3, math.pi / 2 + math.pi / 3)
        half = self.peg_half[env_idx]
        self.peg.set_pose(torch.cat([xy, half[:, 2:3], yaw_quat(yaw)], 1), env_idx)
        self.peg.set_velocity(xy.new_zeros(m, 6), env_idx)
        xy = rng.uniform(0.0, 1.0, (2,)) * const([0.1, 0.2], rng) + const([-0.05, 0.2], rng)
        yaw = rng.uniform(math.pi / 2 - math.pi / 8, math.pi / 2 + math.pi / 8)
        self.box.set_pose(torch.cat([xy, half[:, 0:1], yaw_quat(yaw)], 1), env_idx)

    # -- geometry (env frame, m) --------------------------------------------------------
    def hole_frame(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(position (N, 3), rotation (N, 3, 3)) of the hole: the box's axes at its centre."""
        pose = self.box.pose()
        rot = quat_to_matrix(pose[:, 3:])
        return pose[:, :3] + (rot @ self.hole_offset.unsqueeze(2)).squeeze(2), rot

    def peg_points(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(centre, head, grasp point) (N, 3) of the peg, and its axis is quat_to_matrix[..., 0]."""
        pose = self.peg.pose()
        axis = quat_to_matrix(pose[:, 3:])[:, :, 0]
        centre = pose[:, :3]
        return centre, centre + axis * self.peg_half[:, :1], centre - axis * GRASP_OFFSET

    def in_hole(self, points: torch.Tensor) -> torch.Tensor:
        """(N, 3) env-frame points -> (N, 3) in the hole frame."""
        pos, rot = self.hole_frame()
        return (rot.transpose(1, 2) @ (points - pos).unsqueeze(2)).squeeze(2)

    def evaluate(self):
        centre, head, grasp = self.peg_points()
        head_h, centre_h = self.in_hole(head), self.in_hole(centre)
        lim = self.hole_radius
        inserted = (head_h[:, 0] >= -0.015) & (head_h[:, 1].abs() <= lim) & (head_h[:, 2].abs() <= lim)
        grasped = self.robot.is_between_jaws(grasp, self.peg_half[:, 1])
        return {
            "success": inserted,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "is_peg_grasped": grasped,
            "peg_head_pos_at_hole": head_h,
            "peg_centre_pos_at_hole": centre_h,
            "peg_head_axis_dist": head_h[:, 1:].norm(dim=1),
            "peg_centre_axis_dist": centre_h[:, 1:].norm(dim=1),
        }

    def dense_reward(self, info):
        tcp = self.robot.tcp_pose()[:, :3]
        grasp = self.peg_points()[2]
        grasped = info["is_peg_grasped"].float()
        dh, dc = info["peg_head_axis_dist"], info["peg_centre_axis_dist"]
        reward = 1 - torch.tanh(4 * (grasp - tcp).norm(dim=1)) + grasped
        reward = reward + grasped * 3 * (1 - torch.tanh(0.5 * (dh + dc) + 4.5 * torch.maximum(dh, dc)))
        aligned = ((dh < 0.01) & (dc < 0.01)).float()
        reward = reward + grasped * aligned * 5 * (1 - torch.tanh(5 * info["peg_head_pos_at_hole"].norm(dim=1)))
        return torch.where(info["success"], torch.zeros_like(reward), reward - 11.0)

    def task_observations(self, info):
        tcp = self.robot.tcp_pose()[:, :3]
        pose = self.peg.pose()
        hole_pos, hole_rot = self.hole_frame()
        grasp = self.peg_points()[2]
        axes = hole_rot.transpose(1, 2) @ quat_to_matrix(pose[:, 3:])[:, :, :2]    # peg x, y in the hole frame
        return {
            "peg_head_at_hole": info["peg_head_pos_at_hole"].clone(),
            "peg_centre_at_hole": info["peg_centre_pos_at_hole"].clone(),
            "peg_axes_at_hole": axes.transpose(1, 2).flatten(1),
            "tcp_to_grasp_pos": grasp - tcp,
            "is_grasped": info["is_peg_grasped"].float().unsqueeze(1),
            "peg_pose": pose,
            "peg_half_size": self.peg_half.clone(),
            "box_hole_pose": torch.cat([hole_pos, self.box.pose()[:, 3:]], 1),
            "box_hole_radius": self.hole_radius.unsqueeze(1).clone(),
            "tcp_to_peg_pos": pose[:, :3] - tcp,
        }

    def solution_policy(self):
        return PegInsertionSidePolicy(self)


def const(values, rng) -> torch.Tensor:
    """(2,) float32 constant on rng's device (broadcasts against (M, 2) draws)."""
    return torch.tensor(values, dtype=torch.float32, device=rng.device)


class PegInsertionSidePolicy(PhasePolicy):
    """Decides its phase afresh every step from the state alone (tcp, jaw gap, peg and
    hole poses: all in a state observation), never from the history, so a learner
    imitating it sees one label per state and a perturbed episode is picked up from where
    it is. Phases: 0 above the grasp point, wrist turned across the peg; 1 down to it; 2
    close; 3 lift the held peg to the hole's height; 4 turn and carry it to STANDOFF in
    front of the hole on its axis (the peg's faces parallel to the hole's walls); 5 push
    it in (to 1 cm past the hole's centre).

    - holding: the jaw gap between 2 mm and the open gap - 1 cm, the tcp within 2 cm of
      the grasp point;
    - close: not holding, the tcp within 8 mm of the grasp point (15 mm once the jaws
      have started closing), the jaws not shut on nothing;
    - down: the wrist within 0.1 rad of across the peg and the tcp within 15 mm of the
      point 10 cm above the grasp point horizontally, at most 15 mm above it;
    - lift: held, the peg's centre more than 1 cm below the hole's and its head more than
      2 cm short of the standoff;
    - carry and push (held): along the hole's axis the peg moves PUSH_STEP a step inward
      when head and centre are within ALIGNED of the axis, as much outward from 2 ALIGNED
      (linear between: the move is a continuous function of the state, with no switch a
      learner would have to reproduce exactly), and from behind the standoff at least up
      to it; across the axis the tcp moves GAIN times the peg centre's offset (above 1:
      the held peg sags under gravity; with 1.5 it settled up to 2.3 mm off the axis)."""

    STANDOFF = 0.04
    PUSH_STEP = 0.006    # m per control step along the axis, in or out
    GAIN = 4.0
    ALIGNED = 0.0015   # m: head and centre this close to the hole's axis push in at full speed

    def __init__(self, task):
        super().__init__(task)
        self.open_gap = self.open_jaw_gap()   # m

    def act(self):
        task, robot = self.task, self.robot
        tcp_pose = robot.tcp_pose()
        tcp = tcp_pose[:, :3]
        current = quat_to_matrix(tcp_pose[:, 3:].double())
        peg_pose = task.peg.pose()
        peg_rot = quat_to_matrix(peg_pose[:, 3:])
        centre, head, grasp = task.peg_points()
        axis = peg_rot[:, :, 0]
        hole, hole_rot = task.hole_frame()
        hole_axis = hole_rot[:, :, 0]
        half = task.peg_half[:, 0:1]
        gap = robot.gripper_width(robot.qpos)
        # jaws across the peg: gripper yaw = peg yaw folded to [-pi/2, pi/2)
        approach = grasp_rotation(quat_yaw(peg_pose[:, 3:]), symmetry=math.pi)
        to_grasp = (grasp - tcp).norm(dim=1)
        holding, close = grip_flags(gap, self.open_gap, to_grasp, close_within=0.008)
        up = tcp.new_tensor([0.0, 0.0, 1.0])
        above = grasp + 0.1 * up
        turned = rotation_log(matmul3(approach, current.transpose(-1, -2))).norm(dim=1) < 0.1
        over = turned & ((above - tcp)[:, :2].norm(dim=1) < 0.015) & (tcp[:, 2] < above[:, 2] + 0.015)
        head_h, centre_h = task.in_hole(head), task.in_hole(centre)
        off_axis = torch.maximum(head_h[:, 1:].norm(dim=1), centre_h[:, 1:].norm(dim=1))
        x_front = -(half[:, 0] + self.STANDOFF)     # the head's hole-frame x at the standoff
        # along the axis, m this step: PUSH_STEP in when within ALIGNED of the axis, as much
        # out from twice that (linear between); from behind the standoff at least to it
        head_x = head_h[:, 0]
        in_rate = ((2 * self.ALIGNED - off_axis) / self.ALIGNED).clamp(-1.0, 1.0)
        move = torch.maximum(self.PUSH_STEP * in_rate, (x_front - head_x).clamp(max=0.1))
        move = torch.minimum(move, 0.01 - head_x)             # the head at most 1 cm past the hole's centre
        low = (centre[:, 2] < hole[:, 2] - 0.01) & (head_x < x_front - 0.02)
        phase = torch.where(over, 1, 0)
        phase = torch.where(close, 2, phase)
        pushing = (in_rate > 0) & (head_x > x_front - 0.005)
        phase = torch.where(holding, torch.where(low, 3, torch.where(pushing, 5, 4)), phase)
        # turn the peg's axis onto the hole's, and its faces parallel to the hole's walls
        side_h = (hole_rot.transpose(1, 2) @ peg_rot[:, :, 1:2]).squeeze(2)
        roll = wrap_angle(torch.atan2(side_h[:, 2], side_h[:, 1]), math.pi / 2)
        unroll = axis_angle_matrix(hole_axis.double(), -roll.double())
        steer = matmul3(matmul3(unroll, rotation_between(axis, hole_axis)), current)
        rot = torch.where((phase <= 2).reshape(-1, 1, 1), approach, current)
        rot = torch.where((phase >= 4).reshape(-1, 1, 1), steer, rot)
        lift = tcp + up * (hole[:, 2:3] + 0.01 - centre[:, 2:3])
        # across: GAIN times the centre's offset from the axis (more than 1: the held peg sags)
        across = (hole - centre) - ((hole - centre) * hole_axis).sum(1, keepdim=True) * hole_axis
        carry = tcp + move.unsqueeze(1) * hole_axis + self.GAIN * across
        steps = [above, grasp, grasp, lift, carry, carry]
        target = tcp.clone()
        for j, where in enumerate(steps):
            target[phase == j] = where[phase == j]
        gripper = torch.where(phase >= 2, -1.0, 1.0)
        return ee_action(robot, target, rot, gripper), phase
