"""EnvParts: what one build of an env produced, handed to every stage that needs it.

BaseEnv builds its scene (at construction and on every reconfigure) with `build_parts`
and gives the result to the stages that read the scene: the observation builder
(robosim.envs.observations), the fault monitor (robosim.envs.faults) and the
randomization manager's `after_build`. No stage reads the env itself. A rebuild makes
new parts and new stages; the robot objects are reused (loaded into the new scene).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from robosim.agents import Robot
from robosim.envs.faults import StateLayout
from robosim.envs.robots import single_robot
from robosim.randomization import BatchRandom
from robosim.sensors.camera import CameraConfig
from robosim.sensors.rig import CameraRig, RigSpec
from robosim.sim import PhysicsConfig, SimScene, create_sim_scene


@dataclasses.dataclass(frozen=True)
class SceneRecipe:
    """What every build of one env is made from (fixed at construction)."""

    sim_backend: str
    num_envs: int
    sim_freq: int                  # physics substeps per second
    control_freq: int              # control steps per second
    physics: PhysicsConfig | None
    isolation: str                 # physics_isolation ("shared" | "separate")
    device: torch.device           # where every tensor of the env lives
    rig: RigSpec                   # the cameras to add after the scene is built
    sensor_cameras: tuple[CameraConfig, ...]   # the task's declared cameras (before overrides)


@dataclasses.dataclass(frozen=True)
class EnvParts:
    """One built scene and what was derived from it.

    sim: the SimScene (every env's actors, `sim.num_envs` envs); robots: {slot: loaded
    Robot} (robosim.envs.robots; `robot` is the one robot of a single-robot env);
    cameras: the CameraRig (sensor cameras, human-view camera, lights' render worlds);
    sensor_cameras: the task's declared cameras (names randomization events may target);
    state_layout: column indices of the physics state (N, S) of `sim`; device: where
    every tensor lives; num_envs: N; control_dt: seconds per control step; substeps:
    physics steps per control step."""

    sim: SimScene
    robots: dict[str, Robot]
    cameras: CameraRig
    sensor_cameras: tuple[CameraConfig, ...]
    state_layout: StateLayout
    device: torch.device
    num_envs: int
    control_dt: float
    substeps: int

    @property
    def robot(self) -> Robot:
        """The robot of a single-robot env (ValueError for a multi-robot one)."""
        return single_robot(self.robots, "this env")


def build_parts(recipe: SceneRecipe, robots: dict[str, Robot], object_modifiers: dict[str, list] | None,
                build_scene: Callable[[SimScene, BatchRandom], Any], build_rng: BatchRandom) -> EnvParts:
    """Build a scene: ground, the robots (in slot order), then `build_scene(sim, build_rng)` (the task's
    actors; `object_modifiers` rewrite their descriptions), finalize, cameras."""
    sim = create_sim_scene(recipe.sim_backend, recipe.num_envs, recipe.sim_freq, recipe.physics,
                           isolation=recipe.isolation, sim_device=recipe.device,
                           render=bool(recipe.rig.sensors) or recipe.rig.human is not None,
                           object_modifiers=object_modifiers)
    sim.add_ground()
    for robot in robots.values():
        robot.load(sim)
    build_scene(sim, build_rng)
    sim.finalize()
    return EnvParts(sim=sim, robots=robots, cameras=CameraRig(sim, recipe.rig), sensor_cameras=recipe.sensor_cameras,
                    state_layout=StateLayout(sim), device=recipe.device, num_envs=recipe.num_envs,
                    control_dt=1.0 / recipe.control_freq, substeps=recipe.sim_freq // recipe.control_freq)
