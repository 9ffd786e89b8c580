"""Viewer overlays drawn from the env's own queries: contact force arrows and sensor
camera frustums (robosim.view.viewer owns them and updates them on each push).

Force arrows (/env{i}/forces, while `show_forces`): one arrow per contact point of the
last physics substep (robosim.sim.contacts `points()`) that carries at least MIN_FORCE,
from the point along the force on the pair's first body (PhysX's order of the pair, so
the arrows of one contact may point either way along its normal), `force_scale` N per
metre of arrow. (PhysX also lists points within its contact offset that carry no force:
they have no direction to draw.)

Camera frustums (/env{i}/cameras/{name}, while `show_frustums`): every sensor camera the
env declares (the task's cameras with make's `sensor_configs` overrides), at its pose in
env i's frame, OpenCV axes (+z forward), its fovy and width/height aspect. A built camera
(camera obs modes) is drawn where its render component is; one not built (e.g.
render_mode="rgb_array" only) where its config puts it, riding on its mount's pose.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from robosim.core.rotations import matrix_to_quat
from robosim.sensors.camera import CameraConfig, override_cameras

FORCE_SCALE = 100.0        # N per metre of arrow: a 10 N contact force draws 10 cm
MIN_FORCE = 1e-4           # N: weaker contact points get no arrow
FORCE_COLOR = (255, 120, 0)
FRUSTUM_SCALE = 0.08       # m from the apex to the frustum's far face
FRUSTUM_COLOR = (30, 120, 255)
# SAPIEN cameras look along local +x with +z up; viser draws frustums in OpenCV axes
# (+z forward, +x right, +y down): the OpenCV axes' columns in the SAPIEN camera frame
_CV_IN_SAPIEN = (np.zeros(3), matrix_to_quat(np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])))


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of wxyz quaternions a * b."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw])


def _compose(a: tuple, b: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Pose a * b of (position (3,), wxyz quaternion (4,)) pairs; the view layer uses no SAPIEN types."""
    (pa, qa), (pb, qb) = a, b
    qa, qb = np.asarray(qa, np.float64), np.asarray(qb, np.float64)
    rotated = _quat_mul(_quat_mul(qa, np.array([0.0, *np.asarray(pb, np.float64)])), qa * [1, -1, -1, -1])[1:]
    return np.asarray(pa, np.float64) + rotated, _quat_mul(qa, qb)


def check_force_scale(value: Any) -> float:
    """`value` as a float N per metre > 0; ValueError naming force_scale otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or not value > 0:
        raise ValueError(f"force_scale must be a finite number > 0 (N per metre of arrow), got {value!r}")
    return float(value)


def force_segments(rows: np.ndarray, force_scale: float) -> np.ndarray:
    """float32 (P', 2, 3): per contact row [position (3), force (3)] of Contacts.points()
    whose force is at least MIN_FORCE, the arrow from the point to point + force /
    force_scale (m, env frame)."""
    rows = rows[np.linalg.norm(rows[:, 3:6], axis=1) >= MIN_FORCE]
    start = rows[:, :3]
    return np.stack([start, start + rows[:, 3:6] / force_scale], axis=1).astype(np.float32)


class ForceArrows:
    """The force arrows of every env of `server`'s scene (module docstring)."""

    def __init__(self, server, num_envs: int):
        self.server = server
        self.nodes: list[Any] = [None] * num_envs

    def update(self, rows_per_env: list[np.ndarray] | None, force_scale: float) -> None:
        """Draw env i's arrows from rows_per_env[i] (None: remove every arrow)."""
        for i in range(len(self.nodes)):
            rows = None if rows_per_env is None else rows_per_env[i]
            segments = None if rows is None else force_segments(rows, force_scale)
            if segments is None or len(segments) == 0:
                if self.nodes[i] is not None:
                    self.nodes[i].remove()
                    self.nodes[i] = None
                continue
            if self.nodes[i] is not None and len(self.nodes[i].points) == len(segments):
                self.nodes[i].points = segments
                continue
            if self.nodes[i] is not None:
                self.nodes[i].remove()
            self.nodes[i] = self.server.scene.add_arrows(f"/env{i}/forces", segments, FORCE_COLOR,
                                                         shaft_radius=0.003, head_radius=0.008, head_length=0.015)


def declared_cameras(env) -> tuple[CameraConfig, ...]:
    """The sensor cameras env declares: built ones as built, else the task's with overrides."""
    sensors = env.cameras.sensors
    if sensors is not None:
        return sensors.configs
    return override_cameras(env.parts.sensor_cameras, env.env_spec.sensor_configs)


class CameraFrustums:
    """The sensor camera frustums of every env of `env` (module docstring)."""

    def __init__(self, server, env):
        self.server, self.env = server, env
        self.configs = declared_cameras(env)
        self._mounts: dict[tuple[int, str], Any] = {}   # (env, mount name) -> entity, for cameras not built
        if env.cameras.sensors is None:
            for config in self.configs:
                if config.mount is None:
                    continue
                for i, scene in enumerate(env.sim.sub_scenes):
                    mount = next((e for e in scene.entities if e.name == config.mount), None)
                    if mount is None:
                        raise ValueError(f"camera {config.name!r} mount must name an entity of the scene, "
                                         f"got {config.mount!r}")
                    self._mounts[(i, config.mount)] = mount
        self.nodes: dict[tuple[int, str], Any] = {}
        self._pushed: dict[tuple[int, str], np.ndarray] = {}

    def poses(self) -> dict[tuple[int, str], np.ndarray]:
        """{(env i, camera name): float32 (7,) [xyz, wxyz]}: the camera's OpenCV-axes pose in env i's frame."""
        sim = self.env.sim
        origins = np.asarray(sim.origins, np.float64)
        sensors = self.env.cameras.sensors
        out = {}
        for config in self.configs:
            local = (np.asarray(config.pose[:3], np.float64), np.asarray(config.pose[3:], np.float64))
            for i in range(sim.num_envs):
                if sensors is not None:
                    pose = sensors.cameras[config.name][i].get_global_pose()
                    world = (pose.p, pose.q)
                elif config.mount is not None:
                    mount = self._mounts[(i, config.mount)].pose
                    world = _compose((mount.p, mount.q), local)
                else:
                    world = (local[0] + origins[i], local[1])
                p, q = _compose(world, _CV_IN_SAPIEN)
                out[(i, config.name)] = np.concatenate([p - origins[i], q]).astype(np.float32)
        return out

    def update(self, show: bool) -> None:
        """Draw (show) or remove every frustum; only frustums that moved are sent."""
        if not show:
            for node in self.nodes.values():
                node.remove()
            self.nodes.clear()
            self._pushed.clear()
            return
        for key, pose in self.poses().items():
            i, name = key
            node = self.nodes.get(key)
            if node is None:
                config = next(c for c in self.configs if c.name == name)
                self.nodes[key] = self.server.scene.add_camera_frustum(
                    f"/env{i}/cameras/{name}", fov=float(config.fovy), aspect=config.width / config.height,
                    scale=FRUSTUM_SCALE, thickness=0.003, color=FRUSTUM_COLOR, position=pose[:3], wxyz=pose[3:])
            elif np.abs(pose - self._pushed[key]).max() > 1e-6:
                node.position, node.wxyz = pose[:3], pose[3:]
            self._pushed[key] = pose
