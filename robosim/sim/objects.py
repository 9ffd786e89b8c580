"""Declarative descriptions of what a task puts in the scene: shapes, rigid objects,
articulations. `SimScene.add_object`, `add_articulation` and `load_urdf` build them.

Every pose here is in the env's own frame (m, quaternion wxyz): robosim adds the env's
offset inside the shared physics world when it builds, so a task never handles world
coordinates. A shape's `pose` is relative to its body. All sizes are in metres, masses
in kg, densities in kg/m^3. Values are checked when the description is made, so a bad
size fails with a ValueError naming the field before anything is built.
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import trimesh

from robosim.core.rotations import check_unit_quats

Pose7 = tuple[float, float, float, float, float, float, float]
IDENTITY: Pose7 = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
BODY_TYPES = ("dynamic", "kinematic", "static")
JOINT_TYPES = ("fixed", "revolute", "prismatic")


def check_pose(name: str, pose: Sequence[float]) -> Pose7:
    """A finite 7-vector [x, y, z, qw, qx, qy, qz] with a unit-norm (+-1e-3) quaternion;
    a 3-vector is a position with identity rotation."""
    try:
        values = [float(v) for v in pose]
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of 3 or 7 numbers, got {pose!r}") from None
    if len(values) == 3:
        values += [1.0, 0.0, 0.0, 0.0]
    if len(values) != 7 or not all(math.isfinite(v) for v in values):
        raise ValueError(f"{name} must be 3 or 7 finite numbers [x, y, z(, qw, qx, qy, qz)], got {pose!r}")
    check_unit_quats(name, np.array(values[3:]), 1e-3)
    return tuple(values)  # type: ignore[return-value]


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _color(name: str, color: Sequence[float]) -> tuple[float, float, float, float]:
    values = tuple(float(c) for c in color)
    if len(values) == 3:
        values += (1.0,)
    if len(values) != 4 or not all(0.0 <= c <= 1.0 for c in values):
        raise ValueError(f"{name} must be 3 or 4 numbers in [0, 1] (RGB(A)), got {color!r}")
    return values  # type: ignore[return-value]


@dataclass(frozen=True)
class Box:
    """A box of half extents `half_size` (m) along the body's x, y, z."""

    half_size: tuple[float, float, float]
    pose: Pose7 = IDENTITY
    color: tuple = (0.8, 0.8, 0.8, 1.0)
    collision: bool = True

    def __post_init__(self):
        hs = tuple(self.half_size) if not isinstance(self.half_size, (int, float)) else (self.half_size,) * 3
        if len(hs) != 3:
            raise ValueError(f"Box.half_size must be 3 numbers (m), got {self.half_size!r}")
        object.__setattr__(self, "half_size", tuple(_positive("Box.half_size", h) for h in hs))
        object.__setattr__(self, "pose", check_pose("Box.pose", self.pose))
        object.__setattr__(self, "color", _color("Box.color", self.color))


@dataclass(frozen=True)
class Sphere:
    radius: float
    pose: Pose7 = IDENTITY
    color: tuple = (0.8, 0.8, 0.8, 1.0)
    collision: bool = True

    def __post_init__(self):
        object.__setattr__(self, "radius", _positive("Sphere.radius", self.radius))
        object.__setattr__(self, "pose", check_pose("Sphere.pose", self.pose))
        object.__setattr__(self, "color", _color("Sphere.color", self.color))


@dataclass(frozen=True)
class _Round:
    """A shape along the body's x axis with a radius and a half length (m)."""

    radius: float
    half_length: float
    pose: Pose7 = IDENTITY
    color: tuple = (0.8, 0.8, 0.8, 1.0)
    collision: bool = True

    def __post_init__(self):
        kind = type(self).__name__
        object.__setattr__(self, "radius", _positive(f"{kind}.radius", self.radius))
        object.__setattr__(self, "half_length", _positive(f"{kind}.half_length", self.half_length))
        object.__setattr__(self, "pose", check_pose(f"{kind}.pose", self.pose))
        object.__setattr__(self, "color", _color(f"{kind}.color", self.color))


@dataclass(frozen=True)
class Capsule(_Round):
    """A capsule along the body's x axis: a cylinder of `half_length` plus two caps."""


