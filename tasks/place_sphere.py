"""PlaceSphere-v1 (robosim_tasks.place_sphere:PlaceSphereTask): pick a small sphere and
place it into a shallow bin (ManiSkill3's PlaceSphere).

A dynamic sphere (radius 2 cm) starts at rest on the table at x uniform in
[-0.1, -0.05] m, y in [-0.1, 0.1] m. The bin is a kinematic body of five boxes: a
5.5 cm square floor 5 mm thick and four walls 5 mm thick rising 1 cm above it (inner
square 4.5 cm); its centre (the floor's centre) at x uniform in [0, 0.1] m, y in
[-0.1, 0.1] m, z = 2.5 mm. Both poses are physics state (no task state).

Success: the sphere rests on the bin's floor (xy offset from the bin centre <= 5 mm,
height offset within 5 mm of radius + 2.5 mm), is still (|v| < 1 cm/s, |w| < 0.5
rad/s) and is not held. Never fails.

Dense reward (in [-13, 0]; normalized_dense = dense / 13 in [-1, 0]): ManiSkill3's
staged terms shifted down by 13: 2 * (1 - tanh(5 * tcp-sphere distance)); while the
sphere is held, 4 + (1 - tanh(5 * sphere-to-bin-top distance)); once on the floor,
6 + (opening + sphere still + arm still) / 3 where opening is the gripper width over its
widest (1 when not held), sphere still is 1 - tanh(10 |v| + |w|) and arm still is
|arm qvel| < 0.2; minus 13, exactly 0 on the success step, so every non-success step
pays <= -6. Sparse: -1 per step, 0 on success.

Task obs (env frame): is_grasped (N, 1), bin_pos (N, 3), obj_pose (N, 7),
tcp_to_obj_pos (N, 3), obj_to_bin_top_pos (N, 3).

Scripted solution: grasp the sphere from above, carry it 3 mm above its resting place
in the bin (via 5 cm above it, clear of the walls), open, rise. Success over 64 seeded episodes
(tests/tasks/test_tabletop_tasks.py checks 8 on panda): panda 100%, xarm7 100%.
"""
from __future__ import annotations

import torch

from robosim.agents import Requirements
from robosim.envs import Task, register_task
from robosim.envs.solutions import PickAndPlacePolicy
from robosim.sim import Box, RigidObject, Sphere
from robosim_tasks.common import identity_poses

RADIUS = 0.02
WALL = 0.0025                       # half thickness of the floor and walls (m)
INNER = 0.02                        # ManiSkill3's inner half length (the walls sit at INNER + WALL)
FLOOR_HALF = INNER + 2 * WALL       # half side of the floor (m)
WALL_HALF_HEIGHT = 2 * WALL
FLOOR_TOP = WALL                    # floor top above the bin centre (m)


def bin_shapes(color) -> list[Box]:
    """The five boxes of the bin, in its frame (origin at the floor's centre)."""
    d = FLOOR_HALF - WALL
    z = WALL_HALF_HEIGHT + WALL
    along_y = (WALL, FLOOR_HALF, WALL_HALF_HEIGHT)
    along_x = (FLOOR_HALF, WALL, WALL_HALF_HEIGHT)
    return [Box((FLOOR_HALF, FLOOR_HALF, WALL), color=color),
            Box(along_y, pose=(-d, 0.0, z), color=color), Box(along_y, pose=(d, 0.0, z), color=color),
            Box(along_x, pose=(0.0, -d, z), color=color), Box(along_x, pose=(0.0, d, z), color=color)]


