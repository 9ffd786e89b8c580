"""What randomization events act on: objects, articulations, the robot, lights, cameras,
object pools. `resolve_target(event, env)` finds the event's target in a built env and
returns an applier with `apply(event, env_idx (M,), values (M, dim))`.

Runtime writes go through SAPIEN per env (CPU). Base values (the mass, material, drive
gains or camera pose an env was built with) are remembered at the first write, so
"scale" and "add" always start from the built value, never from the last event's.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import sapien
import torch

from robosim.sim.objects import Box, Capsule, Cylinder, Mesh, RigidObject, Sphere

DESCRIPTION_PROPERTIES = ("scale", "density")   # change the object's description at build time


def scale_object(obj: RigidObject, factor: float) -> RigidObject:
    """`obj` with every shape (sizes and offsets) and the body's height scaled by factor."""
    shapes = []
    for s in obj.shapes:
        pose = (*(c * factor for c in s.pose[:3]), *s.pose[3:])
        if isinstance(s, Box):
            shapes.append(dataclasses.replace(s, half_size=tuple(h * factor for h in s.half_size), pose=pose))
        elif isinstance(s, Sphere):
            shapes.append(dataclasses.replace(s, radius=s.radius * factor, pose=pose))
        elif isinstance(s, (Capsule, Cylinder)):
            shapes.append(dataclasses.replace(s, radius=s.radius * factor, half_length=s.half_length * factor,
                                              pose=pose))
        elif isinstance(s, Mesh):
            shapes.append(dataclasses.replace(s, scale=tuple(c * factor for c in s.scale), pose=pose))
    body_pose = (*obj.pose[:2], obj.pose[2] * factor, *obj.pose[3:])
    return dataclasses.replace(obj, shapes=tuple(shapes), pose=body_pose)


def _combine(base, value, op: str):
    return value if op == "set" else base + value if op == "add" else base * value


def _unknown(event, what: str, known) -> ValueError:
    return ValueError(f"randomization[{event.name!r}]['target'] names {what}, which this env does not have; "
                      f"known: {sorted(known)}")


