"""CameraRig: everything an env renders, built in one call after its scene is built.

The env describes what it needs with a `RigSpec` (validated before any simulation is
built, so bad camera arguments fail early); `CameraRig(sim, spec)` then applies render
LOD and adds the sensor cameras and the human-view camera to every env's render world.

Every capture refreshes the render worlds from physics first (`scene.update_render()`),
so a frame taken right after a (partial) reset shows the new episode, never the last
frame of the old one.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import sapien
import torch

from robosim.randomization.targets import refuse_unshown
from robosim.sensors.camera import CameraConfig, HumanCamera, HumanViewConfig, override_cameras
from robosim.sensors.lod import apply_render_lod, resolve_lod
from robosim.sensors.sensor_cameras import SensorCameras
from robosim.sensors.tiling import depth_to_rgb, hstack_padded
from robosim.sim import SimScene


@dataclasses.dataclass(frozen=True)
class RigSpec:
    """What to render. sensors: cameras to add (empty: none); human: the rgb_array camera
    or None; lod_keep: fraction of visual triangles kept (1 = full detail)."""

    sensors: tuple[CameraConfig, ...]
    human: HumanViewConfig | None
    lod_keep: float

    @classmethod
    def from_env_kwargs(cls, task_cameras: Sequence[CameraConfig], want_sensors: bool, want_human: bool,
                        sensor_configs: dict | None = None, render_camera: dict | None = None,
                        render_size: Any = None, render_lod: Any = "auto") -> RigSpec:
        """Validate the env kwargs (raises ValueError/TypeError naming the argument)."""
        sensors = override_cameras(task_cameras, sensor_configs)
        human = HumanViewConfig.from_user(render_camera, render_size)
        keep = resolve_lod(render_lod)
        if want_sensors and not sensors:
            raise ValueError("this task declares no sensor cameras (Task.sensor_cameras is empty); "
                             "camera obs modes and render_mode='sensors' need at least one")
        return cls(sensors if want_sensors else (), human if want_human else None,
                   keep if (want_sensors or want_human) else 1.0)


class CameraRig:
    """The cameras of one built SimScene (see module docstring)."""

    def __init__(self, sim: SimScene, spec: RigSpec):
        self.sim = sim
        self.spec = spec
        self.lod_stats = apply_render_lod(sim, spec.lod_keep) if spec.lod_keep < 1.0 else {}
        self.sensors = SensorCameras(sim, spec.sensors) if spec.sensors else None
        self.human = HumanCamera(sim, spec.human) if spec.human is not None else None

    def randomization_target(self, event, declared_cameras: Sequence[CameraConfig]):
        """The applier of a light or camera randomization event (robosim.sensors.targets);
        ValueError naming the event when it names a camera the task does not declare."""
        from robosim.sensors.targets import CameraTarget, LightTarget, NoTarget

        batched = self.sim.batched_rendering and self.sim.render
        if event.kind == "light":
            if batched:
                refuse_unshown(event, self.sim.backend, "SAPIEN's batched renderer keeps the lights as they were "
                               "when a camera group was made, at the first render (its cameras' auto-upload is off)")
            return LightTarget(self.sim)
        declared = {c.name for c in declared_cameras} | {"human"}
        if event.target not in declared:
            raise ValueError(f"randomization[{event.name!r}]['target'] names camera {event.target!r}, which this "
                             f"env does not have; known: {sorted(declared)}")
        cameras = (self.human.cameras if self.human is not None else None) if event.target == "human" else \
            (self.sensors.cameras.get(event.target) if self.sensors is not None else None)
        if cameras is None:
            return NoTarget()
        if batched and event.property == "fovy":
            refuse_unshown(event, self.sim.backend, "SAPIEN's batched renderer keeps a camera's intrinsics from "
                           "when its camera group was made, at the first render")
        on_body = cameras[0].entity.find_component_by_type(sapien.physx.PhysxRigidBodyComponent) is not None
        if batched and event.property == "position" and on_body:
            refuse_unshown(event, self.sim.backend, "a camera on a body keeps the offset from its body it had when "
                           "its camera group was made, at the first render")
        return CameraTarget(cameras, self.sim)

    @property
    def segmentation_ids(self) -> dict[str, int]:
        """{entity name: id} of the segmentation images (0 = background)."""
        if self.sensors is None:
            return {}
        return {name: k for k, name in enumerate(self.sensors.segmentation.names) if k}

    def render_sensors(self) -> torch.Tensor:
        """uint8 (N, H, sum W, 3): for each sensor camera its rgb then its depth (grey,
        near = bright), side by side."""
        data = self.sensors.capture(("rgb", "depth"))
        tiles = []
        for config in self.sensors.configs:
            tiles.append(data[config.name]["rgb"].cpu().numpy())
            tiles.append(depth_to_rgb(data[config.name]["depth"], far=2.0))
        return torch.from_numpy(np.ascontiguousarray(hstack_padded(tiles)))
