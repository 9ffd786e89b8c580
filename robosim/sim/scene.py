"""SimScene: N parallel envs inside one PhysX system, with batched views.

Backend `physx_cpu`: every env is its own `sapien.Scene` (so it keeps its own render
world and cameras) and all of them share ONE `PhysxCpuSystem`, spaced apart on the grid
of `layout.env_origins`. One `system.step()` advances every env.

Why this layout (measured 2026-11-21 on the project's 2-core machine: 16 envs of Panda +
cube at 100 Hz, robot links without gravity, median of 3 alternating runs of 300 steps):
  one PhysxCpuSystem per env ............ ~64k env-substeps/s
  all envs in one shared PhysxCpuSystem ... ~137k env-substeps/s (2.1x)
Stepping one system amortizes PhysX's per-step fixed cost over all envs, while separate
render systems keep each env's camera view free of its neighbours.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import sapien
import torch

from robosim.sim.building import SceneBuilding
from robosim.sim.handles import SceneHandles
from robosim.sim.layout import GRID_SPACING, env_origins
from robosim.sim.packed import PackedReads
from robosim.sim.physics import PhysicsConfig
from robosim.sim.views import ActorView, ArticulationView, ReadCache


class SubScene(sapien.Scene):
    """One env's sapien.Scene. render=False: builders still describe visuals (tasks and
    robots need not know) and their render components are dropped as entities arrive.
    `watcher._entity_added(entity)` / `_entity_removed(entity)`, when given, hear of every
    change (the emulated GPU system keeps SAPIEN's bookkeeping that way)."""

    def __init__(self, systems: list, render: bool = True, watcher=None):
        super().__init__(systems)
        self._render, self._watcher = render, watcher

    def add_entity(self, entity: sapien.Entity) -> None:
        if not self._render:
            for component in list(entity.components):
                if isinstance(component, sapien.render.RenderBodyComponent):
                    entity.remove_component(component)
        super().add_entity(entity)
        if self._watcher is not None:
            self._watcher._entity_added(entity)

    def remove_entity(self, entity: sapien.Entity) -> None:
        super().remove_entity(entity)
        if self._watcher is not None:
            self._watcher._entity_removed(entity)


def add_lights(scene: sapien.Scene) -> None:
    """The default lighting of every env's render world."""
    scene.set_ambient_light([0.35, 0.35, 0.35])
    scene.add_directional_light([0.3, 0.5, -1.0], [0.9, 0.9, 0.9], shadow=False)


class SimScene(SceneBuilding, SceneHandles):
    """N envs in one physics system (physx_cpu).

    Build with `add_ground`, then `add_object` / `add_articulation` / `load_urdf`
    (robosim.sim.building: env-frame descriptions), or the lower-level `build_actors` /
    `load_articulations` (callbacks that build SAPIEN objects themselves), then `step()`
    for one physics substep of all envs. State per env is a flat float32 vector, the
    concatenation of every view's state in build order (`state_dim` entries)."""

    backend = "physx_cpu"
    batched_rendering = False   # True: cameras render through one render group (GPU-style scenes)
    packed_reads = True         # False: views read each env's bodies one by one (scenes of several systems)
    actor_view_class = ActorView
    articulation_view_class = ArticulationView

    def __init__(self, num_envs: int, sim_freq: int, physics: PhysicsConfig | None = None, render: bool = True):
        self.num_envs = num_envs
        self.render = render     # False: no render system at all (state-only envs need no Vulkan)
        self.sim_freq = sim_freq
        self.physics_config = PhysicsConfig() if physics is None else physics
        self.physics_config.apply(num_envs)
        self.device = torch.device("cpu")
        self.origins = self._env_origins(num_envs)                  # float64 (N, 3)
        self._origins32 = self.origins.numpy().astype(np.float32)   # exact: multiples of 0.5 m
        self.physx = self._make_physx_system()
        self.physx.set_timestep(1.0 / sim_freq)
        self.sub_scenes = [self._make_sub_scene(i) for i in range(num_envs)]
        self.actors: dict[str, ActorView] = {}
        self.articulations: dict[str, ArticulationView] = {}
        self.read_cache = ReadCache()   # views reuse reads until a step or a write
        self.substeps_done = 0                                  # physics substeps run so far
        self.written_at = np.zeros(num_envs, dtype=np.int64)   # substeps_done at each env's last write
        # one system-wide pack per step instead of per-env reads (robosim.sim.packed)
        self.packed = PackedReads(self.physx, self.read_cache, self._views) if self.packed_reads else None

    # -- construction -----------------------------------------------------------------
    def _env_origins(self, num_envs: int) -> torch.Tensor:
        return env_origins(num_envs)

    def _make_physx_system(self) -> sapien.physx.PhysxSystem:
        return sapien.physx.PhysxCpuSystem()

    def _make_sub_scene(self, env_index: int) -> sapien.Scene:
        if not self.render:
            return SubScene([self.physx], render=False)
        scene = SubScene([self.physx, sapien.render.RenderSystem()])
        add_lights(scene)
        return scene

    def add_ground(self, altitude: float = 0.0, color=(0.86, 0.84, 0.8, 1.0)) -> None:
        """One collision plane shared by all envs, plus a visual floor in each env."""
        first = self.sub_scenes[0]
        first.add_ground(altitude, render=False)
        if not self.render:
            return
        for i, scene in enumerate(self.sub_scenes):
            builder = scene.create_actor_builder()
            builder.add_box_visual(
                sapien.Pose([0, 0, altitude - 0.005]), half_size=[1.6, 1.6, 0.005],
                material=sapien.render.RenderMaterial(base_color=list(color)),
            )
            builder.initial_pose = sapien.Pose(self._origins32[i])
            builder.build_static(name="floor")

    def build_actors(self, name: str, build: Callable[[sapien.Scene, int], sapien.Entity]) -> ActorView:
        """Call `build(scene, env_index)` once per env; returns the batched view.

        Low level: `build` places its entity in WORLD coordinates, i.e. it must add
        `self.env_pose(env_index, pose)` (or `origins[env_index]`) itself. An entity left
        outside its env's cell is refused with a ValueError. Prefer `add_object`."""
        self._check_new_name(name, self.actors)
        return self._register_actor_view(name, [build(s, i) for i, s in enumerate(self.sub_scenes)])

    def load_articulations(
        self, name: str, load: Callable[[sapien.Scene, int], sapien.physx.PhysxArticulation]
    ) -> ArticulationView:
        """Call `load(scene, env_index)` once per env (world coordinates, as build_actors);
        returns the batched view. Not checked against the env cells (a caller may place
        the root at reset). Prefer `add_articulation` / `load_urdf`."""
        self._check_new_name(name, self.articulations)
        return self._register_articulation_view(name, [load(s, i) for i, s in enumerate(self.sub_scenes)])

    @staticmethod
    def _check_new_name(name: str, registry: dict) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str, got {name!r}")
        if name in registry:
            raise ValueError(f"name {name!r} is already used in this scene")

    def _check_in_cell(self, name: str, world_positions: list) -> None:
        """Every env's copy must sit inside its own cell: a builder that forgot the env
        offset would put it in another env, or far from every camera."""
        local = np.asarray(world_positions, dtype=np.float64) - self.origins.numpy()
        bad = np.flatnonzero(np.abs(local[:, :2]).max(axis=1) > GRID_SPACING / 2)
        if len(bad):
            i = int(bad[0])
            raise ValueError(
                f"{name!r} in env {i} was built at world position "
                f"{np.round(np.asarray(world_positions[i]), 3).tolist()}, "
                f"outside env {i}'s cell around {self.origins[i].tolist()}: build poses must be "
                f"sim.env_pose(env_index, env_frame_pose), or use sim.add_object / sim.add_articulation")

    def _register_actor_view(self, name: str, entities: list) -> ActorView:
        if name in self.actors:
            raise ValueError(f"actor name {name!r} is already used in this scene")
        self._check_in_cell(name, [e.pose.p for e in entities])
        view = self.actor_view_class(name, entities, self._origins32, cache=self.read_cache)
        self._attach_packed(view)
        self.actors[name] = view
        return view

    def _register_articulation_view(self, name: str, articulations: list,
                                    check_cells: bool = False) -> ArticulationView:
        if name in self.articulations:
            raise ValueError(f"articulation name {name!r} is already used in this scene")
        if check_cells:
            self._check_in_cell(name, [a.root_pose.p for a in articulations])
        view = self.articulation_view_class(name, articulations, self._origins32, cache=self.read_cache)
        self._attach_packed(view)
        self.articulations[name] = view
        return view

    def finalize(self) -> None:
        """Called once after everything is built (the GPU backend allocates buffers here)."""

    # -- stepping -------------------------------------------------------------------
    def step(self) -> None:
        """One physics substep (1 / sim_freq s) for all envs (held wrenches applied first)."""
        if self._wrenches is not None:
            self._wrenches.apply()
        self.physx.step()
        self._after_substep()

    def _after_substep(self) -> None:
        """Count the substep, drop kept reads, record contacts when a query asked for a
        reading over several substeps (robosim.sim.contacts)."""
        self.substeps_done += 1
        self.read_cache.invalidate()
        if self._contacts is not None and self._contacts.recording:
            self._contacts.record()

    def update_render(self, env_idx: torch.Tensor | None = None) -> None:
        """Push current physics poses to the render worlds of env_idx (all when None)."""
        ids = range(self.num_envs) if env_idx is None else env_idx.tolist()
        for i in ids:
            self.sub_scenes[i].update_render()

    def forget_history(self, env_idx: torch.Tensor | None = None) -> None:
        """Make env_idx's future depend only on its current state (called after every reset
        and set_state). A shared system cannot: its envs' bodies share one broadphase and
        solver (see IsolatedSimScene.forget_history). Welds of env_idx re-anchor at the
        written poses (robosim.sim.welds)."""
        self._written(env_idx)

    def _written(self, env_idx: torch.Tensor | None) -> None:
        """env_idx was just written (reset, set_state): its welds re-anchor at the written
        poses, its contact readings over several substeps start afresh."""
        self.written_at[slice(None) if env_idx is None else env_idx.cpu().numpy()] = self.substeps_done
        self._reanchor_welds(env_idx)

    def _reanchor_welds(self, env_idx: torch.Tensor | None) -> None:
        if self._welds is not None:   # nothing unless a task made welds
            self._welds.reanchor(env_idx)

    def _attach_packed(self, view) -> None:
        """A new view reads from the system-wide pack (its bodies are new: re-index)."""
        if self.packed is not None:
            view._packed = self.packed
            self.packed.stale()

    # -- state --------------------------------------------------------------------
    def _views(self):
        return list(self.articulations.values()) + list(self.actors.values())

    @property
    def state_dim(self) -> int:
        return sum(v.state_dim for v in self._views())

    def state_layout(self) -> dict[str, dict[str, slice]]:
        """Named columns of get_state(): {view name: {kind: slice of the state row}}.
        Kinds: pose and velocity (rigid objects; velocity unless kinematic), variant
        (object pools), root_pose, qpos, qvel, drive_targets (articulations)."""
        layout, start = {}, 0
        for view in self._views():
            layout[view.name] = {kind: slice(start + c.start, start + c.stop)
                                 for kind, c in view.state_columns().items()}
            start += view.state_dim
        return layout

    def get_state(self, env_idx: torch.Tensor | None = None) -> torch.Tensor:
        """float32 (M, state_dim) physics state of env_idx (all when None), env frame."""
        state = torch.cat([part for view in self._views() for part in view._state_parts()], dim=1)   # one copy
        return state if env_idx is None else state[env_idx.to(state.device)]

    def check_state(self, state: torch.Tensor) -> None:
        """ValueError for a row a view cannot take (a pool's variant index); writes nothing."""
        start = 0
        for view in self._views():
            if hasattr(view, "check_state"):
                view.check_state(state[:, start:start + view.state_dim])
            start += view.state_dim

    def set_state(self, state: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """Write rows of `state` (M, state_dim) into env_idx (all when None)."""
        start = 0
        for view in self._views():
            view.set_state(state[:, start:start + view.state_dim], env_idx)
            start += view.state_dim

    def close(self) -> None:
        """Release every env's scene; handles taken from this scene (sim.contacts,
        sim.welds, sim.wrenches) raise ValueError from then on."""
        self.closed = True
        for scene in self.sub_scenes:
            scene.clear()
        self.sub_scenes = []
        self.actors.clear()
        self.articulations.clear()

