"""TwoArmHandover-v1: one panda lifts a block and hands it to the other, which places it
on a target.

The block (4 x 24 x 4 cm, 38 g, lying with its long side across the arms) starts in
front of "left" (y = +0.3 m); the target (a flat marker on the ground) is in front of
"right" (y = -0.3 m), about 0.5 m away, so the block changes hands in the air at
(0, 0, 0.2) m. Each arm grasps its own end of the block, 8 cm from the centre (closer,
the two hands touch).

Success: the block's centre within 3 cm of the target in xy, resting on the ground
(centre below 2.5 cm), and both arms at rest (|arm qvel| < 0.2 rad/s).

Dense reward (in [-4, 0]; normalized_dense = dense / 4): left reaching (1 - tanh(5 *
tcp-to-its-end distance)) + block height fraction (up to 10 cm) + right reaching (1 -
tanh(5 * tcp-to-its-end distance)) + (1 - tanh(5 * block-to-target xy distance)) - 4,
exactly 0 on the success step."""
from __future__ import annotations

import torch

from robosim.core.rotations import quat_to_matrix, quat_yaw
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy
from robosim.sim import Box, RigidObject
from robosim_tasks.common import GoalPointMixin
from robosim_tasks.two_arm_common import (
    TWO_PANDAS,
    HandoverScoring,
    across_bar,
    arm_action,
    bar_axis,
    build_bar,
    place_bar,
    rotation_error,
)

BLOCK_HALF = (0.02, 0.12, 0.02)   # m, long side along the block's own y
GRIP_OFFSET = 0.08                # m from the centre, along the block, where each arm grasps
GOAL_RADIUS = 0.03                # m, xy
HANDOVER = (0.0, 0.0, 0.2)        # m, env frame: where the block changes hands


@register_task("TwoArmHandover-v1")
class TwoArmHandoverTask(HandoverScoring, GoalPointMixin, Task):
    instruction = "Pick up the block with the left arm, hand it to the right arm and place it on the target."
    robot_slots = TWO_PANDAS
    scripted_success = {"panda": 1.0}   # 64/64 (docs/tasks.md)
    max_episode_steps = 200
    max_dense_reward = 4.0
    held, held_half_height, lift_for_full_reward, goal_radius = "block", BLOCK_HALF[2], 0.1, GOAL_RADIUS
    human_camera = {"target_position": (0.0, 0.0, 0.1), "distance": 1.6, "yaw": 90.0, "pitch": -30.0}

    def build_scene(self, sim, rng):
        self.block = build_bar(sim, "block", BLOCK_HALF, [0.2, 0.4, 0.9, 1.0], density=100.0)
        self.goal_marker = sim.add_object("goal", RigidObject(
            [Box((GOAL_RADIUS, GOAL_RADIUS, 0.001), color=[0.1, 0.8, 0.2, 0.6], collision=False)], body="kinematic"))
        self.goal_pos = torch.zeros(sim.num_envs, 3, device=self.device)

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        pose = place_bar(rng, BLOCK_HALF, (-0.05, 0.0), (0.22, 0.28), 0.3)
        self.block.set_pose(pose, env_idx)
        self.block.set_velocity(pose.new_zeros(len(env_idx), 6), env_idx)
        goal_xy = torch.cat([rng.uniform(-0.05, 0.0, (1,)), rng.uniform(-0.28, -0.22, (1,))], dim=1)
        self.set_goal(torch.cat([goal_xy, torch.full_like(goal_xy[:, :1], 0.001)], dim=1), env_idx)

    def grasp_points(self, pose: torch.Tensor) -> dict[str, torch.Tensor]:
        """{slot: (N, 3)}: left grasps the block's +y end, right its -y end (env frame, m)."""
        axis = bar_axis(pose)
        axis = torch.where(axis[:, 1:2] >= 0, axis, -axis)   # a half turn is the same block: the +y end
        return {"left": pose[:, :3] + GRIP_OFFSET * axis, "right": pose[:, :3] - GRIP_OFFSET * axis}

    def solution_policy(self):
        return TwoArmHandoverPolicy(self)


# the handover's phases, in order
(L_ABOVE, L_DOWN, L_CLOSE, CARRY, R_LINE_UP, R_SLIDE, R_CLOSE, L_OPEN, PLACE, R_OPEN, R_RISE) = range(11)


