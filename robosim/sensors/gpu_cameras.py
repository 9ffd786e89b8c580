"""Batched cameras on GPU-style backends: one RenderCameraGroup per camera, all envs at once.

GPU PhysX never writes poses back to SAPIEN's entities, so per-env `take_picture` would
render the build-time scene. Instead (ManiSkill3's path, mani_skill/envs/scene.py):
the GpuSimScene's RenderSystemGroup reads every body's pose from
`cuda_rigid_body_data` (render device = PhysX device), a camera mounted on a body
follows that body's row, a fixed camera follows a mount row of its own (so a camera
event can move it), and a camera group renders every env's copy of one camera in
one call and hands the pictures over as CUDA arrays. Images are returned as tensors on
the scene's device with the dtypes and layout of robosim/sensors/sensor_cameras.py.
The groups are made at the first capture: the scene's render group exists from then
on, and SAPIEN refuses any camera added after it.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sapien
import torch

from robosim.core.rotations import quat_to_matrix
from robosim.sensors.camera import PicturesInFlight

PICTURES = ["Color", "Position", "Segmentation"]


def mount_body(camera: sapien.render.RenderCameraComponent):
    """The PhysX body a camera hangs on (None for a fixed camera)."""
    return camera.entity.find_component_by_type(sapien.physx.PhysxRigidBodyComponent)


class GpuCameraGroups:
    """Camera groups of a GpuSimScene. cameras: {name: [one camera per env]};
    luts: int16 (N, L) per-env raw entity id -> stable segmentation id, on the device."""

    def __init__(self, sim, cameras: dict[str, list[sapien.render.RenderCameraComponent]], luts: torch.Tensor):
        self.sim = sim
        self.luts = luts
        self.cameras = cameras
        # fixed cameras get a mount row (robosim.sim.gpu.scene), so a camera event can move them
        sim.mount_cameras([c for per_env in cameras.values() for c in per_env if mount_body(c) is None])
        self._groups: dict | None = None
        self._mounts: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None

    @property
    def groups(self) -> dict:
        if self._groups is None:
            group = self.sim.render_group     # created now, after every camera was added
            for per_env in self.cameras.values():
                for camera in per_env:
                    body = mount_body(camera)
                    if body is not None and not isinstance(body, sapien.physx.PhysxRigidStaticComponent):
                        self.sim.gpu.set_pose_batch_index(camera, self.sim.pose_index(body))
            self._groups = {name: group.create_camera_group(per_env, PICTURES)
                            for name, per_env in self.cameras.items()}
        return self._groups

    def _mounted(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """{camera: (long (N,) pose rows of its mount, float32 (N, 4, 4) OpenGL camera frame
        -> mount frame)} for cameras on moving bodies. The CPU entity pose and the model
        matrix are read at the same instant, so their ratio is right even where GPU
        PhysX never wrote the entity's pose."""
        if self._mounts is None:
            self._mounts = {}
            for name, per_env in self.cameras.items():
                bodies = [mount_body(camera) for camera in per_env]
                if any(b is None or isinstance(b, sapien.physx.PhysxRigidStaticComponent) for b in bodies):
                    continue
                local = [np.linalg.inv(camera.entity.pose.to_transformation_matrix()) @ camera.get_model_matrix()
                         for camera in per_env]
                rows = torch.tensor([self.sim.pose_index(b) for b in bodies], dtype=torch.long, device=self.sim.device)
                self._mounts[name] = (rows, torch.from_numpy(np.stack(local).astype(np.float32)).to(self.sim.device))
        return self._mounts

    def params(self) -> dict[str, dict[str, torch.Tensor]]:
        """{camera: {intrinsic_cv (N, 3, 3), extrinsic_cv (N, 3, 4), cam2env_gl (N, 4, 4)}}
        float32 on the device, env frame (= sub-scene frame). A camera on a moving body
        follows the body's row of the pose buffer (GPU PhysX writes no entity pose)."""
        out = {}
        mounted = self._mounted()
        for name, per_env in self.cameras.items():
            intrinsic = torch.from_numpy(np.stack([c.get_intrinsic_matrix() for c in per_env]).astype(np.float32))
            if name in mounted:
                rows, local = mounted[name]
                self.sim.buffers.links()                  # the mount is a link...
                pose = self.sim.buffers.rigid()[rows, :7]  # ...or a dynamic body
                body = torch.zeros(len(per_env), 4, 4, dtype=torch.float32, device=self.sim.device)
                body[:, :3, :3] = quat_to_matrix(pose[:, 3:])
                body[:, :3, 3] = pose[:, :3]
                body[:, 3, 3] = 1.0
                model = body @ local
            else:
                model = torch.from_numpy(np.stack([c.get_model_matrix() for c in per_env]).astype(np.float32))
            model = model.to(self.sim.device)
            cv = model[:, :3] * torch.tensor([1.0, -1.0, -1.0, 1.0], device=model.device)   # GL -> OpenCV axes
            rot_t = cv[:, :, :3].transpose(1, 2)           # a rigid inverse: no solver, no host sync
            extrinsic = torch.cat([rot_t, -(rot_t @ cv[:, :, 3:])], dim=2)
            out[name] = {"intrinsic_cv": intrinsic.to(self.sim.device), "extrinsic_cv": extrinsic,
                         "cam2env_gl": model}
        return out

    def _remap(self, raw: torch.Tensor) -> torch.Tensor:
        """(N, H, W) raw per-scene entity ids -> int16 stable ids (unknown -> 0)."""
        n, h, w = raw.shape
        ids = raw.to(torch.int64).reshape(n, -1)
        width = self.luts.shape[1]
        out = self.luts.gather(1, ids.clamp(max=width - 1))
        return torch.where(ids < width, out, torch.zeros_like(out)).reshape(n, h, w)

    def capture(self, kinds: Sequence[str]) -> dict[str, dict[str, torch.Tensor]]:
        """{camera: {kind: (N, H, W, C) CUDA tensor}} for kinds among rgb/depth/segmentation."""
        self.sim.update_render()
        out: dict[str, dict[str, torch.Tensor]] = {}
        with PicturesInFlight() as flight:
            for name, group in self.groups.items():
                flight.take(group, lambda group=group: group.get_picture_cuda("Color"))
                out[name] = self._read(group, kinds)
        return out

    def _read(self, group, kinds: Sequence[str]) -> dict[str, torch.Tensor]:
        data = {}
        if "rgb" in kinds:
            color = group.get_picture_cuda("Color").torch()
            data["rgb"] = torch.clamp(color[..., :3] * 255 + 0.5, 0, 255).to(torch.uint8)
        if "depth" in kinds:
            position = group.get_picture_cuda("Position").torch()
            valid = position[..., 3] < 1.0
            data["depth"] = torch.where(valid, -position[..., 2], torch.zeros_like(position[..., 2]))[..., None]
        if "segmentation" in kinds:
            raw = group.get_picture_cuda("Segmentation").torch()[..., 1]
            data["segmentation"] = self._remap(raw)[..., None]
        return {k: v.clone() for k, v in data.items()}   # the group reuses its buffers
