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
(actions, set_state, faults) can change it. After every reset and set_state,
`forget_history` moves env i's entities into a new PhysX system and writes their state
back, so nothing of its past carries over (contact caches, pair orders, sleeping): env
i's k-th episode then depends only on its seed and its actions, and a restored state
continues alike every time (about 2-5 ms per env reset, docs/reliability.md). Cost: N system.step() calls per substep
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

    packed_reads = False   # one system per env: no single pack
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

    def forget_history(self, env_idx: torch.Tensor | None = None) -> None:
        """Move env_idx's entities into a new PhysX system (same order, same per-scene ids,
        same render system), write their physics state back and reset their wake counters
        (_reset_wake_counters), so nothing of their past survives: env i's future depends
        only on its current state.

        Why (measured, SAPIEN 3.0.3): after a PickCube episode and 40 idle steps, the next
        seeded episode differed from a fresh env's from step 13 on (2 of 16 episodes,
        error up to 3.8), even when every body and the robot were removed from the system
        and added back: PhysX keeps system-wide state (pair and constraint orderings of its
        broadphase and island manager) that only a new system starts afresh."""
        ids = range(self.num_envs) if env_idx is None else env_idx.tolist()
        for i in ids:
            self._renew_system(i)
        self.read_cache.invalidate()
        self._written(env_idx)

    def _renew_system(self, i: int) -> None:
        index = torch.tensor([i])
        state = super().get_state(index)
        old = self.sub_scenes[i]
        entities = sorted(old.entities, key=lambda e: e.per_scene_id)
        ids = [e.per_scene_id for e in entities]
        for entity in entities:
            entity.remove_from_scene()
        self.physics_config.apply(1)   # SAPIEN's process-wide defaults: this scene's again
        system = sapien.physx.PhysxCpuSystem()
        system.set_timestep(1.0 / self.sim_freq)
        scene = sapien.Scene([system, old.render_system])
        for entity in entities:
            scene.add_entity(entity)
        if [e.per_scene_id for e in entities] != ids:   # segmentation ids must not move
            raise RuntimeError(f"env {i}: entity ids changed while renewing its PhysX system")
        self.sub_scenes[i], self.systems[i] = scene, system
        self.read_cache.invalidate()
        super().set_state(state, index)
        _reset_wake_counters(entities)

    def step(self) -> None:
        """One physics substep (1 / sim_freq s) of every env's own system."""
        if self._wrenches is not None:
            self._wrenches.apply()
        for system in self.systems:
            system.step()
        self._after_substep()

    def close(self) -> None:
        super().close()
        self.systems = []


def _reset_wake_counters(entities: list) -> None:
    """Set the wake counter of every moving body and articulation to PhysX's reset value.

    Why (measured, SAPIEN 3.0.3): a body keeps its wake counter when it moves to a new
    system, and a pose or velocity write does not always reset it, so a restored state
    continued with the counter its env had at the restore: PokeCube-v1 saved after 8
    steps, restored 4 times, continued unlike the run after saving at every other restore
    (up to 1.45, from step 8, when the resting cube's counter ran out). wake_up() sets the
    counter, whatever it was."""
    for entity in entities:
        for component in entity.components:
            if isinstance(component, sapien.physx.PhysxRigidDynamicComponent):
                if not component.kinematic:   # a kinematic body has no wake counter to set
                    component.wake_up()
            elif isinstance(component, sapien.physx.PhysxArticulationLinkComponent) and component.is_root:
                component.wake_up()