class TwoArmHandoverPolicy(PhasePolicy):
    """Left: above its end, down, close (6 steps), carry the block to the handover point
    (turned across the arms) while right waits beside it; right: in line with its end,
    slide the open jaws on, close (6 steps); left opens (5 steps) and backs off up while
    right carries the block onto the target, opens (5 steps) and rises."""

    def act(self):
        task, phase = self.task, self.phase
        pose = task.block.pose()
        points = task.grasp_points(pose)
        axis = points["left"] - points["right"]
        axis = axis / axis.norm(dim=1, keepdim=True)   # along the block, toward left's end
        left, right = self.robots["left"], self.robots["right"]
        lp, rp = left.tcp_pose(), right.tcp_pose()
        lt, rt = lp[:, :3], rp[:, :3]
        up = pose.new_tensor([0.0, 0.0, 0.08])
        handover = pose.new_tensor(HANDOVER)
        yaw = quat_yaw(pose[:, 3:])
        square_l, square_r = across_bar(0 * yaw, lp), across_bar(0 * yaw, rp)   # the block turned across the arms
        on_goal = torch.cat([task.goal_pos[:, :2], torch.full_like(pose[:, :1], BLOCK_HALF[2] + 0.003)], dim=1)

        def pick(choices, default):
            """Per env, the entry of `choices` {phase: (N, ...)} for its phase."""
            out = default
            for p, value in choices.items():
                mask = (phase == p).reshape(-1, *([1] * (value.dim() - 1)))
                out = torch.where(mask, value, out)
            return out

        keep_l, keep_r = quat_to_matrix(lp[:, 3:].double()), quat_to_matrix(rp[:, 3:].double())
        # left holds the block's centre at the handover point until right has closed on it
        hold = lt + (handover - pose[:, :3])
        back_off = (handover + pose.new_tensor([0.0, 0.14, 0.1])).expand_as(lt)
        l_target = pick({L_ABOVE: points["left"] + up, L_DOWN: points["left"], CARRY: hold, R_LINE_UP: hold,
                         R_SLIDE: hold, R_CLOSE: hold, PLACE: back_off, R_OPEN: back_off, R_RISE: back_off}, lt)
        aligned = across_bar(yaw, lp)
        l_rot = pick({L_ABOVE: aligned, L_DOWN: aligned, CARRY: square_l}, keep_l)
        l_closed = (phase >= L_CLOSE) & (phase < L_OPEN)
        r_target = pick({R_LINE_UP: points["right"] + up, R_SLIDE: points["right"],
                         PLACE: rt + (on_goal - pose[:, :3]), R_RISE: task.goal_pos + up},
                        torch.where((phase < R_LINE_UP).unsqueeze(1),
                                    handover + pose.new_tensor([0.0, -GRIP_OFFSET - 0.12, 0.0]), rt))
        aligned = across_bar(yaw, rp)
        r_rot = pick({R_LINE_UP: aligned, R_SLIDE: aligned}, torch.where((phase < R_LINE_UP).reshape(-1, 1, 1),
                                                                          square_r, keep_r))
        r_closed = (phase >= R_CLOSE) & (phase < R_OPEN)
        l_err, r_err = (l_target - lt).norm(dim=1), (r_target - rt).norm(dim=1)
        self.dbg = (l_err, r_err, l_target - lt, r_target - rt)
        timer = self.timer
        nxt = phase.clone()
        nxt[(phase == L_ABOVE) & (l_err < 0.015) & (rotation_error(l_rot, lp) < 0.05)] = L_DOWN
        nxt[(phase == L_DOWN) & (l_err < 0.008)] = L_CLOSE
        nxt[(phase == L_CLOSE) & (timer >= 6)] = CARRY
        nxt[(phase == CARRY) & (l_err < 0.01) & (r_err < 0.015)] = R_LINE_UP
        nxt[(phase == R_LINE_UP) & (r_err < 0.008) & (rotation_error(r_rot, rp) < 0.05)] = R_SLIDE
        nxt[(phase == R_SLIDE) & (r_err < 0.006)] = R_CLOSE
        nxt[(phase == R_CLOSE) & (timer >= 6)] = L_OPEN
        nxt[(phase == L_OPEN) & (timer >= 5)] = PLACE
        nxt[(phase == PLACE) & (r_err < 0.008)] = R_OPEN
        nxt[(phase == R_OPEN) & (timer >= 5)] = R_RISE
        return torch.cat([arm_action(left, l_target, l_rot, l_closed), arm_action(right, r_target, r_rot, r_closed)],
                         dim=1), nxt
