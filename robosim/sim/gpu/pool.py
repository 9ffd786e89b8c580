"""Object pools on a GPU-style system (robosim.sim.pool has the CPU version and the idea).

GPU PhysX refuses what the CPU pool does: `entity.set_pose` is ignored and a body's
kinematic flag cannot change after gpu_init. So here every variant stays a dynamic body
and a parked variant rests on the ground at the edge of its env's cell, out of the
workspace: variant k of every env is built at its parking spot (k >= 1), and a swap
writes both variants' rows of the rigid-body buffer (the old one to its spot, at rest;
the new one to the old one's pose, at rest) with one apply. State layout as the CPU
pool's: [pose (7), velocity (6), active variant index].
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import torch

from robosim.sim.pool import PoolLayout
from robosim.sim.properties import BodyProperties, GpuRefusesBodyProperties
from robosim.sim.views import POSE_DIM, VELOCITY_DIM, ReadCache, _CachedReads, checked_poses

PARK_X, PARK_Y0, PARK_STEP = -1.5, -1.2, 0.3   # m, sub-scene frame: variant k parks at (PARK_X, PARK_Y0 + k*PARK_STEP)


def park_position(k: int, height: float) -> tuple[float, float, float]:
    return (PARK_X, PARK_Y0 + PARK_STEP * k, height)


class GpuObjectPoolView(PoolLayout, GpuRefusesBodyProperties, BodyProperties, _CachedReads):
    """N envs x K variants of one rigid object on a GPU-style system."""

    @staticmethod
    def build_description(obj, k: int):
        """The description variant k is built from: variants after the first start parked."""
        if k == 0:
            return obj
        return dataclasses.replace(obj, pose=(*park_position(k, obj.pose[2] + 0.005), *obj.pose[3:]))

    def __init__(self, name: str, variants: Sequence[Sequence], origins: np.ndarray, cache: ReadCache | None = None):
        self._init_cache(cache)
        self.name = name
        self.variants = [list(v) for v in variants]
        self.pool_size = len(self.variants[0])
        self.active = np.zeros(len(self.variants), dtype=np.int64)
        self._park_height = [[float(e.pose.p[2]) for e in v] for v in self.variants]

    def bind(self, buffers, device: torch.device) -> None:
        import sapien

        self.buffers, self.device = buffers, device
        px = buffers.physx
        self.rows = torch.tensor([[px.pose_index(e.find_component_by_type(sapien.physx.PhysxRigidDynamicComponent))
                                   for e in v] for v in self.variants], dtype=torch.long, device=device)
        self._active = torch.zeros(len(self.variants), dtype=torch.long, device=device)

    def _active_rows(self, env_idx: torch.Tensor | None) -> torch.Tensor:
        rows = self.rows.gather(1, self._active[:, None]).flatten()
        return rows if env_idx is None else rows[env_idx.to(self.device)]

    def activate(self, variant: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """Put variant[j] in play in env env_idx[j] at the pose of the variant it replaces,
        at rest; the replaced one goes to its parking spot. Other envs are not touched."""
        idx = np.arange(len(self.variants)) if env_idx is None else \
            np.asarray(torch.as_tensor(env_idx).cpu(), dtype=np.int64).reshape(-1)
        new = np.asarray(torch.as_tensor(variant).detach().cpu(), dtype=np.int64).reshape(-1)
        if new.shape != idx.shape or (new < 0).any() or (new >= self.pool_size).any():
            raise ValueError(f"variant must be {len(idx)} ints in [0, {self.pool_size}), got {new.tolist()}")
        swap = [(int(i), int(self.active[i]), int(k)) for i, k in zip(idx, new) if k != self.active[i]]
        if not swap:
            return
        data = self.buffers.rigid()
        for i, old, k in swap:
            old_row, new_row = self.rows[i, old], self.rows[i, k]
            data[new_row, :POSE_DIM] = data[old_row, :POSE_DIM]
            data[old_row, :3] = torch.tensor(park_position(old, self._park_height[i][old]), device=self.device)
            data[old_row, 3:POSE_DIM] = torch.tensor([1.0, 0.0, 0.0, 0.0], device=self.device)
            data[[old_row, new_row], POSE_DIM:] = 0.0
            self.active[i] = k
            self._active[i] = k
        self.buffers.apply("rigid_dynamic_data")
        self._wrote()

    def pose(self) -> torch.Tensor:
        return self.buffers.rigid()[self._active_rows(None), :POSE_DIM]

    def velocity(self) -> torch.Tensor:
        return self.buffers.rigid()[self._active_rows(None), POSE_DIM:POSE_DIM + VELOCITY_DIM]

    def _write(self, cols: slice, value: torch.Tensor, env_idx) -> None:
        data = self.buffers.rigid()
        data[self._active_rows(env_idx), cols] = value.to(self.device, torch.float32)
        self.buffers.apply("rigid_dynamic_data")
        self._wrote()

    def set_pose(self, pose, env_idx=None) -> None:
        rows = len(self.variants) if env_idx is None else len(env_idx)
        self._write(slice(0, POSE_DIM), torch.from_numpy(checked_poses("pose", pose, rows)), env_idx)

    def set_velocity(self, velocity, env_idx=None) -> None:
        self._write(slice(POSE_DIM, POSE_DIM + VELOCITY_DIM), velocity, env_idx)

    def get_state(self, env_idx: torch.Tensor | None = None) -> torch.Tensor:
        """float32 (M, 14): pose, velocity, active variant index."""
        state = torch.cat(self._state_parts(), dim=1)
        return state if env_idx is None else state[env_idx.to(self.device)]

    def _state_parts(self) -> list[torch.Tensor]:
        """The tensors get_state concatenates."""
        return [self.pose(), self.velocity(), self._active[:, None].float()]
