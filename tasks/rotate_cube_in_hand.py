"""RotateCubeInHand-v1: a hand, palm up, turns a cube lying on its palm to a target yaw.

The robot (default allegro) floats palm up with straight fingers; a 6 cm cube is
dropped from DROP m above the palm centre (x, y jittered by +-1 cm) with a uniform yaw,
per env, and settles on the palm in the first control steps. A target yaw turn is drawn
in [0.4, 0.8] rad (counter-clockwise seen from above) from the cube's start yaw. A cube
looks the same every quarter turn, so orientations are compared modulo pi / 2. Needs a
hand with >= 4 fingers. The target yaw is task state (get_task_state).

Success: |cube yaw - target yaw| (folded to [-pi/4, pi/4)) <= TOLERANCE (0.15 rad) and
the cube within 6 cm of the palm. A dropped cube (centre more than 6 cm from the palm
centre or below the palm) is reported as info["dropped"] but does not end the episode
(info["fail"] stays False): with rewards <= 0 per step, ending the episode on a drop
paid PPO for dropping the cube early (3 seeds: episodes fell from 100 to 15-19 steps and
returns rose while success stayed <= 18%; docs/tasks.md). A dropped cube cannot come back,
so the rest of its episode costs the worst reward.

Dense reward (in [-3, 0]; normalized_dense = dense / 3): per step
  -2 * |folded yaw error| / (pi / 4)     orientation still to turn
  -tanh(10 * |cube - palm| )             keep the cube on the palm (m)
-3 (the worst) on every step after a drop, and exactly 0 on the success step. Sparse: -1 per step, 0 on success.

Task obs: obj_pose (N, 7), target_yaw (N, 1) rad, yaw_error (N, 1) rad,
fingertip_pos (N, 3 F) m (env frame).

No scripted solution; docs/tasks.md states the learning result.
"""
from __future__ import annotations

import math

import torch

from robosim.agents import Requirements
from robosim.core.rotations import quat_yaw, wrap_angle, yaw_quat
from robosim.envs import Task, register_task
from robosim_tasks.common import build_cube

CUBE_HALF = 0.03
DROP = 0.06         # m above the palm frame's origin
TOLERANCE = 0.15    # rad
KEEP = 0.06         # m
TURN = (0.4, 0.8)   # rad


@register_task("RotateCubeInHand-v1")
class RotateCubeInHandTask(Task):
    instruction = "Turn the cube in the hand to the target orientation."
    default_robot = "allegro"
    default_control_mode = "pd_joint_delta_pos"
    requires = Requirements(min_arm_dof=0, min_fingers=4)
    max_episode_steps = 100
    max_dense_reward = 3.0
    human_camera = dict(target_position=(0.0, 0.0, 0.25), distance=0.6, yaw=-40.0, pitch=-35.0)

    def build_scene(self, sim, rng):
        self.cube = build_cube(sim, "cube", CUBE_HALF, [0.2, 0.5, 0.9, 1.0], density=500.0)
        self.target_yaw = torch.zeros(self.num_envs, device=self.device)

    def palm_position(self) -> torch.Tensor:
        """float32 (N, 3) palm link origin, env frame (m)."""
        return self.robot.tcp_pose()[:, :3]

    def initialize_episode(self, env_idx, rng):
        robot = self.robot
        robot.reset(robot.rest_qpos(len(env_idx)).to(rng.device), env_idx)
        palm = self.palm_position()[env_idx].to(rng.device)
        xy = rng.uniform(-0.01, 0.01, (2,))
        yaw = rng.uniform(0.0, 2 * math.pi)
        pos = palm + torch.cat([xy, torch.full_like(xy[:, :1], DROP)], dim=1)
        self.cube.set_pose(torch.cat([pos, yaw_quat(yaw)], dim=1), env_idx)
        self.cube.set_velocity(pos.new_zeros(len(env_idx), 6), env_idx)
        self.target_yaw[env_idx] = (yaw + rng.uniform(*TURN, (1,))[:, 0]).to(self.target_yaw)

    def evaluate(self):
        pose = self.cube.pose()
        palm = self.palm_position()
        error = wrap_angle(quat_yaw(pose[:, 3:]) - self.target_yaw, math.pi / 2)
        dist = (pose[:, :3] - palm).norm(dim=1)
        kept = dist <= KEEP
        return {
            "success": (error.abs() <= TOLERANCE) & kept,
            "fail": torch.zeros_like(kept),
            "dropped": ~kept | (pose[:, 2] < palm[:, 2]),
            "yaw_error": error,
            "cube_to_palm_dist": dist,
        }

    def dense_reward(self, info):
        reward = -2 * info["yaw_error"].abs() / (math.pi / 4) - torch.tanh(10 * info["cube_to_palm_dist"])
        reward = torch.where(info["dropped"], torch.full_like(reward, -self.max_dense_reward), reward)
        return torch.where(info["success"], torch.zeros_like(reward), reward)

    def task_observations(self, info):
        return {
            "obj_pose": self.cube.pose(),
            "target_yaw": self.target_yaw.unsqueeze(1).clone(),
            "yaw_error": info["yaw_error"].unsqueeze(1),
            "fingertip_pos": self.robot.fingertip_poses()[:, :, :3].flatten(1),
        }

    def get_task_state(self):
        return self.target_yaw.unsqueeze(1).clone()

    def set_task_state(self, state, env_idx):
        self.target_yaw[env_idx] = state[:, 0].to(self.target_yaw)
