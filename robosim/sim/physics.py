"""PhysX settings of a SimScene.

The defaults equal ManiSkill3 3.0's (its SceneConfig and DefaultMaterialsConfig:
15 position iterations, 2 cm contact offset, friction 0.3), so robosim and ManiSkill3
simulate a task with the same solver work and benchmarks compare like with like.
`cpu_workers` lets PhysX solve independent islands on worker threads: all envs of a
SimScene share one system, so their islands run in parallel. Bare physics of Panda +
cube envs with moving robots on the 2-core project machine (env-steps/s, 0 vs 2
workers, two runs each): N=1 3.4k vs 1.7k, N=8 3.8k vs 2.8k, N=16 3.9k vs 3.4k,
N=32 3.8k vs 5.2k, N=64 3.7k vs 5.5k. Threads pay off from about 32 envs, so the
default uses them from MIN_ENVS_FOR_WORKERS on. Results stay repeatable run to run.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import sapien

MIN_ENVS_FOR_WORKERS = 32
MAX_CPU_WORKERS = 64   # PhysX starts this many threads per system; more is a typo, not a setting


def default_cpu_workers(num_envs: int) -> int:
    """PhysX worker threads: none below MIN_ENVS_FOR_WORKERS envs, else one per CPU, at most 4."""
    return 0 if num_envs < MIN_ENVS_FOR_WORKERS else min(os.cpu_count() or 1, 4)


@dataclass(frozen=True)
class PhysicsConfig:
    """Solver, contact and material settings (SI units) applied before a scene is built.

    SAPIEN takes these as process-wide defaults for objects created afterwards, so
    `apply()` runs right before every SimScene builds its system."""

    solver_position_iterations: int = 15
    solver_velocity_iterations: int = 1
    sleep_threshold: float = 0.005        # (m/s)^2-like PhysX energy threshold
    contact_offset: float = 0.02          # m
    rest_offset: float = 0.0              # m
    bounce_threshold: float = 2.0         # m/s
    static_friction: float = 0.3
    dynamic_friction: float = 0.3
    restitution: float = 0.0
    cpu_workers: int | None = None        # None: default_cpu_workers(num_envs)
    # physx_cuda buffer capacities: ManiSkill3's GPUMemoryConfig (SAPIEN's own defaults
    # are 81,920 contact patches and 262,144 found/lost pairs)
    gpu_max_rigid_contact_count: int = 2**19
    gpu_max_rigid_patch_count: int = 2**18
    gpu_found_lost_pairs_capacity: int = 2**25
    gpu_temp_buffer_capacity: int = 2**24
    gpu_heap_capacity: int = 2**26

    def __post_init__(self):
        def is_int(value) -> bool:
            return isinstance(value, int) and not isinstance(value, bool)

        for name, low, high in (("solver_position_iterations", 1, 255), ("solver_velocity_iterations", 0, 255)):
            value = getattr(self, name)
            if not is_int(value) or not low <= value <= high:
                raise ValueError(f"{name} must be an int in [{low}, {high}], got {value!r}")
        if self.cpu_workers is not None and (not is_int(self.cpu_workers)
                                             or not 0 <= self.cpu_workers <= MAX_CPU_WORKERS):
            raise ValueError(f"cpu_workers must be an int >= 0 or None, got {self.cpu_workers!r} (at most "
                             f"{MAX_CPU_WORKERS}: PhysX starts that many threads)")
        for name, low, high in (("sleep_threshold", 0.0, math.inf), ("contact_offset", 0.0, 1.0),
                                ("rest_offset", 0.0, 1.0), ("bounce_threshold", 0.0, math.inf),
                                ("static_friction", 0.0, 100.0), ("dynamic_friction", 0.0, 100.0),
                                ("restitution", 0.0, 1.0)):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or not low <= value <= high):
                raise ValueError(f"{name} must be a finite number in [{low}, {high}], got {value!r}")
        if not 0.0 <= self.rest_offset < self.contact_offset:
            raise ValueError(f"need 0 <= rest_offset < contact_offset, "
                             f"got {self.rest_offset} and {self.contact_offset}")
        for name in ("gpu_max_rigid_contact_count", "gpu_max_rigid_patch_count", "gpu_found_lost_pairs_capacity",
                     "gpu_temp_buffer_capacity", "gpu_heap_capacity"):
            value = getattr(self, name)
            if not is_int(value) or not 1 <= value <= 2**31 - 1:
                raise ValueError(f"{name} must be an int in [1, 2**31 - 1], got {value!r}")

    def workers(self, num_envs: int) -> int:
        return default_cpu_workers(num_envs) if self.cpu_workers is None else self.cpu_workers

    def apply(self, num_envs: int) -> None:
        """Make these SAPIEN's defaults for the next system (of num_envs envs), its bodies
        and shapes."""
        sapien.physx.set_scene_config(bounce_threshold=self.bounce_threshold, enable_pcm=True, enable_tgs=True,
                                      enable_ccd=False, enable_enhanced_determinism=False,
                                      enable_friction_every_iteration=True, cpu_workers=self.workers(num_envs))
        sapien.physx.set_body_config(solver_position_iterations=self.solver_position_iterations,
                                     solver_velocity_iterations=self.solver_velocity_iterations,
                                     sleep_threshold=self.sleep_threshold)
        sapien.physx.set_shape_config(contact_offset=self.contact_offset, rest_offset=self.rest_offset)
        sapien.physx.set_default_material(self.static_friction, self.dynamic_friction, self.restitution)
        sapien.physx.set_gpu_memory_config(  # read by PhysxGpuSystem only
            temp_buffer_capacity=self.gpu_temp_buffer_capacity,
            max_rigid_contact_count=self.gpu_max_rigid_contact_count,
            max_rigid_patch_count=self.gpu_max_rigid_patch_count, heap_capacity=self.gpu_heap_capacity,
            found_lost_pairs_capacity=self.gpu_found_lost_pairs_capacity)
