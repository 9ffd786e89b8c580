"""Backend `physx_gpu_emulated`: SAPIEN 3.0's PhysxGpuSystem, emulated on CPU PhysX.

Every sub-scene gets its own PhysxCpuSystem at the origin, so a sub-scene's frame is
its system's world frame, as on the GPU, where SAPIEN adds and removes the scene offset
itself. The emulation keeps the GPU system's buffers as torch tensors on `device`, in
SAPIEN's layout, and enforces the rules a GPU run would impose (docs/gpu.md lists each
with its SAPIEN source line):

  * the scene config is copied when the system is constructed (SAPIEN's PhysxSystem
    does), and every CPU system is built with that copy;
  * rows: rigid dynamic bodies first, in creation order over all sub-scenes (kinematic
    ones included), then A articulations (creation order) x L_max links (row
    R + a * L_max + link index; padding rows); joint buffers are (A, dof_max), padded;
  * an indexed qpos, qvel, qf or drive-target apply with n indices writes the FIRST n
    articulations, as SAPIEN's does; root and rigid-body applies write the named rows;
  * one infinite plane reaches every sub-scene (robosim.sim.gpu.emulation_shared);
  * no fetch, apply or step before `gpu_init`; adding a body afterwards un-initializes
    the system, so the next step fails as SAPIEN's does;
  * a buffer is stale after a step until fetched: its rows read NaN, and an apply that
    would push them raises (SAPIEN would silently push the old rows back);
  * link poses follow a qpos or root-pose apply only after
    `gpu_update_articulation_kinematics` (SAPIEN copies before it updates);
  * `entity.set_pose` on a dynamic body is undone before the next step and at gpu_init,
    with SAPIEN's warning; toggling `kinematic` after gpu_init raises at the next step;
  * the render group refuses a scene changed after it was created, and a pose buffer
    that was not fetched since the last step; it moves only the shapes and cameras
    that have a pose row, as SAPIEN's does (robosim.sim.gpu.emulation_render).
"""
from __future__ import annotations

import logging

import numpy as np
import sapien
import torch

from robosim.sim.gpu.emulation_render import EmulatedCudaArray, EmulatedRendering
from robosim.sim.gpu.emulation_shared import cpu_system, share_planes
from robosim.sim.scene import SubScene

POSE, VEL = slice(0, 7), slice(7, 13)
LOG = logging.getLogger(__name__)
NOT_INITIALIZED = "GPU PhysX is not initialized."
STEP_NOT_INITIALIZED = "failed to step: gpu simulation is not initialized."
SET_POSE_IGNORED = "setting pose does not affect PhysX GPU simulation."


def _physx_components(entity: sapien.Entity) -> list:
    return [c for c in entity.components if isinstance(c, sapien.physx.PhysxRigidBodyComponent)]


