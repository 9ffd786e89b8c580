"""Randomization appliers on the render side: directional lights and cameras.

`CameraRig.randomization_target(event, declared_cameras)` returns one; its
`apply(event, env_idx (M,), values (M, dim))` changes env_idx's copies. Base values (the
light colour and direction, the camera pose and fovy an env was built with) are kept
at the first write, so "scale" and "add" always start from them.
"""
from __future__ import annotations

import math

import numpy as np
import sapien
import torch

from robosim.randomization.targets import combine
from robosim.sensors.camera import place_cameras


class LightTarget:
    """Every env's directional lights (none when the env renders nothing)."""

    def __init__(self, sim):
        self.lights = [[c for e in scene.entities for c in e.components
                        if isinstance(c, sapien.render.RenderDirectionalLightComponent)] for scene in sim.sub_scenes]
        self._base: dict = {}

    def apply(self, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
        for i, v in zip(env_idx.tolist(), values.tolist()):
            for k, light in enumerate(self.lights[i]):
                color, pose = self._base.setdefault((i, k), (list(light.color), light.entity_pose))
                if event.property == "color":
                    light.color = [max(c, 0.0) for c in combine(np.array(color), np.array(v[:3]), event.operation)]
                elif event.property == "intensity":
                    light.color = [max(combine(c, v[0], event.operation), 0.0) for c in color]
                else:
                    light.entity_pose = sapien.Pose(pose.p, _x_to(np.array(v[:3])))


def _x_to(direction: np.ndarray) -> np.ndarray:
    """Quaternion wxyz turning +x onto `direction` (a light shines along its x axis)."""
    d = direction / max(np.linalg.norm(direction), 1e-9)
    c = float(d[0])
    if c < -1 + 1e-9:
        return np.array([0.0, 0.0, 0.0, 1.0])
    q = np.array([1.0 + c, 0.0, -d[2], d[1]])
    return q / np.linalg.norm(q)


class CameraTarget:
    """One camera name in every env (a sensor camera, or "human": the video camera) of
    scene `sim`. A position is the camera's place in the env frame, or, for a camera on a
    body (CameraConfig.mount), its offset in the body's frame; a GPU-style scene moves a
    fixed camera through its mount row."""

    def __init__(self, cameras: list, sim):
        self.cameras, self.sim = cameras, sim
        self._base: dict = {}

    def apply(self, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
        for i, v in zip(env_idx.tolist(), values.tolist()):
            camera = self.cameras[i]
            on_body = camera.entity.find_component_by_type(sapien.physx.PhysxRigidBodyComponent) is not None
            pose, fovy = self._base.setdefault(i, (camera.local_pose if on_body else camera.entity.pose, camera.fovy))
            if event.property == "fovy":
                camera.set_fovy(min(max(combine(fovy, v[0], event.operation), 1e-3), math.pi - 1e-3), True)
                continue
            p = combine(np.asarray(pose.p, dtype=np.float64), np.asarray(v[:3]), event.operation)
            moved = sapien.Pose(p.astype(np.float32), pose.q)
            if on_body:      # moving the body's entity would move (or, for a link, not move) the body
                camera.set_local_pose(moved)
            else:
                place_cameras(self.sim, [camera], [moved])


class NoTarget:
    def apply(self, event, env_idx, values) -> None:
        """Nothing to change (e.g. a camera event in an env that renders nothing)."""
