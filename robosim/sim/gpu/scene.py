"""SimScene on a GPU-style physics system: backends `physx_cuda` and `physx_gpu_emulated`.

Both run every line here; they differ only in the object that holds the system
(robosim.sim.gpu.system: SAPIEN's PhysxGpuSystem, or its emulation on CPU PhysX). How
SAPIEN 3.0.3 wants a GPU system driven (its sources and ManiSkill3 3.0.1's
mani_skill/envs/scene.py):
  * the PhysxGpuSystem copies the scene config and GPU memory capacities when it is
    constructed (physx_system.cpp 46-47, 91-147): it is made after PhysicsConfig.apply.
  * every env is one sapien.Scene, shifted by `set_scene_offset` before anything is
    added. Poses given to builders and every pose in the buffers are in the sub-scene's
    own frame, so `origins` are zero here and the offsets live only in the system.
  * `gpu_init()` after the build allocates the buffers. `cuda_rigid_body_data` rows are
    [pose 7 | linear vel 3 | angular vel 3] at each body's and link's pose index;
    `cuda_articulation_*` rows (A, dof_max) at each articulation's index.
  * a write edits the torch view of a buffer and pushes ALL its rows with `gpu_apply_*`,
    so the buffer is fetched first when a step made it stale; reads fetch lazily, at
    most once per kind after a step.
  * `entity.set_pose` does nothing on a GPU body; root poses go through the link rows
    and `gpu_apply_articulation_root_pose`, then `gpu_update_articulation_kinematics`.
  * the batched render system reads poses from a buffer of its own: the rows of
    `cuda_rigid_body_data`, copied in before every render, then one row per camera
    that can move ("camera mounts": ManiSkill's kinematic camera mount, without a PhysX
    body). It is created at the first render, after every camera exists, because no
    scene may change after it; from then on it moves only what has a pose row
    (batched_render_system.cpp 306-338): docs/gpu.md lists what stays as it was.
Every tensor a view returns lives on `self.device` (the system's: CUDA for physx_cuda,
`sim_device` for the emulation); indices stay there, so the step path issues no host
synchronization from robosim's side.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from robosim.sim.gpu.pool import GpuObjectPoolView
from robosim.sim.gpu.views import GpuActorView, GpuArticulationView, GpuBuffers
from robosim.sim.scene import SimScene, add_lights

GPU_SPACING = 4.0   # m between neighbouring sub-scene offsets (grid centred on 0)
GPU_BACKENDS = ("physx_cuda", "physx_gpu_emulated")


def scene_offsets(num_envs: int) -> torch.Tensor:
    """float64 (N, 3) world offsets of the sub-scenes: a square grid centred on 0, z = 0."""
    side = math.ceil(math.sqrt(num_envs))
    idx = torch.arange(num_envs, dtype=torch.float64)
    x = GPU_SPACING * (idx % side - side // 2)
    y = GPU_SPACING * (torch.div(idx, side, rounding_mode="floor") - side // 2)
    return torch.stack([x, y, torch.zeros_like(x)], dim=1)


class GpuSimScene(SimScene):
    """SimScene on one GPU-style system (see the module docstring)."""

    packed_reads = False   # buffers of its own (robosim.sim.gpu.views)
    batched_rendering = True
    actor_view_class = GpuActorView
    articulation_view_class = GpuArticulationView
    pool_view_class = GpuObjectPoolView

    def __init__(self, num_envs: int, sim_freq: int, physics=None, render: bool = True,
                 backend: str = "physx_cuda", sim_device: str | torch.device = "cpu"):
        if backend not in GPU_BACKENDS:
            raise ValueError(f"backend must be one of {GPU_BACKENDS}, got {backend!r}")
        if backend == "physx_cuda":
            from robosim.sim.gpu.physx_cuda import enable_physx_gpu

            enable_physx_gpu()      # before the first PhysX object of the process
        self.backend = backend
        self._sim_device = sim_device
        self.scene_offsets = scene_offsets(num_envs)
        super().__init__(num_envs, sim_freq, physics, render=render)   # applies physics, then the system
        self.device = self.gpu.device
        self.buffers: GpuBuffers | None = None
        self._render_group = None
        self._render_poses: torch.Tensor | None = None     # the render group's pose buffer
        self._mounted: list = []                           # cameras on mount rows, row order
        self._mount_poses = torch.zeros(0, 7, dtype=torch.float32)

    def _env_origins(self, num_envs: int) -> torch.Tensor:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        return torch.zeros(num_envs, 3, dtype=torch.float64)   # env frame = sub-scene frame

    def _make_physx_system(self):
        """The GPU system, made after PhysicsConfig.apply: SAPIEN copies the config then."""
        from robosim.sim.gpu.system import make_gpu_system

        self.gpu = make_gpu_system(self.backend, self._sim_device)
        return self.gpu

    def _make_sub_scene(self, env_index: int):
        import sapien

        render_system = sapien.render.RenderSystem(self.gpu.render_device()) if self.render else None
        scene = self.gpu.make_scene(self.gpu.sub_scene_physx(), render_system)
        if render_system is not None:
            add_lights(scene)
        self.gpu.set_scene_offset(scene, self.scene_offsets[env_index].tolist())
        return scene

    def finalize(self) -> None:
        """Allocate the GPU buffers, bind the views, start from rest (ManiSkill's _setup)."""
        px = self.gpu
        self.buffers = GpuBuffers(px)
        self.buffers.use_current_stream()
        px.gpu_init()
        # fill every buffer from PhysX's build-time state before anything is applied back
        # (an apply pushes all rows); the views keep their own copy of the drive targets
        px.gpu_fetch_rigid_dynamic_data()
        px.gpu_fetch_articulation_link_pose()
        px.gpu_fetch_articulation_qpos()
        px.gpu_fetch_articulation_qvel()
        px.gpu_fetch_articulation_target_qpos()
        for view in self._views():
            view.bind(self.buffers, self.device)
        px.cuda_rigid_body_data.torch()[:, 7:] = 0.0
        px.cuda_articulation_qvel.torch()[:] = 0.0
        px.gpu_apply_rigid_dynamic_data()
        px.gpu_apply_articulation_qvel()
        px.gpu_update_articulation_kinematics()
        self.buffers.stale()

    @property
    def render_group(self):
        """The batched render system, created at first use: every camera must exist by
        then, since SAPIEN refuses any scene change afterwards."""
        if not self.render:
            raise ValueError("this scene was built without rendering (render=False): it has no render group")
        if self._render_group is None:
            for scene in self.sub_scenes:    # fixed cameras and static bodies get their transforms
                scene.update_render()
            for scene in self.sub_scenes:
                for entity in scene.entities:
                    self._follow_pose_rows(entity)
            rigid = self.gpu.cuda_rigid_body_data.torch()
            self._render_poses = torch.zeros(rigid.shape[0] + len(self._mounted), rigid.shape[1],
                                             dtype=torch.float32, device=self.device)
            for k, camera in enumerate(self._mounted):
                self.gpu.set_pose_batch_index(camera, rigid.shape[0] + k)
            self._render_group = self.gpu.render_group(self.sub_scenes, self._render_poses)
        return self._render_group

    def mount_cameras(self, cameras: list) -> None:
        """Let these cameras (fixed ones, any number, of any env) move after the render
        group exists: each gets a pose row of its own in the group's pose buffer, holding
        its entity's pose (sub-scene frame); `place_cameras` moves them. Only before the
        render group exists (SAPIEN reads a camera's row when its camera group is made)."""
        import sapien

        if self._render_group is not None:
            raise ValueError("cameras must be mounted before the first render: the batched render system exists")
        for camera in cameras:
            if camera.entity.find_component_by_type(sapien.physx.PhysxRigidBodyComponent) is not None:
                raise ValueError(f"camera {camera.name!r} rides on a body, which has its own pose row; "
                                 f"only a fixed camera can be mounted")
        poses = [np.concatenate([c.entity.pose.p, c.entity.pose.q]) for c in cameras]
        self._mount_poses = torch.cat([self._mount_poses, torch.tensor(np.array(poses), dtype=torch.float32)])
        self._mounted.extend(cameras)

    def place_cameras(self, cameras: list, poses: list) -> None:
        """Move mounted cameras: each camera's entity (what its getters report) and its
        mount row (what the render group shows) to its sapien.Pose (sub-scene frame)."""
        index = {id(c): k for k, c in enumerate(self._mounted)}
        missing = [c.name for c in cameras if id(c) not in index]
        if missing:
            raise ValueError(f"cameras must be mounted (GpuSimScene.mount_cameras) to move on a GPU-style scene, "
                             f"got unmounted {missing}")
        for camera, pose in zip(cameras, poses):
            camera.entity.set_pose(pose)
            self._mount_poses[index[id(camera)]] = torch.tensor([*pose.p, *pose.q], dtype=torch.float32)

    def _follow_pose_rows(self, entity) -> None:
        """Render shapes of a moving body read their pose from its buffer row."""
        import sapien

        body = entity.find_component_by_type(sapien.physx.PhysxRigidBodyComponent)
        render = entity.find_component_by_type(sapien.render.RenderBodyComponent)
        if render is None or body is None or isinstance(body, sapien.physx.PhysxRigidStaticComponent):
            return
        for shape in render.render_shapes:
            self.gpu.set_pose_batch_index(shape, self.gpu.pose_index(body))

    def pose_index(self, body) -> int:
        """Row of a moving body or link in the rigid-body buffer (cameras follow it)."""
        return self.gpu.pose_index(body)

    def step(self) -> None:
        if self.buffers is not None:      # None before finalize: the step below refuses
            self.buffers.use_current_stream()
        self.gpu.step()
        self.buffers.stale()
        self.read_cache.invalidate()

    def update_render(self, env_idx: torch.Tensor | None = None) -> None:
        """Render worlds of all envs take their poses from the GPU buffers (env_idx is
        accepted for the CPU signature; the group always updates every env)."""
        rigid = self.buffers.rigid()
        self.buffers.links()
        group = self.render_group
        self._render_poses[:rigid.shape[0]] = rigid
        self._render_poses[rigid.shape[0]:, :7] = self._mount_poses.to(self.device, non_blocking=True)
        if self.device.type == "cuda":     # the group's kernels run after torch's copies
            group.set_cuda_stream(torch.cuda.current_stream(self.device).cuda_stream)
        group.update_render()
