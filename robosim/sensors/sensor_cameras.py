"""Sensor cameras: the per-env cameras a task declares, read as batched tensors.

Every image is (N, H, W, C) with N = num envs, row 0 at the top of the picture:
  rgb           uint8   (N, H, W, 3)
  depth         float32 (N, H, W, 1)  m along the optical axis; 0 where nothing is
                                      within [near, far]
  segmentation  int16   (N, H, W, 1)  stable actor ids (see SegmentationIds); 0 = none
Camera parameters per camera, float32:
  intrinsic_cv  (N, 3, 3)  pixels, OpenCV
  extrinsic_cv  (N, 3, 4)  env frame -> OpenCV camera frame (x right, y down, z forward)
  cam2env_gl    (N, 4, 4)  OpenGL camera frame (x right, y up, -z forward) -> env frame
Point clouds concatenate every camera's pixels (P = sum of H * W):
  xyzw          float32 (N, P, 4)  xyz in the env frame (m); w = 1 valid, 0 background
  rgb           uint8   (N, P, 3)
  segmentation  int16   (N, P, 1)
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sapien
import torch

from robosim.sensors.camera import CameraConfig, PicturesInFlight, to_uint8
from robosim.sim import SimScene

IMAGE_KINDS = ("rgb", "depth", "segmentation")


class SegmentationIds:
    """Stable per-actor segmentation ids across envs.

    SAPIEN numbers entities per scene, and envs of one SimScene differ (env 0 also holds
    the shared ground plane), so raw ids are remapped by entity name: id k >= 1 is the
    k-th distinct name met walking the envs' render entities in order; 0 is background.
    `names[k]` is the name of id k; `id_of(name)` the reverse."""

    def __init__(self, sim: SimScene):
        self.names: list[str] = ["<background>"]
        index: dict[str, int] = {}
        self._luts: list[np.ndarray] = []
        for scene in sim.sub_scenes:
            entities = [e for e in scene.entities if e.find_component_by_type(sapien.render.RenderBodyComponent)]
            lut = np.zeros(max([e.per_scene_id for e in scene.entities] + [0]) + 1, dtype=np.int16)
            for entity in entities:
                if entity.name not in index:
                    index[entity.name] = len(self.names)
                    self.names.append(entity.name)
                lut[entity.per_scene_id] = index[entity.name]
            self._luts.append(lut)
        self._index = index

    def id_of(self, name: str) -> int:
        if name not in self._index:
            raise ValueError(f"name must be a rendered entity among {self.names[1:]}, got {name!r}")
        return self._index[name]

    def remap(self, env_index: int, raw: np.ndarray) -> np.ndarray:
        """uint32 raw per-scene entity ids -> int16 stable ids (unknown ids -> 0)."""
        lut = self._luts[env_index]
        return np.where(raw < len(lut), lut[np.minimum(raw, len(lut) - 1)], 0).astype(np.int16)


class SensorCameras:
    """The cameras of `configs`, one copy per env, in each env's render world."""

    def __init__(self, sim: SimScene, configs: Sequence[CameraConfig]):
        self.sim = sim
        self.configs = tuple(configs)
        names = [c.name for c in self.configs]
        if len(set(names)) != len(names):
            raise ValueError(f"camera names must be unique, got {names}")
        self.cameras: dict[str, list[sapien.render.RenderCameraComponent]] = {}
        for config in self.configs:
            self.cameras[config.name] = [self._add_camera(scene, i, config) for i, scene in enumerate(sim.sub_scenes)]
        self.segmentation = SegmentationIds(sim)
        self._gpu = None
        if sim.batched_rendering:   # GPU-style scene: batched camera groups, poses from its buffers
            from robosim.sensors.gpu_cameras import GpuCameraGroups

            width = max(len(lut) for lut in self.segmentation._luts)
            luts = np.zeros((sim.num_envs, width), dtype=np.int16)
            for i, lut in enumerate(self.segmentation._luts):
                luts[i, :len(lut)] = lut
            self._gpu = GpuCameraGroups(sim, self.cameras, torch.from_numpy(luts).to(sim.device))

    def _add_camera(self, scene: sapien.Scene, env_index: int, c: CameraConfig):
        pose = sapien.Pose(c.pose[:3], c.pose[3:])
        if c.mount is None:
            camera = scene.add_camera(c.name, c.width, c.height, c.fovy, c.near, c.far)
            origin = self.sim.origins[env_index].numpy()
            camera.entity.set_pose(sapien.Pose(pose.p + origin, pose.q))
            return camera
        mounts = [e for e in scene.entities if e.name == c.mount]
        if not mounts:
            raise ValueError(f"camera {c.name!r} mount must name an entity of the scene, got {c.mount!r}")
        return scene.add_mounted_camera(c.name, mounts[0], pose, c.width, c.height, c.fovy, c.near, c.far)

    # -- capture --------------------------------------------------------------------
    def capture(self, kinds: Sequence[str], update_render: bool = True) -> dict[str, dict[str, torch.Tensor]]:
        """{camera name: {kind: (N, H, W, C) tensor}} for kinds among IMAGE_KINDS."""
        bad = set(kinds) - set(IMAGE_KINDS)
        if bad:
            raise ValueError(f"kinds must be among {IMAGE_KINDS}, got {sorted(bad)}")
        if self._gpu is not None:
            return self._gpu.capture(kinds)
        per_env: dict[str, dict[str, list[np.ndarray]]] = {c.name: {k: [] for k in kinds} for c in self.configs}
        with PicturesInFlight() as flight:
            self._capture_into(per_env, kinds, update_render, flight)
        return {name: {k: torch.from_numpy(np.stack(v)) for k, v in data.items()} for name, data in per_env.items()}

    def _capture_into(self, per_env: dict, kinds: Sequence[str], update_render: bool,
                      flight: PicturesInFlight) -> None:
        for i, scene in enumerate(self.sim.sub_scenes):
            if update_render:
                scene.update_render()
            for name, cameras in self.cameras.items():
                camera = cameras[i]
                flight.take(camera, lambda camera=camera: camera.get_picture("Color"))
                out = per_env[name]
                if "rgb" in kinds:
                    out["rgb"].append(to_uint8(camera.get_picture("Color")))
                if "depth" in kinds:
                    position = camera.get_picture("Position")
                    valid = position[..., 3] < 1.0
                    out["depth"].append(np.where(valid, -position[..., 2], 0.0)[..., None].astype(np.float32))
                if "segmentation" in kinds:
                    raw = camera.get_picture("Segmentation")[..., 1]
                    out["segmentation"].append(self.segmentation.remap(i, raw)[..., None])

    def params(self) -> dict[str, dict[str, torch.Tensor]]:
        """{camera name: {intrinsic_cv, extrinsic_cv, cam2env_gl}} float32, env frame."""
        if self._gpu is not None:   # mounted cameras move with their body's GPU pose row
            return self._gpu.params()
        origins = self.sim.origins.numpy()
        out = {}
        for name, cameras in self.cameras.items():
            intr, extr, model = [], [], []
            for camera, origin in zip(cameras, origins):
                to_world = np.eye(4)
                to_world[:3, 3] = origin
                e = camera.get_extrinsic_matrix().astype(np.float64) @ to_world
                m = camera.get_model_matrix().astype(np.float64)
                m[:3, 3] -= origin
                intr.append(camera.get_intrinsic_matrix())
                extr.append(e)
                model.append(m)
            out[name] = {
                "intrinsic_cv": torch.from_numpy(np.stack(intr).astype(np.float32)).to(self.sim.device),
                "extrinsic_cv": torch.from_numpy(np.stack(extr).astype(np.float32)).to(self.sim.device),
                "cam2env_gl": torch.from_numpy(np.stack(model).astype(np.float32)).to(self.sim.device),
            }
        return out

    def pointcloud(self, update_render: bool = True) -> dict[str, torch.Tensor]:
        """{xyzw, rgb, segmentation} of all cameras' pixels, env frame (module docstring)."""
        if self._gpu is not None:
            raise NotImplementedError("obs_mode='pointcloud' is not implemented on the GPU backends "
                                      "(physx_cuda, physx_gpu_emulated) yet; "
                                      "use rgb/depth/segmentation obs there")
        xyzw, rgb, seg = [], [], []
        with PicturesInFlight() as flight:
            self._pointcloud_into(xyzw, rgb, seg, update_render, flight)
        return {
            "xyzw": torch.from_numpy(np.stack(xyzw)),
            "rgb": torch.from_numpy(np.stack(rgb)),
            "segmentation": torch.from_numpy(np.stack(seg)),
        }

    def _pointcloud_into(self, xyzw: list, rgb: list, seg: list, update_render: bool,
                         flight: PicturesInFlight) -> None:
        origins = self.sim.origins.numpy()
        for i, scene in enumerate(self.sim.sub_scenes):
            if update_render:
                scene.update_render()
            parts = ([], [], [])
            for cameras in self.cameras.values():
                camera = cameras[i]
                flight.take(camera, lambda camera=camera: camera.get_picture("Position"))
                position = camera.get_picture("Position").reshape(-1, 4)
                model = camera.get_model_matrix().astype(np.float64)
                world = position[:, :3].astype(np.float64) @ model[:3, :3].T + model[:3, 3]
                valid = (position[:, 3] < 1.0)[:, None]
                local = np.where(valid, world - origins[i], 0.0)
                parts[0].append(np.concatenate([local, valid], axis=1).astype(np.float32))
                parts[1].append(to_uint8(camera.get_picture("Color")).reshape(-1, 3))
                raw = camera.get_picture("Segmentation")[..., 1].reshape(-1)
                parts[2].append(self.segmentation.remap(i, raw)[:, None])
            xyzw.append(np.concatenate(parts[0]))
            rgb.append(np.concatenate(parts[1]))
            seg.append(np.concatenate(parts[2]))
