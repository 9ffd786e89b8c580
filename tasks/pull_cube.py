"""PullCube-v1 (robosim_tasks.pull_cube:PullCubeTask): pull a cube toward the robot
into a goal region on the ground (ManiSkill3's PullCube).

The 4 cm cube starts at rest with its faces square to the axes at xy uniform in
[-0.1, 0.1]^2 m; the goal region (radius 0.1 m) lies 0.2 m in -x (toward the robot)
from the cube's start. The goal is task state (get_task_state (N, 3), env frame, m).

Success: the cube's centre within 0.1 m (xy) of the goal centre. Never fails.

Dense reward (in [-3, 0]; normalized_dense = dense / 3 in [-1, 0]): ManiSkill3's
PullCube terms shifted down by 3: (1 - tanh(5 * tcp-to-pull-pose distance), the pull
pose 3 cm beyond the cube's far (+x) face) + (once within 2 cm of the pull pose)
(1 - tanh(5 * cube-to-goal xy distance)) - 3, so every non-success step pays <= -1,
and exactly 0 on the success step. Sparse: -1 per step, 0 on success.

Task obs (env frame): goal_pos (N, 3), obj_pose (N, 7), tcp_to_obj_pos (N, 3).

Scripted solution: closed gripper pointing down goes above the cube's far side, lowers
to cube height and drags the cube in -x. Success over 64 seeded episodes
(tests/tasks/test_tabletop_tasks.py checks 8 on panda): panda 100%, xarm7 87.5%.
"""
from __future__ import annotations

import torch

from robosim.agents import Requirements
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action, grasp_rotation
from robosim_tasks.common import CubeToGoalMixin, build_cube, place_on_ground

CUBE_HALF = 0.02
GOAL_RADIUS = 0.1
PULL_DISTANCE = 0.1 + GOAL_RADIUS
PULL_OFFSET = 0.03     # the pull pose: this far beyond the cube's +x face (m)


@register_task("PullCube-v1")
class PullCubeTask(CubeToGoalMixin, Task):
    instruction = "Pull the cube toward you into the goal region."
    goal_radius = GOAL_RADIUS
    # workspace: beyond the cube to the goal
    requires = Requirements(min_arm_dof=3, workspace=((-0.3, -0.1, 0.02), (0.15, 0.1, 0.1)))
    scripted_success = {"panda": 1.0, "xarm7": 0.864}   # docs/robots.md
    max_episode_steps = 50
    max_dense_reward = 3.0

    def build_scene(self, sim, rng):
        self.cube = build_cube(sim, "cube", CUBE_HALF, [0.05, 0.16, 0.63, 1.0])
        self.build_goal(sim, 0.02, [0.9, 0.2, 0.2, 0.6])

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        pose = place_on_ground(rng, CUBE_HALF, -0.1, 0.1)
        pose[:, 3:] = pose.new_tensor([1.0, 0.0, 0.0, 0.0])
        self.cube.set_pose(pose, env_idx)
        self.cube.set_velocity(pose.new_zeros(len(env_idx), 6), env_idx)
        goal = pose[:, :3] - pose.new_tensor([PULL_DISTANCE, 0.0, 0.0])
        goal[:, 2] = 1e-3
        self.set_goal(goal, env_idx)

    def contact_pose(self, obj_pos: torch.Tensor) -> torch.Tensor:
        """(N, 3) the tcp position to pull from: beyond the cube's +x face (env frame, m)."""
        return obj_pos + obj_pos.new_tensor([CUBE_HALF + PULL_OFFSET, 0.0, 0.0])

    def solution_policy(self):
        return PullCubePolicy(self)


class PullCubePolicy(PhasePolicy):
    """Above the pull pose, down to cube height with the gripper closed, drag along -x."""

    def act(self):
        task = self.task
        obj_pos = task.cube.pose()[:, :3]
        tcp = self.robot.tcp_pose()[:, :3]
        phase = self.phase
        low = task.contact_pose(obj_pos)
        low[:, 2] = CUBE_HALF
        above = low + obj_pos.new_tensor([0.0, 0.0, 0.08])
        pulled = task.goal_pos.clone()
        pulled[:, 0] += CUBE_HALF + PULL_OFFSET - 0.03
        pulled[:, 2] = CUBE_HALF
        target = torch.where((phase == 0).unsqueeze(1), above, low)
        target = torch.where((phase == 2).unsqueeze(1), pulled, target)
        err = (target - tcp).norm(dim=1)
        nxt = phase.clone()
        nxt[(phase == 0) & (err < 0.015)] = 1
        nxt[(phase == 1) & (err < 0.01)] = 2
        rot = grasp_rotation(obj_pos.new_zeros(self.ctx.num_envs))
        return ee_action(self.robot, target, rot, -obj_pos.new_ones(self.ctx.num_envs)), nxt
