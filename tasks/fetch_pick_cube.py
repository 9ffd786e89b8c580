"""FetchPickCube-v1: a mobile manipulator drives to a table and lifts a cube off it.

A static table (top at TABLE_TOP m, front edge at x = 0, 0.5 m deep, 0.8 m wide) stands
in front of the robot; a 4 cm cube rests on it at x in [0.10, 0.20] m, y in [-0.15, 0.15]
m with a uniform yaw, per env. The robot's base starts at x = BASE_X (-1.1 m) with
yaw 0 and its arm at rest: the cube is 1.2 m or more ahead of the base, out of reach of
the arm without driving. Needs a robot with a mobile base (RobotSpec.mobile_base) and a
parallel gripper.

Success: the cube centre is LIFT (0.08 m) or more above its resting height and the cube
is between the jaws (Robot.is_between_jaws). Never fails.

Dense reward (in [-4, 0]; normalized_dense = dense / 4): per step
  -tanh(2 * |tcp - cube|)              reach (m; a slow tanh: the cube starts > 1 m away)
  -(1 - grasped)                       grasp
  -2 * clamp(1 - height / LIFT, 0, 1)  lift (height above the resting height, m)
and exactly 0 on the success step. Sparse: -1 per step, 0 on success.

Task obs (env frame): obj_pose (N, 7), tcp_to_obj_pos (N, 3) m, base_pose (N, 3)
[x m, y m, yaw rad], is_grasped (N, 1).

Scripted solution (FetchPickCubePolicy, pd_ee_delta_pose): drive forward with the
heading held at 0 until the base is REACH m behind the cube in x, turning the gripper to
point down across the cube's faces on the way; then the arm goes above the cube, down,
closes for 5 steps and lifts 15 cm (base still). Measured: fetch 100% (64/64, `robosim eval
FetchPickCube-v1 --episodes 64 --num-envs 16`, seed 0; 62.8 steps per episode on
average); tests/tasks/test_hands_and_fetch_tasks.py runs it on 4 envs.
"""
from __future__ import annotations

import math

import torch

from robosim.agents import Requirements
from robosim.core.rotations import quat_yaw, wrap_angle
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action
from robosim.sim import Box, RigidObject
from robosim_tasks.common import build_cube, place_on_ground

CUBE_HALF = 0.02
TABLE_TOP = 0.45          # m
TABLE_HALF = (0.25, 0.4)  # m, half depth (x) and half width (y)
BASE_X = -1.1             # m, the base's start x (env frame)
LIFT = 0.08               # m
REACH = 0.62              # m, base-to-cube x distance the scripted solution drives to


@register_task("FetchPickCube-v1")
class FetchPickCubeTask(Task):
    instruction = "Drive to the table, pick up the cube and lift it."
    default_robot = "fetch"
    requires = Requirements(min_arm_dof=6, gripper=True, min_gripper_opening=0.05, mobile_base=True)
    scripted_success = {"fetch": 1.0}   # 64/64 (docstring)
    default_control_mode = "pd_ee_delta_pose"
    robot_base_position = (BASE_X, 0.0, 0.0)
    max_episode_steps = 120
    max_dense_reward = 4.0
    human_camera = dict(target_position=(-0.4, 0.0, 0.4), distance=2.6, yaw=-60.0, pitch=-25.0)

    def build_scene(self, sim, rng):
        sx, sy = TABLE_HALF
        self.table = sim.add_object("table", RigidObject(
            [Box((sx, sy, TABLE_TOP / 2), color=(0.55, 0.4, 0.3, 1.0))], body="static",
            pose=(sx, 0.0, TABLE_TOP / 2)))
        self.cube = build_cube(sim, "cube", CUBE_HALF, [0.9, 0.15, 0.15, 1.0])

    def initialize_episode(self, env_idx, rng):
        robot = self.robot
        robot.reset(robot.rest_qpos(len(env_idx)).to(rng.device), env_idx)
        pose = place_on_ground(rng, CUBE_HALF, 0.0, 1.0)
        lo = torch.tensor([0.10, -0.15], device=pose.device)
        span = torch.tensor([0.10, 0.30], device=pose.device)
        pose[:, :2] = lo + pose[:, :2] * span
        pose[:, 2] += TABLE_TOP
        self.cube.set_pose(pose, env_idx)
        self.cube.set_velocity(pose.new_zeros(len(env_idx), 6), env_idx)

    def evaluate(self):
        obj_pos = self.cube.pose()[:, :3]
        tcp = self.robot.tcp_pose()[:, :3]
        tcp_to_obj = torch.linalg.vector_norm(obj_pos - tcp, dim=1)
        height = obj_pos[:, 2] - (TABLE_TOP + CUBE_HALF)
        grasped = self.robot.is_between_jaws(obj_pos, CUBE_HALF, tcp_to_obj)
        return {
            "success": (height >= LIFT) & grasped,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "is_grasped": grasped,
            "lift_height": height,
            "tcp_to_obj_dist": tcp_to_obj,
        }

    def dense_reward(self, info):
        lift = torch.clamp(1 - info["lift_height"] / LIFT, 0.0, 1.0)
        reward = -torch.tanh(2 * info["tcp_to_obj_dist"]) - (1 - info["is_grasped"].float()) - 2 * lift
        return torch.where(info["success"], torch.zeros_like(reward), reward)

    def task_observations(self, info):
        obj_pose = self.cube.pose()
        return {
            "obj_pose": obj_pose,
            "tcp_to_obj_pos": obj_pose[:, :3] - self.robot.tcp_pose()[:, :3],
            "base_pose": self.robot.base_pose(),
            "is_grasped": info["is_grasped"].float().unsqueeze(1),
        }

    def solution_policy(self):
        return FetchPickCubePolicy(self)


