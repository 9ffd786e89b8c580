"""The object that holds a GPU-style physics system, in two kinds with one surface.

`SapienGpuSystem` wraps SAPIEN's real `sapien.physx.PhysxGpuSystem` (backend
`physx_cuda`). `EmulatedGpuSystem` reproduces, on CPU PhysX, the part of that class's
behaviour robosim relies on (backend `physx_gpu_emulated`), so that every line of
robosim/sim/gpu/scene.py runs, and is tested, on a machine without GPU PhysX. Both offer:

  sub_scene_physx()            the PhysX system a new sub-scene is built on
  set_scene_offset / get_scene_offset
  gpu_init()                   allocate the buffers (SAPIEN also simulates one step here)
  cuda_rigid_body_data, cuda_articulation_qpos / qvel / target_qpos / target_qvel
                               buffers with `.torch()`, SAPIEN's row layout and padding
  gpu_fetch_* / gpu_apply_*    with and without an int32 index buffer
  gpu_update_articulation_kinematics()
  pose_index(body) / articulation_index(articulation)   (SAPIEN: `gpu_pose_index`, `gpu_index`)
  set_pose_batch_index(obj, row)   a render shape or camera follows a pose row
  render_group(sub_scenes, poses)  the batched render system cameras use
  step()

The SAPIEN rules the emulation enforces, each with the source it comes from, are listed
in docs/gpu.md; robosim/sim/gpu/emulation.py implements them.
"""
from __future__ import annotations

import sapien
import torch


class SapienGpuSystem:
    """SAPIEN's PhysxGpuSystem (one system for every sub-scene) behind robosim's surface;
    every other attribute is the real system's."""

    emulated = False

    def __init__(self) -> None:
        self.px = sapien.physx.PhysxGpuSystem(device="cuda")
        self.device = torch.device("cuda", torch.cuda.current_device())

    def __getattr__(self, name: str):
        return getattr(self.px, name)

    def sub_scene_physx(self) -> sapien.physx.PhysxGpuSystem:
        return self.px

    @staticmethod
    def make_scene(physx, render_system) -> sapien.Scene:
        from robosim.sim.scene import SubScene

        return SubScene([physx] if render_system is None else [physx, render_system],
                        render=render_system is not None)

    def render_device(self) -> str:
        """Render on the PhysX device, so the render group reads the pose buffer in place."""
        return f"cuda:{self.device.index}"

    @staticmethod
    def pose_index(body) -> int:
        return body.gpu_pose_index

    @staticmethod
    def articulation_index(articulation) -> int:
        return articulation.gpu_index

    @staticmethod
    def set_pose_batch_index(obj, row: int) -> None:
        """A render shape or camera follows row `row` of the render group's pose buffer."""
        obj.set_gpu_pose_batch_index(row)

    def render_group(self, sub_scenes: list, poses: torch.Tensor) -> sapien.render.RenderSystemGroup:
        """The batched render system, reading poses from `poses` (float32 (rows, 13) on
        the PhysX device, rows of cuda_rigid_body_data first; kept alive by the caller)."""
        group = sapien.render.RenderSystemGroup([s.render_system for s in sub_scenes])
        group.set_cuda_poses(sapien.pysapien.CudaArray(poses))
        return group


def make_gpu_system(backend: str, sim_device: str | torch.device = "cpu"):
    """The system holder for a GPU-style backend: "physx_cuda" or "physx_gpu_emulated"
    (its buffers on torch device `sim_device`)."""
    if backend == "physx_cuda":
        return SapienGpuSystem()
    from robosim.sim.gpu.emulation import EmulatedGpuSystem

    return EmulatedGpuSystem(sim_device)
