"""PushCube-v1: push a cube along +x into a goal region on the ground.

The goal lies 0.2 m in +x from the cube's start. Success: the cube's centre within
0.1 m (xy) of the goal centre.

Dense reward (in [-3, 0]; normalized_dense = dense / 3 in [-1, 0]): ManiSkill3's
PushCube terms shifted down by 3: (1 - tanh(5 * tcp-to-push-pose distance)) + (once
within 2 cm of the push pose) (1 - tanh(5 * cube-to-goal xy distance)) - 3, so every
non-success step pays <= -1, and exactly 0 on the success step: hovering near success
never beats succeeding, for any discount."""
from __future__ import annotations

import torch

from robosim.agents import Requirements
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action, grasp_rotation
from robosim_tasks.common import CubeToGoalMixin, build_cube, place_on_ground

CUBE_HALF = 0.02
GOAL_RADIUS = 0.1
PUSH_DISTANCE = 0.2


@register_task("PushCube-v1")
class PushCubeTask(CubeToGoalMixin, Task):
    instruction = "Push the cube forward into the goal region."
    goal_radius = GOAL_RADIUS
    # workspace: behind the cube, until it is within the goal radius
    requires = Requirements(min_arm_dof=3, workspace=((-0.15, -0.1, 0.02), (0.2, 0.1, 0.1)))
    scripted_success = {"panda": 1.0, "xarm7": 0.862, "so100": 0.625, "koch": 0.469}   # docs/robots.md
    max_episode_steps = 50
    max_dense_reward = 3.0

    def build_scene(self, sim, rng):
        self.cube = build_cube(sim, "cube", CUBE_HALF, [0.15, 0.35, 0.9, 1.0])
        self.build_goal(sim, 0.02, [0.9, 0.2, 0.2, 0.6])

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        pose = place_on_ground(rng, CUBE_HALF, -0.1, 0.1)
        pose[:, 3:] = pose.new_tensor([1.0, 0.0, 0.0, 0.0])   # faces square to the push direction
        self.cube.set_pose(pose, env_idx)
        self.cube.set_velocity(pose.new_zeros(len(env_idx), 6), env_idx)
        goal = pose[:, :3] + pose.new_tensor([PUSH_DISTANCE, 0.0, 0.0])
        goal[:, 2] = 1e-3
        self.set_goal(goal, env_idx)

    def contact_pose(self, obj_pos: torch.Tensor) -> torch.Tensor:
        """(N, 3) the tcp position to push from: behind the cube's -x face (env frame, m)."""
        return obj_pos + obj_pos.new_tensor([-CUBE_HALF - 0.005, 0.0, 0.0])

    def solution_policy(self):
        return PushCubePolicy(self)


class PushCubePolicy(PhasePolicy):
    """Go above the point behind the cube, lower the closed gripper, push along +x."""

    def act(self):
        task = self.task
        obj_pos = task.cube.pose()[:, :3]
        tcp = self.robot.tcp_pose()[:, :3]
        phase = self.phase
        behind = obj_pos + obj_pos.new_tensor([-CUBE_HALF - 0.03, 0.0, 0.0])
        above = behind + obj_pos.new_tensor([0.0, 0.0, 0.08])
        low = behind.clone()
        low[:, 2] = CUBE_HALF
        pushed = task.goal_pos.clone()
        pushed[:, 0] -= CUBE_HALF + 0.01
        pushed[:, 2] = CUBE_HALF
        target = torch.where((phase == 0).unsqueeze(1), above, low)
        target = torch.where((phase == 2).unsqueeze(1), pushed, target)
        err = (target - tcp).norm(dim=1)
        nxt = phase.clone()
        nxt[(phase == 0) & (err < 0.015)] = 1
        nxt[(phase == 1) & (err < 0.01)] = 2
        rot = grasp_rotation(obj_pos.new_zeros(self.ctx.num_envs))
        return ee_action(self.robot, target, rot, -obj_pos.new_ones(self.ctx.num_envs)), nxt
