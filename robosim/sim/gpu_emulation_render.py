"""The batched render system of the emulated GPU backend (robosim.sim.gpu_emulation).

SAPIEN's RenderSystemGroup reads every render shape's pose from `cuda_rigid_body_data`
and renders all sub-scenes' copies of a camera in one call (batched_render_system.cpp).
The emulation keeps its rules: no render before the pose source is set, no scene
changed (entity or camera added or removed) after the group exists, and, an emulation
check, no render from pose rows that were not fetched since the last step. It renders
each sub-scene's own render world, whose poses CPU PhysX keeps current, and hands the
pictures over as torch tensors on the system's device (`get_picture_cuda(name).torch()`,
(N, H, W, C), float32, or int32 for Segmentation, as SAPIEN's CUDA pictures).
"""
from __future__ import annotations

import numpy as np
import sapien
import torch

SCENE_CHANGED = "Modifying a scene (add/remove object/camera) is not allowed after creating the batched render system."


def _version(scene: sapien.Scene) -> tuple:
    return tuple(sorted((e.per_scene_id, len(e.components)) for e in scene.entities))


class EmulatedPicture:
    """A picture of every camera of a group: `.torch()` (N, H, W, C) on the device."""

    def __init__(self, tensor: torch.Tensor):
        self._tensor = tensor

    def torch(self) -> torch.Tensor:
        return self._tensor


class EmulatedCameraGroup:
    """One camera per sub-scene, captured together (SAPIEN's RenderCameraGroup)."""

    def __init__(self, cameras: list, picture_names: list[str], device: torch.device):
        if not cameras:
            raise RuntimeError("failed to create BatchedCamera: empty cameras")
        size = (cameras[0].width, cameras[0].height)
        for camera in cameras:
            if camera.entity is None or camera.entity.scene is None:
                raise RuntimeError("failed to create BatchedCamera: some camera is not added to scene")
            if (camera.width, camera.height) != size:
                raise RuntimeError("failed to create BatchedCamera: the cameras must have the same width and height")
        self.cameras, self.picture_names, self.device = list(cameras), list(picture_names), device

    def take_picture(self) -> None:
        for camera in self.cameras:
            camera.take_picture()

    def get_picture_cuda(self, name: str) -> EmulatedPicture:
        if name not in self.picture_names:
            raise RuntimeError(f"failed to get picture: {name!r} is not among this group's {self.picture_names}")
        pictures = np.stack([camera.get_picture(name) for camera in self.cameras])
        if pictures.dtype == np.uint32:
            pictures = pictures.astype(np.int32)
        return EmulatedPicture(torch.from_numpy(pictures).to(self.device))


class EmulatedRenderGroup:
    """SAPIEN's RenderSystemGroup over the emulated system's sub-scenes."""

    def __init__(self, sub_scenes: list, system):
        self.sub_scenes = list(sub_scenes)
        self.system = system
        self._versions = [_version(s) for s in self.sub_scenes]
        self._poses = None

    def set_cuda_poses(self, pose_buffer) -> None:
        self._poses = pose_buffer

    def create_camera_group(self, cameras: list, picture_names: list[str]) -> EmulatedCameraGroup:
        return EmulatedCameraGroup(cameras, picture_names, self.system.device)

    def update_render(self) -> None:
        if self._poses is None:
            raise RuntimeError("the data source for pose has not been set.")
        if any(_version(s) != v for s, v in zip(self.sub_scenes, self._versions)):
            raise RuntimeError(SCENE_CHANGED)
        if self.system.unfetched_pose_rows():
            raise RuntimeError("update_render reads pose rows of cuda_rigid_body_data that were not fetched since "
                               "the last step: fetch rigid dynamic data and link poses first "
                               "(physx_gpu_emulated check)")
        for scene in self.sub_scenes:
            scene.update_render()
