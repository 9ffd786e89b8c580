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

No task state beyond the physics. Scripted solution (`solution_policy`, pd_ee_delta_pose):
pick A, set it 5.2 cm from B across the jaws, pick C, set it on the pair's apex.
Measured over 64 seeded episodes (robosim eval --episodes 64 --num-envs 16): panda
100%, xarm7 100%."""
from __future__ import annotations

import math

import torch

from robosim.agents import Requirements
from robosim.core.rotations import quat_to_matrix, quat_yaw
from robosim.envs import Task, register_task
from robosim.envs.solutions import PhasePolicy, ee_action, grasp_rotation
from robosim_tasks.common import build_cube, place_on_ground

CUBE_HALF = 0.02
NEXT_TO = math.hypot(2 * CUBE_HALF, 2 * CUBE_HALF) + 0.005   # 6.16 cm, ManiSkill3's bound
MIN_SEPARATION = 0.08
SIDE_GAP = 0.052        # A-B centre distance the reward and the scripted placement aim for (m)


@register_task("StackPyramid-v1")
class StackPyramidTask(Task):
    instruction = "Put the red cube next to the green cube, then the blue cube on top of both."
    requires = Requirements(min_arm_dof=5, gripper=True, parallel_gripper=True, min_gripper_opening=0.05,
                            workspace=((-0.1, -0.2, 0.02), (0.1, 0.2, 0.12)))   # three cubes, carry height
    scripted_success = {"panda": 1.0, "xarm7": 1.0}   # docs/robots.md
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
        mid = (self.cube_a.pose()[:, :3] + self.cube_b.pose()[:, :3]) / 2
        return mid + mid.new_tensor([0.0, 0.0, 2 * CUBE_HALF])

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
        tcp = self.robot.tcp_pose()[:, :3]
        pose_a, pose_b, pose_c = (c.pose() for c in (self.cube_a, self.cube_b, self.cube_c))
        return {
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


class TwoPickPlacePolicy(PhasePolicy):
    """Two pick-and-places in a row, each: 0 above the cube, 1 down, 2 close (5 steps),
    3 lift to CARRY_Z, 4 over the place, 5 down to it, 6 open (4 steps), 7 rise; then the
    second cube as phases 8-15; 16 holds. Subclasses give `pick(k)` (ActorView, k = 0, 1)
    and `place(k)` float32 (N, 3), the cube centre's target (env frame, m)."""

    CARRY_Z = 0.12
    LIFT = 0.08

    def pick(self, k: int):
        raise NotImplementedError

    def place(self, k: int) -> torch.Tensor:
        raise NotImplementedError

    def act(self):
        tcp_pose = self.robot.tcp_pose()
        tcp = tcp_pose[:, :3]
        n = len(tcp)
        target = tcp.clone()
        rot = quat_to_matrix(tcp_pose[:, 3:].double())
        gripper = torch.ones(n, device=tcp.device)
        nxt = self.phase.clone()
        up = tcp.new_tensor([0.0, 0.0, 1.0])
        for k in range(2):
            local = self.phase - 8 * k
            mine = (local >= 0) & (local < 8)
            if not mine.any():
                continue
            pose = self.pick(k).pose()
            cube = pose[:, :3]
            place = self.place(k) + (tcp - cube)          # keep the grasp offset while held
            approach = local <= 1
            rot = torch.where(approach.reshape(-1, 1, 1) & mine.reshape(-1, 1, 1),
                              grasp_rotation(quat_yaw(pose[:, 3:])), rot)
            steps = [cube + self.LIFT * up, cube, cube,
                     torch.cat([tcp[:, :2], torch.full_like(tcp[:, 2:], self.CARRY_Z)], 1),
                     torch.cat([place[:, :2], torch.full_like(tcp[:, 2:], self.CARRY_Z)], 1),
                     place, place, self.place(k) + self.LIFT * up]
            tol = [0.015, 0.006, None, 0.02, 0.01, 0.005, None, 0.015]
            for j, (where, eps) in enumerate(zip(steps, tol)):
                here = mine & (local == j)
                target[here] = where[here]
                err = (where - tcp).norm(dim=1)
                done = here & ((err < eps) if eps is not None else (self.timer >= (5 if j == 2 else 4)))
                nxt[done] = self.phase[done] + 1
            gripper[mine & (local >= 2) & (local <= 5)] = -1.0
        return ee_action(self.robot, target, rot, gripper), nxt


class StackPyramidPolicy(TwoPickPlacePolicy):
    """A to a spot SIDE_GAP from B, across the jaws' opening direction (so opening them
    misses B), on the side clear of C and nearest the workspace centre (chosen while A is
    being picked, then held); C onto the apex."""

    def __init__(self, task):
        super().__init__(task)
        self.spot = torch.zeros(task.num_envs, 3, device=task.device)

    def pick(self, k):
        return (self.task.cube_a, self.task.cube_c)[k]

    def place(self, k):
        task = self.task
        if k == 1:
            return task.apex() + task.apex().new_tensor([0.0, 0.0, 0.003])
        pos_b, pos_c = task.cube_b.pose()[:, :3], task.cube_c.pose()[:, :3]
        jaws = grasp_rotation(quat_yaw(task.cube_a.pose()[:, 3:]))[:, :2, 1].float()   # (N, 2)
        across = torch.stack([-jaws[:, 1], jaws[:, 0]], dim=1)
        spots = pos_b[:, None, :2] + SIDE_GAP * torch.stack([across, -across], dim=1)   # (N, 2, 2)
        clear = (spots - pos_c[:, None, :2]).norm(dim=2).clamp(max=0.09)
        best = spots[torch.arange(len(spots)), (10.0 * clear - spots.norm(dim=2)).argmax(dim=1)]
        fresh = self.phase <= 1
        self.spot[fresh] = torch.cat([best, pos_b[:, 2:3] + 0.002], 1)[fresh]
        return self.spot
