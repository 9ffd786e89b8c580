"""Contact queries per env: net and pairwise contact forces, touching, grasping.

A *body* is an ActorView (a pool's active variant per env) or a pair
`(ArticulationView, link_name)`. Forces are in newtons, in the env frame (envs are only
translated copies of one another, so world axes are env axes), batched (N, 3) float32.

Which force: PhysX reports each contact's impulse for one physics substep; robosim
divides it by the substep's length (impulse * sim_freq). Two readings:
- `substeps=1` (the default): the mean contact force over the LAST substep. Free until
  asked: the contact list is read once per physics step, on the first query. One
  substep's solve need not converge: measured (SAPIEN 3.0.3, 100 Hz), a 0.2 kg cube
  resting on a 0.064 kg cube read 0.89-1.09 m*g from substep to substep, so a force
  threshold on it flickers from control step to control step.
- `substeps=k` (k > 1; `ctx.parts.substeps` is one whole control step): the mean over
  the last k substeps. From the first such query on, the scene reads the contact list
  after EVERY substep (a cost per substep that grows with the number of contacts), and
  keeps the last k. Substeps run before that first query, or before env i's last reset or
  set_state (SimScene.forget_history), are not in env i's mean: it averages the ones it
  has, and reads zeros when it has none.
tests/sim/test_contacts.py: a resting cube's net force is m*g within 1% (both readings),
the stack above reads steadier over a control step than over its last substep.
physx_cpu only (shared and separate isolation); SimScene.contacts refuses physx_cuda.
A Contacts taken from a scene that was closed since (env.close, or a reconfigure that
built a new scene) raises ValueError.
"""
from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Union

import numpy as np
import sapien
import torch

from robosim.sim.views import ActorView, ArticulationView

Body = Union[ActorView, "tuple[ArticulationView, str]"]


def resolve_bodies(argument: str, body, num_envs: int) -> list:
    """The PhysX body component of `body` in every env (list of N)."""
    if isinstance(body, tuple) and len(body) == 2 and isinstance(body[0], ArticulationView):
        view, link = body
        if not isinstance(link, str) or link not in view.link_names:
            raise ValueError(f"{argument}: link name must be one of {view.link_names} of articulation "
                             f"{view.name!r}, got {link!r}")
        out = []
        for links in view.links:
            match = [candidate for candidate in links if candidate.name == link]
            out.append(match[0] if match else None)
        if any(b is None for b in out):
            raise ValueError(f"{argument}: link {link!r} is missing in some env of articulation {view.name!r}")
        return out
    if hasattr(body, "entities") and hasattr(body, "name") and not isinstance(body, ArticulationView):
        out = [e.find_component_by_type(sapien.physx.PhysxRigidBaseComponent) for e in body.entities]
        if len(out) != num_envs or any(b is None for b in out):
            raise ValueError(f"{argument}: view {body.name!r} has no physics body in some env")
        return out
    raise TypeError(f"{argument} must be an ActorView (sim.actors[...]) or a tuple (ArticulationView, link_name), "
                    f"got {type(body).__name__}")


def env_index(env_idx, num_envs: int) -> list[int]:
    """env_idx (None: all envs; an int tensor/sequence in [0, num_envs)) as a list of ints."""
    if env_idx is None:
        return list(range(num_envs))
    idx = torch.as_tensor(env_idx)
    if idx.dtype in (torch.bool,) or idx.is_floating_point() or idx.is_complex():
        raise TypeError(f"env_idx must hold ints in [0, {num_envs}), got dtype {idx.dtype}")
    values = idx.reshape(-1).tolist()
    bad = [v for v in values if not 0 <= v < num_envs]
    if bad:
        raise ValueError(f"env_idx must hold ints in [0, {num_envs}), got {bad[:5]}")
    return values


