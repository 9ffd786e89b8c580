"""Object pools: K prebuilt variants of one object per env, one of them in play.

New objects per episode without rebuilding the scene: every env holds K variants
(built once, e.g. K random shapes); `activate(variant, env_idx)` swaps which one is in
play for those envs only, so it works under partial resets. A parked variant is
kinematic, has its collisions filtered out (PhysX collision groups 0) and waits below
its env's floor; the active one is a normal dynamic body. The view reads and writes the
active variant as an ActorView does; its state is [pose (7), velocity (6), active
variant index] per env (an ActorView's layout plus one column).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sapien
import torch

from robosim.sim.pose_input import checked_poses
from robosim.sim.properties import BodyProperties
from robosim.sim.views import POSE_DIM, VELOCITY_DIM, ReadCache, _as_index, _CachedReads

PARK_DEPTH = 5.0   # m below the env origin; variant k parks 0.5 * k deeper


class PoolLayout:
    """What every pool view shares: K variants per env (`variants[i][k]`), the active one
    per env (`active`, numpy int64 (N,)), and the state layout [pose, velocity, variant]."""

    kinematic = False
    variants: list
    active: np.ndarray
    pool_size: int
    name: str

    @property
    def entities(self) -> list[sapien.Entity]:
        """The active variant of every env."""
        return [v[k] for v, k in zip(self.variants, self.active)]

    def entity_of(self, env_index: int) -> sapien.Entity:
        return self.variants[env_index][self.active[env_index]]

    @property
    def state_dim(self) -> int:
        return 1 + POSE_DIM + VELOCITY_DIM

    def state_columns(self) -> dict[str, slice]:
        """Named columns: the active variant's pose and velocity, then its index."""
        return {"pose": slice(0, POSE_DIM), "velocity": slice(POSE_DIM, POSE_DIM + VELOCITY_DIM),
                "variant": slice(POSE_DIM + VELOCITY_DIM, POSE_DIM + VELOCITY_DIM + 1)}

    def check_state(self, state: torch.Tensor) -> None:
        """ValueError unless every row's last column is a variant index in [0, pool_size)."""
        k = state[:, -1]
        bad = (~torch.isfinite(k) | (k != k.round()) | (k < 0) | (k >= self.pool_size)).nonzero()
        if len(bad):
            r = int(bad[0])
            raise ValueError(f"state row {r} ({self.name}) active variant must be an int in "
                             f"[0, {self.pool_size}), got {float(k[r]):.6g}")

    def set_state(self, state: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """Activate each row's variant, then write its pose and velocity."""
        self.activate(state[:, -1].round().to(torch.int64), env_idx)
        self.set_pose(state[:, :POSE_DIM], env_idx)
        self.set_velocity(state[:, POSE_DIM:POSE_DIM + VELOCITY_DIM], env_idx)


class ObjectPoolView(PoolLayout, BodyProperties, _CachedReads):
    """N envs x K variants of one rigid object (see the module docstring)."""

    @staticmethod
    def build_description(obj, k: int):
        """The description variant k is built from (parking happens after the build here)."""
        return obj

    def __init__(self, name: str, variants: Sequence[Sequence[sapien.Entity]], origins: np.ndarray,
                 cache: ReadCache | None = None):
        self._init_cache(cache)
        self.name = name
        self.variants = [list(v) for v in variants]
        self.pool_size = len(self.variants[0])
        self._origins = origins
        self.bodies = [[e.find_component_by_type(sapien.physx.PhysxRigidDynamicComponent) for e in v]
                       for v in self.variants]
        self._groups = [[[list(s.collision_groups) for s in b.get_collision_shapes()] for b in v] for v in self.bodies]
        self.active = np.zeros(len(self.variants), dtype=np.int64)
        for i in range(len(self.variants)):
            for k in range(1, self.pool_size):
                self._park(i, k)

    def _park(self, i: int, k: int) -> None:
        body = self.bodies[i][k]
        for shape in body.get_collision_shapes():
            shape.set_collision_groups([0, 0, 0, 0])
        body.kinematic = True
        p = self._origins[i] + np.array([0.0, 0.0, -PARK_DEPTH - 0.5 * k], dtype=np.float32)
        self.variants[i][k].set_pose(sapien.Pose(p))

    def _unpark(self, i: int, k: int, pose: sapien.Pose) -> None:
        body = self.bodies[i][k]
        for shape, groups in zip(body.get_collision_shapes(), self._groups[i][k]):
            shape.set_collision_groups(groups)
        body.kinematic = False
        self.variants[i][k].set_pose(pose)
        body.set_linear_velocity([0.0, 0.0, 0.0])
        body.set_angular_velocity([0.0, 0.0, 0.0])

    def activate(self, variant: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """Put variant[j] (int, in [0, pool_size)) in play in env env_idx[j], at the pose of
        the variant it replaces, at rest. Other envs are not touched."""
        idx = _as_index(env_idx, len(self.variants))
        new = np.asarray(torch.as_tensor(variant).detach().cpu(), dtype=np.int64).reshape(-1)
        if new.shape != idx.shape or (new < 0).any() or (new >= self.pool_size).any():
            raise ValueError(f"variant must be {len(idx)} ints in [0, {self.pool_size}), got {new.tolist()}")
        self._wrote()
        for i, k in zip(idx.tolist(), new.tolist()):
            old = int(self.active[i])
            if k == old:
                continue
            pose = self.variants[i][old].pose
            self._park(i, old)
            self._unpark(i, k, pose)
            self.active[i] = k

    def pose(self) -> torch.Tensor:
        """float32 (N, 7) pose of each env's active variant, env frame."""
        return self._read("pose", self._read_pose)

    def _read_pose(self) -> torch.Tensor:
        out = np.array([np.concatenate([e.pose.p, e.pose.q]) for e in self.entities], dtype=np.float32)
        out[:, :3] -= self._origins
        return torch.from_numpy(out)

    def set_pose(self, pose: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        idx = _as_index(env_idx, len(self.variants))
        arr = checked_poses("pose", pose, len(idx)).reshape(len(idx), POSE_DIM)   # refused before any write
        self._wrote()
        for row, i in zip(arr, idx):
            self.entity_of(i).set_pose(sapien.Pose(row[:3] + self._origins[i], row[3:]))

    def velocity(self) -> torch.Tensor:
        return self._read("velocity", lambda: torch.from_numpy(np.array(
            [np.concatenate([b[k].linear_velocity, b[k].angular_velocity]) for b, k in zip(self.bodies, self.active)],
            dtype=np.float32).reshape(-1, VELOCITY_DIM)))

    def set_velocity(self, velocity: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        idx = _as_index(env_idx, len(self.variants))
        arr = velocity.detach().cpu().numpy().astype(np.float32).reshape(len(idx), VELOCITY_DIM)
        self._wrote()
        for row, i in zip(arr, idx):
            body = self.bodies[i][self.active[i]]
            body.set_linear_velocity(row[:3])
            body.set_angular_velocity(row[3:])

    def get_state(self, env_idx: torch.Tensor | None = None) -> torch.Tensor:
        """float32 (M, 14): pose, velocity, active variant index."""
        state = torch.cat(self._state_parts(), dim=1)
        return state if env_idx is None else state[env_idx]

    def _state_parts(self) -> list[torch.Tensor]:
        """The tensors get_state concatenates."""
        return [self.pose(), self.velocity(), torch.from_numpy(self.active.astype(np.float32))[:, None]]
