"""The built-in randomization terms, registered like user terms (robosim.randomization.terms).

Units: mass kg, damping 1/s, friction and restitution dimensionless, colours RGB in
[0, 1], positions m (env frame), yaw rad about the env's z axis, velocity [vx, vy, vz,
wx, wy, wz] m/s and rad/s, external_force [fx, fy, fz, tx, ty, tz] N and N m about the
body's centre of mass (world axes = env axes), drive stiffness/damping as a factor on
the built gains ("scale"), joint_friction the PhysX joint friction coefficient
(dimensionless: PhysX scales it by the joint's constraint force), camera fovy rad,
observation_noise and action_noise in the units of the leaf or action they perturb.
"""
from __future__ import annotations

import dataclasses
import functools

import torch

from robosim.core.rotations import yaw_then_quat
from robosim.randomization.terms import combine, register_term
from robosim.sim.objects import Box, Capsule, Cylinder, Mesh, RigidObject, Sphere

ALL_MODES = ("reconfigure", "reset", "interval")


# -- build time: the object's description (handle: targets.ObjectDescriptions) ---------
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


@register_term("scale", kinds=("object",), modes=("reconfigure",), lower=1e-6, phase="build")
def scale(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    """Scale every shape (sizes and offsets) and the body's height ("add": by 1 + value)."""
    for i, v in zip(env_idx.tolist(), values.tolist()):
        target.write(i, scale_object(target.read(i), v[0] if event.operation in ("set", "scale") else 1.0 + v[0]))


@register_term("density", kinds=("object",), modes=("reconfigure",), lower=1e-6, phase="build")
def density(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    """The density (kg/m^3) the body's mass is computed from (a given `mass` still wins)."""
    for i, v in zip(env_idx.tolist(), values.tolist()):
        obj = target.read(i)
        target.write(i, dataclasses.replace(obj, density=combine(obj.density, v[0], event.operation)))


# -- rigid objects: physical and visual properties, per env ------------------------------
@register_term("mass", kinds=("object",), modes=ALL_MODES, lower=1e-6)
def mass(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    view = target.view
    for i, v in zip(env_idx.tolist(), values.tolist()):
        if view.is_dynamic(i):
            base_mass, base_inertia = target.base(("mass", i), lambda i=i: view.mass(i))
            new = max(combine(base_mass, v[0], event.operation), 1e-6)
            view.set_mass(i, new, base_inertia * (new / base_mass))


def _materials(target, event, env_idx, values, slot: int) -> None:
    view = target.view
    for i, v in zip(env_idx.tolist(), values.tolist()):
        base = target.base(("material", i), lambda i=i: view.materials(i))
        if slot == 0:   # friction: static and dynamic
            materials = [(max(combine(sf, v[0], event.operation), 0.0), max(combine(df, v[0], event.operation), 0.0),
                          r) for sf, df, r in base]
        else:
            materials = [(sf, df, min(max(combine(r, v[0], event.operation), 0.0), 1.0)) for sf, df, r in base]
        view.set_materials(i, materials)


# friction (static and dynamic together) and restitution: slots of the material triple
for _name, _slot in (("friction", 0), ("restitution", 2)):
    register_term(_name, kinds=("object",), modes=ALL_MODES, lower=0.0)(functools.partial(_materials, slot=_slot))


def _damping(target, event, env_idx, values, k: int) -> None:
    view = target.view
    for i, v in zip(env_idx.tolist(), values.tolist()):
        if view.is_dynamic(i):
            base = target.base(("damping", i), lambda i=i: view.damping(i))
            current = list(view.damping(i))
            current[k] = max(combine(base[k], v[0], event.operation), 0.0)
            view.set_damping(i, *current)


# linear and angular damping: the two entries of the body's damping pair
for _name, _k in (("linear_damping", 0), ("angular_damping", 1)):
    register_term(_name, kinds=("object",), modes=ALL_MODES, lower=0.0)(functools.partial(_damping, k=_k))


@register_term("color", kinds=("object",), modes=ALL_MODES, dim=3, lower=0.0)
def object_color(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    for i, v in zip(env_idx.tolist(), values.tolist()):
        target.view.set_color(i, [*v[:3], 1.0])


# -- rigid objects: motion -------------------------------------------------------------
def _motion(target, env_idx: torch.Tensor, values: torch.Tensor):
    pose = target.view.pose()          # on the physics state's device: draws follow it there
    return pose, env_idx.to(pose.device, torch.int64), values.to(pose.device)


@register_term("position", kinds=("object",), modes=("reset", "interval", "reconfigure"), dim=3,
               operation="add")
def object_position(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    pose, idx, values = _motion(target, env_idx, values)
    pose = pose[idx]
    pose[:, :3] = combine(pose[:, :3], values, event.operation)
    target.view.set_pose(pose, idx)


@register_term("yaw", kinds=("object",), modes=("reset", "interval"), operation="add")
def yaw(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    """Turn the body by the drawn angle about the env's z axis (rad; "add" only)."""
    pose, idx, values = _motion(target, env_idx, values)
    pose = pose[idx]
    pose[:, 3:] = yaw_then_quat(values[:, 0].double(), pose[:, 3:].double()).float()
    target.view.set_pose(pose, idx)


@register_term("velocity", kinds=("object",), modes=("reset", "interval"), dim=6, operation="add")
def velocity(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    _, idx, values = _motion(target, env_idx, values)
    current = target.view.velocity()[idx]
    target.view.set_velocity(combine(current, values, event.operation), idx)


@register_term("external_force", kinds=("object",), modes=("reset", "interval"), dim=6)
def external_force(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    """A constant wrench held on the body from this firing on (sim.wrenches): until the
    event fires again in that env, or the env resets ("add" adds to the held wrench)."""
    wrenches = target.sim.wrenches
    current = wrenches.get(target.view)[env_idx.cpu()]
    wrenches.set(target.view, combine(current, values.cpu(), event.operation), env_idx.cpu())


# -- articulations and the robot -----------------------------------------------------
def _gains(target, event, env_idx, values, k: int) -> None:
    for i, v in zip(env_idx.tolist(), values.tolist()):
        base = target.base(("gains", i), lambda i=i: target.view.drive_gains(i))
        gains = [list(g) for g in base]
        for g in gains:
            g[k] = max(combine(g[k], v[0], event.operation), 0.0)
        target.view.set_drive_gains(i, gains)


@register_term("stiffness", kinds=("robot", "articulation"), modes=ALL_MODES, operation="scale", lower=0.0)
def stiffness(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    _gains(target, event, env_idx, values, 0)


@register_term("damping", kinds=("robot", "articulation"), modes=ALL_MODES, operation="scale", lower=0.0)
def damping(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    _gains(target, event, env_idx, values, 1)


@register_term("joint_friction", kinds=("robot", "articulation"), modes=ALL_MODES, lower=0.0)
def joint_friction(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    """Friction coefficient of every active joint (PhysX's, dimensionless)."""
    for i, v in zip(env_idx.tolist(), values.tolist()):
        base = target.base(("joint_friction", i), lambda i=i: target.view.joint_frictions(i))
        target.view.set_joint_frictions(i, [max(combine(f, v[0], event.operation), 0.0) for f in base])


# -- pools -------------------------------------------------------------------------
@register_term("variant", kinds=("pool",), modes=("reset", "reconfigure"), lower=0.0, phase="before_init")
def variant(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    """Put the drawn variant in play, before the task places it (initialize_episode)."""
    chosen = values[:, 0].round().to(torch.int64)
    if (chosen < 0).any() or (chosen >= target.view.pool_size).any():
        raise ValueError(f"randomization[{event.name!r}] drew variant {chosen.tolist()}, outside the pool's "
                         f"0..{target.view.pool_size - 1}")
    target.view.activate(chosen, env_idx)


# -- lights and cameras: the render side applies them (robosim.sensors.targets) ---------
def _render_side(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    target.apply(event, env_idx, values)


register_term("color", kinds=("light",), modes=ALL_MODES, dim=3, lower=0.0)(_render_side)
register_term("direction", kinds=("light",), modes=ALL_MODES, dim=3)(_render_side)
register_term("intensity", kinds=("light",), modes=ALL_MODES, operation="scale", lower=0.0)(_render_side)
register_term("position", kinds=("camera",), modes=("reset", "interval", "reconfigure"), dim=3,
              operation="add")(_render_side)
register_term("fovy", kinds=("camera",), modes=ALL_MODES, lower=1e-3)(_render_side)


# -- what the env returns and takes, every control step ---------------------------------
@register_term("observation_noise", kinds=("observation",), modes=("step",), dim=None, operation="add")
def observation_noise(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    """Perturb the observation leaf (every float leaf for target "observation")."""
    target.write(env_idx, combine(target.read(env_idx), values, event.operation))


@register_term("action_noise", kinds=("action",), modes=("step",), dim=None, operation="add")
def action_noise(target, event, env_idx: torch.Tensor, values: torch.Tensor) -> None:
    """Perturb the action before it is clipped to the action space and given to the controller."""
    target.write(env_idx, combine(target.read(env_idx), values, event.operation))