def down_grasp_rotation(yaw: torch.Tensor) -> torch.Tensor:
    """(N, 3, 3) float64 env-frame rotation of a tcp whose x axis (approach) points down and
    whose y axis (closing) is turned `yaw` (N,) rad about z from the env's y axis."""
    c, s = torch.cos(yaw.double()), torch.sin(yaw.double())
    zero = torch.zeros_like(c)
    x = torch.stack([zero, zero, -torch.ones_like(c)], 1)
    y = torch.stack([-s, c, zero], 1)
    z = torch.stack([c, s, zero], 1)
    return torch.stack([x, y, z], dim=2)


class FetchPickCubePolicy(PhasePolicy):
    """Phases: 0 drive the base to REACH m behind the cube (arm turning to point down),
    1 tcp `above` m over the cube, 2 down to it, 3 close for 5 steps, 4 lift 15 cm."""

    above = 0.1            # m
    grasp_height = 0.012   # m above the cube centre: the 6 cm pads then clear the table

    def act(self):
        robot = self.robot
        cube_pose = self.task.cube.pose()
        cube = cube_pose[:, :3]
        base = robot.base_pose()
        tcp = robot.tcp_pose()[:, :3]
        phase = self.phase
        # the gripper closes across two opposite faces: the cube's yaw folded to [-pi/4, pi/4)
        rot = down_grasp_rotation(wrap_angle(quat_yaw(cube_pose[:, 3:]), math.pi / 2))
        # the base parks REACH m behind the cube and holds there (a velocity-controlled
        # base has no position to return to: the arm's reaction would push it away)
        self._park = torch.where(phase == 0, cube[:, 0] - REACH, self._park)
        drive_to = self._park
        forward = torch.clamp((drive_to - base[:, 0]) / robot.spec.mobile_base.max_forward, -1.0, 1.0)
        turn = torch.clamp(-base[:, 2] / robot.spec.mobile_base.max_turn, -1.0, 1.0)
        driving = phase == 0
        base_action = torch.stack([forward, turn], 1)
        grasp = cube + cube.new_tensor([0.0, 0.0, self.grasp_height])
        above = cube + cube.new_tensor([0.0, 0.0, self.above])
        lifted = cube.new_tensor([0.0, 0.0, 0.15]) + torch.where((phase == 4).unsqueeze(1), self._grasp_at, grasp)
        # while driving, hold the tcp at its place relative to the base (x follows the base)
        carry = torch.stack([tcp[:, 0] + forward * robot.spec.mobile_base.max_forward, tcp[:, 1],
                             torch.maximum(tcp[:, 2], above[:, 2])], 1)
        target = torch.where(driving.unsqueeze(1), carry, above)
        target = torch.where((phase == 2).unsqueeze(1) | (phase == 3).unsqueeze(1), grasp, target)
        target = torch.where((phase == 4).unsqueeze(1), lifted, target)
        gripper = torch.where(phase >= 3, -1.0, 1.0)
        err = (target - tcp).norm(dim=1)
        nxt = phase.clone()
        nxt[driving & ((drive_to - base[:, 0]).abs() < 0.01)] = 1
        nxt[(phase == 1) & (err < 0.015)] = 2
        nxt[(phase == 2) & (err < 0.006)] = 3
        entering_lift = (phase == 3) & (self.timer >= 5)
        nxt[entering_lift] = 4
        self._grasp_at = torch.where(entering_lift.unsqueeze(1), grasp, self._grasp_at)
        arm = ee_action(robot, target, rot, gripper)
        return torch.cat([base_action, arm], 1), nxt

    def __init__(self, task):
        super().__init__(task)
        self._grasp_at = torch.zeros(task.num_envs, 3, device=task.device)
        self._park = torch.zeros(task.num_envs, device=task.device)
