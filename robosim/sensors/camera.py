"""Camera descriptions and the human-view camera placed in every env's render world.

Conventions: a camera pose is [x, y, z, qw, qx, qy, qz] (m, unit quaternion) in the env's
own frame (or, for a mounted camera, in the frame of the entity it rides on). SAPIEN
cameras look along their local +x with +z up (the "SAPIEN/ROS camera" convention);
`extrinsic_cv`/`intrinsic_cv` follow OpenCV (x right, y down, z forward).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sapien
import torch

from robosim.core.rotations import check_unit_quats, matrix_to_quat
from robosim.sim import SimScene

MAX_RESOLUTION = 4096


class PicturesInFlight:
    """One capture's submitted pictures. `take(camera, read)` submits camera's picture
    (`camera.take_picture()`); `read()` waits for it. When the capture ends with an
    exception (Ctrl-C and SIGTERM included) the context waits for every picture it
    submitted: freeing a scene while lavapipe still draws a submitted picture crashes the
    process later (segfault, tests/sensors/test_interrupted_capture.py)."""

    def __init__(self) -> None:
        self._reads: list[Callable[[], Any]] = []

    def take(self, camera: Any, read: Callable[[], Any]) -> None:
        self._reads.append(read)      # before the submit: an interrupt right after it is covered
        camera.take_picture()

    def __enter__(self) -> PicturesInFlight:
        return self

    def __exit__(self, kind, err, tb) -> bool:
        if kind is not None:
            for read in self._reads:
                try:
                    read()
                except Exception:     # never submitted (interrupted before take_picture ran)
                    pass
        return False


def _frame_from_forward(forward: np.ndarray, roll_rad: float = 0.0) -> np.ndarray:
    """wxyz quaternion of a camera whose +x is `forward` and whose +z is as close to
    world +z as possible, rolled by `roll_rad` about forward."""
    forward = forward / np.linalg.norm(forward)
    up_ref = np.array([0.0, 0.0, 1.0]) if abs(forward[2]) < 0.999 else np.array([1.0, 0.0, 0.0])
    left = np.cross(up_ref, forward)
    left /= np.linalg.norm(left)
    up = np.cross(forward, left)
    c, s = math.cos(roll_rad), math.sin(roll_rad)
    left, up = c * left + s * up, -s * left + c * up
    rot = torch.tensor(np.stack([forward, left, up], axis=1))
    return matrix_to_quat(rot).numpy()


def look_at_pose(target, distance: float, yaw: float, pitch: float, roll: float = 0.0) -> np.ndarray:
    """float64 (7,) camera pose [xyz, wxyz] orbiting `target` (panda-gym's parameters).

    target in m (env frame), distance in m, yaw/pitch/roll in degrees; yaw 0 looks along
    +x, pitch < 0 looks down."""
    yaw_r, pitch_r = math.radians(yaw), math.radians(pitch)
    forward = np.array([math.cos(pitch_r) * math.cos(yaw_r), math.cos(pitch_r) * math.sin(yaw_r), math.sin(pitch_r)])
    position = np.asarray(target, dtype=np.float64) - distance * forward
    return np.concatenate([position, _frame_from_forward(forward, math.radians(roll))])


def eye_target_pose(eye, target) -> np.ndarray:
    """float64 (7,) pose of a camera at `eye` looking at `target` (both (3,) m)."""
    eye = np.asarray(eye, dtype=np.float64)
    forward = np.asarray(target, dtype=np.float64) - eye
    if np.linalg.norm(forward) < 1e-9:
        raise ValueError(f"eye and target must differ, got eye={eye.tolist()} target={list(target)}")
    return np.concatenate([eye, _frame_from_forward(forward)])


def check_resolution(name: str, value: Any) -> int:
    """A camera width/height: an int in [1, MAX_RESOLUTION]."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_RESOLUTION:
        raise ValueError(f"{name} must be an int in [1, {MAX_RESOLUTION}], got {value!r}")
    return int(value)


def _check_pose(name: str, pose: Any) -> np.ndarray:
    arr = np.asarray(pose, dtype=np.float64)
    if arr.shape != (7,) or not np.isfinite(arr).all():
        raise ValueError(f"{name} must be a finite [x, y, z, qw, qx, qy, qz] of shape (7,), got {pose!r}")
    norm = check_unit_quats(name, arr[3:], 1e-3)
    return np.concatenate([arr[:3], arr[3:] / norm])


@dataclasses.dataclass(frozen=True)
class CameraConfig:
    """One sensor camera, replicated in every env.

    pose: (7,) [xyz m, wxyz] in the env frame, or in `mount`'s frame when `mount` names
    an entity of the scene (e.g. "panda_hand" for a wrist camera). fovy in rad; near/far
    clip distances in m."""

    name: str
    pose: Sequence[float]
    width: int = 128
    height: int = 128
    fovy: float = math.pi / 2
    near: float = 0.01
    far: float = 10.0
    mount: str | None = None

    def __post_init__(self):
        where = f"camera {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"camera name must be a non-empty str, got {self.name!r}")
        check_resolution(f"{where} width", self.width)
        check_resolution(f"{where} height", self.height)
        object.__setattr__(self, "pose", tuple(_check_pose(f"{where} pose", self.pose).tolist()))
        if not 0.0 < float(self.fovy) < math.pi:
            raise ValueError(f"{where} fovy must be in (0, pi) rad, got {self.fovy!r}")
        if not 0.0 < float(self.near) < float(self.far):
            raise ValueError(f"{where} needs 0 < near < far (m), got near={self.near!r} far={self.far!r}")
        if self.mount is not None and not isinstance(self.mount, str):
            raise ValueError(f"{where} mount must be an entity name (str) or None, got {self.mount!r}")

    @classmethod
    def looking_at(cls, name: str, eye, target, **kwargs) -> CameraConfig:
        """A camera at `eye` (m, env frame) looking at `target`."""
        return cls(name, eye_target_pose(eye, target), **kwargs)


def override_cameras(defaults: Sequence[CameraConfig], overrides: dict | None,
                     arg: str = "sensor_configs") -> tuple[CameraConfig, ...]:
    """Apply user overrides to a task's cameras.

    overrides: {field: value} applied to every camera (e.g. {"width": 64, "height": 64}),
    and/or {camera_name: {field: value}} for one camera. Fields: those of CameraConfig
    except name."""
    if overrides is None:
        return tuple(defaults)
    if not isinstance(overrides, dict):
        raise TypeError(f"{arg} must be a dict or None, got {type(overrides).__name__}")
    names = [c.name for c in defaults]
    fields = [f.name for f in dataclasses.fields(CameraConfig) if f.name != "name"]
    common = {k: v for k, v in overrides.items() if k in fields}
    per_camera = {k: v for k, v in overrides.items() if k not in fields}
    for key, value in per_camera.items():
        if key not in names:
            raise ValueError(f"{arg} keys must be camera names {names} or fields {fields}, got {key!r}")
        if not isinstance(value, dict) or set(value) - set(fields):
            raise ValueError(f"{arg}[{key!r}] must be a dict with keys among {fields}, got {value!r}")
    return tuple(dataclasses.replace(c, **{**common, **per_camera.get(c.name, {})}) for c in defaults)


@dataclasses.dataclass(frozen=True)
class HumanViewConfig:
    """The render_mode="rgb_array" camera, panda-gym style: orbit `target_position`
    (m, env frame) at `distance` (m) with yaw/pitch/roll (degrees)."""

    width: int = 256
    height: int = 256
    target_position: Sequence[float] = (0.0, 0.0, 0.15)
    distance: float = 1.3
    yaw: float = 200.0
    pitch: float = -30.0
    roll: float = 0.0
    fovy: float = 1.0

    def __post_init__(self):
        check_resolution("render_camera width", self.width)
        check_resolution("render_camera height", self.height)
        target = np.asarray(self.target_position, dtype=np.float64)
        if target.shape != (3,) or not np.isfinite(target).all():
            raise ValueError(f"render_camera target_position must be 3 finite floats (m), got {self.target_position!r}")
        object.__setattr__(self, "target_position", tuple(target.tolist()))
        for field in ("distance", "yaw", "pitch", "roll", "fovy"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"render_camera {field} must be a finite float, got {value!r}")
        if self.distance <= 0:
            raise ValueError(f"render_camera distance must be > 0 m, got {self.distance!r}")
        if not 0.0 < self.fovy < math.pi:
            raise ValueError(f"render_camera fovy must be in (0, pi) rad, got {self.fovy!r}")

    @classmethod
    def from_user(cls, render_camera: dict | None, render_size=None) -> HumanViewConfig:
        """Build from the env kwarg `render_camera` (dict of the fields) and the older
        `render_size` (W, H) shortcut."""
        kwargs: dict = {}
        if render_size is not None:
            if not isinstance(render_size, (tuple, list)) or len(render_size) != 2:
                raise ValueError(f"render_size must be a (width, height) pair, got {render_size!r}")
            kwargs.update(width=render_size[0], height=render_size[1])
        if render_camera is not None:
            if not isinstance(render_camera, dict):
                raise TypeError(f"render_camera must be a dict or None, got {type(render_camera).__name__}")
            fields = [f.name for f in dataclasses.fields(cls)]
            unknown = set(render_camera) - set(fields)
            if unknown:
                raise ValueError(f"render_camera keys must be among {fields}, got {sorted(unknown)}")
            kwargs.update(render_camera)
        return cls(**kwargs)


class HumanCamera:
    """One RGB camera per env for render_mode="rgb_array"."""

    def __init__(self, sim: SimScene, width: int | HumanViewConfig = 256, height: int | None = None, **view):
        config = width if isinstance(width, HumanViewConfig) else HumanViewConfig(width, height, **view)
        self.sim = sim
        self.config = config
        self.cameras = [s.add_camera("human", config.width, config.height, config.fovy, 0.01, 20.0)
                        for s in sim.sub_scenes]
        # GPU-style scene: one camera group renders every env from its pose buffers,
        # made at the first capture (after every camera exists); the cameras sit on
        # mount rows there, so set_view can move them after that
        self._batched = sim.batched_rendering
        self._group = None
        if self._batched:
            sim.mount_cameras(self.cameras)
        self.set_view(config.target_position, config.distance, config.yaw, config.pitch, config.roll)

    def set_view(self, target, distance: float, yaw: float, pitch: float, roll: float = 0.0) -> None:
        """Orbit the camera around `target` (env frame, m); angles in degrees. Every
        backend shows the new view from the next capture on."""
        pose = look_at_pose(target, distance, yaw, pitch, roll)
        origins = self.sim.origins.numpy()
        place_cameras(self.sim, self.cameras, [sapien.Pose(pose[:3] + o, pose[3:]) for o in origins])

    def capture(self, update_render: bool = True) -> torch.Tensor:
        """uint8 (N, H, W, 3) frames of all envs (render worlds refreshed first), on the
        scene's device."""
        with PicturesInFlight() as flight:
            if self._batched:
                if self._group is None:
                    self._group = self.sim.render_group.create_camera_group(self.cameras, ["Color"])
                self.sim.update_render()
                flight.take(self._group, lambda: self._group.get_picture_cuda("Color"))
                color = self._group.get_picture_cuda("Color").torch()
                return torch.clamp(color[..., :3] * 255 + 0.5, 0, 255).to(torch.uint8)
            frames = []
            for scene, camera in zip(self.sim.sub_scenes, self.cameras):
                if update_render:
                    scene.update_render()
                flight.take(camera, lambda camera=camera: camera.get_picture("Color"))
                frames.append(to_uint8(camera.get_picture("Color")))
        return torch.from_numpy(np.stack(frames))


def place_cameras(sim: SimScene, cameras: list, poses: list) -> None:
    """Move fixed cameras (one sapien.Pose each, world frame of their scene). A GPU-style
    scene moves their mount rows too, which its batched renderer reads."""
    if sim.batched_rendering:
        sim.place_cameras(cameras, poses)
        return
    for camera, pose in zip(cameras, poses):
        camera.entity.set_pose(pose)


def to_uint8(rgba: np.ndarray) -> np.ndarray:
    """float32 (H, W, 4) colour in [0, 1] -> uint8 (H, W, 3)."""
    return np.clip(rgba[..., :3] * 255 + 0.5, 0, 255).astype(np.uint8)
