"""PushT-v1: push a T-shaped block on the ground to a goal pose (position and yaw).

The block has ManiSkill3's PushT proportions (a 20 x 5 cm bar over a 5 x 15 cm stem,
4 cm thick) scaled by 0.75; its frame is its centre of mass (the bar along the body x
axis, the stem along +y). A flat grey T on the ground marks the goal.

Goals are translation-dominant, so a scripted pusher reaches them reliably: the goal
centre lies uniformly in x [-0.02, 0.04], y [-0.08, 0.08] m; the block starts 7-11 cm
from it, behind it along a direction within +-45 deg of +x (pushes go away from the
robot), at a uniform yaw, and the goal's yaw differs from the start's by at most
+-0.3 rad. Task state: the goal (N, 3) [x, y, yaw].

Success: the block's centre within 2.5 cm (xy) of the goal's and its yaw within
0.15 rad of the goal's. Never fails.

Dense reward (in [-3.5, 0]; normalized_dense = dense / 3.5, in [-1, 0]): per step
  -2 * tanh(5 * d)           d: block-goal centre distance (m)
  -|yaw error| / pi          yaw error wrapped to [-pi, pi]
  -0.5 * tanh(5 * r)         r: tcp-block centre distance (m), a reaching hint
and exactly 0 on the success step, so hovering never pays more than succeeding (the
episode ends on success). Sparse: -1 per step, 0 on success.

Task obs (env frame): tee_pose (N, 7), goal_pose (N, 7) [goal centre at the block's
height, goal yaw], tcp_to_tee_pos (N, 3).

Scripted solution: a pusher with the gripper closed that repeats push segments: go
above a point behind the block on the line from the goal through the block's centre,
lower to 2 cm, push toward the goal while keeping a sideways offset proportional to
the yaw error (an off-centre push turns the block), until the block's centre is 1 cm
short of the goal's projection on the push line; lift, repeat. Within 1.5 cm of the
goal with the yaw still off, a segment pushes one end of the bar across it instead.
"""
from __future__ import annotations

import math

import torch

from robosim.agents import Requirements
from robosim.core.rotations import axis_angle_matrix, matmul3, quat_yaw, wrap_angle, yaw_quat
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action, grasp_rotation
from robosim.sim import ActorView, Box, Material, RigidObject

SCALE = 0.75
BAR_HALF = (0.1 * SCALE, 0.025 * SCALE)        # bar half extents x, y (m)
STEM_HALF = (0.025 * SCALE, 0.075 * SCALE)     # stem half extents x, y (m)
HALF_THICKNESS = 0.02
COM_Y = 0.0375 * SCALE                          # centre of mass above the bar's centre (+y), m
TEE_MASS = 0.8                                  # kg (ManiSkill3's)
GOAL_LOW, GOAL_HIGH = (-0.02, -0.08), (0.04, 0.08)
PUSH_LENGTH = (0.07, 0.11)                      # start-to-goal distance (m)
MAX_DIRECTION = math.pi / 4                     # push direction within +-this of +x (rad)
MAX_YAW_OFFSET = 0.3                            # goal yaw - start yaw (rad)
POSITION_THRESHOLD = 0.025
YAW_THRESHOLD = 0.15
# farthest point of the T from its centre (the stem's end corners), m
TEE_REACH = math.hypot(STEM_HALF[0], BAR_HALF[1] + 2 * STEM_HALF[1] - COM_Y)
END_OFFSET = 0.8 * BAR_HALF[0]                  # scripted turning push: this far along the bar (m)
FINGER_HALF = 0.01                              # scripted pusher: half thickness of the closed jaws (m)
TURN_PUSH = 0.02                                # and this far into the block (m)


