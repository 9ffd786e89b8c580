"""Mesh loading and convex decomposition, done once per mesh per process and cached on disk.

A mesh object needs a visual mesh file and convex collision parts (PhysX simulates only
convex shapes on dynamic bodies). `prepare_mesh` loads a mesh file or takes a
`trimesh.Trimesh`, checks it, hashes its content (vertices, faces and the collision
method), and writes under `cache_dir()/<sha256>/`:
  visual.glb        the mesh with its materials, as given
  hull_<k>.obj      the convex collision parts: one convex hull ("convex_hull"), or the
                    parts of CoACD's decomposition ("coacd", what ManiSkill3 uses)
Every file is written to a temporary name and renamed when complete, so a killed run
leaves no half file; a second process or a second build of the same mesh reads the
cache. Results are memoized in-process too, so N envs cost one decomposition.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trimesh

from robosim.core.atomic import write_bytes_atomic

COLLISION_METHODS = ("coacd", "convex_hull", "none")
_PREPARED: dict[str, PreparedMesh] = {}


@dataclass(frozen=True)
class PreparedMesh:
    """Files ready for SAPIEN's ActorBuilder: one visual file and convex collision parts."""

    digest: str
    visual_file: str
    collision_files: tuple[str, ...]
    extents: tuple[float, float, float]   # axis-aligned bounding box size (m), unscaled


def cache_dir() -> Path:
    """$ROBOSIM_CACHE or ~/.cache/robosim, plus "meshes"."""
    root = os.environ.get("ROBOSIM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "robosim")
    return Path(root) / "meshes"


def load_mesh(source: str | os.PathLike | trimesh.Trimesh, argument: str = "mesh") -> trimesh.Trimesh:
    """A non-empty triangle mesh from a file path or a trimesh object; ValueError otherwise."""
    if isinstance(source, trimesh.Trimesh):
        mesh = source
    elif isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise ValueError(f"{argument} must be an existing mesh file or a trimesh.Trimesh, "
                             f"got {path!r} (no such file)")
        try:
            mesh = trimesh.load(path, force="mesh")
        except Exception as err:  # trimesh raises many types for unreadable files
            raise ValueError(f"{argument} must be a readable mesh file, got {path!r} ({err})") from None
    else:
        raise TypeError(f"{argument} must be a file path or a trimesh.Trimesh, got {type(source).__name__}")
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise ValueError(f"{argument} must have at least one triangle face, got a mesh with 0 faces")
    if not np.isfinite(mesh.vertices).all():
        raise ValueError(f"{argument} must have finite vertices, got NaN or inf")
    return mesh


def _convex_parts(mesh: trimesh.Trimesh, method: str) -> list[trimesh.Trimesh]:
    if method == "none":
        return []
    if method == "convex_hull":
        return [mesh.convex_hull]
    import coacd

    coacd.set_log_level("error")
    parts = coacd.run_coacd(coacd.Mesh(np.asarray(mesh.vertices), np.asarray(mesh.faces)), threshold=0.05, seed=0)
    return [trimesh.Trimesh(v, f).convex_hull for v, f in parts]


def prepare_mesh(source: str | os.PathLike | trimesh.Trimesh, collision: str = "coacd",
                 argument: str = "mesh") -> PreparedMesh:
    """Load, check, decompose (once) and cache `source`; see the module docstring."""
    if collision not in COLLISION_METHODS:
        raise ValueError(f"{argument}.collision must be one of {COLLISION_METHODS}, got {collision!r}")
    mesh = load_mesh(source, argument)
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(mesh.vertices, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(mesh.faces, dtype=np.int64).tobytes())
    h.update(collision.encode())
    digest = h.hexdigest()[:32]
    if digest in _PREPARED:
        return _PREPARED[digest]
    folder = cache_dir() / digest
    visual = folder / "visual.glb"
    if not visual.exists():
        write_bytes_atomic(visual, mesh.export(file_type="glb"), make_dirs=True)
    marker = folder / f"collision-{collision}.txt"   # lists the parts once all are written
    if not marker.exists():
        names = []
        for k, part in enumerate(_convex_parts(mesh, collision)):
            name = f"{collision}_{k}.obj"
            write_bytes_atomic(folder / name, part.export(file_type="obj").encode(), make_dirs=True)
            names.append(name)
        write_bytes_atomic(marker, "\n".join(names).encode(), make_dirs=True)
    names = [n for n in marker.read_text().split("\n") if n]
    prepared = PreparedMesh(digest, str(visual), tuple(str(folder / n) for n in names),
                            tuple(float(e) for e in mesh.extents))
    _PREPARED[digest] = prepared
    return prepared