class ObjectTarget:
    """Rigid objects (an ActorView, or the active variants of a pool)."""

    def __init__(self, view):
        self.view = view
        self._base: dict = {}

    def _bodies(self, i: int):
        entity = self.view.entity_of(i) if hasattr(self.view, "entity_of") else self.view.entities[i]
        return entity, entity.find_component_by_type(sapien.physx.PhysxRigidDynamicComponent)

    def apply(self, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
        prop, op = event.property, event.operation
        if prop in ("position", "yaw", "velocity"):
            return self._apply_motion(prop, op, env_idx, values)
        for i, v in zip(env_idx.tolist(), values.tolist()):
            entity, body = self._bodies(i)
            if prop == "mass" and body is not None and not body.kinematic:
                base_mass, base_inertia = self._base.setdefault(("mass", i), (body.mass, np.asarray(body.inertia)))
                mass = max(_combine(base_mass, v[0], op), 1e-6)
                body.mass = mass
                body.inertia = base_inertia * (mass / base_mass)
            elif prop in ("friction", "restitution"):
                shapes = entity.find_component_by_type(sapien.physx.PhysxRigidBaseComponent).get_collision_shapes()
                for k, shape in enumerate(shapes):
                    m = self._base.setdefault(("material", i, k), shape.physical_material)
                    fr = max(_combine(m.static_friction, v[0], op), 0.0) if prop == "friction" else m.static_friction
                    dfr = max(_combine(m.dynamic_friction, v[0], op), 0.0) if prop == "friction" else m.dynamic_friction
                    rest = min(max(_combine(m.restitution, v[0], op), 0.0), 1.0) if prop == "restitution" else m.restitution
                    shape.set_physical_material(sapien.physx.PhysxMaterial(fr, dfr, rest))   # this env's own
            elif prop in ("linear_damping", "angular_damping") and body is not None:
                base = self._base.setdefault((prop, i), getattr(body, prop))
                setattr(body, prop, max(_combine(base, v[0], op), 0.0))
            elif prop == "color":
                render = entity.find_component_by_type(sapien.render.RenderBodyComponent)
                for shape in render.render_shapes if render is not None else []:
                    parts = shape.parts if hasattr(shape, "parts") else [shape]
                    for part in parts:
                        part.material.set_base_color([*v[:3], 1.0])

    def _apply_motion(self, prop: str, op: str, env_idx: torch.Tensor, values: torch.Tensor) -> None:
        idx = env_idx.to(torch.int64)
        if prop == "velocity":
            current = self.view.velocity()[idx]
            self.view.set_velocity(_combine(current, values, op) if op != "scale" else current * values, idx)
            return
        pose = self.view.pose()[idx]
        if prop == "position":
            pose[:, :3] = _combine(pose[:, :3], values, op) if op != "scale" else pose[:, :3] * values
        else:   # yaw about the env's z axis
            half = values[:, 0].double() * 0.5
            w, x, y, z = pose[:, 3:].double().unbind(1)
            c, s = torch.cos(half), torch.sin(half)
            pose[:, 3:] = torch.stack([c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w], 1).float()
        self.view.set_pose(pose, idx)


class ArticulationTarget:
    """Joint drive gains of an articulation (the robot: its PD controller gains)."""

    def __init__(self, view):
        self.view = view
        self._base: dict = {}

    def apply(self, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
        for i, v in zip(env_idx.tolist(), values.tolist()):
            for k, joint in enumerate(self.view.joints[i]):
                stiffness, damping, limit = self._base.setdefault((i, k), (joint.stiffness, joint.damping,
                                                                           joint.force_limit))
                if event.property == "stiffness":
                    stiffness = max(_combine(stiffness, v[0], event.operation), 0.0)
                else:
                    damping = max(_combine(damping, v[0], event.operation), 0.0)
                joint.set_drive_properties(stiffness, damping, limit)


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
                    light.color = [max(c, 0.0) for c in _combine(np.array(color), np.array(v[:3]), event.operation)]
                elif event.property == "intensity":
                    light.color = [max(_combine(c, v[0], event.operation), 0.0) for c in color]
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
    """One camera name in every env (a sensor camera, or "human": the video camera)."""

    def __init__(self, cameras: list):
        self.cameras = cameras
        self._base: dict = {}

    def apply(self, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
        for i, v in zip(env_idx.tolist(), values.tolist()):
            camera = self.cameras[i]
            pose, fovy = self._base.setdefault(i, (camera.entity.pose, camera.fovy))
            if event.property == "fovy":
                camera.set_fovy(min(max(_combine(fovy, v[0], event.operation), 1e-3), math.pi - 1e-3), True)
            else:
                p = _combine(np.asarray(pose.p, dtype=np.float64), np.asarray(v[:3]), event.operation)
                camera.entity.set_pose(sapien.Pose(p.astype(np.float32), pose.q))


class PoolTarget:
    """Which variant of an object pool is active, per env."""

    def __init__(self, view):
        self.view = view

    def apply(self, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
        variant = values[:, 0].round().to(torch.int64)
        if (variant < 0).any() or (variant >= self.view.pool_size).any():
            raise ValueError(f"randomization[{event.name!r}] drew variant {variant.tolist()}, outside the pool's "
                             f"0..{self.view.pool_size - 1}")
        self.view.activate(variant, env_idx)


class _NoTarget:
    def apply(self, event, env_idx, values) -> None:
        """Nothing to change (e.g. a camera event in an env that renders nothing)."""


def resolve_target(event, env: Any):
    """The applier of `event` in the built env (ValueError naming the event if absent)."""
    sim = env.sim
    if event.kind == "object":
        if event.target not in sim.actors:
            raise _unknown(event, f"object {event.target!r}", sim.actors)
        target = ObjectTarget(sim.actors[event.target])
        if event.property == "mass":
            _, body = target._bodies(0)
            if body is None or body.kinematic:
                kind = "static" if body is None else "kinematic"
                raise ValueError(f"randomization[{event.name!r}] sets property 'mass' of object {event.target!r}, "
                                 f"which is a {kind} body (PhysX ignores its mass); randomize a dynamic "
                                 f"object's mass, or drop the event")
        return target
    if event.kind == "pool":
        view = sim.actors.get(event.target)
        if view is None or not hasattr(view, "activate"):
            raise _unknown(event, f"object pool {event.target!r}",
                           [n for n, v in sim.actors.items() if hasattr(v, "activate")])
        return PoolTarget(view)
    if event.kind == "articulation":
        if event.target not in sim.articulations:
            raise _unknown(event, f"articulation {event.target!r}", sim.articulations)
        return ArticulationTarget(sim.articulations[event.target])
    if event.kind == "robot":
        return ArticulationTarget(env.robot.view)
    if event.kind == "light":
        return LightTarget(sim)
    declared = {c.name for c in env.task.sensor_cameras} | {"human"}
    if event.target not in declared:
        raise _unknown(event, f"camera {event.target!r}", declared)
    rig = env.cameras
    if event.target == "human":
        return CameraTarget(rig.human.cameras) if rig.human is not None else _NoTarget()
    if rig.sensors is not None and event.target in rig.sensors.cameras:
        return CameraTarget(rig.sensors.cameras[event.target])
    return _NoTarget()
