"""The raw PhysX ceiling: PickCube's Panda + cube scene in plain SAPIEN, no env around it.

The scene is built the way robosim's PickCube builds it (same URDF, loader settings,
drive gains, gravity-free links, 4 cm cube of density 1000, kinematic goal marker, one
shared ground plane, env copies on the same grid of `robosim.sim.layout`), but every
object is made with plain `sapien` calls (`build_bare_scenes`), without render
components as in a state-only robosim env, and all envs sit in ONE `PhysxCpuSystem`.
Only the `system.step()` calls of each control step are timed: no Python work runs
between substeps, so the rate is what PhysX alone allows for this scene.

Motion: "hold" keeps every drive target at the rest pose; "random" sets new joint
targets between control steps (untimed), current qpos + U(-0.1, 0.1) rad clipped to the
joint limits and a random finger width — the motion of robosim's random-action
`pd_joint_delta_pos` run, so the physics has the same contacts to solve; "replay" leaves
the targets to the caller: `set_states` puts every env where a robosim env was and
`set_all_targets` gives the drive targets robosim's controller computed, so the bare
physics repeats robosim's own run (bit for bit from a fresh scene:
tests/bench/test_ceiling_replay.py) and its time is what PhysX alone needs for that motion.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import sapien

from robosim.sim.layout import env_origins
from robosim.sim.physics import PhysicsConfig

REST_QPOS = np.array([0.0, math.pi / 8, 0.0, -math.pi * 5 / 8, 0.0, math.pi * 3 / 4, math.pi / 4, 0.04, 0.04],
                     dtype=np.float32)
ROBOT_BASE = np.array([-0.615, 0.0, 0.0], dtype=np.float32)
CUBE_HALF = 0.02
SIM_FREQ = 100
SUBSTEPS = 5          # PickCube: 100 Hz physics, 20 Hz control
MOTIONS = ("hold", "random", "replay")


def _panda_urdf() -> str:
    import os

    import mani_skill

    return os.path.join(os.path.dirname(mani_skill.__file__), "assets", "robots", "panda", "panda_v2.urdf")


@dataclass
class BareScene:
    """The ceiling's bodies: one PhysxCpuSystem, a sapien.Scene per env, env i's robot and
    cube, and the env origins (float32 (N, 3), world frame, m)."""

    system: sapien.physx.PhysxCpuSystem
    scenes: list
    robots: list
    cubes: list
    origins: np.ndarray


def bare_build_seconds(num_envs: int) -> float:
    """Wall time (s) of `build_bare_scenes(num_envs)`; the scenes are torn down untimed."""
    start = time.perf_counter()
    built = build_bare_scenes(num_envs)
    seconds = time.perf_counter() - start
    for scene in built.scenes:
        scene.clear()
    return seconds


def build_bare_scenes(num_envs: int) -> BareScene:
    """PickCube's bodies for `num_envs` envs in plain SAPIEN with no render component at
    all, the way a hand-written state-only script would build them: robosim's PhysX
    settings, the Panda URDF parsed once (visuals dropped) and built per env with its
    finger friction, gravity-free links and drive gains, a 4 cm cube of density 1000, a
    kinematic goal body without shapes, one ground plane, one PhysxCpuSystem, no render
    system. The ceiling steps these; the build-time table times them."""
    PhysicsConfig().apply(num_envs)  # robosim's (= ManiSkill3's) solver settings and PhysX workers
    system = sapien.physx.PhysxCpuSystem()
    system.set_timestep(1.0 / SIM_FREQ)
    scenes = [sapien.Scene([system]) for _ in range(num_envs)]
    scenes[0].add_ground(0.0, render=False)
    origins = env_origins(num_envs).numpy().astype(np.float32)
    loader = scenes[0].create_urdf_loader()
    loader.fix_root_link = True
    for finger in ("panda_leftfinger", "panda_rightfinger"):
        loader.set_link_material(finger, 2.0, 2.0, 0.0)
    robot_builder = loader.parse(_panda_urdf())[0][0]
    for link_builder in robot_builder.link_builders:
        link_builder.visual_records = []
    robots, cubes = [], []
    for i, scene in enumerate(scenes):
        robot_builder.set_scene(scene)
        robot_builder.initial_pose = sapien.Pose(ROBOT_BASE + origins[i])
        robot = robot_builder.build()
        for link in robot.get_links():
            link.disable_gravity = True
        for joint in robot.get_active_joints():
            joint.set_drive_properties(1e3, 1e2, 100.0)
        robots.append(robot)
        builder = scene.create_actor_builder()
        builder.add_box_collision(half_size=[CUBE_HALF] * 3, density=1000.0)
        builder.initial_pose = sapien.Pose(origins[i] + [0, 0, CUBE_HALF])
        cubes.append(builder.build(name="cube"))
        builder = scene.create_actor_builder()
        builder.initial_pose = sapien.Pose(origins[i] + [0, 0, 0.2])
        builder.build_kinematic(name="goal")
    return BareScene(system, scenes, robots, cubes, origins)


class PhysxCeiling:
    """N Panda + cube envs in one PhysxCpuSystem, stepped by bare `system.step()` calls."""

    def __init__(self, num_envs: int, motion: str = "random"):
        if motion not in MOTIONS:
            raise ValueError(f"motion must be one of {MOTIONS}, got {motion!r}")
        self.num_envs = num_envs
        self.motion = motion
        built = build_bare_scenes(num_envs)
        self.system, self.scenes, self.robots, self.cubes = built.system, built.scenes, built.robots, built.cubes
        self.origins = built.origins
        self.joints = [robot.get_active_joints() for robot in self.robots]
        self.qlimits = np.concatenate([j.limit for j in self.joints[0]], axis=0).astype(np.float32)

    def reset(self, seed: int) -> None:
        """Robots at rest with targets = rest, cubes at random xy / yaw on the ground."""
        rng = np.random.default_rng(seed)
        for i in range(self.num_envs):
            self.robots[i].set_qpos(REST_QPOS)
            self.robots[i].set_qvel(np.zeros(9, dtype=np.float32))
            self._set_targets(i, REST_QPOS)
            xy = rng.uniform(-0.1, 0.1, 2)
            yaw = rng.uniform(0, 2 * math.pi)
            pose = sapien.Pose(self.origins[i] + [xy[0], xy[1], CUBE_HALF],
                               [math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)])
            self.cubes[i].set_pose(pose)
        self._rng = rng

    def _set_targets(self, i: int, targets: np.ndarray) -> None:
        for joint, value in zip(self.joints[i], targets.tolist()):
            joint.set_drive_target(value)

    def set_states(self, qpos: np.ndarray, qvel: np.ndarray, targets: np.ndarray, cube_pose: np.ndarray,
                   cube_velocity: np.ndarray) -> None:
        """Put env i's robot at qpos[i] / qvel[i] (rad, rad/s; (N, 9)) with drive targets
        targets[i], and its cube at cube_pose[i] ([x, y, z, qw, qx, qy, qz] in the env
        frame, m) moving at cube_velocity[i] ([linear m/s, angular rad/s]); float32."""
        for i in range(self.num_envs):
            self.robots[i].set_qpos(qpos[i])
            self.robots[i].set_qvel(qvel[i])
            self._set_targets(i, targets[i])
            self.cubes[i].set_pose(sapien.Pose(cube_pose[i, :3] + self.origins[i], cube_pose[i, 3:]))
            body = self.cubes[i].find_component_by_type(sapien.physx.PhysxRigidDynamicComponent)
            body.set_linear_velocity(cube_velocity[i, :3])
            body.set_angular_velocity(cube_velocity[i, 3:])

    def set_all_targets(self, targets: np.ndarray) -> None:
        """Untimed: drive targets (N, 9) (rad; finger joints m) for the next control step."""
        for i in range(self.num_envs):
            self._set_targets(i, targets[i])

    def qpos(self) -> np.ndarray:
        """float32 (N, 9) joint positions of the robots."""
        return np.stack([robot.qpos for robot in self.robots])

    def cube_poses(self) -> np.ndarray:
        """float32 (N, 7) cube poses in the env frames."""
        poses = np.stack([np.concatenate([c.pose.p, c.pose.q]) for c in self.cubes]).astype(np.float32)
        poses[:, :3] -= self.origins
        return poses

    def control(self) -> None:
        """Untimed: new drive targets for the next control step (motion="random"; "hold"
        and "replay" set none here)."""
        if self.motion != "random":
            return
        rng = self._rng
        for i in range(self.num_envs):
            q = self.robots[i].qpos
            arm = np.clip(q[:7] + rng.uniform(-0.1, 0.1, 7), self.qlimits[:7, 0], self.qlimits[:7, 1])
            width = -0.01 + rng.uniform(0, 1) * 0.05
            self._set_targets(i, np.concatenate([arm, [width, width]]).astype(np.float32))

    def timed_control_step(self) -> float:
        """Run SUBSTEPS bare physics steps; returns their wall time (s)."""
        step = self.system.step
        start = time.perf_counter()
        for _ in range(SUBSTEPS):
            step()
        return time.perf_counter() - start

    def close(self) -> None:
        for scene in self.scenes:
            scene.clear()
        self.scenes = []
