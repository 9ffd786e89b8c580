"""StackPyramid-v1 (id "robosim_tasks.stack_pyramid:StackPyramidTask" until registered):
put the red cube A next to the green cube B, then the blue cube C on top of both.

Three 4 cm cubes start on the ground at uniform xy in [-0.1, 0.1] x [-0.2, 0.2] m with
uniform yaw, centres at least 8 cm apart. ManiSkill3's success rule and sizes:

Success: A next to B (xy centre distance <= |(4 cm, 4 cm)| + 5 mm = 6.16 cm), C within
6.16 cm (xy) of both A and B and more than 2 cm above each; A and C still (|v| < 1 cm/s,
|w| < 0.5 rad/s) and neither held. Fail: never.

Dense reward (in [-10, 0]; normalized_dense = dense / 10 in [-1, 0]): stage 1 pays
reaching A (1 - tanh(5 d)) + A grasped + 2 * (1 - tanh(10 * (| |AB|_xy - 5.2 cm| + |zA - zB|)))
until A rests next to B released (then a flat 4); stage 2 (only once A is next to B on
the ground) pays reaching C + C grasped + 2 * (1 - tanh(5 * C-to-apex distance)) + C on
top and released; the sum is shifted down by 10, so every non-success step pays <= -1,
and exactly 0 on the success step. Sparse: -1 per step, 0 on success (the Task default).

Observation (besides the cube poses and their offsets): `stage` (1 once it is C's turn),
`tcp_to_held_pos`, `held_yaw_to_tcp` and `held_to_place_pos` for the cube to move now and
where it is to rest, from `stage_plan`, the scripted solution's own reading of the state.

No task state beyond the physics. Scripted solution (`solution_policy`, pd_ee_delta_pose),
a function of the current state alone (no phase or timer kept between steps): pick A,
set it 5.2 cm from B across the jaws, pick C, set it on the pair's apex. Measured over
256 seeded episodes (robosim eval --episodes 256 --num-envs 32): panda 100% (256/256),
xarm7 99.2% (254/256); mean episode length 59 steps."""
from __future__ import annotations

import math

import torch

from robosim.agents import Requirements, Robot
from robosim.core.rotations import quat_to_matrix
from robosim.envs import Task, register_task
from robosim.envs.solutions import PickAndPlacePolicy, carry_over_the_top
from robosim_tasks.common import build_cube, place_on_ground, yaw_to_tcp

CUBE_HALF = 0.02
NEXT_TO = math.hypot(2 * CUBE_HALF, 2 * CUBE_HALF) + 0.005   # 6.16 cm, ManiSkill3's bound
MIN_SEPARATION = 0.08
SIDE_GAP = 0.052        # A-B centre distance the reward and the scripted placement aim for (m)


