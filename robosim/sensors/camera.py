"""Cameras placed in every env's render world."""
from __future__ import annotations

import math

import numpy as np
import sapien
import torch

from robosim.agents.kinematics import matrix_to_quat
from robosim.sim import SimScene


def look_at_pose(target, distance: float, yaw: float, pitch: float, roll: float = 0.0) -> np.ndarray:
    """Camera pose [xyz, wxyz] looking at `target` (panda-gym's orbit parameters).

    yaw/pitch/roll in degrees; yaw 0 looks along +x, pitch < 0 looks down. SAPIEN cameras
    look along their local +x with +z up."""
    yaw_r, pitch_r, roll_r = map(math.radians, (yaw, pitch, roll))
    forward = np.array([math.cos(pitch_r) * math.cos(yaw_r), math.cos(pitch_r) * math.sin(yaw_r), math.sin(pitch_r)])
    position = np.asarray(target, dtype=np.float64) - distance * forward
    left = np.cross([0.0, 0.0, 1.0], forward)
    left /= np.linalg.norm(left)
    up = np.cross(forward, left)
    c, s = math.cos(roll_r), math.sin(roll_r)
    left, up = c * left + s * up, -s * left + c * up
    rot = torch.tensor(np.stack([forward, left, up], axis=1))
    return np.concatenate([position, matrix_to_quat(rot).numpy()])


class HumanCamera:
    """One RGB camera per env for render_mode="rgb_array"."""

    def __init__(self, sim: SimScene, width: int, height: int, target=(0.0, 0.0, 0.15),
                 distance: float = 1.3, yaw: float = 200.0, pitch: float = -30.0, roll: float = 0.0,
                 fovy: float = 1.0):
        for name, value in (("width", width), ("height", height)):
            if not isinstance(value, int) or not 1 <= value <= 4096:
                raise ValueError(f"camera {name} must be an int in [1, 4096], got {value!r}")
        self.sim = sim
        self.cameras = [s.add_camera("human", width, height, fovy, 0.01, 20.0) for s in sim.sub_scenes]
        self.set_view(target, distance, yaw, pitch, roll)

    def set_view(self, target, distance: float, yaw: float, pitch: float, roll: float = 0.0) -> None:
        """Orbit the camera around `target` (env frame, m); angles in degrees."""
        pose = look_at_pose(target, distance, yaw, pitch, roll)
        origins = self.sim.origins.numpy()
        for camera, origin in zip(self.cameras, origins):
            camera.entity.set_pose(sapien.Pose(pose[:3] + origin, pose[3:]))

    def capture(self) -> torch.Tensor:
        """uint8 (N, H, W, 3) frames of all envs."""
        frames = []
        for scene, camera in zip(self.sim.sub_scenes, self.cameras):
            scene.update_render()
            camera.take_picture()
            rgba = camera.get_picture("Color")
            frames.append(np.clip(rgba[..., :3] * 255 + 0.5, 0, 255).astype(np.uint8))
        return torch.from_numpy(np.stack(frames))