def tee_shapes(color, collision: bool = True, half_thickness: float = HALF_THICKNESS, z: float = 0.0) -> list:
    """The T's two boxes in its centre-of-mass frame (m)."""
    return [
        Box((BAR_HALF[0], BAR_HALF[1], half_thickness), pose=(0.0, -COM_Y, z), color=color, collision=collision),
        Box((STEM_HALF[0], STEM_HALF[1], half_thickness), pose=(0.0, BAR_HALF[1] + STEM_HALF[1] - COM_Y, z),
            color=color, collision=collision),
    ]


@register_task("PushT-v1")
class PushTTask(Task):
    instruction = "Push the T-shaped block to the goal position and orientation."
    max_episode_steps = 150
    max_dense_reward = 3.5
    # 6 joints: the closed jaws turn across the push; workspace: the pusher behind the block start to the
    # turning push at the goal
    requires = Requirements(min_arm_dof=6, workspace=((-0.23, -0.2, 0.02), (0.12, 0.2, 0.1)))
    scripted_success = {"panda": 1.0, "xarm7": 0.926}   # docs/robots.md
    # steeply from above, facing the robot: block, goal T and pusher
    human_camera = dict(target_position=(0.0, 0.0, 0.0), distance=0.75, yaw=200.0, pitch=-60.0)

    def build_scene(self, sim, rng):
        self.tee: ActorView = sim.add_object("tee", RigidObject(
            tee_shapes((0.76, 0.08, 0.09, 1.0)), pose=(0.0, 0.0, HALF_THICKNESS), mass=TEE_MASS,
            material=Material(1.0, 1.0, 0.0)))
        self.goal_marker: ActorView = sim.add_object("goal_tee", RigidObject(
            tee_shapes((0.5, 0.5, 0.5, 1.0), collision=False, half_thickness=5e-4), body="kinematic",
            pose=(0.0, 0.0, 5e-4)))
        self.goal = torch.zeros(sim.num_envs, 3, device=self.device)   # x, y (m), yaw (rad)

    def set_goal(self, goal: torch.Tensor, env_idx: torch.Tensor) -> None:
        """goal (M, 3): x, y (env frame, m), yaw (rad) for the envs env_idx."""
        self.goal[env_idx] = goal
        z = goal.new_full((len(env_idx), 1), 5e-4)
        self.goal_marker.set_pose(torch.cat([goal[:, :2], z, yaw_quat(goal[:, 2])], dim=1), env_idx)

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        low, high = torch.tensor(GOAL_LOW, device=rng.device), torch.tensor(GOAL_HIGH, device=rng.device)
        goal_xy = low + (high - low) * rng.uniform(0.0, 1.0, (2,))
        length = rng.uniform(*PUSH_LENGTH)
        direction = rng.uniform(-MAX_DIRECTION, MAX_DIRECTION)
        start_xy = goal_xy - length.unsqueeze(1) * torch.stack([direction.cos(), direction.sin()], dim=1)
        start_yaw = rng.uniform(-math.pi, math.pi)
        goal_yaw = wrap_angle(start_yaw + rng.uniform(-MAX_YAW_OFFSET, MAX_YAW_OFFSET))
        z = start_xy.new_full((len(env_idx), 1), HALF_THICKNESS)
        pose = torch.cat([start_xy, z, yaw_quat(start_yaw)], dim=1)
        self.tee.set_pose(pose, env_idx)
        self.tee.set_velocity(pose.new_zeros(len(env_idx), 6), env_idx)
        self.set_goal(torch.cat([goal_xy, goal_yaw.unsqueeze(1)], dim=1), env_idx)

    def get_task_state(self):
        return self.goal.clone()

    def set_task_state(self, state, env_idx):
        # the marker's pose is physics state, restored with it: rewriting it from the
        # goal would differ from the saved pose in the last bit
        self.goal[env_idx] = state.to(self.goal)

    def evaluate(self):
        pose = self.tee.pose()
        dist = (pose[:, :2] - self.goal[:, :2]).norm(dim=1)
        yaw_err = wrap_angle(quat_yaw(pose[:, 3:]) - self.goal[:, 2]).abs()
        tcp = self.robot.tcp_pose()[:, :3]
        return {
            "success": (dist <= POSITION_THRESHOLD) & (yaw_err <= YAW_THRESHOLD),
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "tee_to_goal_dist": dist,
            "tee_to_goal_yaw": yaw_err,
            "tcp_to_tee_dist": (pose[:, :3] - tcp).norm(dim=1),
        }

    def dense_reward(self, info):
        reward = (-2.0 * torch.tanh(5 * info["tee_to_goal_dist"]) - info["tee_to_goal_yaw"] / math.pi
                  - 0.5 * torch.tanh(5 * info["tcp_to_tee_dist"]))
        return torch.where(info["success"], torch.zeros_like(reward), reward)

    def task_observations(self, info):
        pose = self.tee.pose()
        tcp = self.robot.tcp_pose()[:, :3]
        goal_pose = torch.cat([self.goal[:, :2], self.goal.new_full((self.num_envs, 1), HALF_THICKNESS),
                               yaw_quat(self.goal[:, 2])], dim=1)
        return {"tee_pose": pose, "goal_pose": goal_pose, "tcp_to_tee_pos": pose[:, :3] - tcp}

    def solution_policy(self):
        return PushTPolicy(self)