@register_task("StackPyramid-v1")
class StackPyramidTask(Task):
    instruction = "Put the red cube next to the green cube, then the blue cube on top of both."
    requires = Requirements(min_arm_dof=5, gripper=True, parallel_gripper=True, min_gripper_opening=0.05,
                            workspace=((-0.1, -0.2, 0.02), (0.1, 0.2, 0.12)))   # three cubes, carry height
    scripted_success = {"panda": 1.0, "xarm7": 0.992}   # docs/robots.md
    max_episode_steps = 160
    max_dense_reward = 10.0

    def build_scene(self, sim, rng):
        self.cube_a = build_cube(sim, "cube_a", CUBE_HALF, [0.9, 0.15, 0.15, 1.0])
        self.cube_b = build_cube(sim, "cube_b", CUBE_HALF, [0.15, 0.75, 0.2, 1.0])
        self.cube_c = build_cube(sim, "cube_c", CUBE_HALF, [0.15, 0.3, 0.9, 1.0])

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        poses = []
        for _ in range(3):
            pose = self._draw(rng)
            clash = self._clashes(pose, poses)
            while clash.any():   # redraw only the envs that need it (per-env streams)
                pose[clash] = self._draw(rng.subset(clash))
                clash = self._clashes(pose, poses)
            poses.append(pose)
        zeros = poses[0].new_zeros(len(env_idx), 6)
        for cube, pose in zip((self.cube_a, self.cube_b, self.cube_c), poses):
            cube.set_pose(pose, env_idx)
            cube.set_velocity(zeros, env_idx)

    @staticmethod
    def _draw(rng):
        pose = place_on_ground(rng, CUBE_HALF, -0.1, 0.1)
        pose[:, 1] *= 2.0                      # y in [-0.2, 0.2]
        return pose

    @staticmethod
    def _clashes(pose, others):
        clash = torch.zeros(len(pose), dtype=torch.bool, device=pose.device)
        for other in others:
            clash |= (pose[:, :2] - other[:, :2]).norm(dim=1) < MIN_SEPARATION
        return clash

    def evaluate(self):
        pos_a, pos_b, pos_c = (c.pose()[:, :3] for c in (self.cube_a, self.cube_b, self.cube_c))
        a_next_to_b = (pos_a - pos_b)[:, :2].norm(dim=1) <= NEXT_TO
        c_on_top = torch.ones_like(a_next_to_b)
        for below in (pos_a, pos_b):
            offset = pos_c - below
            c_on_top &= (offset[:, :2].norm(dim=1) <= NEXT_TO) & (offset[:, 2].abs() > CUBE_HALF)
        static_a, static_c = (self._static(c) for c in (self.cube_a, self.cube_c))
        grasped_a = self.robot.is_between_jaws(pos_a, CUBE_HALF)
        grasped_c = self.robot.is_between_jaws(pos_c, CUBE_HALF)
        a_placed = a_next_to_b & ((pos_a[:, 2] - pos_b[:, 2]).abs() < 0.005) & static_a & ~grasped_a
        return {
            "success": a_next_to_b & c_on_top & static_a & static_c & ~grasped_a & ~grasped_c,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "is_cube_a_next_to_b": a_next_to_b,
            "is_cube_a_placed": a_placed,
            "is_cube_c_on_top": c_on_top,
            "is_cube_a_grasped": grasped_a,
            "is_cube_c_grasped": grasped_c,
        }

    @staticmethod
    def _static(cube):
        vel = cube.velocity()
        return (vel[:, :3].norm(dim=1) < 1e-2) & (vel[:, 3:].norm(dim=1) < 0.5)

    def apex(self) -> torch.Tensor:
        """float32 (N, 3): where C's centre rests on A and B (env frame, m)."""
        return apex_of(self.cube_a.pose()[:, :3], self.cube_b.pose()[:, :3])

    def dense_reward(self, info):
        tcp = self.robot.tcp_pose()[:, :3]
        pos_a, pos_b, pos_c = (c.pose()[:, :3] for c in (self.cube_a, self.cube_b, self.cube_c))
        grasped_a, grasped_c = info["is_cube_a_grasped"].float(), info["is_cube_c_grasped"].float()
        placed = info["is_cube_a_placed"]
        side = ((pos_a - pos_b)[:, :2].norm(dim=1) - SIDE_GAP).abs() + (pos_a[:, 2] - pos_b[:, 2]).abs()
        stage1 = 1 - torch.tanh(5 * (pos_a - tcp).norm(dim=1)) + grasped_a + 2 * (1 - torch.tanh(10 * side))
        stage1 = torch.where(placed, torch.full_like(stage1, 4.0), stage1)
        on_top = info["is_cube_c_on_top"].float()
        stage2 = 1 - torch.tanh(5 * (pos_c - tcp).norm(dim=1)) + grasped_c
        stage2 = stage2 + 2 * (1 - torch.tanh(5 * (pos_c - self.apex()).norm(dim=1))) * torch.maximum(grasped_c, on_top)
        stage2 = stage2 + on_top * (1 - grasped_c)
        reward = stage1 + stage2 * placed.float()
        return torch.where(info["success"], torch.zeros_like(reward), reward - 10.0)

    def task_observations(self, info):
        tcp_pose = self.robot.tcp_pose()
        tcp = tcp_pose[:, :3]
        pose_a, pose_b, pose_c = (c.pose() for c in (self.cube_a, self.cube_b, self.cube_c))
        stage2, held, place = stage_plan(self.robot, tcp_pose, pose_a, pose_b, pose_c)
        return {
            "stage": stage2.float().unsqueeze(1),
            "held_yaw_to_tcp": yaw_to_tcp(held, tcp_pose),
            "tcp_to_held_pos": held[:, :3] - tcp,
            "held_to_place_pos": place - held[:, :3],
            "cube_a_pose": pose_a,
            "cube_b_pose": pose_b,
            "cube_c_pose": pose_c,
            "tcp_to_cube_a_pos": pose_a[:, :3] - tcp,
            "tcp_to_cube_b_pos": pose_b[:, :3] - tcp,
            "tcp_to_cube_c_pos": pose_c[:, :3] - tcp,
            "cube_a_to_cube_b_pos": pose_b[:, :3] - pose_a[:, :3],
            "cube_b_to_cube_c_pos": pose_c[:, :3] - pose_b[:, :3],
            "cube_a_to_cube_c_pos": pose_c[:, :3] - pose_a[:, :3],
        }

    def solution_policy(self):
        return StackPyramidPolicy(self)


