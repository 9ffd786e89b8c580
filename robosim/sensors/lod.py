"""Render level of detail: decimated visual meshes for software rendering.

A lavapipe (CPU Vulkan) frame costs time in proportion to the triangles drawn: the
Panda's visual meshes (135k triangles) make a 128x128 frame ~38-76 ms, a tenth of them
~7 ms (docs/rendering.md). `apply_render_lod` swaps every heavy visual mesh of a built SimScene
for a quadric-decimated copy (trimesh -> fast-simplification), keeping each part's
material and colour and the shape's local pose and scale. Only render components are
replaced; collision shapes (PhysX) are never touched, so physics is identical at every
level.

Decimated meshes are computed once per machine: they are cached on disk under
`cache_dir()` with a name that hashes the source vertices, triangles, the kept fraction
and LOD_VERSION, and in memory per process.
"""
from __future__ import annotations

import hashlib
import io
import os
from typing import Any

import numpy as np
import sapien

from robosim.core.atomic import write_bytes_atomic
from robosim.sim import SimScene

LOD_VERSION = 1
LOD_LEVELS = {"full": 1.0, "low": 0.1}
RENDER_LOD_CHOICES = ("auto", *LOD_LEVELS)
MIN_FACES = 500          # parts with fewer triangles are drawn as they are
_SOFTWARE_DEVICES = ("llvmpipe", "lavapipe", "swiftshader", "software")
_MEMORY: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def cache_dir() -> str:
    """$ROBOSIM_CACHE_DIR/render_lod, default ~/.cache/robosim/render_lod."""
    root = os.environ.get("ROBOSIM_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "robosim")
    return os.path.join(root, "render_lod")


def is_software_renderer() -> bool:
    """True when every Vulkan device SAPIEN sees is a CPU rasterizer (e.g. lavapipe)."""
    summary = sapien.render.get_device_summary()
    gpus = [line.lower() for line in summary.splitlines() if line.strip().startswith("GPU:")]
    return bool(gpus) and all(any(s in g for s in _SOFTWARE_DEVICES) for g in gpus)


def resolve_lod(render_lod: Any) -> float:
    """Fraction of triangles kept, in (0, 1], for the env kwarg `render_lod`:
    "auto" ("low" on a software renderer, else "full"), "full", "low", or a float."""
    if isinstance(render_lod, str):
        if render_lod not in RENDER_LOD_CHOICES:
            raise ValueError(f"render_lod must be one of {list(RENDER_LOD_CHOICES)} or a float in (0, 1], "
                             f"got {render_lod!r}")
        if render_lod == "auto":
            return LOD_LEVELS["low"] if is_software_renderer() else 1.0
        return LOD_LEVELS[render_lod]
    if isinstance(render_lod, bool) or not isinstance(render_lod, (int, float)) or not 0.0 < render_lod <= 1.0:
        raise ValueError(f"render_lod must be one of {list(RENDER_LOD_CHOICES)} or a float in (0, 1], "
                         f"got {render_lod!r}")
    return float(render_lod)


def decimate(vertices: np.ndarray, triangles: np.ndarray, keep: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quadric-decimate one mesh part to ~keep * its triangles.

    vertices float32 (V, 3) m, triangles uint32 (F, 3). Returns float32 vertices (V', 3),
    uint32 triangles (F', 3) and float32 unit normals (V', 3); vertices are split along
    creases so hard edges stay hard. Cached on disk and in memory."""
    key = hashlib.sha256()
    key.update(f"v{LOD_VERSION}:{keep:.6f}:".encode())
    key.update(np.ascontiguousarray(vertices, dtype=np.float32).tobytes())
    key.update(np.ascontiguousarray(triangles, dtype=np.uint32).tobytes())
    digest = key.hexdigest()
    if digest in _MEMORY:
        return _MEMORY[digest]
    path = os.path.join(cache_dir(), f"{digest}.npz")
    try:
        with np.load(path) as data:
            result = (data["vertices"], data["triangles"], data["normals"])
    except (OSError, KeyError, ValueError):
        result = _decimate_uncached(vertices, triangles, keep)
        _cache_decimated(path, result)
    _MEMORY[digest] = result
    return result


def _decimate_uncached(vertices, triangles, keep):
    import trimesh

    mesh = trimesh.Trimesh(np.asarray(vertices, np.float64), np.asarray(triangles, np.int64), process=True)
    target = max(int(len(triangles) * keep), 4)
    if target < len(mesh.faces):
        mesh = mesh.simplify_quadric_decimation(face_count=target)
    mesh = mesh.smooth_shaded  # split vertices at creases (> 20 deg) for flat faces
    return (np.asarray(mesh.vertices, np.float32), np.asarray(mesh.faces, np.uint32),
            np.asarray(mesh.vertex_normals, np.float32))


def _cache_decimated(path: str, arrays) -> None:
    """Cache one decimated mesh; an unwritable cache only costs recomputation."""
    data = io.BytesIO()
    np.savez(data, vertices=arrays[0], triangles=arrays[1], normals=arrays[2])
    write_bytes_atomic(path, data.getvalue(), make_dirs=True, ignore_errors=True)


def _reduced_shapes(shape: sapien.render.RenderShapeTriangleMesh, keep: float, built: dict) -> list | None:
    """Decimated replacements of one mesh shape (one shape per part), or None to keep it."""
    parts = shape.parts
    if sum(len(p.triangles) for p in parts) < MIN_FACES:
        return None
    if any(p.material is not None and p.material.base_color_texture is not None for p in parts):
        return None  # decimation would break texture coordinates
    out = []
    for part in parts:
        if len(part.triangles) < MIN_FACES:
            v, f, n = part.vertices, part.triangles, part.get_vertex_normal()
        else:
            v, f, n = decimate(part.vertices, part.triangles, keep)
        key = (id(part.material), v.shape, f.shape, hashlib.sha1(f.tobytes() + v.tobytes()).hexdigest())
        if key not in built:  # build each mesh once, clone it for the other envs
            built[key] = sapien.render.RenderShapeTriangleMesh(
                np.ascontiguousarray(v, np.float32), np.ascontiguousarray(f, np.uint32),
                np.ascontiguousarray(n, np.float32), np.zeros((len(v), 2), np.float32), part.material)
        new = built[key].clone()
        new.local_pose = shape.local_pose
        new.scale = shape.scale
        new.front_face = shape.front_face
        out.append(new)
    return out


def apply_render_lod(sim: SimScene, keep: float) -> dict[str, int]:
    """Replace heavy visual meshes in every env of `sim` by ~keep of their triangles.

    Call after the scene is built. keep = 1 does nothing. Returns
    {"triangles_before", "triangles_after"} summed over env 0's render bodies."""
    stats = {"triangles_before": 0, "triangles_after": 0}
    built: dict = {}
    for env_index, scene in enumerate(sim.sub_scenes):
        for entity in scene.entities:
            body = entity.find_component_by_type(sapien.render.RenderBodyComponent)
            if body is None:
                continue
            new_shapes, changed = [], False
            for shape in body.render_shapes:
                reduced = None
                if keep < 1.0 and isinstance(shape, sapien.render.RenderShapeTriangleMesh):
                    reduced = _reduced_shapes(shape, keep, built)
                changed |= reduced is not None
                new_shapes.extend(reduced if reduced is not None else [shape.clone()])
            if env_index == 0:
                stats["triangles_before"] += _count(body.render_shapes)
                stats["triangles_after"] += _count(new_shapes)
            if changed:
                _swap_render_body(entity, body, new_shapes)
    return stats


def _count(shapes) -> int:
    return sum(sum(len(p.triangles) for p in s.parts) for s in shapes
               if isinstance(s, sapien.render.RenderShapeTriangleMesh))


def _swap_render_body(entity: sapien.Entity, old: sapien.render.RenderBodyComponent, shapes: list) -> None:
    new = sapien.render.RenderBodyComponent()
    new.name = old.name
    for shape in shapes:
        new.attach(shape)
    new.visibility = old.visibility
    entity.remove_component(old)
    entity.add_component(new)
