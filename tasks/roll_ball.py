"""RollBall-v1 (robosim_tasks.roll_ball:RollBallTask): hit a ball so that it rolls
across the floor into a far goal region (ManiSkill3's RollBall).

ManiSkill3's layout turned into robosim's frame (robot base at x = -0.615 m facing +x):
the ball (radius 3.5 cm, density 1000) starts at rest at x uniform in [-0.2, 0.0] m,
y in [-0.3, 0.3] m; the goal region (radius 0.1 m) at x uniform in [1.0, 1.2] m, y in
[-0.3, 0.3] m, so the ball must roll 1.0 to 1.45 m. A low static fence (5 cm high,
+-1.6 m square around the env origin) keeps a ball that misses inside its env's cell.
Task state (get_task_state (N, 4), env frame): the goal position (m) and the `reached`
latch of the reward (1 once the tcp came within 4 cm of the hit pose this episode).

Success: the ball's centre within 0.1 m (xy) of the goal centre. Never fails.

Dense reward (in [-30, 0]; normalized_dense = dense / 30 in [-1, 0]): ManiSkill3's
terms shifted down by 30: until `reached`, 1 - tanh(2 * tcp-to-hit-pose distance),
the hit pose 5 cm behind the ball's surface on the side away from the goal; after it,
1 + 20 * (1 - tanh(ball-to-goal xy distance)); minus 30, exactly 0 on the success step,
so every non-success step pays <= -9. Sparse: -1 per step, 0 on success.

Task obs (env frame): goal_pos (N, 3), ball_pose (N, 7), ball_vel (N, 3) m/s,
tcp_to_ball_pos (N, 3), ball_to_goal_pos (N, 3).

Scripted solution: closed gripper pointing down, its fingers' side face turned toward
the goal, goes above a point 8 cm behind the ball on the line away from the goal,
descends to the ball's centre height and sweeps through the ball along that fixed aim
(chasing a carrot 9 cm ahead on the line); the ball rolls on at about 0.5 m/s. Success
over 64 seeded episodes (tests/tasks/test_tabletop_tasks.py checks 8 on panda): panda
100%, xarm7 96.9%.
"""
from __future__ import annotations

import torch

from robosim.agents import Requirements
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action, grasp_rotation
from robosim.sim import Box, RigidObject, Sphere
from robosim_tasks.common import build_goal_marker, identity_poses

BALL_RADIUS = 0.035
GOAL_RADIUS = 0.1
HIT_OFFSET = 0.05          # the hit pose: this far behind the ball's surface (m)
FENCE = 1.6                # fence half side around the env origin (m)


