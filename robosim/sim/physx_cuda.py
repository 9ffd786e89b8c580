"""Backend `physx_cuda`: the SimScene interface over SAPIEN's GPU PhysX (PhysxGpuSystem).

How SAPIEN 3.0.3 wants it driven (checked against its sources and ManiSkill3 3.0.1's
mani_skill/envs/scene.py and sapien_env.py):
  * `sapien.physx.enable_gpu()` loads SAPIEN's PhysX GPU library and must run before
    any PhysX object exists in the process (else "GPU PhysX can only be enabled once
    before any other code involving PhysX"); `enable_physx_gpu` checks both and says
    what to do. SAPIEN downloads the library on first use with no timeout: robosim
    never lets it, and asks for it to be put in place instead.
  * every env is one sapien.Scene in ONE PhysxGpuSystem, shifted by
    `set_scene_offset`. Poses given before `gpu_init()` and every pose in the GPU
    buffers are in the sub-scene's own frame, so `origins` are zero here (builders
    and cameras add nothing) and the grid offsets live only in `scene_offsets`.
  * buffers: `cuda_rigid_body_data` rows [pose 7 | linear vel 3 | angular vel 3] at
    each body's (and articulation link's) `gpu_pose_index`; `cuda_articulation_*`
    (N_art, max_dof) rows at `gpu_index`. A write edits the torch view of a buffer and
    pushes ALL its rows with `gpu_apply_*`, so the buffer is fetched first if a step
    made it stale; reads fetch lazily, at most once per kind after a step: one
    control step of several substeps costs one fetch per quantity that is read.
  * GPU PhysX never writes poses back to the entities: cameras render through a
    RenderSystemGroup that reads poses straight from `cuda_rigid_body_data`.
Everything a view returns is a CUDA tensor; indices stay on the device, so the step
path issues no host synchronization from robosim's side.
"""
from __future__ import annotations

import math
import platform
from pathlib import Path

import sapien
import torch

from robosim.sim.scene import SimScene
from robosim.sim.views import POSE_DIM, VELOCITY_DIM, ActorView, ArticulationView

GPU_SPACING = 4.0   # m between neighbouring sub-scene offsets (grid centred on 0)
_LIB_URL = "https://github.com/sapien-sim/physx-precompiled/releases/download/{v}/linux-so.zip"


def physx_gpu_library() -> Path:
    """Where SAPIEN 3.0.3 loads its PhysX GPU library from (~/.sapien/physx/<version>)."""
    return Path.home() / ".sapien" / "physx" / sapien.physx.version() / "libPhysXGpu_64.so"


def physx_gpu_library_url() -> str:
    return _LIB_URL.format(v=sapien.physx.version())


def enable_physx_gpu() -> None:
    """Enable GPU PhysX for this process, or raise a RuntimeError/ValueError saying why
    it cannot and what to do. Idempotent."""
    if sapien.physx.is_gpu_enabled():
        return
    if not torch.cuda.is_available():
        raise ValueError("sim_backend 'physx_cuda' needs a CUDA GPU; none is visible to torch (use 'physx_cpu')")
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise RuntimeError(f"physx_cuda is supported on Linux x86_64 only, got {platform.system()} {platform.machine()}")
    lib = physx_gpu_library()
    if not lib.exists():
        raise RuntimeError(
            f"physx_cuda needs SAPIEN's PhysX GPU library at {lib}, which is missing: download "
            f"{physx_gpu_library_url()} and unzip it into {lib.parent} (scripts/gpu_check.sh does this "
            f"on a machine with internet access)")
    try:
        sapien.physx.enable_gpu()
    except RuntimeError as err:
        if "only be enabled once" in str(err):
            raise RuntimeError(
                "physx_cuda must be the first use of PhysX in this process, but a PhysX object already "
                "exists (any physx_cpu env, even a closed one, keeps PhysX alive): build the physx_cuda env "
                "before any physx_cpu env, or in a fresh process") from err
        raise


_AUTO: dict[str, bool] = {}


