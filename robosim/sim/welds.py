"""Welds: per-env rigid joints between two bodies, made and broken at run time.

`sim.welds.attach(name, parent, child, env_idx)` holds `child` at its CURRENT pose
relative to `parent` (a PhysX D6 joint with every axis locked; `parent=None` fixes it in
the world) in the envs of env_idx; `detach(name, env_idx)` frees them. Bodies are as in
robosim.sim.contacts: an ActorView or `(ArticulationView, link_name)`; the child must be
dynamic (or a link). Envs not named are untouched (tests/sim/test_attach.py). Poses
are read as PhysX holds them: an articulation link built but never stepped, and whose
qpos was never written, is still at the origin, so attach after a reset or a step.

Resets and state: welds are NOT part of `get_state`. Neither reset nor `set_state`
makes or breaks one: a weld stays until `detach` (or a reconfigure, which builds a new
scene; the old scene's Welds then raises ValueError). Both re-anchor the welds of the
envs they write (SimScene.forget_history): a weld then holds the written relative pose,
so the poses a reset or a restored state put down are kept, not pulled back to the pose
at attach time. A task that welds during an episode detaches in its
`initialize_episode` for the envs being reset; one that fixes a part for the whole
episode attaches there, after placing it. `sim.weld_snapshot()` /
`sim.restore_welds(snapshot)` (robosim.sim.handles) save and put back which welds hold
in which envs, for an env's save_state / restore_state. With
physics_isolation="separate" a weld survives the per-reset renewal of the env's PhysX
system. physx_cpu only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sapien
import torch

from robosim.sim.contacts import env_index, resolve_bodies


@dataclass(frozen=True)
class WeldSnapshot:
    """Which welds held where: {name: (parents, children, bool per env)}, of one scene."""

    scene: int                     # id() of the SimScene it was taken from
    welds: dict[str, tuple[list, list, tuple[bool, ...]]]


class Welds:
    """Named per-env welds of one SimScene (reach it as `sim.welds`)."""

    def __init__(self, sim) -> None:
        self._sim = sim
        self._pairs: dict[str, tuple[list, list]] = {}      # name -> (parents, children) per env
        self._drives: dict[str, list] = {}                  # name -> per-env drive or None

    def attach(self, name: str, parent, child, env_idx: torch.Tensor | None = None) -> None:
        """Weld `child` to `parent` (None: the world) at their current relative pose in
        env_idx (all when None). Re-attaching an attached env keeps its weld."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str, got {name!r}")
        self._sim.check_open("sim.welds")
        n = self._sim.num_envs
        parents = [None] * n if parent is None else resolve_bodies("parent", parent, n)
        children = resolve_bodies("child", child, n)
        for c in children:
            if not isinstance(c, sapien.physx.PhysxRigidBodyComponent) or getattr(c, "kinematic", False):
                raise ValueError(f"child must be a dynamic body or an articulation link, got a "
                                 f"{type(c).__name__}{' (kinematic)' if getattr(c, 'kinematic', False) else ''}")
        if any(p is c for p, c in zip(parents, children)):
            raise ValueError("parent and child must be different bodies")
        if name in self._pairs and (self._pairs[name][0] != parents or self._pairs[name][1] != children):
            raise ValueError(f"weld {name!r} already joins other bodies; detach it and use another name")
        idx = env_index(env_idx, n)
        self._pairs[name] = (parents, children)
        drives = self._drives.setdefault(name, [None] * n)
        for i in idx:
            if drives[i] is None:
                drives[i] = self._make(parents[i], children[i])

    @staticmethod
    def _make(parent, child) -> sapien.physx.PhysxDriveComponent:
        drive = sapien.physx.PhysxDriveComponent(child)
        drive.parent = parent
        parent_pose = sapien.Pose() if parent is None else parent.entity.pose
        drive.pose_in_parent = parent_pose.inv() * child.entity.pose
        drive.pose_in_child = sapien.Pose()
        drive.set_limit_x(0.0, 0.0)
        drive.set_limit_y(0.0, 0.0)
        drive.set_limit_z(0.0, 0.0)
        drive.set_limit_twist(0.0, 0.0)
        drive.set_limit_cone(0.0, 0.0)
        child.entity.add_component(drive)
        return drive

    def detach(self, name: str, env_idx: torch.Tensor | None = None) -> None:
        """Remove weld `name` in env_idx (all when None); envs without it are skipped."""
        self._sim.check_open("sim.welds")
        if name not in self._drives:
            raise ValueError(f"name must be an attached weld, one of {sorted(self._drives)}, got {name!r}")
        drives = self._drives[name]
        for i in env_index(env_idx, self._sim.num_envs):
            drive = drives[i]
            if drive is None:
                continue
            child = self._pairs[name][1][i]
            child.entity.remove_component(drive)
            drives[i] = None
            if hasattr(child, "wake_up"):
                child.wake_up()
        self._sim.read_cache.invalidate()

    def detach_all(self) -> None:
        """Remove every weld in every env."""
        for name in self._drives:
            self.detach(name)

    def snapshot(self) -> WeldSnapshot:
        """Which welds hold in which envs now (SimScene.weld_snapshot)."""
        self._sim.check_open("sim.welds")
        return WeldSnapshot(id(self._sim), {name: (*self._pairs[name], tuple(d is not None for d in drives))
                                            for name, drives in self._drives.items()})

    def restore(self, snapshot: WeldSnapshot) -> None:
        """Make exactly the welds of `snapshot` hold: those made since are detached, those
        detached since are made again at the bodies' current relative pose (restore the
        state after this: set_state re-anchors them at the written poses)."""
        self._sim.check_open("sim.welds")
        if not isinstance(snapshot, WeldSnapshot) or snapshot.scene != id(self._sim):
            raise ValueError(f"snapshot must be a weld_snapshot() of this scene (not of one rebuilt at "
                             f"reconfigure since), got {type(snapshot).__name__}")
        for name, drives in self._drives.items():
            held = snapshot.welds.get(name, (None, None, (False,) * len(drives)))[2]
            gone = [i for i, (drive, keep) in enumerate(zip(drives, held)) if drive is not None and not keep]
            if gone:
                self.detach(name, torch.tensor(gone))
        for name, (parents, children, held) in snapshot.welds.items():
            self._pairs[name] = (parents, children)
            drives = self._drives.setdefault(name, [None] * len(held))
            for i, keep in enumerate(held):
                if keep and drives[i] is None:
                    drives[i] = self._make(parents[i], children[i])
        self._sim.read_cache.invalidate()

    def reanchor(self, env_idx: torch.Tensor | None = None) -> None:
        """Make every weld of env_idx (all when None) hold the current relative pose of
        its bodies; SimScene.forget_history calls it after every reset and set_state."""
        for name, drives in self._drives.items():
            parents, children = self._pairs[name]
            for i in env_index(env_idx, self._sim.num_envs):
                if drives[i] is not None:
                    parent_pose = sapien.Pose() if parents[i] is None else parents[i].entity.pose
                    drives[i].pose_in_parent = parent_pose.inv() * children[i].entity.pose

    def is_attached(self, name: str) -> torch.Tensor:
        """bool (N,): weld `name` holds in each env (False for an unknown name)."""
        self._sim.check_open("sim.welds")
        drives = self._drives.get(name, [None] * self._sim.num_envs)
        return torch.tensor(np.array([d is not None for d in drives]), dtype=torch.bool, device=self._sim.device)
