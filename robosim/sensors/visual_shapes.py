"""The visual shapes of a built scene as plain triangle meshes, and their poses.

Viewers outside SAPIEN (robosim.view draws in a browser) need what each env's render
world draws: every entity with a render body, its shapes as triangles in the body's
frame (each shape's local pose and scale applied; boxes, spheres, capsules and
cylinders tessellated), their colours, and the bodies' poses after a step. The meshes
are the render bodies as built, so a scene built at a reduced render LOD
(robosim.sensors.lod) hands out the reduced meshes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sapien
import trimesh


@dataclass(frozen=True)
class VisualPart:
    """One coloured triangle mesh in its body's frame: vertices float32 (V, 3) m,
    faces uint32 (F, 3), rgba floats in [0, 1]."""

    vertices: np.ndarray
    faces: np.ndarray
    rgba: tuple[float, float, float, float]


@dataclass(frozen=True)
class VisualBody:
    """One entity of one env's render world: its name, parts, and whether it can move
    (False for bodies without physics, such as the visual floor)."""

    name: str
    parts: tuple[VisualPart, ...]
    movable: bool


def _rgba(material) -> tuple[float, float, float, float]:
    if material is None:
        return (0.7, 0.7, 0.7, 1.0)
    return tuple(float(c) for c in material.base_color)   # type: ignore[return-value]


def _primitive(shape) -> trimesh.Trimesh | None:
    """Triangles of a primitive shape in its own frame (SAPIEN's capsule and cylinder run along x)."""
    if isinstance(shape, sapien.render.RenderShapeBox):
        return trimesh.creation.box(extents=2 * np.asarray(shape.half_size))
    if isinstance(shape, sapien.render.RenderShapeSphere):
        return trimesh.creation.icosphere(subdivisions=2, radius=shape.radius)
    along_x = trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0])
    if isinstance(shape, sapien.render.RenderShapeCapsule):
        return trimesh.creation.capsule(height=2 * shape.half_length, radius=shape.radius,
                                        count=[16, 16]).apply_transform(along_x)
    if isinstance(shape, sapien.render.RenderShapeCylinder):
        return trimesh.creation.cylinder(radius=shape.radius, height=2 * shape.half_length,
                                         sections=24).apply_transform(along_x)
    return None   # planes and point clouds: not drawn


def _local(vertices: np.ndarray, shape) -> np.ndarray:
    m = np.asarray(shape.local_pose.to_transformation_matrix(), np.float64)
    return (vertices @ m[:3, :3].T + m[:3, 3]).astype(np.float32)


def _shape_parts(shape) -> list[VisualPart]:
    if isinstance(shape, sapien.render.RenderShapeTriangleMesh):
        scale = np.asarray(shape.scale, np.float64)
        return [VisualPart(_local(np.asarray(p.vertices, np.float64) * scale, shape),
                           np.ascontiguousarray(p.triangles, np.uint32), _rgba(p.material)) for p in shape.parts]
    mesh = _primitive(shape)
    if mesh is None:
        return []
    return [VisualPart(_local(np.asarray(mesh.vertices, np.float64), shape),
                       np.asarray(mesh.faces, np.uint32), _rgba(shape.material))]


class SceneVisuals:
    """Every visible render body of every env of a built SimScene (physx_cpu scenes with a
    render world: made with render_mode="rgb_array" or camera observations).

    `bodies[i]` lists env i's VisualBody objects; `poses()` reads their poses (bodies
    that cannot move are read once)."""

    def __init__(self, sim) -> None:
        if not getattr(sim, "render", False) or not hasattr(sim, "sub_scenes"):
            raise ValueError("the env has no render world to draw: make it with render_mode='rgb_array' "
                             "(or a camera obs_mode) on a CPU physics backend")
        self._origins = np.asarray(sim.origins, np.float32)
        self.bodies: list[list[VisualBody]] = []
        self._entities: list[list] = []
        for scene in sim.sub_scenes:
            bodies, entities = [], []
            for entity in scene.entities:
                render = entity.find_component_by_type(sapien.render.RenderBodyComponent)
                if render is None or render.visibility <= 0:
                    continue
                parts = tuple(p for s in render.render_shapes for p in _shape_parts(s))
                if not parts:
                    continue
                movable = entity.find_component_by_type(sapien.physx.PhysxRigidBaseComponent) is not None
                bodies.append(VisualBody(entity.name, parts, movable))
                entities.append(entity)
            self.bodies.append(bodies)
            self._entities.append(entities)

        self.env_of = np.array([i for i, b in enumerate(self.bodies) for _ in b], np.int64)   # (B,)
        self._flat = [e for entities in self._entities for e in entities]
        self._moving = [k for k, b in enumerate(b for bodies in self.bodies for b in bodies) if b.movable]
        self._rows = np.zeros((len(self._flat), 7), np.float32)
        self._read(range(len(self._flat)))

    def _read(self, indices) -> None:
        rows = self._rows
        for k in indices:   # one Pose per entity, written in place: ~2x faster than stacking arrays
            pose = self._flat[k].pose
            rows[k, :3] = pose.p
            rows[k, 3:] = pose.q

    def poses(self) -> np.ndarray:
        """float32 (B, 7): every drawn body's pose [x, y, z, qw, qx, qy, qz] in its env's
        frame (m), as PhysX last computed it; rows in env order (env 0's bodies, then env
        1's, ...; `env_of[k]` is row k's env). A fresh array."""
        self._read(self._moving)
        out = self._rows.copy()
        out[:, :3] -= self._origins[self.env_of]
        return out