def cuda_backend_usable() -> bool:
    """True when physx_cuda works in this process: a CUDA GPU, the PhysX GPU library in
    place, and GPU PhysX enabled (this call enables it if no PhysX object exists yet)."""
    if "ok" not in _AUTO:
        try:
            enable_physx_gpu()
            _AUTO["ok"] = True
        except (RuntimeError, ValueError):
            _AUTO["ok"] = False
    return _AUTO["ok"]


def scene_offsets(num_envs: int) -> torch.Tensor:
    """float64 (N, 3) world offsets of the sub-scenes: a square grid centred on 0, z = 0."""
    side = math.ceil(math.sqrt(num_envs))
    idx = torch.arange(num_envs, dtype=torch.float64)
    x = GPU_SPACING * (idx % side - side // 2)
    y = GPU_SPACING * (torch.div(idx, side, rounding_mode="floor") - side // 2)
    return torch.stack([x, y, torch.zeros_like(x)], dim=1)


class GpuBuffers:
    """The GPU system's buffers with lazy fetching: `get(kind)` returns the torch view of
    a buffer, fetched once since the last `stale()` (one call per physics step)."""

    _FETCH = {
        "rigid": "gpu_fetch_rigid_dynamic_data",
        "link": "gpu_fetch_articulation_link_pose",
        "qpos": "gpu_fetch_articulation_qpos",
        "qvel": "gpu_fetch_articulation_qvel",
    }

    def __init__(self, physx: sapien.physx.PhysxGpuSystem):
        self.physx = physx
        self.fresh: set[str] = set()
        self.fetch_calls = 0   # counted for the tests' fetch-once-per-step check

    def stale(self) -> None:
        self.fresh.clear()

    def fetch(self, kind: str) -> None:
        if kind not in self.fresh:
            getattr(self.physx, self._FETCH[kind])()
            self.fetch_calls += 1
            self.fresh.add(kind)

    def rigid(self) -> torch.Tensor:
        """float32 (bodies, 13) view of cuda_rigid_body_data: dynamic bodies' rows current."""
        self.fetch("rigid")
        return self.physx.cuda_rigid_body_data.torch()

    def links(self) -> torch.Tensor:
        """The same buffer with the articulation links' pose rows current."""
        self.fetch("link")
        return self.physx.cuda_rigid_body_data.torch()


def _rows(env_idx: torch.Tensor | None, index: torch.Tensor) -> torch.Tensor:
    return index if env_idx is None else index[env_idx.to(index.device)]


class CudaActorView(ActorView):
    """ActorView over `cuda_rigid_body_data` rows (env frame = sub-scene frame)."""

    def bind(self, buffers: GpuBuffers, device: torch.device) -> None:
        self.buffers, self.device = buffers, device
        # static bodies have no row in the GPU buffers and never move: their build pose
        self.static = any(b is None for b in self.bodies)
        self._static_pose = torch.tensor([[*e.pose.p, *e.pose.q] for e in self.entities], device=device,
                                         dtype=torch.float32) if self.static else None
        self.index = None if self.static else torch.tensor([b.gpu_pose_index for b in self.bodies],
                                                           device=device, dtype=torch.long)

    def pose(self) -> torch.Tensor:
        if self.static:
            return self._static_pose.clone()
        return self.buffers.rigid()[self.index, :POSE_DIM]

    def set_state(self, state, env_idx=None):
        if not self.static:        # a static body's state is its build pose: nothing to write
            super().set_state(state, env_idx)

    def _write(self, cols: slice, value: torch.Tensor, env_idx) -> None:
        if self.static:
            raise NotImplementedError(f"actor {self.name!r} is static: static bodies cannot move on physx_cuda "
                                      "(build it kinematic)")
        data = self.buffers.rigid()     # current rows: the apply below pushes all of them
        data[_rows(env_idx, self.index), cols] = value.to(self.device, torch.float32)
        self.buffers.physx.gpu_apply_rigid_dynamic_data()

    def set_pose(self, pose, env_idx=None):
        self._write(slice(0, POSE_DIM), pose, env_idx)

    def velocity(self) -> torch.Tensor:
        if self.kinematic:
            return torch.zeros(len(self.entities), VELOCITY_DIM, device=self.device)
        return self.buffers.rigid()[self.index, POSE_DIM:POSE_DIM + VELOCITY_DIM]

    def set_velocity(self, velocity, env_idx=None):
        if not self.kinematic:
            self._write(slice(POSE_DIM, POSE_DIM + VELOCITY_DIM), velocity, env_idx)


class CudaArticulationView(ArticulationView):
    """ArticulationView over the `cuda_articulation_*` buffers (fixed-base robots)."""

    def bind(self, buffers: GpuBuffers, device: torch.device) -> None:
        self.buffers, self.device = buffers, device
        px = buffers.physx
        self.index = torch.tensor([a.gpu_index for a in self.articulations], device=device, dtype=torch.long)
        # (dof,) link rows per env: links[k] of env i sits at link_index[i, k]
        self.link_index = torch.tensor([[l.gpu_pose_index for l in links] for links in self.links],
                                       device=device, dtype=torch.long)
        self._targets = px.cuda_articulation_target_qpos.torch()[self.index, :self.dof].clone()
        self.joint_mask = self.joint_mask.to(device)

    def qlimits(self) -> torch.Tensor:
        return super().qlimits().to(self.device)

    def qlimits_per_env(self) -> torch.Tensor:
        return super().qlimits_per_env().to(self.device)

    def qpos(self):
        self.buffers.fetch("qpos")
        return self.buffers.physx.cuda_articulation_qpos.torch()[self.index, :self.dof]

    def qvel(self):
        self.buffers.fetch("qvel")
        return self.buffers.physx.cuda_articulation_qvel.torch()[self.index, :self.dof]

    def drive_targets(self):
        return self._targets.clone()

    def set_qpos(self, qpos, env_idx=None):
        px = self.buffers.physx
        self.buffers.fetch("qpos")
        px.cuda_articulation_qpos.torch()[_rows(env_idx, self.index), :self.dof] = qpos.to(self.device, torch.float32)
        px.gpu_apply_articulation_qpos()
        px.gpu_update_articulation_kinematics()
        self.buffers.fresh.discard("link")

    def set_qvel(self, qvel, env_idx=None):
        px = self.buffers.physx
        self.buffers.fetch("qvel")
        px.cuda_articulation_qvel.torch()[_rows(env_idx, self.index), :self.dof] = qvel.to(self.device, torch.float32)
        px.gpu_apply_articulation_qvel()

    def set_drive_targets(self, targets, env_idx=None):
        """PD targets (M, dof); the target buffer is written by robosim alone, so its other
        rows are always current and need no fetch."""
        targets = targets.to(self.device, torch.float32)
        if env_idx is None:
            self._targets.copy_(targets)
        else:
            self._targets[env_idx.to(self.device)] = targets
        px = self.buffers.physx
        px.cuda_articulation_target_qpos.torch()[_rows(env_idx, self.index), :self.dof] = targets
        px.gpu_apply_articulation_target_position()

    def root_pose(self) -> torch.Tensor:
        """float32 (N, 7) root link pose, env frame."""
        return self.buffers.links()[self.link_index[:, 0], :POSE_DIM]

    def set_root_pose(self, pose, env_idx=None):
        # a fixed base is placed through the builder at build time: SAPIEN ignores the
        # sub-scene offset in a later root-pose write
        raise NotImplementedError("physx_cuda places an articulation's root at build time only")

    def set_state(self, state: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """Rows (M, 7 + 3 dof): the root pose part is ignored (fixed roots stay where they
        were built), then qpos, qvel, drive targets."""
        if not self.fixed_root:
            raise NotImplementedError("floating-base articulations are not supported on physx_cuda yet")
        d = self.dof
        joints = state[:, POSE_DIM:]
        self.set_qpos(joints[:, :d], env_idx)
        self.set_qvel(joints[:, d:2 * d], env_idx)
        self.set_drive_targets(joints[:, 2 * d:], env_idx)

    def link_pose(self, link_name: str) -> torch.Tensor:
        """float32 (N, 7) pose of one link in the env frame, as PhysX computed it."""
        k = self.link_names.index(link_name)
        return self.buffers.links()[self.link_index[:, k], :POSE_DIM]


class CudaSimScene(SimScene):
    """SimScene on one PhysxGpuSystem (see the module docstring)."""

    backend = "physx_cuda"
    actor_view_class = CudaActorView
    articulation_view_class = CudaArticulationView

    def __init__(self, num_envs: int, sim_freq: int, physics=None, render: bool = True):
        enable_physx_gpu()      # before the first PhysX object of the process
        self.scene_offsets = scene_offsets(num_envs)
        super().__init__(num_envs, sim_freq, physics, render=render)
        self.device = torch.device("cuda", torch.cuda.current_device())
        self.buffers: GpuBuffers | None = None
        self.render_group = None

    def _env_origins(self, num_envs: int) -> torch.Tensor:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        return torch.zeros(num_envs, 3, dtype=torch.float64)   # env frame = sub-scene frame

    def _make_physx_system(self):
        return sapien.physx.PhysxGpuSystem(device="cuda")

    def _make_sub_scene(self, env_index: int, render_device: str | None = None) -> sapien.Scene:
        # render device = PhysX device, so the render group reads the pose buffer in place
        scene = super()._make_sub_scene(env_index, f"cuda:{torch.cuda.current_device()}")
        self.physx.set_scene_offset(scene, self.scene_offsets[env_index].tolist())
        return scene

    def finalize(self) -> None:
        """Allocate the GPU buffers, bind the views, start from rest (ManiSkill's _setup)."""
        px = self.physx
        px.gpu_init()
        # fill every buffer from PhysX's build-time state before anything is applied back
        # (an apply pushes all rows); the views keep their own copy of the drive targets
        px.gpu_fetch_rigid_dynamic_data()
        px.gpu_fetch_articulation_qpos()
        px.gpu_fetch_articulation_qvel()
        px.gpu_fetch_articulation_target_qpos()
        self.buffers = GpuBuffers(self.physx)
        for view in self._views():
            view.bind(self.buffers, self.device)
        px.cuda_rigid_body_data.torch()[:, POSE_DIM:] = 0.0
        px.cuda_articulation_qvel.torch()[:] = 0.0
        px.gpu_apply_rigid_dynamic_data()
        px.gpu_apply_articulation_qvel()
        px.gpu_update_articulation_kinematics()
        self.buffers.stale()
        if self.render:
            self._setup_render_group()

    def _setup_render_group(self) -> None:
        """Render shapes follow their body's row of cuda_rigid_body_data; static bodies
        keep their build-time pose."""
        for scene in self.sub_scenes:
            for entity in scene.entities:
                body = entity.find_component_by_type(sapien.physx.PhysxRigidBodyComponent)
                render = entity.find_component_by_type(sapien.render.RenderBodyComponent)
                if render is None or body is None or isinstance(body, sapien.physx.PhysxRigidStaticComponent):
                    continue
                for shape in render.render_shapes:
                    shape.set_gpu_pose_batch_index(body.gpu_pose_index)
        self.render_group = sapien.render.RenderSystemGroup([s.render_system for s in self.sub_scenes])
        self.render_group.set_cuda_poses(self.physx.cuda_rigid_body_data)

    def step(self) -> None:
        self.physx.step()
        self.buffers.stale()
        self.read_cache.invalidate()

    def update_render(self, env_idx: torch.Tensor | None = None) -> None:
        """Render worlds of all envs take their poses from the GPU buffers (env_idx is
        accepted for the CPU signature; the group always updates every env)."""
        self.buffers.rigid()
        self.buffers.links()
        self.render_group.update_render()
