"""Backend `physx_cuda`: the same SimScene interface over SAPIEN's GPU PhysX.

UNTESTED on the project machine (it has no CUDA GPU); written against SAPIEN 3.0's GPU
API as ManiSkill3 uses it:
  * every env is a sapien.Scene in ONE PhysxGpuSystem, placed with set_scene_offset;
    GPU buffers then report poses in each sub-scene's own frame, so views subtract
    nothing (origins are only used for building and cameras);
  * after everything is built, `gpu_init()` allocates the buffers; body rows are found
    by `gpu_pose_index` in `cuda_rigid_body_data` ([pose 7 | linear 3 | angular 3]),
    articulation rows by `gpu_index` in the `cuda_articulation_*` (N_art, max_dof)
    buffers;
  * writes go into those torch views of the buffers and are pushed with the matching
    `gpu_apply_*` call; `step()` fetches the buffers again after `px.step()`.
"""
from __future__ import annotations

import math

import sapien
import torch

from robosim.sim.scene import SimScene
from robosim.sim.views import POSE_DIM, ActorView, ArticulationView

GPU_SPACING = 4.0  # m between sub-scene origins


def _rows(env_idx: torch.Tensor | None, index: torch.Tensor) -> torch.Tensor:
    return index if env_idx is None else index[env_idx.to(index.device)]


class CudaActorView(ActorView):
    """ActorView reading and writing `cuda_rigid_body_data` (local frame)."""

    def bind(self, physx: sapien.physx.PhysxGpuSystem, device: torch.device) -> None:
        self.physx, self.device = physx, device
        self.index = torch.tensor([b.gpu_pose_index for b in self.bodies], device=device, dtype=torch.long)

    def _data(self) -> torch.Tensor:
        return self.physx.cuda_rigid_body_data.torch()

    def pose(self) -> torch.Tensor:
        return self._data()[self.index, :POSE_DIM].clone()

    def set_pose(self, pose, env_idx=None):
        self._data()[_rows(env_idx, self.index), :POSE_DIM] = pose.to(self.device)
        self.physx.gpu_apply_rigid_dynamic_data()

    def velocity(self) -> torch.Tensor:
        if self.kinematic:
            return torch.zeros(len(self.entities), 6, device=self.device)
        return self._data()[self.index, POSE_DIM:POSE_DIM + 6].clone()

    def set_velocity(self, velocity, env_idx=None):
        if self.kinematic:
            return
        self._data()[_rows(env_idx, self.index), POSE_DIM:POSE_DIM + 6] = velocity.to(self.device)
        self.physx.gpu_apply_rigid_dynamic_data()


class CudaArticulationView(ArticulationView):
    """ArticulationView over the `cuda_articulation_*` buffers."""

    def bind(self, physx: sapien.physx.PhysxGpuSystem, device: torch.device) -> None:
        self.physx, self.device = physx, device
        self.index = torch.tensor([a.gpu_index for a in self.articulations], device=device, dtype=torch.long)

    def _read(self, buffer) -> torch.Tensor:
        return buffer.torch()[self.index, :self.dof].clone()

    def _write(self, buffer, value, env_idx, apply) -> None:
        buffer.torch()[_rows(env_idx, self.index), :self.dof] = value.to(self.device)
        apply()

    def qpos(self):
        return self._read(self.physx.cuda_articulation_qpos)

    def qvel(self):
        return self._read(self.physx.cuda_articulation_qvel)

    def drive_targets(self):
        return self._read(self.physx.cuda_articulation_target_qpos)

    def set_qpos(self, qpos, env_idx=None):
        self._write(self.physx.cuda_articulation_qpos, qpos, env_idx, self.physx.gpu_apply_articulation_qpos)
        self.physx.gpu_update_articulation_kinematics()

    def set_qvel(self, qvel, env_idx=None):
        self._write(self.physx.cuda_articulation_qvel, qvel, env_idx, self.physx.gpu_apply_articulation_qvel)

    def set_drive_targets(self, targets, env_idx=None):
        self._write(self.physx.cuda_articulation_target_qpos, targets, env_idx,
                    self.physx.gpu_apply_articulation_target_position)

    def root_pose(self):
        raise NotImplementedError("root poses of GPU articulations are not exposed (fixed-base robots only)")

    def set_root_pose(self, pose, env_idx=None):
        # fixed-base robots: the root is placed at build time through the builder pose
        if not self.fixed_root:
            raise NotImplementedError("floating-base articulations are not supported on physx_cuda yet")

    def link_pose(self, link_name):
        raise NotImplementedError("use the robot's forward kinematics on physx_cuda")


class CudaSimScene(SimScene):
    """SimScene on one PhysxGpuSystem (see the module docstring; untested here)."""

    backend = "physx_cuda"
    actor_view_class = CudaActorView
    articulation_view_class = CudaArticulationView

    def __init__(self, num_envs: int, sim_freq: int, physics=None):
        if not torch.cuda.is_available():
            raise ValueError("sim_backend 'physx_cuda' needs a CUDA GPU; none is visible (use 'physx_cpu')")
        super().__init__(num_envs, sim_freq, physics)
        self.device = torch.device("cuda")
        self._origins32[:] = 0.0  # GPU buffers are already in each sub-scene's frame

    def _env_origins(self, num_envs: int) -> torch.Tensor:
        side = math.ceil(math.sqrt(num_envs))
        idx = torch.arange(num_envs, dtype=torch.float64)
        x = GPU_SPACING * (idx % side)
        y = GPU_SPACING * torch.div(idx, side, rounding_mode="floor")
        return torch.stack([x, y, torch.zeros_like(x)], dim=1)

    def _make_physx_system(self):
        return sapien.physx.PhysxGpuSystem(device="cuda")

    def _make_sub_scene(self, env_index: int) -> sapien.Scene:
        scene = super()._make_sub_scene(env_index)
        self.physx.set_scene_offset(scene, self.origins[env_index].tolist())
        return scene

    def add_ground(self, altitude: float = 0.0, color=(0.86, 0.84, 0.8, 1.0)) -> None:
        for scene in self.sub_scenes:  # each sub-scene is its own collision world on the GPU
            scene.add_ground(altitude, render=True, render_half_size=[1.6, 1.6])

    def finalize(self) -> None:
        self.physx.gpu_init()
        for view in self._views():
            view.bind(self.physx, self.device)
        self._fetch()

    def _fetch(self) -> None:
        self.physx.gpu_fetch_rigid_dynamic_data()
        self.physx.gpu_fetch_articulation_qpos()
        self.physx.gpu_fetch_articulation_qvel()
        self.physx.gpu_fetch_articulation_target_qpos()

    def step(self) -> None:
        self.physx.step()
        self._fetch()

    def update_render(self, env_idx=None) -> None:
        self.physx.sync_poses_gpu_to_cpu()
        super().update_render(env_idx)
