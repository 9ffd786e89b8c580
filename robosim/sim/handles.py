"""SceneHandles: the lazy per-scene handles of a SimScene (contacts, welds, collision
groups, held wrenches), their save/restore pairs, and the check that refuses them once
the scene is closed.

Nothing is built or read per step until a handle is first asked for. A handle keeps the
scene it came from: once that scene is closed (env.close, or a reconfigure that builds a
new one) its PhysX objects are gone, and every handle raises ValueError instead of
reaching them (a SAPIEN call through them would crash the process;
tests/sim/test_stale_handles.py).
"""
from __future__ import annotations

import torch


class SceneHandles:
    """Mixin of SimScene: `contacts`, `welds`, `collisions`, `wrenches` (physx_cpu)."""

    backend: str
    closed = False     # True after close(): handles taken from this scene refuse to act
    _contacts = None   # robosim.sim.contacts.Contacts once something asked for contacts
    _welds = None      # robosim.sim.welds.Welds once something made a weld
    _wrenches = None   # robosim.sim.wrenches.Wrenches once something held a wrench
    _collisions = None  # robosim.sim.collision.CollisionGroups once something set a collision pair

    def check_open(self, handle: str) -> None:
        """ValueError naming `handle` once this scene is closed: its PhysX objects are
        gone, and a SAPIEN call through them would crash the process."""
        if self.closed:
            raise ValueError(f"{handle} belongs to a SimScene that was closed (the env was closed, or rebuilt at "
                             f"reconfigure): take it again from the current env.sim")

    def _physx_cpu_only(self, query: str, attribute: str, factory):
        if self.backend != "physx_cpu":
            raise NotImplementedError(f"sim.{query} needs sim_backend 'physx_cpu', got {self.backend!r}")
        self.check_open(f"sim.{query}")
        if getattr(self, attribute) is None:
            setattr(self, attribute, factory(self))
        return getattr(self, attribute)

    @property
    def contacts(self):
        """robosim.sim.contacts.Contacts: contact forces, touching, grasping (physx_cpu)."""
        from robosim.sim.contacts import Contacts

        return self._physx_cpu_only("contacts", "_contacts", Contacts)

    @property
    def welds(self):
        """robosim.sim.welds.Welds: per-env attach/detach of two bodies (physx_cpu)."""
        from robosim.sim.welds import Welds

        return self._physx_cpu_only("welds", "_welds", Welds)

    @property
    def collisions(self):
        """robosim.sim.collision.CollisionGroups: which body pairs collide, per env (physx_cpu)."""
        from robosim.sim.collision import CollisionGroups

        return self._physx_cpu_only("collisions", "_collisions", CollisionGroups)

    @property
    def wrenches(self):
        """robosim.sim.wrenches.Wrenches: constant forces/torques held on bodies, per env,
        re-applied before every substep (physx_cpu)."""
        from robosim.sim.wrenches import Wrenches

        return self._physx_cpu_only("wrenches", "_wrenches", Wrenches)

    def clear_wrenches(self, env_idx: torch.Tensor | None = None) -> None:
        """Drop every wrench held in env_idx (all when None); nothing to do when none was
        ever held (BaseEnv calls it on every reset, before the reset events)."""
        if self._wrenches is not None:
            self._wrenches.clear(env_idx)

    def wrench_snapshot(self) -> dict | None:
        """A copy of every held wrench (None when none was ever held), for restore_wrenches."""
        return None if self._wrenches is None else self._wrenches.snapshot()

    def restore_wrenches(self, snapshot: dict | None) -> None:
        """Hold exactly the wrenches of a wrench_snapshot (none for None)."""
        if snapshot is None:
            self.clear_wrenches()
        else:
            self.wrenches.restore(snapshot)

    def weld_snapshot(self) -> object | None:
        """Which welds hold in which envs (None when none was ever made), for restore_welds."""
        return None if self._welds is None else self._welds.snapshot()

    def restore_welds(self, snapshot: object | None) -> None:
        """Make exactly the welds of a weld_snapshot hold (none for None); call it before
        set_state, whose re-anchoring then holds the written poses."""
        if snapshot is None:
            if self._welds is not None:
                self._welds.detach_all()
        else:
            self.welds.restore(snapshot)