class StackPyramidPolicy(PickAndPlacePolicy):
    """Reads the state alone (no phase or timer kept between steps): each step it decides
    the stage, then grasps and places that stage's cube as PickAndPlacePolicy does.

    - stage 1 (A): until A rests on the ground next to B (xy centre distance <= NEXT_TO,
      heights within 5 mm) and is not held, and while the tcp is still low over A (within
      2 cm of it in xy, less than 5 cm above it) with C on the ground: carry A to a spot
      SIDE_GAP from B across the jaws (so opening them misses B), on the side clear of C
      and nearest the workspace centre, open, rise;
    - stage 2 (C): otherwise, C onto the apex of A and B, open, rise.
    A held cube is carried at CARRY_ABOVE over its place (at least CARRY_Z), its xy speed
    scaled by how far it has risen (so it clears the other cubes), and lowered as it
    nears the place in xy (from 2 cm to 5 mm away). An unheld cube counts as placed
    within 8 mm of its place (B's side leaves 9.6 mm before NEXT_TO), else it is picked
    again. The wrist turns the smallest way to the cube's nearest face pair."""

    release = True
    released_within = 0.008
    CARRY_ABOVE = 0.05   # m: carry height of the cube's centre above its place ...
    CARRY_Z = 0.09       # m: ... and above the ground (the bottom 3 cm over a standing cube)

    def act(self):
        task = self.task
        # read once per step; object_pose() and place_target(), called by super().act(), use them
        a, b, c = (cube.pose() for cube in (task.cube_a, task.cube_b, task.cube_c))
        self._stage2, self._held, self._place = stage_plan(self.robot, self.robot.tcp_pose(), a, b, c)
        return super().act()

    def object_pose(self):
        return self._held

    def place_target(self):
        return carry_over_the_top(self._place, self._held[:, :3], CUBE_HALF, self.CARRY_ABOVE, self.CARRY_Z)


def apex_of(pos_a: torch.Tensor, pos_b: torch.Tensor) -> torch.Tensor:
    """float32 (N, 3): where C's centre rests on A and B at centres pos_a, pos_b (N, 3)
    (env frame, m): their midpoint raised by a cube's width."""
    mid = (pos_a + pos_b) / 2
    return mid + mid.new_tensor([0.0, 0.0, 2 * CUBE_HALF])


def stage_plan(robot: Robot, tcp_pose: torch.Tensor, pose_a: torch.Tensor, pose_b: torch.Tensor,
               pose_c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The scripted solution's reading of the state (StackPyramidPolicy's rules), also the
    observation's stage entries: (stage2 bool (N,): C's turn; held float32 (N, 7): the pose
    of the cube to move now, A or C; place float32 (N, 3): where that cube's centre is to
    rest, the spot SIDE_GAP from B across the jaws on the side clear of C, or 3 mm over
    the apex of A and B, apex_of). Poses (N, 7) env frame, m, quaternion wxyz."""
    pos_a, pos_b, pos_c, tcp = pose_a[:, :3], pose_b[:, :3], pose_c[:, :3], tcp_pose[:, :3]
    a_placed = (((pos_a - pos_b)[:, :2].norm(dim=1) <= NEXT_TO) & ((pos_a - pos_b)[:, 2].abs() < 0.005)
                & ~robot.is_between_jaws(pos_a, CUBE_HALF))
    over_a = ((tcp - pos_a)[:, :2].norm(dim=1) < 0.02) & (tcp[:, 2] < pos_a[:, 2] + 0.05)
    c_down = pos_c[:, 2] < pos_b[:, 2] + 0.01
    stage2 = a_placed & ~(over_a & c_down)
    # stage 1: the spot beside B, across the jaws (the tcp's y axis) on the side clear of C
    jaws = quat_to_matrix(tcp_pose[:, 3:])[:, :2, 1]   # (N, 2)
    across = torch.stack([-jaws[:, 1], jaws[:, 0]], dim=1)
    across = across / across.norm(dim=1, keepdim=True).clamp(min=1e-6)
    spots = pos_b[:, None, :2] + SIDE_GAP * torch.stack([across, -across], dim=1)   # (N, 2, 2)
    clear = (spots - pos_c[:, None, :2]).norm(dim=2).clamp(max=0.09)
    best = spots[torch.arange(len(spots)), (10.0 * clear - spots.norm(dim=2)).argmax(dim=1)]
    spot = torch.cat([best, pos_b[:, 2:3] + 0.002], 1)
    place = torch.where(stage2.unsqueeze(1), apex_of(pos_a, pos_b) + pos_a.new_tensor([0.0, 0.0, 0.003]), spot)
    return stage2, torch.where(stage2.unsqueeze(1), pose_c, pose_a), place
