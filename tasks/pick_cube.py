"""PickCube-v1: grasp a 4 cm cube and hold it at a goal point in the air.

Task parameters (make(..., name=value)): cube_half_size (m, default 0.02; the scripted
solution handles 0.015-0.03 with the Panda's 8 cm gripper).

Success: cube centre within 2.5 cm of the goal and the arm at rest (|qvel| < 0.2).

Dense reward (in [-5, 0]; normalized_dense = dense / 5 in [-1, 0]): ManiSkill3's
PickCube terms shifted down by 5: reaching (1 - tanh(5 * tcp-cube distance)) + grasped
+ grasped * (1 - tanh(5 * cube-goal distance)) + placed * (1 - tanh(5 * |arm qvel|))
- 5, so every non-success step pays <= -1, and exactly 0 on the success step: hovering
never beats succeeding, for any discount."""
from __future__ import annotations

import torch

from robosim.agents import Requirements
from robosim.envs import Task, register_task
from robosim.envs.solutions import PickAndPlacePolicy
from robosim_tasks.common import GoalPointMixin, build_cube, place_on_ground

CUBE_HALF = 0.02
GOAL_THRESHOLD = 0.025


@register_task("PickCube-v1")
class PickCubeTask(GoalPointMixin, Task):
    instruction = "Pick up the cube and hold it at the goal position."
    requires = Requirements(min_arm_dof=5, gripper=True, parallel_gripper=True, min_gripper_opening=0.05,
                            workspace=((-0.1, -0.1, 0.02), (0.1, 0.1, 0.32)))   # cube and goal region
    scripted_success = {"panda": 1.0, "xarm7": 1.0}   # docs/robots.md
    max_episode_steps = 50
    max_dense_reward = 5.0
    parameters = {"cube_half_size": CUBE_HALF}

    @classmethod
    def check_parameters(cls, given):
        given = super().check_parameters(given)
        half = given.get("cube_half_size", CUBE_HALF)
        if not 0.005 <= half <= 0.05:
            raise ValueError(f"task parameter cube_half_size must be in [0.005, 0.05] m, got {half!r}")
        return given

    def build_scene(self, sim, rng):
        self.cube = build_cube(sim, "cube", self.cube_half_size, [0.9, 0.15, 0.15, 1.0])
        self.build_goal(sim, GOAL_THRESHOLD, [0.1, 0.8, 0.2, 0.6])

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        pose = place_on_ground(rng, self.cube_half_size, -0.1, 0.1)
        self.cube.set_pose(pose, env_idx)
        self.cube.set_velocity(pose.new_zeros(len(env_idx), 6), env_idx)
        goal_xy = rng.uniform(-0.1, 0.1, (2,))
        goal_z = rng.uniform(0.0, 0.3, (1,)) + self.cube_half_size
        self.set_goal(torch.cat([goal_xy, goal_z], dim=1), env_idx)

    def evaluate(self):
        tcp = self.robot.tcp_pose(copy=False)[:, :3]   # only read here
        obj_pos = self.cube.pose()[:, :3]
        obj_to_goal = torch.linalg.vector_norm(self.goal_pos - obj_pos, dim=1)
        placed = obj_to_goal <= GOAL_THRESHOLD
        arm_speed = self.robot.arm_speed()
        static = arm_speed < 0.2   # robot.is_static(0.2), with the speed kept for the reward
        tcp_to_obj = torch.linalg.vector_norm(obj_pos - tcp, dim=1)
        return {
            "success": placed & static,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "is_obj_placed": placed,
            "is_robot_static": static,
            "is_grasped": self.robot.is_between_jaws(obj_pos, self.cube_half_size, tcp_to_obj),
            "obj_to_goal_dist": obj_to_goal,
            "tcp_to_obj_dist": tcp_to_obj,
            "arm_speed": arm_speed,        # |arm qvel|, rad/s
        }

    def dense_reward(self, info):
        grasped = info["is_grasped"].float()
        reward = 1 - torch.tanh(5 * info["tcp_to_obj_dist"])
        reward = reward + grasped
        reward = reward + (1 - torch.tanh(5 * info["obj_to_goal_dist"])) * grasped
        reward = reward + (1 - torch.tanh(5 * info["arm_speed"])) * info["is_obj_placed"].float()
        return torch.where(info["success"], 0.0, reward - 5.0)

    def task_observations(self, info):
        tcp = self.robot.tcp_pose(copy=False)[:, :3]   # only read: the obs entries below are new tensors
        obj_pose = self.cube.pose()
        return {
            "is_grasped": info["is_grasped"].float().unsqueeze(1),
            "goal_pos": self.goal_pos.clone(),
            "obj_pose": obj_pose,
            "tcp_to_obj_pos": obj_pose[:, :3] - tcp,
            "tcp_to_goal_pos": self.goal_pos - tcp,
            "obj_to_goal_pos": self.goal_pos - obj_pose[:, :3],
        }

    def solution_policy(self):
        return PickCubePolicy(self)


class PickCubePolicy(PickAndPlacePolicy):
    """Grasp from above, carry to the goal and hold still."""

    def cube(self):
        return self.task.cube

    def place_target(self):
        return self.task.goal_pos
