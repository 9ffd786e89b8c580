"""What randomization events act on: objects, articulations, the robot, lights, cameras,
object pools. `resolve_target(event, env)` finds the event's target in a built env and
returns an applier with `apply(event, env_idx (M,), values (M, dim))`.

Physical properties are read and written through the views (robosim.sim.properties),
lights and cameras through the env's camera rig (robosim.sensors.targets). Base values (the mass, material, drive
gains or camera pose an env was built with) are remembered at the first write, so
"scale" and "add" always start from the built value, never from the last event's.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

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


def combine(base, value, op: str):
    return value if op == "set" else base + value if op == "add" else base * value


def _unknown(event, what: str, known) -> ValueError:
    return ValueError(f"randomization[{event.name!r}]['target'] names {what}, which this env does not have; "
                      f"known: {sorted(known)}")


class ObjectTarget:
    """Rigid objects (an ActorView, or the active variants of a pool): every property is
    read and written through the view (robosim.sim.properties)."""

    def __init__(self, view):
        self.view = view
        self._base: dict = {}

    def apply(self, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
        prop, op = event.property, event.operation
        if prop in ("position", "yaw", "velocity"):
            return self._apply_motion(prop, op, env_idx, values)
        view = self.view
        for i, v in zip(env_idx.tolist(), values.tolist()):
            if prop == "mass" and view.is_dynamic(i):
                base_mass, base_inertia = self._base.setdefault(("mass", i), view.mass(i))
                mass = max(combine(base_mass, v[0], op), 1e-6)
                view.set_mass(i, mass, base_inertia * (mass / base_mass))
            elif prop in ("friction", "restitution"):
                base = self._base.setdefault(("material", i), view.materials(i))
                if prop == "friction":
                    materials = [(max(combine(sf, v[0], op), 0.0), max(combine(df, v[0], op), 0.0), r)
                                 for sf, df, r in base]
                else:
                    materials = [(sf, df, min(max(combine(r, v[0], op), 0.0), 1.0)) for sf, df, r in base]
                view.set_materials(i, materials)
            elif prop in ("linear_damping", "angular_damping") and view.is_dynamic(i):
                linear, angular = self._base.setdefault(("damping", i), view.damping(i))
                current = list(view.damping(i))
                k = 0 if prop == "linear_damping" else 1
                current[k] = max(combine((linear, angular)[k], v[0], op), 0.0)
                view.set_damping(i, *current)
            elif prop == "color":
                view.set_color(i, [*v[:3], 1.0])

    def _apply_motion(self, prop: str, op: str, env_idx: torch.Tensor, values: torch.Tensor) -> None:
        pose = self.view.pose()          # on the physics state's device: draws follow it there
        device = pose.device
        idx, values = env_idx.to(device, torch.int64), values.to(device)
        if prop == "velocity":
            current = self.view.velocity()[idx]
            self.view.set_velocity(combine(current, values, op) if op != "scale" else current * values, idx)
            return
        pose = pose[idx]
        if prop == "position":
            pose[:, :3] = combine(pose[:, :3], values, op) if op != "scale" else pose[:, :3] * values
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
        k = 0 if event.property == "stiffness" else 1
        for i, v in zip(env_idx.tolist(), values.tolist()):
            base = self._base.setdefault(i, self.view.drive_gains(i))
            gains = [list(g) for g in base]
            for g in gains:
                g[k] = max(combine(g[k], v[0], event.operation), 0.0)
            self.view.set_drive_gains(i, gains)


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


def resolve_target(event, env: Any):
    """The applier of `event` in the built env (ValueError naming the event if absent, or
    when the backend cannot change the property after the build)."""
    target = _resolve(event, env)
    view = getattr(target, "view", None)
    writable = getattr(view, "writable_properties", None)
    if writable is not None and event.property not in MOTION_PROPERTIES and event.property not in writable:
        raise ValueError(f"randomization[{event.name!r}] sets property {event.property!r} of {event.target!r}, "
                         f"which sim_backend {env.sim.backend!r} cannot change after the build (SAPIEN's GPU PhysX "
                         f"takes it only before gpu_init); use sim_backend 'physx_cpu' for this event")
    return target


MOTION_PROPERTIES = ("position", "yaw", "velocity", "variant")


def _resolve(event, env: Any):
    sim = env.sim
    if event.kind == "object":
        if event.target not in sim.actors:
            raise _unknown(event, f"object {event.target!r}", sim.actors)
        view = sim.actors[event.target]
        if event.property == "mass" and not view.is_dynamic(0):
            raise ValueError(f"randomization[{event.name!r}] sets property 'mass' of object {event.target!r}, "
                             f"which is a static or kinematic body (PhysX ignores its mass); randomize a dynamic "
                             f"object's mass, or drop the event")
        return ObjectTarget(view)
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
    if event.kind in ("light", "camera"):     # the render side: robosim.sensors.targets
        return env.cameras.randomization_target(event, env.task.sensor_cameras)
    raise ValueError(f"randomization[{event.name!r}] has an unknown kind {event.kind!r}")