@register_task("PlaceSphere-v1")
class PlaceSphereTask(Task):
    instruction = "Pick up the sphere and place it in the bin."
    requires = Requirements(min_arm_dof=5, gripper=True, parallel_gripper=True, min_gripper_opening=0.05,
                            workspace=((-0.1, -0.1, 0.02), (0.1, 0.1, 0.1)))   # sphere and bin
    scripted_success = {"panda": 1.0, "xarm7": 1.0}   # docs/robots.md
    max_episode_steps = 50
    max_dense_reward = 13.0

    def build_scene(self, sim, rng):
        self.sphere = sim.add_object("sphere", RigidObject([Sphere(RADIUS, color=[0.05, 0.16, 0.63, 1.0])],
                                                           pose=(-0.1, 0.0, RADIUS)))
        self.bin = sim.add_object("bin", RigidObject(bin_shapes([0.75, 0.55, 0.3, 1.0]), body="kinematic",
                                                     pose=(0.05, 0.0, WALL)))

    def initialize_episode(self, env_idx, rng):
        super().initialize_episode(env_idx, rng)
        m = len(env_idx)
        sphere_x = rng.uniform(-0.1, -0.05, (1,))
        sphere_y = rng.uniform(-0.1, 0.1, (1,))
        bin_x = rng.uniform(0.0, 0.1, (1,))
        bin_y = rng.uniform(-0.1, 0.1, (1,))
        sphere = identity_poses(m, torch.cat([sphere_x, sphere_y, sphere_x.new_full((m, 1), RADIUS)], dim=1))
        self.sphere.set_pose(sphere, env_idx)
        self.sphere.set_velocity(sphere.new_zeros(m, 6), env_idx)
        self.bin.set_pose(identity_poses(m, torch.cat([bin_x, bin_y, bin_x.new_full((m, 1), WALL)], dim=1)), env_idx)

    def bin_top(self) -> torch.Tensor:
        """(N, 3) where the sphere's centre rests on the bin's floor (env frame, m)."""
        return self.bin.pose()[:, :3] + self.bin.pose().new_tensor([0.0, 0.0, FLOOR_TOP + RADIUS])

    def evaluate(self):
        obj_pos = self.sphere.pose()[:, :3]
        offset = obj_pos - self.bin.pose()[:, :3]
        on_bin = (offset[:, :2].norm(dim=1) <= 0.005) & ((offset[:, 2] - RADIUS - FLOOR_TOP).abs() <= 0.005)
        vel = self.sphere.velocity()
        static = (vel[:, :3].norm(dim=1) < 1e-2) & (vel[:, 3:].norm(dim=1) < 0.5)
        grasped = self.robot.is_between_jaws(obj_pos, RADIUS)
        return {
            "success": on_bin & static & ~grasped,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool, device=self.device),
            "is_obj_grasped": grasped,
            "is_obj_on_bin": on_bin,
            "is_obj_static": static,
            "is_robot_static": self.robot.is_static(0.2),
        }

    def dense_reward(self, info):
        qpos = self.robot.qpos
        tcp = self.robot.tcp_pose()[:, :3]
        obj_pos = self.sphere.pose()[:, :3]
        grasped = info["is_obj_grasped"]
        reward = 2 * (1 - torch.tanh(5 * (tcp - obj_pos).norm(dim=1)))
        place = 4 + (1 - torch.tanh(5 * (self.bin_top() - obj_pos).norm(dim=1)))
        reward = torch.where(grasped, place, reward)
        widest = self.robot.gripper_width(self.robot.view.qlimits()[:, 1].to(qpos.device).expand_as(qpos))
        opening = torch.where(grasped, (self.robot.gripper_width(qpos) / widest).clamp(0, 1), torch.ones_like(reward))
        vel = self.sphere.velocity()
        still = 1 - torch.tanh(10 * vel[:, :3].norm(dim=1) + vel[:, 3:].norm(dim=1))
        on_bin = 6 + (opening + still + info["is_robot_static"].float()) / 3
        reward = torch.where(info["is_obj_on_bin"], on_bin, reward)
        return torch.where(info["success"], torch.zeros_like(reward), reward - 13.0)

    def task_observations(self, info):
        tcp = self.robot.tcp_pose()[:, :3]
        obj_pose = self.sphere.pose()
        return {
            "is_grasped": info["is_obj_grasped"].float().unsqueeze(1),
            "bin_pos": self.bin.pose()[:, :3],
            "obj_pose": obj_pose,
            "tcp_to_obj_pos": obj_pose[:, :3] - tcp,
            "obj_to_bin_top_pos": self.bin_top() - obj_pose[:, :3],
        }

    def solution_policy(self):
        return PlaceSpherePolicy(self)


class PlaceSpherePolicy(PickAndPlacePolicy):
    """Grasp the sphere, carry it 5 cm above the bin (clear of its walls) until within
    1 cm of its centre in xy, lower it to 3 mm above its resting place, open, rise."""

    release = True

    def cube(self):
        return self.task.sphere

    def place_target(self):
        task = self.task
        top = task.bin_top()
        far = (task.sphere.pose()[:, :2] - top[:, :2]).norm(dim=1) > 0.01
        height = torch.where(far, 0.05, 0.003)
        return top + torch.nn.functional.pad(height.unsqueeze(1), (2, 0))
