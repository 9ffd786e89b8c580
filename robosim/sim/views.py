"""Batched torch views over per-env SAPIEN objects (physx_cpu backend).

A view holds one SAPIEN object per env (env i's copy of "the cube", say) and reads or
writes all of them as one tensor with leading dim N. Every pose is [x, y, z, qw, qx, qy,
qz] (m, unit quaternion wxyz) in the env's own frame: the env origin from `layout` is
subtracted on read and added on write, in float32 exactly as PhysX stores it.

Without a packed read, each read costs one Python call per env (about 1.5 us here: no
batched CPU API in SAPIEN 3.0). A control step reads the same quantity several times,
so views keep each read until the scene's `ReadCache` is invalidated: by every physics
step and every write that moves something. Code that writes to the SAPIEN objects
directly must call `invalidate()` on it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sapien
import torch

from robosim.sim.pose_input import POSE_DIM, checked_poses
from robosim.sim.properties import BodyProperties, DriveGains

VELOCITY_DIM = 6


class ReadCache:
    """Version counter shared by a scene and its views: reads are reused while the
    version they were taken at is current."""

    def __init__(self) -> None:
        self.version = 0

    def invalidate(self) -> None:
        self.version += 1


class _CachedReads:
    """Mixin: `_read(key, fn)` copies fn()'s tensor, taken at most once per ReadCache
    version; `_wrote()` marks the physics state changed. `_packed` (sim.packed.PackedReads,
    set by the scene) serves reads from one pack per step; None: one call per env."""

    _cache: ReadCache | None
    _packed = None

    def _init_cache(self, cache: ReadCache | None) -> None:
        self._cache = cache
        self._memo: dict = {}

    def _read(self, key, fn, copy: bool = True) -> torch.Tensor:
        """fn()'s tensor, reused within a cache version; `copy=False` hands out the kept
        tensor itself, for callers that only read it (get_state's concatenation)."""
        cache = self._cache
        if cache is None:
            return fn()
        hit = self._memo.get(key)
        if hit is None or hit[0] != cache.version:
            hit = (cache.version, fn())
            self._memo[key] = hit
        return hit[1].clone() if copy else hit[1]

    def _wrote(self) -> None:
        if self._cache is not None:
            self._cache.invalidate()


def _as_index(env_idx: torch.Tensor | None, n: int) -> np.ndarray:
    if env_idx is None:
        return np.arange(n)
    return env_idx.detach().cpu().numpy().astype(np.int64).reshape(-1)


def _pose_array(poses: Sequence[sapien.Pose]) -> np.ndarray:
    return np.array([np.concatenate([p.p, p.q]) for p in poses], dtype=np.float32).reshape(-1, POSE_DIM)


def _env_frame_poses(view: Any, key: str, read_per_env: Callable[[], np.ndarray]) -> torch.Tensor:
    """float32 (N, 7) env-frame poses: the packed `key` rows, else read_per_env() (world)."""
    out = None if view._packed is None else view._packed.rows(view, key)
    if out is None:
        out = read_per_env()
    out[:, :3] -= view._origins
    return torch.from_numpy(out)


class ActorView(BodyProperties, _CachedReads):
    """N copies of one rigid actor, one per env. `kinematic` actors carry no velocity."""

    def __init__(self, name: str, entities: Sequence[sapien.Entity], origins: np.ndarray,
                 cache: ReadCache | None = None):
        self._init_cache(cache)
        self.name = name
        self.entities = list(entities)
        self._origins = origins  # float32 (N, 3)
        self.bodies = [
            e.find_component_by_type(sapien.physx.PhysxRigidDynamicComponent) for e in self.entities
        ]
        self.kinematic = any(b is None or b.kinematic for b in self.bodies)

    def entity_of(self, env_index: int) -> sapien.Entity:
        return self.entities[env_index]

    @property
    def state_dim(self) -> int:
        return POSE_DIM if self.kinematic else POSE_DIM + VELOCITY_DIM

    def state_columns(self) -> dict[str, slice]:
        """Named columns of this view's state rows: pose, and velocity unless kinematic."""
        cols = {"pose": slice(0, POSE_DIM)}
        if not self.kinematic:
            cols["velocity"] = slice(POSE_DIM, POSE_DIM + VELOCITY_DIM)
        return cols

    def pose(self) -> torch.Tensor:
        """float32 (N, 7) pose in each env's frame."""
        return self._read("pose", self._read_pose)

    def _read_pose(self) -> torch.Tensor:
        return _env_frame_poses(self, "pose", self._read_pose_per_env)

    def _read_pose_per_env(self) -> np.ndarray:
        """float32 (N, 7) world poses, one SAPIEN call per env."""
        return _pose_array([e.pose for e in self.entities])

    def set_pose(self, pose: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """Teleport env_idx's copies to `pose` (M, 7), env frame, unit quaternions
        (ValueError for another shape, a non-finite value or a quaternion norm off 1,
        before anything moves; robosim.sim.pose_input)."""
        idx = _as_index(env_idx, len(self.entities))
        arr = checked_poses("pose", pose, len(idx))
        self._wrote()
        for row, i in zip(arr, idx):
            self.entities[i].set_pose(sapien.Pose(row[:3] + self._origins[i], row[3:]))

    def velocity(self) -> torch.Tensor:
        """float32 (N, 6): linear (m/s) then angular (rad/s) velocity, world axes."""
        if self.kinematic:
            return torch.zeros(len(self.entities), VELOCITY_DIM)
        return self._read("velocity", self._read_velocity)

    def _read_velocity(self) -> torch.Tensor:
        out = None if self._packed is None else self._packed.rows(self, "velocity")
        return torch.from_numpy(self._read_velocity_per_env() if out is None else out)

    def _read_velocity_per_env(self) -> np.ndarray:
        """float32 (N, 6) velocities, one SAPIEN call per env and kind."""
        out = np.array(
            [np.concatenate([b.linear_velocity, b.angular_velocity]) for b in self.bodies], dtype=np.float32
        )
        return out.reshape(-1, VELOCITY_DIM)

    def set_velocity(self, velocity: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        if self.kinematic:
            return
        idx = _as_index(env_idx, len(self.entities))
        arr = velocity.detach().cpu().numpy().astype(np.float32).reshape(len(idx), VELOCITY_DIM)
        self._wrote()
        for row, i in zip(arr, idx):
            self.bodies[i].set_linear_velocity(row[:3])
            self.bodies[i].set_angular_velocity(row[3:])

    def get_state(self, env_idx: torch.Tensor | None = None) -> torch.Tensor:
        """float32 (M, state_dim): pose, then velocity unless kinematic."""
        state = torch.cat(self._state_parts(), dim=1)
        return state if env_idx is None else state[env_idx]

    def _state_parts(self) -> list[torch.Tensor]:
        """The tensors get_state concatenates, the kept reads themselves (cat copies)."""
        pose = self._read("pose", self._read_pose, copy=False)
        return [pose] if self.kinematic else [pose, self._read("velocity", self._read_velocity, copy=False)]

    def set_state(self, state: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        self.set_pose(state[:, :POSE_DIM], env_idx)
        if not self.kinematic:
            self.set_velocity(state[:, POSE_DIM:], env_idx)


class ArticulationView(DriveGains, _CachedReads):
    """N copies of one articulation, one per env (per-env models may differ).

    Joint quantities are (N, dof) float32 in rad (revolute) or m (prismatic), in
    SAPIEN's active-joint order. When the envs' articulations have different joint
    counts, dof is the largest count, the missing entries read as 0 and are ignored on
    write, and `joint_mask` (N, dof) bool marks the real ones."""

    def __init__(self, name: str, articulations: Sequence[sapien.physx.PhysxArticulation], origins: np.ndarray,
                 cache: ReadCache | None = None):
        self._init_cache(cache)
        self.name = name
        self.articulations = list(articulations)
        self._origins = origins
        self.joints = [a.get_active_joints() for a in self.articulations]
        self.joint_names = [j.name for j in self.joints[0]]   # env 0's (all envs' when uniform)
        self.links = [a.get_links() for a in self.articulations]
        self.link_names = [link.name for link in self.links[0]]
        self.dofs = np.array([len(j) for j in self.joints], dtype=np.int64)
        self.dof = int(self.dofs.max())
        self.uniform = bool((self.dofs == self.dof).all())
        self.joint_mask = torch.from_numpy(np.arange(self.dof)[None, :] < self.dofs[:, None])
        self.fixed_root = self.articulations[0].get_joints()[0].type == "fixed"
        self._fixed_root_pose: torch.Tensor | None = None
        self._targets = self._stack([[float(np.asarray(j.drive_target).ravel()[0]) for j in joints]
                                     for joints in self.joints]) if self.dof else \
            np.zeros((len(self.articulations), 0), dtype=np.float32)   # the drive targets as built
        self._target_setters = [j.set_drive_target for joints in self.joints for j in joints]
        self._setter_offsets = np.concatenate([[0], np.cumsum(self.dofs)[:-1]])

    @property
    def state_dim(self) -> int:
        """root pose (7), then qpos, qvel and drive targets (dof each)."""
        return POSE_DIM + 3 * self.dof

    def state_columns(self) -> dict[str, slice]:
        """Named columns of this view's state rows."""
        d = self.dof
        return {"root_pose": slice(0, POSE_DIM), "qpos": slice(POSE_DIM, POSE_DIM + d),
                "qvel": slice(POSE_DIM + d, POSE_DIM + 2 * d),
                "drive_targets": slice(POSE_DIM + 2 * d, POSE_DIM + 3 * d)}

    def qlimits(self) -> torch.Tensor:
        """float32 (dof, 2) joint limits [low, high] (all envs share one model)."""
        if not self.uniform:
            raise ValueError(f"articulation {self.name!r} differs per env; use qlimits_per_env()")
        return torch.from_numpy(np.concatenate([j.limit for j in self.joints[0]], axis=0).astype(np.float32))

    def qlimits_per_env(self) -> torch.Tensor:
        """float32 (N, dof, 2) joint limits; padded entries are 0."""
        out = np.zeros((len(self.articulations), self.dof, 2), dtype=np.float32)
        for i, joints in enumerate(self.joints):
            if joints:
                out[i, :len(joints)] = np.concatenate([j.limit for j in joints], axis=0)
        return torch.from_numpy(out)

    def _stack(self, rows: list) -> np.ndarray:
        if self.uniform:
            if len(rows) == 1:    # one env: one copy instead of stack + astype (~1 us instead of ~3)
                return np.array(rows[0], dtype=np.float32).reshape(1, self.dof)
            return np.stack(rows).astype(np.float32).reshape(len(rows), self.dof)
        out = np.zeros((len(rows), self.dof), dtype=np.float32)
        for i, row in enumerate(rows):
            out[i, :len(row)] = row
        return out

    def qpos(self, copy: bool = True) -> torch.Tensor:
        """float32 (N, dof) joint positions; `copy=False`: the kept read itself, for
        callers that only read it (never modify it: later reads this step return it)."""
        return self._read("qpos", self._read_qpos, copy=copy)

    def qvel(self, copy: bool = True) -> torch.Tensor:
        """float32 (N, dof) joint velocities; `copy` as for qpos."""
        return self._read("qvel", self._read_qvel, copy=copy)

    def _read_qpos(self) -> torch.Tensor:
        return torch.from_numpy(self._read_joints("qpos"))

    def _read_qvel(self) -> torch.Tensor:
        return torch.from_numpy(self._read_joints("qvel"))

    def _read_joints(self, kind: str) -> np.ndarray:
        out = None if self._packed is None else self._packed.rows(self, kind)
        return self._read_joints_per_env(kind) if out is None else out

    def _read_joints_per_env(self, kind: str) -> np.ndarray:
        """float32 (N, dof) of "qpos" or "qvel", one SAPIEN call per env."""
        return self._stack([getattr(a, kind) for a in self.articulations])

    def drive_targets(self) -> torch.Tensor:
        return torch.from_numpy(self._targets.copy())

    def root_pose(self) -> torch.Tensor:
        """float32 (N, 7) root pose, env frame. A fixed root never moves under physics, so
        its read is kept until `set_root_pose` (one read per write instead of per step)."""
        if self.fixed_root:
            if self._fixed_root_pose is None:
                self._fixed_root_pose = self._read_root_pose()
            return self._fixed_root_pose.clone()
        return self._read("root_pose", self._read_root_pose)

    def _read_root_pose(self) -> torch.Tensor:
        return _env_frame_poses(self, "root_pose", self._read_root_pose_per_env)

    def _read_root_pose_per_env(self) -> np.ndarray:
        """float32 (N, 7) world root poses, one SAPIEN call per env."""
        return _pose_array([a.root_pose for a in self.articulations])

    def link_pose(self, link_name: str) -> torch.Tensor:
        """float32 (N, 7) pose of one link in the env frame, as PhysX last computed it."""
        k = self.link_names.index(link_name)
        return self._read(("link_pose", k), lambda: self._read_link_pose(k))

    def _read_link_pose(self, k: int) -> torch.Tensor:
        out = _pose_array([links[k].entity_pose for links in self.links])
        out[:, :3] -= self._origins
        return torch.from_numpy(out)

    def link_velocity(self) -> torch.Tensor:
        """float32 (N, L, 6) velocity of every link (L = len(link_names), SAPIEN's order):
        linear velocity of the link's centre of mass (m/s) then angular velocity (rad/s),
        both along the env frame's axes (the env frame is the world's, translated).
        Envs with fewer links than env 0 are padded with zeros."""
        return self._read("link_velocity", self._read_link_velocity)

    def _read_link_velocity(self) -> torch.Tensor:
        out = np.zeros((len(self.links), len(self.link_names), VELOCITY_DIM), dtype=np.float32)
        for i, links in enumerate(self.links):
            for k, link in enumerate(links[:len(self.link_names)]):
                out[i, k, :3] = link.linear_velocity
                out[i, k, 3:] = link.angular_velocity
        return torch.from_numpy(out)

    def set_root_pose(self, pose: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """Move env_idx's roots to `pose` (M, 7), env frame. A fixed root then reads back
        the written pose exactly (root_pose), not PhysX's: PhysX stores the root's
        centre-of-mass frame and its read composes that with the inverse offset, which
        can move the quaternion by an ulp (OpenDrawer's cabinet, 16 of 60 seeded resets),
        so a state written and read again would differ."""
        idx = _as_index(env_idx, len(self.articulations))
        arr = pose.detach().cpu().numpy().astype(np.float32).reshape(len(idx), POSE_DIM)
        kept = self.root_pose() if self.fixed_root else None   # every env's, before the write
        self._wrote()
        world = arr.copy()
        world[:, :3] += self._origins[idx]
        for row, i in zip(world, idx):
            self.articulations[i].set_root_pose(sapien.Pose(row[:3], row[3:]))
        if kept is not None:   # what a read gives when PhysX holds the written world pose
            world[:, :3] -= self._origins[idx]
            kept[torch.from_numpy(idx)] = torch.from_numpy(world)
        self._fixed_root_pose = kept

    def _set_joint_rows(self, values: torch.Tensor, env_idx: torch.Tensor | None, setter: str) -> None:
        idx = _as_index(env_idx, len(self.articulations))
        arr = values.detach().cpu().numpy().astype(np.float32).reshape(len(idx), self.dof)
        self._wrote()
        for row, i in zip(arr, idx):
            getattr(self.articulations[i], setter)(row if self.uniform else row[:self.dofs[i]])

    def set_qpos(self, qpos: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        self._set_joint_rows(qpos, env_idx, "set_qpos")

    def set_qvel(self, qvel: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        self._set_joint_rows(qvel, env_idx, "set_qvel")

    def set_drive_targets(self, targets: torch.Tensor | np.ndarray, env_idx: torch.Tensor | None = None) -> None:
        """PD position targets (M, dof) (a tensor or numpy array) for env_idx (all envs when None)."""
        idx = _as_index(env_idx, len(self.articulations))
        arr = targets if isinstance(targets, np.ndarray) else targets.detach().cpu().numpy()
        arr = arr.astype(np.float32, copy=False).reshape(len(idx), self.dof)
        # no _wrote(): a drive target moves nothing until the next physics step, and no
        # kept read depends on it (get_state reads self._targets)
        # one flat loop over prebound setters, env-major
        setters = self._target_setters
        if env_idx is None and self.uniform:   # every env: setters and values line up
            for setter, value in zip(setters, arr.ravel().tolist()):
                setter(value)
            self._targets[:] = arr
            return
        keys = self._setter_offsets[idx][:, None] + np.arange(self.dof)
        if self.uniform:
            keys, values = keys.ravel(), arr.ravel()
        else:
            mask = self.joint_mask.numpy()[idx]
            keys, values = keys[mask], arr[mask]
        for k, value in zip(keys.tolist(), values.tolist()):
            setters[k](value)
        self._targets[idx] = arr

    def get_state(self, env_idx: torch.Tensor | None = None) -> torch.Tensor:
        """float32 (M, state_dim): root pose, qpos, qvel, drive targets (env frame)."""
        state = torch.cat(self._state_parts(), dim=1)
        return state if env_idx is None else state[env_idx]

    def _state_parts(self) -> list[torch.Tensor]:
        """The tensors get_state concatenates, the kept reads themselves (cat copies)."""
        root = self._fixed_root_pose if self.fixed_root and self._fixed_root_pose is not None else self.root_pose()
        return [root, self._read("qpos", self._read_qpos, copy=False), self._read("qvel", self._read_qvel, copy=False),
                torch.from_numpy(self._targets)]

    def set_state(self, state: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        d = self.dof
        self._set_changed_root_poses(state[:, :POSE_DIM], env_idx)
        state = state[:, POSE_DIM:]
        self.set_qpos(state[:, :d], env_idx)
        self.set_qvel(state[:, d:2 * d], env_idx)
        self.set_drive_targets(state[:, 2 * d:], env_idx)

    def _set_changed_root_poses(self, pose: torch.Tensor, env_idx: torch.Tensor | None) -> None:
        """Write only the root poses that differ bit-wise from the current ones: PhysX does
        not round-trip a root pose through set/get exactly, so an unchanged (e.g. fixed
        robot base) root is left alone and a state round trip stays exact."""
        idx = _as_index(env_idx, len(self.articulations))
        current = self.root_pose()
        current = current[torch.from_numpy(idx).to(current.device)]
        pose = pose.detach().to(current.device, torch.float32)
        changed = (pose != current).any(dim=1).cpu()
        if changed.any():
            rows = torch.nonzero(changed).flatten()
            self.set_root_pose(pose[rows.to(pose.device)], torch.from_numpy(idx[rows.numpy()]).to(current.device))