@dataclass(frozen=True)
class Cylinder(_Round):
    """A cylinder along the body's x axis (SAPIEN's convention)."""


@dataclass(frozen=True)
class Mesh:
    """A triangle mesh from a file or a `trimesh.Trimesh`. Collision: "coacd" (convex
    decomposition, cached on disk by content hash), "convex_hull", or "none".
    `color` None keeps the mesh's own materials."""

    source: str | os.PathLike | trimesh.Trimesh
    scale: float | tuple[float, float, float] = 1.0
    pose: Pose7 = IDENTITY
    collision: str = "coacd"
    color: tuple | None = None

    def __post_init__(self):
        scale = (self.scale,) * 3 if isinstance(self.scale, (int, float)) else tuple(self.scale)
        if len(scale) != 3:
            raise ValueError(f"Mesh.scale must be a number or 3 numbers, got {self.scale!r}")
        object.__setattr__(self, "scale", tuple(_positive("Mesh.scale", s) for s in scale))
        object.__setattr__(self, "pose", check_pose("Mesh.pose", self.pose))
        if self.color is not None:
            object.__setattr__(self, "color", _color("Mesh.color", self.color))


Shape = Box | Sphere | Capsule | Cylinder | Mesh
SHAPE_TYPES = (Box, Sphere, Capsule, Cylinder, Mesh)


def _check_shapes(name: str, shapes: Sequence[Shape]) -> tuple[Shape, ...]:
    shapes = tuple(shapes)
    for s in shapes:
        if not isinstance(s, SHAPE_TYPES):
            raise TypeError(f"{name} must hold Box, Sphere, Capsule, Cylinder or Mesh, got {type(s).__name__}")
    return shapes


@dataclass(frozen=True)
class Material:
    """PhysX surface material: friction coefficients and restitution in [0, 1]."""

    static_friction: float = 0.3
    dynamic_friction: float = 0.3
    restitution: float = 0.0

    def __post_init__(self):
        for f in ("static_friction", "dynamic_friction"):
            v = getattr(self, f)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"Material.{f} must be a finite number >= 0, got {v!r}")
        if not isinstance(self.restitution, (int, float)) or not 0 <= self.restitution <= 1:
            raise ValueError(f"Material.restitution must be in [0, 1], got {self.restitution!r}")


@dataclass(frozen=True)
class RigidObject:
    """One rigid body made of one or more shapes (several shapes: a composite, e.g. a T).

    body: "dynamic" (simulated), "kinematic" (moved only by set_pose) or "static".
    pose: initial pose in the env frame. Mass comes from `density` (kg/m^3) unless
    `mass` (kg) is given."""

    shapes: Sequence[Shape]
    body: str = "dynamic"
    pose: Pose7 = IDENTITY
    density: float = 1000.0
    mass: float | None = None
    material: Material = field(default_factory=Material)

    def __post_init__(self):
        object.__setattr__(self, "shapes", _check_shapes("RigidObject.shapes", self.shapes))
        if not self.shapes:
            raise ValueError("RigidObject.shapes must hold at least one shape, got none")
        if self.body not in BODY_TYPES:
            raise ValueError(f"RigidObject.body must be one of {BODY_TYPES}, got {self.body!r}")
        object.__setattr__(self, "pose", check_pose("RigidObject.pose", self.pose))
        _positive("RigidObject.density", self.density)
        if self.mass is not None:
            _positive("RigidObject.mass", self.mass)
        if not isinstance(self.material, Material):
            raise TypeError(f"RigidObject.material must be a robosim Material, got {type(self.material).__name__}")


