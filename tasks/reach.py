"""Reach-v1: move the tool centre point to a goal point (goal-conditioned, panda-gym style).

obs (obs_mode="state"): {"observation": (N, 25) robot qpos, qvel, tcp pose,
"achieved_goal": (N, 3) tcp position, "desired_goal": (N, 3) goal}, env frame, m.
Success: tcp within 5 cm of the goal. `compute_reward` works on any (..., 3) goals
(hindsight relabeling): sparse -1 per step, 0 on success (panda-gym's convention).

Dense reward (= normalized_dense, in [-1, 0]): -tanh(5 d) per step with d the
tcp-goal distance (m), and exactly 0 on the success step. Every non-success step pays
< 0 = the success step, so for any discount gamma < 1 hovering forever (return
<= r_hover / (1 - gamma) < 0) earns less than succeeding (0, the episode ends)."""
from __future__ import annotations

import numpy as np
import torch

from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action
from robosim_tasks.common import GoalPointMixin

DISTANCE_THRESHOLD = 0.05
GOAL_LOW = (-0.15, -0.15, 0.05)
GOAL_HIGH = (0.15, 0.15, 0.35)


@register_task("Reach-v1")
class ReachTask(GoalPointMixin, Task):
    instruction = "Move the gripper to the goal position."
    max_episode_steps = 50
    goal_conditioned = True
    default_control_mode = "pd_ee_delta_pos"
    # any arm (Requirements() by default): a goal beyond a small arm's reach is a failure
    scripted_success = {"panda": 1.0, "xarm7": 1.0, "so100": 1.0, "koch": 0.98}   # docs/robots.md

    def build_scene(self, sim, rng):
        self.build_goal(sim, DISTANCE_THRESHOLD / 2, [0.1, 0.8, 0.2, 0.6])

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        low, high = self.goal_pos.new_tensor(GOAL_LOW), self.goal_pos.new_tensor(GOAL_HIGH)
        self.set_goal(low + (high - low) * rng.uniform(0.0, 1.0, (3,)), env_idx)

    def achieved_goal(self):
        return self.robot.tcp_pose()[:, :3]

    def desired_goal(self):
        return self.goal_pos.clone()

    def evaluate(self):
        distance = (self.achieved_goal() - self.goal_pos).norm(dim=1)
        return {
            "success": distance < DISTANCE_THRESHOLD,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "distance": distance,
        }

    def dense_reward(self, info):
        return torch.where(info["success"], 0.0, -torch.tanh(5 * info["distance"]))

    def compute_reward(self, achieved_goal, desired_goal, info):
        """Reward of goal pairs (..., 3) -> (...): the env's reward_mode, for any batch
        shape; numpy in -> numpy out, torch in -> torch out."""
        is_numpy = isinstance(achieved_goal, np.ndarray)
        a, d = torch.as_tensor(achieved_goal), torch.as_tensor(desired_goal)
        distance = (a - d).norm(dim=-1)
        if self.ctx.reward_mode == "sparse":
            reward = (distance < DISTANCE_THRESHOLD).to(torch.float32) - 1.0
        elif self.ctx.reward_mode == "none":
            reward = torch.zeros_like(distance)
        else:
            reward = torch.where(distance < DISTANCE_THRESHOLD, 0.0, -torch.tanh(5 * distance))
        return reward.numpy() if is_numpy else reward

    def solution_policy(self):
        return ReachPolicy(self)


class ReachPolicy(PhasePolicy):
    """Straight line to the goal, gripper open."""

    def act(self):
        goal = self.task.goal_pos
        return ee_action(self.robot, goal, None, goal.new_ones(self.ctx.num_envs)), self.phase
