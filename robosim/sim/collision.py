"""Choose which bodies collide: `sim.collisions.disable(a, b, env_idx)` / `enable`.

SAPIEN filters a pair of shapes out when their collision groups share word 3 and any
bit of word 2 (words 0/1 are type/affinity masks, all 1 by default). robosim gives each
disabled pair its own word-2 bit, chosen among the bits no shape of the scene used when
this object was first asked (URDF robots use some for self-collision), and sets it on
both bodies' shapes in env_idx only. At most the free word-2 bits (<= 32) pairs.
Bodies are as in robosim.sim.contacts (ActorView or `(ArticulationView, link_name)`);
object pools are refused (they rewrite their shapes' groups when swapping variants).
A change applies to pairs PhysX has not yet found overlapping: set it before the bodies
meet (tests/sim/test_collision_groups.py). physx_cpu only.
"""
from __future__ import annotations

import sapien
import torch

from robosim.sim.contacts import env_index, resolve_bodies


class CollisionGroups:
    """Per-env collision switches between pairs of bodies of one SimScene."""

    def __init__(self, sim) -> None:
        self._sim = sim
        self._bits: dict = {}     # pair key -> word-2 bit
        self._free: list[int] | None = None

    def _scan_free_bits(self) -> list[int]:
        used = 0
        for scene in self._sim.sub_scenes:
            for entity in scene.entities:
                for comp in entity.components:
                    if isinstance(comp, sapien.physx.PhysxRigidBaseComponent):
                        for shape in comp.get_collision_shapes():
                            used |= int(shape.collision_groups[2])
        return [b for b in range(32) if not used >> b & 1]

    def _pair(self, a, b) -> tuple[int, list, list]:
        for argument, body in (("a", a), ("b", b)):
            if hasattr(body, "activate"):
                raise TypeError(f"{argument}: object pools ({body.name!r}) manage their own collision groups; "
                                f"give an ActorView or (ArticulationView, link_name)")
        n = self._sim.num_envs
        bodies_a, bodies_b = resolve_bodies("a", a, n), resolve_bodies("b", b, n)
        for x, y in zip(bodies_a, bodies_b):
            if x is y:
                raise ValueError("a and b must be different bodies")
            wx = {int(s.collision_groups[3]) for s in x.get_collision_shapes()}
            wy = {int(s.collision_groups[3]) for s in y.get_collision_shapes()}
            if len(wx | wy) > 1:
                raise ValueError(f"a and b must share collision-group word 3 to be filtered, got {wx} and {wy}")
        key = frozenset((self._key(a), self._key(b)))
        if key not in self._bits:
            if self._free is None:
                self._free = self._scan_free_bits()
            if not self._free:
                raise ValueError("no free collision-group bit left for another disabled pair (32 at most)")
            self._bits[key] = self._free.pop(0)
        return self._bits[key], bodies_a, bodies_b

    @staticmethod
    def _key(body) -> tuple:
        return (body[0].name, body[1]) if isinstance(body, tuple) else (body.name,)

    def _set(self, a, b, env_idx, on: bool) -> None:
        bit, bodies_a, bodies_b = self._pair(a, b)
        idx = env_index(env_idx, self._sim.num_envs)
        for i in idx:
            for body in (bodies_a[i], bodies_b[i]):
                for shape in body.get_collision_shapes():
                    groups = [int(g) for g in shape.collision_groups]
                    groups[2] = groups[2] | (1 << bit) if on else groups[2] & ~(1 << bit)
                    shape.set_collision_groups(groups)

    def disable(self, a, b, env_idx: torch.Tensor | None = None) -> None:
        """`a` and `b` pass through each other in env_idx (all when None)."""
        self._set(a, b, env_idx, True)

    def enable(self, a, b, env_idx: torch.Tensor | None = None) -> None:
        """Undo `disable` for env_idx (all when None): `a` and `b` collide again."""
        self._set(a, b, env_idx, False)
