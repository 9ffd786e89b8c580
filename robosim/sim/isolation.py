"""Isolation mode: one PhysX system per env (`physics_isolation="separate"`).

Why: envs that share one PhysxCpuSystem are not independent. Measured with SAPIEN
3.0.3 (PickCube, pd_joint_pos, actions uniform over the action space, N=8): writing env
3's own state back changes envs 6 and 7 from steps 24 and 46 on. PhysX's island
sleeping couples them (with sleeping off that case stays independent, and
enable_enhanced_determinism alone does not help), and the envs share one broadphase
and one solver, whose pair and island order can depend on every body in the system.
A NaN in one body reaches every env of a shared system on the next step.

Here every env has its own PhysxCpuSystem (and its own render world) and every env sits
at the same origin, so env i runs the same float operations as a 1-env batch seeded
seed + i: its trajectory is bit-for-bit that run's, and nothing done to another env
(actions, set_state, faults) can change it. Cost: N system.step() calls per substep
instead of one (robosim bench's isolation row measures it); PhysX worker threads are
off (each system would start its own pool).
"""
from __future__ import annotations

import dataclasses

import sapien
import torch

from robosim.sim.layout import env_origins
from robosim.sim.physics import PhysicsConfig
from robosim.sim.scene import SimScene

PHYSICS_ISOLATION_MODES = ("shared", "separate")


def check_isolation(isolation: str, backend: str) -> str:
    """Validate a physics_isolation value for a resolved backend name."""
    if not isinstance(isolation, str) or isolation not in PHYSICS_ISOLATION_MODES:
        raise ValueError(f"physics_isolation must be one of {list(PHYSICS_ISOLATION_MODES)}, got {isolation!r}")
    if isolation == "separate" and backend != "physx_cpu":
        raise ValueError(f"physics_isolation='separate' needs sim_backend 'physx_cpu', got {backend!r}")
    return isolation


class IsolatedSimScene(SimScene):
    """N envs, each in its own PhysxCpuSystem at the same origin (see module docstring)."""

    isolation = "separate"

    def __init__(self, num_envs: int, sim_freq: int, physics: PhysicsConfig | None = None):
        physics = PhysicsConfig() if physics is None else physics
        if physics.cpu_workers not in (None, 0):
            raise ValueError(f"physics.cpu_workers must be 0 or None with physics_isolation='separate' "
                             f"(one PhysX system per env, each would start its own threads), "
                             f"got {physics.cpu_workers!r}")
        self.systems: list[sapien.physx.PhysxCpuSystem] = []
        super().__init__(num_envs, sim_freq, dataclasses.replace(physics, cpu_workers=0))

    def _env_origins(self, num_envs: int) -> torch.Tensor:
        env_origins(num_envs)   # same num_envs limit as the shared layout
        return env_origins(1).expand(num_envs, 3).clone()

    def _make_physx_system(self) -> sapien.physx.PhysxCpuSystem:
        system = sapien.physx.PhysxCpuSystem()
        self.systems.append(system)
        return system

    def _make_sub_scene(self, env_index: int) -> sapien.Scene:
        if env_index > 0:
            self._make_physx_system().set_timestep(1.0 / self.sim_freq)
        shared, self.physx = self.physx, self.systems[env_index]
        try:   # the base class builds env i's scene on self.physx: point it at env i's system
            return super()._make_sub_scene(env_index)
        finally:
            self.physx = shared

    def add_ground(self, altitude: float = 0.0, color=(0.86, 0.84, 0.8, 1.0)) -> None:
        """A collision plane in every env's system, plus the visual floors."""
        super().add_ground(altitude, color)
        for scene in self.sub_scenes[1:]:
            scene.add_ground(altitude, render=False)

    def step(self) -> None:
        """One physics substep (1 / sim_freq s) of every env's own system."""
        for system in self.systems:
            system.step()
        self.read_cache.invalidate()

    def close(self) -> None:
        super().close()
        self.systems = []