class PushTPolicy(PhasePolicy):
    """Push segments (see the module docstring). Phases: 0 above the start of a segment,
    1 down to pushing height, 2 push, 3 lift. A segment's line is fixed when phase 0
    begins."""

    travel_z = 0.1         # m, tcp height between segments
    push_z = 0.02          # m, tcp height while pushing
    margin = 0.03          # m, start behind the block's farthest point
    side_gain = 0.12       # m of sideways offset per rad of yaw error
    max_side = 0.04        # m
    carrot = 0.015         # m ahead of the tcp while pushing

    def __init__(self, task):
        super().__init__(task)
        n = task.num_envs
        self.start = torch.zeros(n, 3, device=task.device)
        self.direction = torch.zeros(n, 2, device=task.device)
        self.goal_along = torch.zeros(n, device=task.device)
        self.turning = torch.zeros(n, dtype=torch.bool, device=task.device)

    def _plan(self, rows: torch.Tensor) -> None:
        """Fix the push line of a new segment for the envs in the bool mask rows (N,).

        Far from the goal: push the centre toward the goal, shifted sideways by the yaw
        error. Near it (< 1.5 cm) with the yaw off: push one end of the bar across it,
        the end whose approach point is nearer the robot (x smaller)."""
        task = self.task
        pose = task.tee.pose()
        com, goal = pose[:, :2], task.goal[:, :2]
        yaw = quat_yaw(pose[:, 3:])
        err = goal - com
        dist = err.norm(dim=1, keepdim=True)
        d = err / dist.clamp(min=1e-6)
        normal = torch.stack([-d[:, 1], d[:, 0]], dim=1)
        yaw_err = wrap_angle(task.goal[:, 2] - yaw)
        # pushing on the +normal side along d turns the block clockwise (torque = r x F)
        side = torch.clamp(-self.side_gain * yaw_err, -self.max_side, self.max_side)
        start = com - d * (TEE_REACH + FINGER_HALF + self.margin) + normal * side.unsqueeze(1)
        # turning push at the bar's end e (+-1 along body x) along s * body y, s = e * sign:
        # torque = (e END bx) x (s by) = sign; the pusher meets the bar's bottom (s > 0) or
        # top (s < 0) edge
        bx = torch.stack([yaw.cos(), yaw.sin()], dim=1)
        by = torch.stack([-yaw.sin(), yaw.cos()], dim=1)
        sign = torch.where(yaw_err >= 0, 1.0, -1.0).unsqueeze(1)
        options = []
        for e in (1.0, -1.0):
            s_dir = e * sign
            edge = torch.where(s_dir > 0, -COM_Y - BAR_HALF[1], -COM_Y + BAR_HALF[1])
            options.append((com + bx * e * END_OFFSET + by * (edge - s_dir * (FINGER_HALF + self.margin)), s_dir * by))
        first = (options[0][0][:, :1] <= options[1][0][:, :1])      # the one nearer the robot
        turn_start = torch.where(first, options[0][0], options[1][0])
        turn_dir = torch.where(first, options[0][1], options[1][1])
        turn = (dist < 0.015) & (yaw_err.abs() > YAW_THRESHOLD * 0.5).unsqueeze(1)
        start = torch.where(turn, turn_start, start)
        d = torch.where(turn, turn_dir, d)
        # a turning push stops after TURN_PUSH m; a translating one when the centre passes the goal
        along = torch.where(turn.squeeze(1), (start * d).sum(dim=1) + self.margin + TURN_PUSH, (goal * d).sum(dim=1))
        self.turning[rows] = turn.squeeze(1)[rows]
        z = start.new_full((len(start), 1), self.travel_z)
        self.start[rows] = torch.cat([start, z], dim=1)[rows]
        self.direction[rows] = d[rows]
        self.goal_along[rows] = along[rows]

    def act(self):
        task = self.task
        tcp = self.robot.tcp_pose()[:, :3]
        phase = self.phase
        fresh = (phase == 0) & (self.timer == 0)
        if fresh.any():
            self._plan(fresh)
        pose = task.tee.pose()
        com = pose[:, :2]
        d = self.direction
        low = self.start.clone()
        low[:, 2] = self.push_z
        # while translating, keep the tcp's sideways offset from the centre line at the one
        # the current yaw error asks for (feedback: a fixed offset over-turns the block)
        normal = torch.stack([-d[:, 1], d[:, 0]], dim=1)
        yaw_err = wrap_angle(task.goal[:, 2] - quat_yaw(pose[:, 3:]))
        want = torch.clamp(-self.side_gain * yaw_err, -self.max_side, self.max_side)
        lateral = torch.where(self.turning, torch.zeros_like(want), want - ((tcp[:, :2] - com) * normal).sum(dim=1))
        step = self.carrot * d + torch.clamp(lateral, -self.carrot, self.carrot).unsqueeze(1) * normal
        push = torch.cat([tcp[:, :2] + step, tcp.new_full((len(tcp), 1), self.push_z)], dim=1)
        lifted = torch.cat([tcp[:, :2], tcp.new_full((len(tcp), 1), self.travel_z)], dim=1)
        target = torch.where((phase == 0).unsqueeze(1), self.start, low)
        target = torch.where((phase == 2).unsqueeze(1), push, target)
        target = torch.where((phase == 3).unsqueeze(1), lifted, target)
        err = (target - tcp).norm(dim=1)
        # translating: the centre 1 cm short of the goal's projection (the block slides on
        # a little); turning: the tcp pushed far enough
        progress = torch.where(self.turning, (tcp[:, :2] * d).sum(dim=1), (com * d).sum(dim=1) + 0.01)
        passed = progress >= self.goal_along
        nxt = phase.clone()
        nxt[(phase == 0) & (err < 0.015)] = 1
        nxt[(phase == 1) & (err < 0.008)] = 2
        nxt[(phase == 2) & (passed | (self.timer >= 30))] = 3
        nxt[(phase == 3) & (err < 0.02)] = 0
        return ee_action(self.robot, target, across(d), -tcp.new_ones(len(tcp))), nxt


def across(direction: torch.Tensor) -> torch.Tensor:
    """(N, 3, 3) downward gripper rotations with the closed jaws across `direction`
    (N, 2), a wide pushing face; the jaws are symmetric, so the yaw folds to [-pi/2, pi/2]."""
    yaw = wrap_angle(torch.atan2(direction[:, 1], direction[:, 0]).double(), math.pi)
    down = grasp_rotation(torch.zeros_like(yaw))
    return matmul3(axis_angle_matrix(yaw.new_tensor([0.0, 0.0, 1.0]), yaw), down)
