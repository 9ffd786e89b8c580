"""Viewer: a viser scene of every env of a batch, kept in step with the env.

Scene graph (node names are the contract tests and users rely on):
  /env{i}                  env i's frame, placed on a grid (`spacing` m apart)
  /env{i}/body{k}_{name}   one mesh node per visible render body of env i (robot links,
                           task objects, goals), posed in env i's frame
  /env{i}/tcp              the TCP frame (axes)
  /env{i}/label            reward, success and sim_fault of env i's last step
  /env{i}/contacts         contact points (only while `show_contacts` is on)

`update()` is what a training loop calls after each step: it returns at once when less
than 1/hz s passed since the last push (frames are dropped, the step is never held up),
else reads every pose once (robosim.sensors.visual_shapes) and sends the nodes whose
pose changed, grouped so a browser applies them together.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from robosim.sensors.tiling import grid_shape
from robosim.sensors.visual_shapes import SceneVisuals
from robosim.view.server import start_server

POSE_TOLERANCE = 1e-6   # m / quaternion units: smaller changes are not sent


def _rgb(rgba) -> tuple[int, int, int]:
    return tuple(int(round(255 * min(max(c, 0.0), 1.0))) for c in rgba[:3])   # type: ignore[return-value]


def _row(x: Any, i: int) -> Any:
    return x[i].item() if isinstance(x, torch.Tensor) else x[i]


class Viewer:
    """A live browser view of `env` (a robosim BaseEnv built with a render world); made
    by robosim.view.attach. Not thread-safe: call update() from the thread that steps."""

    def __init__(self, env, port: int = 8080, host: str = "127.0.0.1", hz: float = 10.0, spacing: float = 3.5):
        if isinstance(hz, bool) or not isinstance(hz, (int, float)) or not hz > 0:
            raise ValueError(f"hz must be a number > 0 (updates per second), got {hz!r}")
        if env.sim is None:
            raise ValueError("env must be open (env.sim is None: the env was closed)")
        self.env = env
        self.hz = float(hz)
        self.spacing = float(spacing)
        self._visuals = SceneVisuals(env.sim)   # ValueError before the server starts
        self.server = start_server(port, host)
        self.port, self.host = port, host
        self.show_contacts = False
        self._last_push = -np.inf
        self._labels: list[str] = []
        self.frames_pushed = 0
        self._build_scene()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- scene ----------------------------------------------------------------------------
    def _build_scene(self) -> None:
        scene = self.server.scene
        n = self.env.num_envs
        rows, cols = grid_shape(n)
        self.env_nodes, self.body_nodes, self.tcp_nodes, self.label_nodes = [], [], [], []
        self._movable: list[np.ndarray] = []
        for i in range(n):
            r, c = divmod(i, cols)
            origin = (c * self.spacing, -r * self.spacing, 0.0)
            self.env_nodes.append(scene.add_frame(f"/env{i}", show_axes=False, position=origin))
            nodes = []
            for k, body in enumerate(self._visuals.bodies[i]):
                nodes.append(self._add_body(f"/env{i}/body{k}_{body.name}", body))
            self.body_nodes.append(nodes)
            self._movable.append(np.array([b.movable for b in self._visuals.bodies[i]], bool))
            self.tcp_nodes.append(scene.add_frame(f"/env{i}/tcp", axes_length=0.08, axes_radius=0.004))
            self.label_nodes.append(scene.add_label(f"/env{i}/label", f"env {i}", position=(0.0, 0.0, 0.9)))
            self._labels.append(f"env {i}")
        self._pushed = [np.full((len(b), 7), np.inf, np.float32) for b in self.body_nodes]
        self.contact_nodes: list[Any] = [None] * n
        self.update(force=True)

    def _add_body(self, name: str, body):
        """One node per body: a frame holding one mesh child per coloured part."""
        scene = self.server.scene
        node = scene.add_frame(name, show_axes=False)
        for j, part in enumerate(body.parts):
            opacity = float(part.rgba[3]) if part.rgba[3] < 1.0 else None
            scene.add_mesh_simple(f"{name}/part{j}", part.vertices, part.faces, color=_rgb(part.rgba),
                                  opacity=opacity, side="double")
        return node

    # -- updates --------------------------------------------------------------------------
    def update(self, reward: Any = None, info: dict | None = None, force: bool = False) -> bool:
        """Push the env's current poses (and, when given, per-env reward (N,) and info's
        "success"/"sim_fault" (N,) into the labels) unless less than 1/hz s passed since the
        last push and not `force`. Returns whether it pushed."""
        now = time.perf_counter()
        if not force and now - self._last_push < 1.0 / self.hz:
            return False
        self._last_push = now
        poses = self._visuals.poses()
        tcp = self.env.robot.tcp_pose().cpu().numpy()
        with self.server.atomic():
            for i, (rows, nodes) in enumerate(zip(poses, self.body_nodes)):
                changed = np.abs(rows - self._pushed[i]).max(axis=1) > POSE_TOLERANCE
                for k in np.flatnonzero(changed):
                    nodes[k].position = rows[k, :3]
                    nodes[k].wxyz = rows[k, 3:]
                self._pushed[i][changed] = rows[changed]
                self.tcp_nodes[i].position = tcp[i, :3]
                self.tcp_nodes[i].wxyz = tcp[i, 3:]
            self._update_labels(reward, info)
            self._update_contacts()
        self.frames_pushed += 1
        return True

    def _update_labels(self, reward: Any, info: dict | None) -> None:
        if reward is None and info is None:
            return
        for i, node in enumerate(self.label_nodes):
            parts = [f"env {i}"]
            if reward is not None:
                parts.append(f"reward {float(_row(reward, i)):.3f}")
            if info is not None and "success" in info:
                parts.append("success" if bool(_row(info["success"], i)) else "no success")
            if info is not None and "sim_fault" in info and int(_row(info["sim_fault"], i)):
                parts.append(f"sim_fault {int(_row(info['sim_fault'], i))}")
            text = "  ".join(parts)
            if text != self._labels[i]:
                node.text = text
                self._labels[i] = text

    def _update_contacts(self) -> None:
        if not self.show_contacts:
            for i, node in enumerate(self.contact_nodes):
                if node is not None:
                    node.remove()
                    self.contact_nodes[i] = None
            return
        for i, rows in enumerate(self.env.sim.contacts.points()):
            if self.contact_nodes[i] is not None:
                self.contact_nodes[i].remove()
            colors = np.tile(np.array([[255, 40, 200]], np.uint8), (len(rows), 1))
            self.contact_nodes[i] = self.server.scene.add_point_cloud(
                f"/env{i}/contacts", rows[:, :3].astype(np.float32), colors, point_size=0.015, point_shape="circle")

    def set_env_visible(self, env_index: int | None) -> None:
        """Show only env `env_index` (at the grid's origin cell), or every env (None)."""
        for i, node in enumerate(self.env_nodes):
            node.visible = env_index is None or i == env_index

    def close(self) -> None:
        """Stop the server (the env is left as it is)."""
        self.server.stop()


def attach(env, port: int = 8080, host: str = "127.0.0.1", hz: float = 10.0) -> Viewer:
    """Serve a live view of `env` at http://host:port and return its Viewer (non-blocking:
    the server runs in background threads; call viewer.update() after each step). `env`
    must have a render world (render_mode="rgb_array" or camera observations; ValueError
    otherwise); a port in use is a ValueError naming the port."""
    return Viewer(env, port=port, host=host, hz=hz)