def _non_negative(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Joint:
    """The joint that attaches a link to its parent; every field is applied to PhysX.

    `pose_in_parent`: the joint frame in the parent link's frame; the child link's frame
    coincides with the joint frame at q = 0. `axis`: motion axis in the joint frame
    (revolute: rad about it; prismatic: m along it). `limits` (low, high).
    `friction`: Coulomb joint friction (PhysX's joint friction coefficient; 0 means none).
    `armature`: added inertia on the axis (kg*m^2 revolute, kg prismatic).
    Drive: force = clip(stiffness * (target - q) - damping * qdot, +-force_limit)
    (N*m or N); `stiffness` 0 (the default) leaves a pure damper; with stiffness > 0
    `target` must lie in `limits`. Units: stiffness N*m/rad or N/m, damping N*m*s/rad or N*s/m."""

    type: str
    pose_in_parent: Pose7 = IDENTITY
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    limits: tuple[float, float] = (-math.inf, math.inf)
    damping: float = 0.0
    friction: float = 0.0
    armature: float = 0.0
    stiffness: float = 0.0
    target: float = 0.0
    force_limit: float = math.inf

    def __post_init__(self):
        if self.type not in JOINT_TYPES:
            raise ValueError(f"Joint.type must be one of {JOINT_TYPES}, got {self.type!r}")
        object.__setattr__(self, "pose_in_parent", check_pose("Joint.pose_in_parent", self.pose_in_parent))
        axis = tuple(float(a) for a in self.axis)
        norm = math.sqrt(sum(a * a for a in axis))
        if len(axis) != 3 or not math.isfinite(norm) or norm < 1e-9:
            raise ValueError(f"Joint.axis must be a non-zero 3-vector, got {self.axis!r}")
        object.__setattr__(self, "axis", tuple(a / norm for a in axis))
        try:
            low, high = (float(v) for v in self.limits)
        except (TypeError, ValueError):
            raise ValueError(f"Joint.limits must be two numbers (low, high), got {self.limits!r}") from None
        if not low <= high:
            raise ValueError(f"Joint.limits must satisfy low <= high, got {self.limits!r}")
        object.__setattr__(self, "limits", (low, high))
        for f in ("damping", "friction", "armature", "stiffness"):
            object.__setattr__(self, f, _non_negative(f"Joint.{f}", getattr(self, f)))
        fl = self.force_limit
        if isinstance(fl, bool) or not isinstance(fl, (int, float)) or math.isnan(fl) or fl <= 0:
            raise ValueError(f"Joint.force_limit must be a number > 0 (inf: unlimited), got {fl!r}")
        t = self.target
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
            raise ValueError(f"Joint.target must be a finite number, got {t!r}")
        if self.stiffness > 0 and not low <= t <= high:
            raise ValueError(f"Joint.target must lie within limits {(low, high)} when stiffness > 0, got {t!r}")
        object.__setattr__(self, "force_limit", float(fl))
        object.__setattr__(self, "target", float(t))


@dataclass(frozen=True)
class Link:
    """One link of an articulation: its shapes, its parent's name (None for the root) and
    the joint to the parent (None for the root)."""

    name: str
    shapes: Sequence[Shape]
    parent: str | None = None
    joint: Joint | None = None
    density: float = 1000.0

    def __post_init__(self):
        object.__setattr__(self, "shapes", _check_shapes(f"Link({self.name!r}).shapes", self.shapes))
        if (self.parent is None) != (self.joint is None):
            raise ValueError(f"Link {self.name!r} needs both parent and joint, or neither (the root link)")
        _positive(f"Link({self.name!r}).density", self.density)


@dataclass(frozen=True)
class ArticulationModel:
    """A kinematic tree built in code (a cabinet with a drawer, a door). The first link is
    the root; every other link names an earlier link as parent. `pose`: root pose in the
    env frame; `fix_root`: the root is welded to the world."""

    links: Sequence[Link]
    pose: Pose7 = IDENTITY
    fix_root: bool = True
    material: Material = field(default_factory=Material)

    def __post_init__(self):
        links = tuple(self.links)
        if not links or links[0].parent is not None:
            raise ValueError("ArticulationModel.links must start with a root link (parent=None)")
        seen: set[str] = set()
        for link in links:
            if not isinstance(link, Link):
                raise TypeError(f"ArticulationModel.links must hold Link objects, got {type(link).__name__}")
            if link.name in seen:
                raise ValueError(f"ArticulationModel.links: link name {link.name!r} is used twice")
            if link is not links[0] and link.parent not in seen:
                raise ValueError(f"link {link.name!r} names parent {link.parent!r}, which is not an earlier link")
            seen.add(link.name)
        object.__setattr__(self, "links", links)
        object.__setattr__(self, "pose", check_pose("ArticulationModel.pose", self.pose))