class Contacts:
    """Contact queries of one SimScene (reach it as `sim.contacts`)."""

    def __init__(self, sim) -> None:
        self._sim = sim
        self._version = None
        self._last: tuple[dict, dict, dict, list] = ({}, {}, {}, [])   # net, pair, separation, wrappers
        self._ring: collections.deque = collections.deque(maxlen=1)   # (substep number, net, pair, wrappers)
        self.recording = False   # True once a query asked for more than one substep

    def _systems(self) -> list:
        return getattr(self._sim, "systems", None) or [self._sim.physx]

    def _read(self) -> tuple[dict, dict, dict, list]:
        """The last substep's contacts: net forces and pair forces keyed by id() of the
        body wrappers (kept alive in the list returned last, so their ids stay theirs),
        and the closest separation per unordered pair."""
        net, pair, sep, alive = {}, {}, {}, []
        scale = float(self._sim.sim_freq)   # impulse over one substep -> force, N
        for system in self._systems():
            for contact in system.get_contacts():
                b0, b1 = contact.bodies
                alive.append((b0, b1))
                if not contact.points:
                    continue
                impulse = np.sum([p.impulse for p in contact.points], axis=0) * scale   # on b0, from b1
                closest = min(p.separation for p in contact.points)
                k0, k1 = id(b0), id(b1)
                net[k0] = net.get(k0, 0.0) + impulse
                net[k1] = net.get(k1, 0.0) - impulse
                pair[(k0, k1)] = pair.get((k0, k1), 0.0) + impulse
                pair[(k1, k0)] = pair.get((k1, k0), 0.0) - impulse
                key = (min(k0, k1), max(k0, k1))
                sep[key] = min(sep.get(key, np.inf), closest)
        return net, pair, sep, alive

    def _update(self) -> tuple[dict, dict, dict, list]:
        self._sim.check_open("sim.contacts")
        version = self._sim.read_cache.version
        if version != self._version:
            self._last, self._version = self._read(), version
        return self._last

    def record(self) -> None:
        """Keep this substep's contacts for the k-substep readings (SimScene.step calls
        it after every substep once `recording`)."""
        net, pair, _, alive = self._read()
        self._ring.append((self._sim.substeps_done, net, pair, alive))

    def _window(self, table: int, keys: list, substeps: int) -> torch.Tensor:
        """Mean of `table` (1: net, 2: pair) at keys[i] over env i's last `substeps` recorded substeps."""
        self._sim.check_open("sim.contacts")
        if not self.recording or self._ring.maxlen < substeps:
            self._ring = collections.deque(self._ring, maxlen=substeps)
            self.recording = True
        done, written_at = self._sim.substeps_done, self._sim.written_at
        total = np.zeros((len(keys), 3), dtype=np.float64)
        count = np.zeros(len(keys), dtype=np.int64)
        for entry in reversed(self._ring):
            if done - entry[0] >= substeps:
                break
            for i, key in enumerate(keys):
                if entry[0] > written_at[i]:   # run after env i was last written
                    total[i] += entry[table].get(key, 0.0)
                    count[i] += 1
        return torch.from_numpy((total / np.maximum(count, 1)[:, None]).astype(np.float32)).to(self._sim.device)

    def _rows(self, values: list) -> torch.Tensor:
        out = np.zeros((len(values), 3), dtype=np.float32)
        for i, v in enumerate(values):
            if v is not None:
                out[i] = v
        return torch.from_numpy(out).to(self._sim.device)

    @staticmethod
    def _check_substeps(substeps: int) -> None:
        if isinstance(substeps, bool) or not isinstance(substeps, int) or substeps < 1:
            raise ValueError(f"substeps must be an int >= 1 (how many of the last physics substeps to average "
                             f"over), got {substeps!r}")

    def net_force(self, body: Body, substeps: int = 1) -> torch.Tensor:
        """float32 (N, 3) N: sum of all contact forces on `body` in each env (env frame),
        averaged over the last `substeps` physics substeps (module docstring)."""
        self._check_substeps(substeps)
        self._sim.check_open("sim.contacts")
        keys = [id(b) for b in resolve_bodies("body", body, self._sim.num_envs)]
        if substeps > 1:
            return self._window(1, keys, substeps)
        net = self._update()[0]
        return self._rows([net.get(k) for k in keys])

    def pair_force(self, a: Body, b: Body, substeps: int = 1) -> torch.Tensor:
        """float32 (N, 3) N: contact force on `a` from `b` in each env (env frame),
        averaged over the last `substeps` physics substeps; pair_force(b, a) is its negative."""
        self._check_substeps(substeps)
        self._sim.check_open("sim.contacts")
        bodies_a = resolve_bodies("a", a, self._sim.num_envs)
        bodies_b = resolve_bodies("b", b, self._sim.num_envs)
        keys = [(id(x), id(y)) for x, y in zip(bodies_a, bodies_b)]
        if substeps > 1:
            return self._window(2, keys, substeps)
        pair = self._update()[1]
        return self._rows([pair.get(k) for k in keys])

    def is_touching(self, a: Body, b: Body, max_separation: float = 1e-3) -> torch.Tensor:
        """bool (N,): `a` and `b` have a contact point at most `max_separation` m apart
        (negative: penetrating) in each env, in the last substep."""
        if not isinstance(max_separation, (int, float)) or not np.isfinite(max_separation):
            raise ValueError(f"max_separation must be a finite number (m), got {max_separation!r}")
        self._sim.check_open("sim.contacts")
        bodies_a = resolve_bodies("a", a, self._sim.num_envs)
        bodies_b = resolve_bodies("b", b, self._sim.num_envs)
        sep = self._update()[2]
        hits = [sep.get((min(id(x), id(y)), max(id(x), id(y))), np.inf) <= max_separation
                for x, y in zip(bodies_a, bodies_b)]
        return torch.tensor(hits, dtype=torch.bool, device=self._sim.device)
    def is_grasping(self, obj: Body, gripper: ArticulationView, fingers: Sequence[str],
                    min_force: float = 0.5, min_angle_deg: float = 90.0, substeps: int = 1) -> torch.Tensor:
        """bool (N,): both jaws press on `obj`: the contact force of each of the two
        `fingers` (link names of `gripper`; for a one-jaw gripper the moving jaw and the
        fixed jaw or palm; robots declare them as `RobotSpec.gripper.pad_links`) on
        `obj` is at least `min_force` N and the two forces are at least `min_angle_deg`
        degrees apart (opposing directions; ManiSkill3's rule without its per-robot
        closing axes); forces averaged over the last `substeps` substeps."""
        if isinstance(fingers, str) or len(tuple(fingers)) != 2:
            raise ValueError(f"fingers must be two link names (the two jaws), got {fingers!r}")
        if not isinstance(min_force, (int, float)) or not min_force >= 0:
            raise ValueError(f"min_force must be a number >= 0 (N), got {min_force!r}")
        if not isinstance(min_angle_deg, (int, float)) or not 0 <= min_angle_deg <= 180:
            raise ValueError(f"min_angle_deg must be in [0, 180], got {min_angle_deg!r}")
        f1, f2 = (self.pair_force(obj, (gripper, name), substeps) for name in fingers)
        n1, n2 = f1.norm(dim=1), f2.norm(dim=1)
        cos = (f1 * f2).sum(dim=1) / (n1 * n2).clamp_min(1e-12)
        return (n1 >= min_force) & (n2 >= min_force) & (cos <= float(np.cos(np.radians(min_angle_deg))) + 1e-6)

    def points(self) -> list[np.ndarray]:
        """Per env i, float32 (P_i, 6): every contact point of the last substep, its position
        (m, env i's frame) then the force on the pair's first body (N, impulse * sim_freq).
        A point belongs to the env whose cell holds it (cells are GRID_SPACING apart)."""
        self._sim.check_open("sim.contacts")
        origins = np.asarray(self._sim.origins, np.float64)
        rows: list[list[np.ndarray]] = [[] for _ in range(len(origins))]
        scale = float(self._sim.sim_freq)
        for system in self._systems():
            for contact in system.get_contacts():
                for p in contact.points:
                    pos = np.asarray(p.position, np.float64)
                    i = int(np.argmin(((origins[:, :2] - pos[:2]) ** 2).sum(axis=1)))
                    rows[i].append(np.concatenate([pos - origins[i], np.asarray(p.impulse, np.float64) * scale]))
        return [np.array(r, np.float32).reshape(-1, 6) for r in rows]
