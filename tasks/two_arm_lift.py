"""TwoArmLift-v1: two pandas lift a long bar together and hold it level.

The bar (50 x 4 x 4 cm, 0.8 kg, long side across the two arms) lies on the ground in
front of both robots ("left" at y = +0.3 m, "right" at y = -0.3 m; robosim.envs.robots
slots). Held by one end, it tips (its weight pulls 1.4 N m about the one grip, 18 cm
from its centre): lifting it level needs both arms.

Success: the bar's centre at least 10 cm above its resting height and its long axis
within 0.1 rad of horizontal.

Dense reward (in [-4, 0]; normalized_dense = dense / 4): reaching, per arm (1 -
tanh(5 * tcp-to-its-end distance)), + 2 * lift fraction (height / 10 cm, clipped to
[0, 1]) * (1 - tanh(5 * tilt)) - 4, exactly 0 on the success step."""
from __future__ import annotations

import torch

from robosim.core.rotations import quat_to_matrix, quat_yaw
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy
from robosim_tasks.two_arm_common import (
    TWO_PANDAS,
    across_bar,
    along,
    arm_action,
    build_bar,
    place_bar,
    rotation_error,
    tilt,
)

BAR_HALF = (0.02, 0.25, 0.02)   # m, long side along the bar's own y
GRIP_OFFSET = 0.18              # m from the centre, along the bar, where each arm grasps
LIFT = 0.10                     # m above the resting height that counts as lifted
LEVEL = 0.1                     # rad: largest tilt of the long axis that counts as level


@register_task("TwoArmLift-v1")
class TwoArmLiftTask(Task):
    instruction = "Lift the long bar with both arms and hold it level."
    robot_slots = TWO_PANDAS
    scripted_success = {"panda": 1.0}   # 64/64 (docs/tasks.md)
    max_episode_steps = 100
    max_dense_reward = 4.0
    human_camera = {"target_position": (-0.1, 0.0, 0.1), "distance": 1.6, "yaw": 90.0, "pitch": -30.0}

    def build_scene(self, sim, rng):
        self.bar = build_bar(sim, "bar", BAR_HALF, [0.7, 0.5, 0.2, 1.0], density=1000.0)

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        pose = place_bar(rng, BAR_HALF, (-0.05, 0.05), (-0.03, 0.03), 0.2)
        self.bar.set_pose(pose, env_idx)
        self.bar.set_velocity(pose.new_zeros(len(env_idx), 6), env_idx)

    def grasp_points(self, pose: torch.Tensor) -> dict[str, torch.Tensor]:
        """{slot: (N, 3)} where each arm grasps the bar (env frame, m): left the +y end."""
        return {"left": along(pose, GRIP_OFFSET), "right": along(pose, -GRIP_OFFSET)}

    def evaluate(self):
        pose = self.bar.pose()
        height = pose[:, 2] - BAR_HALF[2]
        angle = tilt(pose)
        robots = self.ctx.robots
        points = self.grasp_points(pose)
        reach = {slot: torch.linalg.vector_norm(points[slot] - robots[slot].tcp_pose(copy=False)[:, :3], dim=1)
                 for slot in robots}
        lifted, level = height >= LIFT, angle < LEVEL
        return {
            "success": lifted & level,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "is_lifted": lifted,
            "is_level": level,
            "bar_height": height,          # m above resting
            "bar_tilt": angle,             # rad
            "left_to_end_dist": reach["left"],
            "right_to_end_dist": reach["right"],
        }

    def dense_reward(self, info):
        reward = (1 - torch.tanh(5 * info["left_to_end_dist"])) + (1 - torch.tanh(5 * info["right_to_end_dist"]))
        lift = torch.clamp(info["bar_height"] / LIFT, 0.0, 1.0)
        reward = reward + 2 * lift * (1 - torch.tanh(5 * info["bar_tilt"]))
        return torch.where(info["success"], 0.0, reward - 4.0)

    def task_observations(self, info):
        pose = self.bar.pose()
        points = self.grasp_points(pose)
        robots = self.ctx.robots
        return {"bar_pose": pose,
                **{f"{slot}_tcp_to_end": points[slot] - robots[slot].tcp_pose(copy=False)[:, :3] for slot in robots}}

    def solution_policy(self):
        return TwoArmLiftPolicy(self)


class TwoArmLiftPolicy(PhasePolicy):
    """Both arms together: 0 above their ends, 1 down, 2 close for 6 steps, 3 lift both
    tcps to one height (so the bar stays level) and hold."""

    def act(self):
        pose = self.task.bar.pose()
        phase = self.phase
        points = self.task.grasp_points(pose)
        yaw = quat_yaw(pose[:, 3:])
        holding = (phase >= 2).reshape(-1, 1, 1)   # once closed, keep each wrist as it is
        targets, tcps, actions, turned = {}, {}, [], []
        lift_z = BAR_HALF[2] + LIFT + 0.06
        for slot, robot in self.robots.items():
            tcp_pose = robot.tcp_pose()
            tcps[slot] = tcp_pose[:, :3]
            above = points[slot] + points[slot].new_tensor([0.0, 0.0, 0.08])
            target = torch.where((phase == 0).unsqueeze(1), above, points[slot])
            up = torch.cat([tcps[slot][:, :2], torch.full_like(tcps[slot][:, 2:], lift_z)], dim=1)
            targets[slot] = target = torch.where((phase == 3).unsqueeze(1), up, target)
            rot = torch.where(holding, quat_to_matrix(tcp_pose[:, 3:].double()), across_bar(yaw, tcp_pose))
            actions.append(arm_action(robot, target, rot, phase >= 2))
            turned.append(rotation_error(rot, tcp_pose))
        err = torch.stack([(targets[s] - tcps[s]).norm(dim=1) for s in self.robots]).amax(dim=0)
        nxt = phase.clone()
        nxt[(phase == 0) & (err < 0.015) & (torch.stack(turned).amax(dim=0) < 0.05)] = 1
        nxt[(phase == 1) & (err < 0.008)] = 2
        nxt[(phase == 2) & (self.timer >= 6)] = 3
        return torch.cat(actions, dim=1), nxt
