"""Per-env physical and visual properties of a view's bodies: what randomization events
change, read and written only here (CPU SAPIEN setters; the GPU views refuse the
physical ones, robosim.sim.gpu.views).

Units: mass kg (the inertia tensor is scaled with it, so the body's shape of inertia is
kept), damping 1/s, friction and restitution dimensionless, colours RGBA in [0, 1],
drive stiffness N/m or Nm/rad, damping N s/m or Nm s/rad, force limit N or Nm.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import sapien

GPU_REFUSED = ("{what} of {name!r} cannot change after the build on the GPU backends (physx_cuda, "
               "physx_gpu_emulated): SAPIEN's GPU PhysX takes it only before gpu_init (ManiSkill3 forbids the same); "
               "use sim_backend 'physx_cpu' to randomize it per episode")


class BodyProperties:
    """Mixin of the rigid-body views; needs `entity_of(i)` (env i's body in play)."""

    entity_of: Callable[[int], sapien.Entity]   # the view's own method (declared for the type checker)
    refused_properties: tuple[str, ...] = ()   # properties this backend cannot change after the build

    def _dynamic(self, i: int):
        return self.entity_of(i).find_component_by_type(sapien.physx.PhysxRigidDynamicComponent)

    def is_dynamic(self, i: int) -> bool:
        """True when env i's body is dynamic (has a mass PhysX uses)."""
        body = self._dynamic(i)
        return body is not None and not body.kinematic

    def mass(self, i: int) -> tuple[float, np.ndarray]:
        """(mass, inertia (3,)) of env i's dynamic body."""
        body = self._dynamic(i)
        return float(body.mass), np.asarray(body.inertia, dtype=np.float64)

    def set_mass(self, i: int, mass: float, inertia: np.ndarray) -> None:
        body = self._dynamic(i)
        body.mass = mass
        body.inertia = inertia

    def damping(self, i: int) -> tuple[float, float]:
        """(linear, angular) damping of env i's dynamic body."""
        body = self._dynamic(i)
        return float(body.linear_damping), float(body.angular_damping)

    def set_damping(self, i: int, linear: float, angular: float) -> None:
        body = self._dynamic(i)
        body.linear_damping, body.angular_damping = linear, angular

    def materials(self, i: int) -> list[tuple[float, float, float]]:
        """(static friction, dynamic friction, restitution) of each collision shape of env i's body."""
        shapes = self.entity_of(i).find_component_by_type(sapien.physx.PhysxRigidBaseComponent).get_collision_shapes()
        return [(m.static_friction, m.dynamic_friction, m.restitution) for m in (s.physical_material for s in shapes)]

    def set_materials(self, i: int, materials: Sequence[tuple[float, float, float]]) -> None:
        """One material per collision shape, each env's own (never shared between envs)."""
        shapes = self.entity_of(i).find_component_by_type(sapien.physx.PhysxRigidBaseComponent).get_collision_shapes()
        for shape, (sf, df, r) in zip(shapes, materials):
            shape.set_physical_material(sapien.physx.PhysxMaterial(sf, df, r))

    def set_color(self, i: int, rgba: Sequence[float]) -> None:
        """Base colour of every visual part of env i's body (a no-op without rendering)."""
        render = self.entity_of(i).find_component_by_type(sapien.render.RenderBodyComponent)
        for shape in render.render_shapes if render is not None else []:
            for part in shape.parts if hasattr(shape, "parts") else [shape]:
                part.material.set_base_color(list(rgba))


class GpuRefusesBodyProperties:
    """Mixin for GPU views: mass, damping and materials are build-time only there."""

    name: str   # the view's name (set by the view)

    refused_properties: tuple[str, ...] = ("mass", "friction", "restitution", "linear_damping", "angular_damping",
                                           "external_force")

    def set_mass(self, i: int, mass: float, inertia: np.ndarray) -> None:
        raise ValueError(GPU_REFUSED.format(what="the mass", name=self.name))

    def set_damping(self, i: int, linear: float, angular: float) -> None:
        raise ValueError(GPU_REFUSED.format(what="the damping", name=self.name))

    def set_materials(self, i: int, materials) -> None:
        raise ValueError(GPU_REFUSED.format(what="the friction and restitution", name=self.name))


class DriveGains:
    """Mixin of articulation views: PD drive gains per env and joint (needs `joints`)."""

    joints: list[list[sapien.physx.PhysxArticulationJoint]]   # each env's active joints (set by the view)

    refused_properties: tuple[str, ...] = ()

    def drive_gains(self, i: int) -> list[tuple[float, float, float]]:
        """(stiffness, damping, force limit) of each active joint of env i."""
        return [(j.stiffness, j.damping, j.force_limit) for j in self.joints[i]]

    def set_drive_gains(self, i: int, gains: Sequence[tuple[float, float, float]]) -> None:
        for joint, (stiffness, damping, limit) in zip(self.joints[i], gains):
            joint.set_drive_properties(stiffness, damping, limit)

    def joint_frictions(self, i: int) -> list[float]:
        """PhysX friction coefficient of each active joint of env i (dimensionless)."""
        return [float(j.friction) for j in self.joints[i]]

    def set_joint_frictions(self, i: int, frictions: Sequence[float]) -> None:
        for joint, friction in zip(self.joints[i], frictions):
            joint.friction = float(friction)