@register_task("RollBall-v1")
class RollBallTask(Task):
    instruction = "Hit the ball so that it rolls into the goal region."
    # 6 joints: the fingers' side face turns toward the goal; workspace: wind-up to sweep end
    requires = Requirements(min_arm_dof=6, workspace=((-0.32, -0.3, 0.035), (0.1, 0.3, 0.1)))
    scripted_success = {"panda": 1.0, "xarm7": 0.962}   # docs/robots.md
    max_episode_steps = 80
    max_dense_reward = 30.0
    human_camera = dict(target_position=(0.4, 0.0, 0.0), distance=2.4, yaw=200.0, pitch=-40.0)

    def build_scene(self, sim, rng):
        self.ball = sim.add_object("ball", RigidObject([Sphere(BALL_RADIUS, color=[0.0, 0.2, 0.8, 1.0])],
                                                       pose=(-0.1, 0.0, BALL_RADIUS)))
        color = [0.6, 0.6, 0.6, 1.0]
        along_y, along_x = (0.02, FENCE + 0.02, 0.025), (FENCE + 0.02, 0.02, 0.025)
        fence = [Box(along_y, pose=(-FENCE, 0.0, 0.025), color=color),
                 Box(along_y, pose=(FENCE, 0.0, 0.025), color=color),
                 Box(along_x, pose=(0.0, -FENCE, 0.025), color=color),
                 Box(along_x, pose=(0.0, FENCE, 0.025), color=color)]
        self.fence = sim.add_object("fence", RigidObject(fence, body="static"))
        self.goal_marker = build_goal_marker(sim, "goal", 0.02, [0.9, 0.2, 0.2, 0.6])
        self.goal_pos = torch.zeros(sim.num_envs, 3, device=self.device)
        self.reached = torch.zeros(sim.num_envs, dtype=torch.bool, device=self.device)

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        m = len(env_idx)
        ball_x, ball_y = rng.uniform(-0.2, 0.0, (1,)), rng.uniform(-0.3, 0.3, (1,))
        goal_x, goal_y = rng.uniform(1.0, 1.2, (1,)), rng.uniform(-0.3, 0.3, (1,))
        ball = identity_poses(m, torch.cat([ball_x, ball_y, ball_x.new_full((m, 1), BALL_RADIUS)], dim=1))
        self.ball.set_pose(ball, env_idx)
        self.ball.set_velocity(ball.new_zeros(m, 6), env_idx)
        goal = torch.cat([goal_x, goal_y, goal_x.new_full((m, 1), 1e-3)], dim=1)
        self.set_task_state(torch.cat([goal, goal.new_zeros(m, 1)], dim=1), env_idx)

    def get_task_state(self) -> torch.Tensor:
        """float32 (N, 4): goal position (env frame, m), reached latch (0 or 1)."""
        return torch.cat([self.goal_pos, self.reached.float().unsqueeze(1)], dim=1)

    def set_task_state(self, state: torch.Tensor, env_idx: torch.Tensor) -> None:
        self.goal_pos[env_idx] = state[:, :3]
        self.reached[env_idx] = state[:, 3] > 0.5
        self.goal_marker.set_pose(identity_poses(len(env_idx), state[:, :3]), env_idx)

    def goal_direction(self) -> torch.Tensor:
        """(N, 3) unit xy vector from the ball toward the goal (z = 0)."""
        d = self.goal_pos - self.ball.pose()[:, :3]
        d[:, 2] = 0.0
        return d / d.norm(dim=1, keepdim=True).clamp_min(1e-6)

    def hit_pose(self) -> torch.Tensor:
        """(N, 3) HIT_OFFSET behind the ball's surface, on the side away from the goal."""
        return self.ball.pose()[:, :3] - (BALL_RADIUS + HIT_OFFSET) * self.goal_direction()

    def evaluate(self):
        tcp = self.robot.tcp_pose()[:, :3]
        hit_dist = (self.hit_pose() - tcp).norm(dim=1)
        self.reached |= hit_dist < 0.04      # latch (task state); idempotent per physics state
        goal_dist = (self.ball.pose()[:, :2] - self.goal_pos[:, :2]).norm(dim=1)
        return {
            "success": goal_dist < GOAL_RADIUS,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "ball_to_goal_dist": goal_dist,
            "tcp_to_hit_pose_dist": hit_dist,
            "reached": self.reached.clone(),
        }

    def dense_reward(self, info):
        reach = 1 - torch.tanh(2 * info["tcp_to_hit_pose_dist"])
        rolled = 1 + 20 * (1 - torch.tanh(info["ball_to_goal_dist"]))
        reward = torch.where(info["reached"], rolled, reach)
        return torch.where(info["success"], torch.zeros_like(reward), reward - 30.0)

    def task_observations(self, info):
        tcp = self.robot.tcp_pose()[:, :3]
        ball_pose = self.ball.pose()
        return {
            "goal_pos": self.goal_pos.clone(),
            "ball_pose": ball_pose,
            "ball_vel": self.ball.velocity()[:, :3],
            "tcp_to_ball_pos": ball_pose[:, :3] - tcp,
            "ball_to_goal_pos": self.goal_pos - ball_pose[:, :3],
        }

    def solution_policy(self):
        return RollBallPolicy(self)


class RollBallPolicy(PhasePolicy):
    """Phases: 0 above the wind-up point 8 cm behind the ball, 1 down to ball height,
    2 sweep through the ball toward the goal (the aim is fixed when phase 2 starts)."""

    wind_up = 0.08     # m behind the ball's surface to start the sweep from
    sweep = 0.3        # m the sweep's end lies beyond its start

    def __init__(self, task):
        super().__init__(task)
        self.aim = torch.zeros(task.num_envs, 3, device=task.device)
        self.start = torch.zeros(task.num_envs, 3, device=task.device)

    def act(self):
        task = self.task
        tcp = self.robot.tcp_pose()[:, :3]
        ball = task.ball.pose()[:, :3]
        phase = self.phase
        # aim from the ball's current position until the sweep starts, then hold the
        # aim and the sweep's end point fixed
        aiming = (phase < 2).unsqueeze(1)
        self.aim = torch.where(aiming, task.goal_direction(), self.aim)
        low = ball - (BALL_RADIUS + self.wind_up) * self.aim
        low[:, 2] = BALL_RADIUS
        self.start = torch.where(aiming, low, self.start)
        above = low + low.new_tensor([0.0, 0.0, 0.08])
        # a carrot on the sweep line 9 cm ahead of the tcp: the error stays under
        # ee_action's full scale on every axis, so its clipping keeps the direction
        along = ((tcp - self.start) * self.aim).sum(dim=1, keepdim=True)
        through = self.start + (along + 0.09).clamp(max=self.sweep) * self.aim
        target = torch.where((phase == 0).unsqueeze(1), above, low)
        target = torch.where((phase == 2).unsqueeze(1), through, target)
        err = (target - tcp).norm(dim=1)
        nxt = phase.clone()
        nxt[(phase == 0) & (err < 0.015)] = 1
        nxt[(phase == 1) & (err < 0.008)] = 2
        yaw = torch.atan2(self.aim[:, 1], self.aim[:, 0])     # fingers across the aim line
        rot = grasp_rotation(yaw)
        return ee_action(self.robot, target, rot, -torch.ones_like(yaw)), nxt