class EmulatedGpuSystem(EmulatedRendering):
    """PhysxGpuSystem's surface over one PhysxCpuSystem per sub-scene (module docstring)."""

    emulated = True

    def __init__(self, device: str | torch.device = "cpu"):
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:   # as SAPIEN's: "cuda:k", never bare "cuda"
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.config = sapien.physx.get_scene_config()   # a copy, taken now as SAPIEN's system does
        self.systems: list[sapien.physx.PhysxCpuSystem] = []
        self.scenes: list[SubScene] = []
        self.timestep = 0.01
        self.cuda_stream = 0             # SAPIEN's default: the legacy default stream
        self.initialized = False
        self._offsets: dict[int, np.ndarray] = {}
        self._build_poses: dict[int, sapien.Pose] = {}    # entity global_id -> pose when added
        self._bodies: list = []          # rigid dynamic components, row order
        self._arts: list = []            # articulations, index order
        self._rows: dict[int, int] = {}  # entity global_id -> buffer row
        self._art_index: dict[int, int] = {}
        self._link_rows: list[tuple[int, object]] = []
        self.max_dof = self.max_links = 0
        self.batch_rows: dict[int, tuple[object, int]] = {}   # set_pose_batch_index

    # -- construction ---------------------------------------------------------------
    def set_timestep(self, dt: float) -> None:
        self.timestep = dt
        for system in self.systems:
            system.set_timestep(dt)

    def sub_scene_physx(self) -> sapien.physx.PhysxCpuSystem:
        """A CPU system with the scene config this system was constructed with."""
        system = cpu_system(self.config)
        system.set_timestep(self.timestep)
        self.systems.append(system)
        return system

    def make_scene(self, physx, render_system) -> SubScene:
        systems = [physx] if render_system is None else [physx, render_system]
        scene = SubScene(systems, render=render_system is not None, watcher=self)
        self.scenes.append(scene)
        return scene

    @staticmethod
    def render_device() -> None:
        return None

    def set_scene_offset(self, scene: sapien.Scene, offset) -> None:
        self._offsets[id(scene)] = np.asarray(offset, dtype=np.float32).reshape(3)

    def get_scene_offset(self, scene: sapien.Scene) -> np.ndarray:
        return self._offsets.get(id(scene), np.zeros(3, dtype=np.float32)).copy()

    def _entity_added(self, entity: sapien.Entity) -> None:
        if any(isinstance(c, sapien.physx.PhysxRigidBaseComponent) for c in entity.components):
            self.initialized = False          # SAPIEN: registerComponent -> mGpuInitialized = false
        if _physx_components(entity):
            self._build_poses[entity.global_id] = entity.pose
        share_planes(entity, self.scenes, self.get_scene_offset)

    def _entity_removed(self, entity: sapien.Entity) -> None:
        if _physx_components(entity):
            self.initialized = False

    # -- gpu_init -------------------------------------------------------------------
    def gpu_init(self) -> None:
        """Number bodies and articulations, allocate the buffers (unfetched: NaN) and
        simulate one step, as SAPIEN's gpuInit does."""
        self._bodies, self._arts, self._rows, self._art_index = [], [], {}, {}
        # SAPIEN numbers bodies by component creation over the whole system (a set ordered
        # by component id) and PhysX numbers articulations as they were added: entity ids
        # grow in the same order here (each body's entity is created just before it)
        entities = sorted((e for scene in self.scenes for e in scene.entities), key=lambda e: e.global_id)
        for entity in entities:
            for c in _physx_components(entity):
                if isinstance(c, sapien.physx.PhysxRigidDynamicComponent):
                    self._restore_build_pose(entity)
                    self._rows[entity.global_id] = len(self._bodies)
                    self._bodies.append(c)
                elif isinstance(c, sapien.physx.PhysxArticulationLinkComponent) and c.is_root:
                    self._art_index[entity.global_id] = len(self._arts)
                    self._arts.append(c.articulation)
        r = len(self._bodies)
        self.max_links = max([len(a.get_links()) for a in self._arts], default=0)
        self.max_dof = max([a.dof for a in self._arts], default=0)
        self._link_rows = []
        for a, art in enumerate(self._arts):
            for link in art.get_links():
                row = r + a * self.max_links + link.index
                self._rows[link.entity.global_id] = row
                self._link_rows.append((row, link))
        self._link_index = torch.tensor([row for row, _ in self._link_rows], dtype=torch.long, device=self.device)
        self._pose_rows = torch.cat([torch.arange(r, device=self.device), self._link_index])
        self._kinematic = [b.kinematic for b in self._bodies]
        for system in self.systems:
            system.step()
        nan = dict(dtype=torch.float32, device=self.device)
        self.rigid = torch.full((r + len(self._arts) * self.max_links, 13), float("nan"), **nan)
        self.rigid[r:] = 0.0      # padding rows stay 0; link rows are NaN until fetched
        for row, _ in self._link_rows:
            self.rigid[row] = float("nan")
        shape = (len(self._arts), self.max_dof)
        self.art = {k: torch.full(shape, float("nan"), **nan) for k in ("qpos", "qvel", "qf", "target_qpos",
                                                                          "target_qvel")}
        self._rigid_truth = self._read_bodies()
        self._link_truth = self._read_links(velocity=True)
        self.initialized = True

    def _restore_build_pose(self, entity: sapien.Entity) -> None:
        built = self._build_poses.get(entity.global_id)
        if built is not None and ((entity.pose.p != built.p).any() or (entity.pose.q != built.q).any()):
            LOG.warning(SET_POSE_IGNORED)
            entity.set_pose(built)

    def _check_init(self) -> None:
        if not self.initialized:
            raise RuntimeError(NOT_INITIALIZED)

    def gpu_set_cuda_stream(self, stream: int) -> None:
        """Kept, not used: the emulation's copies are torch's, on torch's current stream."""
        self.cuda_stream = stream

    # -- indices --------------------------------------------------------------------
    def pose_index(self, body) -> int:
        """Row of a rigid dynamic body or articulation link in cuda_rigid_body_data."""
        self._check_init()
        return self._rows[body.entity.global_id]

    def articulation_index(self, articulation) -> int:
        self._check_init()
        return self._art_index[articulation.get_links()[0].entity.global_id]

    # -- buffers --------------------------------------------------------------------
    @property
    def cuda_rigid_body_data(self) -> EmulatedCudaArray:
        self._check_init()
        return EmulatedCudaArray(self.rigid)

    def __getattr__(self, name: str):
        if name.startswith("cuda_articulation_"):
            kind = name[len("cuda_articulation_"):]
            if kind in ("qpos", "qvel", "qf", "target_qpos", "target_qvel"):
                self._check_init()
                return EmulatedCudaArray(self.art[kind])
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r} (not emulated)")

    def _read_bodies(self) -> torch.Tensor:
        out = np.zeros((len(self._bodies), 13), dtype=np.float32)
        for i, b in enumerate(self._bodies):
            pose = b.entity.pose
            out[i, :3], out[i, 3:7] = pose.p, pose.q
            if not b.kinematic:
                out[i, 7:10], out[i, 10:13] = b.linear_velocity, b.angular_velocity
        return torch.from_numpy(out).to(self.device)

    def _read_links(self, velocity: bool) -> torch.Tensor:
        out = np.zeros((len(self._link_rows), 13), dtype=np.float32)
        for k, (_, link) in enumerate(self._link_rows):
            pose = link.entity.pose
            out[k, :3], out[k, 3:7] = pose.p, pose.q
            if velocity:
                out[k, 7:10], out[k, 10:13] = link.linear_velocity, link.angular_velocity
        return torch.from_numpy(out).to(self.device)

    # -- fetch ----------------------------------------------------------------------
    def gpu_fetch_rigid_dynamic_data(self) -> None:
        self._check_init()
        self.rigid[:len(self._bodies)] = self._rigid_truth

    def gpu_fetch_articulation_link_pose(self) -> None:
        self._check_init()
        if self._link_rows:
            self.rigid[self._link_index, :7] = self._link_truth[:, :7]

    def gpu_fetch_articulation_link_velocity(self) -> None:
        self._check_init()
        if self._link_rows:
            self.rigid[self._link_index, 7:] = self._link_truth[:, 7:]

    def _fetch_joints(self, kind: str, read) -> None:
        self._check_init()
        out = torch.zeros(len(self._arts), self.max_dof)
        for a, art in enumerate(self._arts):
            out[a, :art.dof] = torch.as_tensor(np.asarray(read(art), dtype=np.float32).reshape(-1))
        self.art[kind][:] = out.to(self.device)

    def gpu_fetch_articulation_qpos(self) -> None:
        self._fetch_joints("qpos", lambda a: a.qpos)

    def gpu_fetch_articulation_qvel(self) -> None:
        self._fetch_joints("qvel", lambda a: a.qvel)

    def gpu_fetch_articulation_target_qpos(self) -> None:
        self._fetch_joints("target_qpos", lambda a: [j.drive_target for j in a.get_active_joints()])

    def gpu_fetch_articulation_target_qvel(self) -> None:
        self._fetch_joints("target_qvel", lambda a: [j.drive_velocity_target for j in a.get_active_joints()])

    # -- apply ----------------------------------------------------------------------
    @staticmethod
    def _indices(index_buffer, count: int, what: str) -> list[int]:
        if index_buffer is None:
            return list(range(count))
        index = torch.as_tensor(index_buffer)
        if index.dtype != torch.int32 or index.dim() != 1:
            raise RuntimeError(f"{what}: the index buffer must be a contiguous int32 vector, got "
                               f"{index.dtype} with shape {tuple(index.shape)}")
        rows = index.tolist()
        if any(not 0 <= r < count for r in rows):
            raise RuntimeError(f"{what}: index out of range [0, {count})")
        return rows

    @staticmethod
    def _check_fetched(values: torch.Tensor, rows: list[int], what: str, fetch: str) -> None:
        bad = [r for r, ok in zip(rows, torch.isfinite(values).all(dim=1).tolist()) if not ok]
        if bad:
            raise RuntimeError(f"{what} would push rows {bad[:8]} that were not fetched since the last step "
                               f"(on a GPU they would write stale values back): call {fetch} before "
                               f"editing the buffer (physx_gpu_emulated check)")

    def gpu_apply_rigid_dynamic_data(self, index_buffer=None) -> None:
        self._check_init()
        rows = self._indices(index_buffer, len(self._bodies), "gpu_apply_rigid_dynamic_data")
        values = self.rigid[rows]
        self._check_fetched(values, rows, "gpu_apply_rigid_dynamic_data", "gpu_fetch_rigid_dynamic_data")
        cpu = values.detach().cpu().numpy()
        for row, v in zip(rows, cpu):
            body = self._bodies[row]
            body.entity.set_pose(sapien.Pose(v[:3], v[3:7]))
            if not body.kinematic:
                body.set_linear_velocity(v[7:10])
                body.set_angular_velocity(v[10:13])
        self._rigid_truth[rows] = self._read_bodies()[rows]   # as PhysX stored it

    def _apply_joints(self, kind: str, index_buffer, write) -> None:
        """SAPIEN (physx_system.cpp 866-964) hands PhysX its own index buffer, [0, A), with
        the count of the given indices: n indices write articulations 0..n-1, whichever
        rows they name."""
        self._check_init()
        what = f"gpu_apply_articulation_{kind}"
        named = self._indices(index_buffer, len(self._arts), what)
        if len(named) > len(self._arts):
            raise RuntimeError(f"{what}: {len(named)} indices for {len(self._arts)} articulations")
        rows = list(range(len(named)))
        values = self.art[kind][rows]
        self._check_fetched(values, rows, what, f"gpu_fetch_articulation_{kind}")
        for a, v in zip(rows, values.detach().cpu().numpy()):
            art = self._arts[a]
            write(art, v[:art.dof])

    def gpu_apply_articulation_qpos(self, index_buffer=None) -> None:
        self._apply_joints("qpos", index_buffer, lambda a, v: a.set_qpos(v))

    def gpu_apply_articulation_qvel(self, index_buffer=None) -> None:
        self._apply_joints("qvel", index_buffer, lambda a, v: a.set_qvel(v))

    def gpu_apply_articulation_qf(self, index_buffer=None) -> None:
        self._apply_joints("qf", index_buffer, lambda a, v: a.set_qf(v))

    def gpu_apply_articulation_target_position(self, index_buffer=None) -> None:
        def write(art, v):
            for joint, target in zip(art.get_active_joints(), v.tolist()):
                joint.set_drive_target(target)
        self._apply_joints("target_qpos", index_buffer, write)

    def gpu_apply_articulation_target_velocity(self, index_buffer=None) -> None:
        def write(art, v):
            for joint, target in zip(art.get_active_joints(), v.tolist()):
                joint.set_drive_velocity_target(target)
        self._apply_joints("target_qvel", index_buffer, write)

    def _root_rows(self, index_buffer, what: str) -> tuple[list[int], torch.Tensor]:
        self._check_init()
        arts = self._indices(index_buffer, len(self._arts), what)
        rows = [len(self._bodies) + a * self.max_links for a in arts]
        return arts, self.rigid[rows]

    def gpu_apply_articulation_root_pose(self, index_buffer=None) -> None:
        arts, values = self._root_rows(index_buffer, "gpu_apply_articulation_root_pose")
        self._check_fetched(values[:, POSE], arts, "gpu_apply_articulation_root_pose",
                            "gpu_fetch_articulation_link_pose")
        for a, v in zip(arts, values.detach().cpu().numpy()):
            self._arts[a].set_root_pose(sapien.Pose(v[:3], v[3:7]))

    def gpu_apply_articulation_root_velocity(self, index_buffer=None) -> None:
        arts, values = self._root_rows(index_buffer, "gpu_apply_articulation_root_velocity")
        self._check_fetched(values[:, VEL], arts, "gpu_apply_articulation_root_velocity",
                            "gpu_fetch_articulation_link_velocity")
        for a, v in zip(arts, values.detach().cpu().numpy()):
            self._arts[a].set_root_linear_velocity(v[7:10])
            self._arts[a].set_root_angular_velocity(v[10:13])

    def gpu_update_articulation_kinematics(self) -> None:
        """Link poses follow the last applied qpos and root poses (CPU PhysX moved the
        links at once; the GPU's fetched link poses change only from here on)."""
        self._check_init()
        if self._link_rows:
            self._link_truth[:, :7] = self._read_links(velocity=False)[:, :7]

    # -- step -----------------------------------------------------------------------
    def step(self) -> None:
        if not self.initialized:
            raise RuntimeError(STEP_NOT_INITIALIZED)
        self._undo_direct_writes()
        for system in self.systems:
            system.step()
        self._rigid_truth = self._read_bodies()
        self._link_truth = self._read_links(velocity=True)
        r = len(self._bodies)
        self.rigid[:r] = float("nan")
        if self._link_rows:
            self.rigid[self._link_index] = float("nan")
        for kind in ("qpos", "qvel"):
            self.art[kind][:] = float("nan")

    def _undo_direct_writes(self) -> None:
        """A pose written on an entity (not through the buffers) is ignored on the GPU;
        a kinematic flag changed after gpu_init is refused."""
        for body, was in zip(self._bodies, self._kinematic):
            if body.kinematic != was:
                raise RuntimeError(f"body {body.entity.name!r}: its kinematic flag changed after gpu_init, which "
                                   f"GPU PhysX does not support (physx_gpu_emulated check)")
        current = self._read_bodies()
        moved = (current[:, POSE] != self._rigid_truth[:, POSE]).any(dim=1).nonzero().flatten().tolist()
        if moved:
            LOG.warning(SET_POSE_IGNORED)
            truth = self._rigid_truth.detach().cpu().numpy()
            for row in moved:
                self._bodies[row].entity.set_pose(sapien.Pose(truth[row, :3], truth[row, 3:7]))
