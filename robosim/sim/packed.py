"""PackedReads: a whole CPU PhysX system's body states in one SAPIEN call per physics step.

`PhysxCpuSystem.pack()` serializes, in one C++ loop, every rigid dynamic body (13 float32:
quaternion wxyz, position, linear velocity, angular velocity; in the order of
`get_rigid_dynamic_components()`), then every articulation, in the order of its root
link among `get_articulation_link_components()` (13 float32 for the root as above, then
qpos (dof), qvel (dof), then per active joint its drive target position and velocity).
Reading a view's poses, velocities, qpos or qvel from that buffer replaces one Python
call per env and quantity (PickCube at N=64: ~0.5 ms of per-env reads per step against
~0.18 ms for one pack; docs/performance.md step 8).

The layout above is taken from SAPIEN 3.0's `PhysxSystemCpu::packState`. It is not
trusted blindly: when the index is built, every view quantity gathered from the buffer
is compared bit for bit with the per-env read it replaces, and a quantity that differs
keeps the per-env read. The index is rebuilt when bodies are added (`stale()`) or the
buffer's size changes. One system only: scenes with a system per env do not use it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from robosim.sim.views import ActorView, ArticulationView

RIGID_FLOATS = 13            # quaternion (4), position (3), linear (3) and angular (3) velocity
_POSE_ORDER = np.array([4, 5, 6, 0, 1, 2, 3])   # packed [q, p] -> robosim's [p, q]


class PackedReads:
    """Reads for the views of one scene from `system.pack()`, refreshed once per
    ReadCache version. `rows(view, kind)` gives float32 (N, k) in world coordinates (a
    fresh array) or None when that quantity is not served from the buffer."""

    def __init__(self, system, cache, views: Callable[[], Iterable]):
        self._system, self._cache, self._views = system, cache, views
        self._values: np.ndarray | None = None
        self._version: int | None = None
        self._index: dict | None = None        # (id(view), kind) -> int64 index array
        self._size = -1                         # buffer length the index was built for

    def stale(self) -> None:
        """Bodies were added to the system: rebuild the index on the next read."""
        self._index = None

    def rows(self, view, kind: str) -> np.ndarray | None:
        if self._version != self._cache.version or self._values is None:
            self._values = np.frombuffer(self._system.pack(), dtype=np.float32)
            self._version = self._cache.version
        if self._index is None or len(self._values) != self._size:
            self._build_index()
        idx = self._index.get((id(view), kind))
        return None if idx is None else self._values[idx]

    # -- the index ----------------------------------------------------------------------
    def _offsets(self) -> tuple[dict, dict, list]:
        """Start of each rigid dynamic body (by component id) and articulation (by id),
        and the wrappers those ids belong to (kept alive while the ids are compared)."""
        bodies = self._system.get_rigid_dynamic_components()
        rigid = {id(c): RIGID_FLOATS * i for i, c in enumerate(bodies)}
        start = RIGID_FLOATS * len(rigid)
        roots, arts = {}, []
        for link in self._system.get_articulation_link_components():
            if link.is_root:
                arts.append(link.articulation)
                roots[id(arts[-1])] = start
                start += RIGID_FLOATS + 4 * arts[-1].dof   # root, qpos, qvel, (target pos, target vel) per joint
        return rigid, roots, [bodies, arts]

    def _candidates(self, view, rigid: dict, roots: dict) -> dict:
        """kind -> (index (N, k), the per-env read it replaces) for one view (object pools
        keep their own reads)."""
        if isinstance(view, ActorView):
            if not all(b is not None and id(b) in rigid for b in view.bodies):
                return {}
            base = np.array([rigid[id(b)] for b in view.bodies])[:, None]
            out = {"pose": (base + _POSE_ORDER, view._read_pose_per_env)}
            if not view.kinematic:
                out["velocity"] = (base + np.arange(7, RIGID_FLOATS), view._read_velocity_per_env)
            return out
        if isinstance(view, ArticulationView):
            if not view.uniform or not all(id(a) in roots for a in view.articulations):
                return {}
            base, d = np.array([roots[id(a)] for a in view.articulations])[:, None], view.dof
            return {"root_pose": (base + _POSE_ORDER, view._read_root_pose_per_env),
                    "qpos": (base + RIGID_FLOATS + np.arange(d), lambda: view._read_joints_per_env("qpos")),
                    "qvel": (base + RIGID_FLOATS + d + np.arange(d), lambda: view._read_joints_per_env("qvel"))}
        return {}

    def _build_index(self) -> None:
        rigid, roots, _alive = self._offsets()   # _alive: the wrappers whose ids are the keys
        values, index = self._values, {}
        for view in self._views():
            for kind, (idx, per_env) in self._candidates(view, rigid, roots).items():
                if idx.size and int(idx.max()) < len(values) and np.array_equal(values[idx], per_env()):
                    index[(id(view), kind)] = idx
        self._index, self._size = index, len(values)
