"""The per-step math of a robot, in one of two bodies chosen once per device.

A Robot's step path (controller targets, the IK step, FK readouts, the gripper) runs
on the body `step_math(device)` returns when the robot is loaded, and never asks
again which kind of array it holds:

* `NumpyBody` (CPU only): numpy arrays that share memory with the views' CPU tensors.
  An operation costs a few microseconds instead of torch's ~5 per op on small
  tensors, and the stacked solves never wake torch's intra-op thread pool next to the
  PhysX threads (docs/performance.md, step 4).
* `TorchBody` (any device): tensors stay where they are, with no host copy and no
  device synchronization (tests/test_step_path_static.py checks its methods).

The two bodies compute the same quantities by different operations (numpy's and
torch's cos, sin and solves differ in the last bits): they agree within 1e-9 m and
1e-9 rad in float64 (tests/agents/test_step_math.py), not bit for bit. Each gives the
same bits for the same inputs, and NumpyBody's row i never depends on the other rows,
so on the CPU env i's result is the same bits whatever num_envs is.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from robosim.core.rotations import matmul3, matrix_to_quat, matvec3

Array = Any   # np.ndarray in NumpyBody, torch.Tensor in TorchBody


class StepMath:
    """The interface of both bodies. Arrays in and out are the body's kind, except
    `array` (tensor in) and `tensor` / `tcp_pose` (tensor out)."""

    def array(self, t: torch.Tensor) -> Array:
        """The body's array of tensor `t` (detached; no copy where the body can share)."""
        raise NotImplementedError

    def tensor(self, a: Array) -> torch.Tensor:
        """Tensor of the body's array `a` (shares memory)."""
        raise NotImplementedError

    def keep(self, a: Array) -> Array:
        """A private copy of `a`, for a cache."""
        raise NotImplementedError

    def same_bits(self, a: Array, b: Array) -> bool:
        """Whether `a` and `b` are known equal bit for bit, without a device wait
        (False when finding out would wait)."""
        raise NotImplementedError

    def float64(self, a: Array) -> Array:
        raise NotImplementedError

    def float32(self, a: Array) -> Array:
        raise NotImplementedError

    def cat(self, parts: list, dim: int = -1) -> Array:
        raise NotImplementedError

    def clamp(self, a: Array, low: Array, high: Array) -> Array:
        """min(max(a, low), high), elementwise with broadcasting (NaN stays NaN)."""
        raise NotImplementedError

    def damped_least_squares(self, jac: Array, error: Array, damping: float) -> Array:
        """Joint step (B, dof) = J^T (J J^T + damping^2 I)^-1 error for jac (B, k, dof)
        and error (B, k), in jac's dtype."""
        raise NotImplementedError

    def chain_values(self, chain: Any, q: Array, version: int | None, jacobian: bool) -> Array:
        """SerialChain `chain`'s kept float64 (B, K) evaluation at q (B, dof) (float32 or
        float64, widened exactly; robosim.agents.kinematics: tip position, rotation, then
        the Jacobian once one was asked for)."""
        raise NotImplementedError

    def drive_targets(self, arm: Array, width: Array, dof: int) -> Array:
        """float32 (N, dof) targets: the arm's (N, arm_dof), then `width` (N, 1) for
        every gripper joint."""
        raise NotImplementedError

    def tcp_pose(self, values: Array, base_rot: Array | None, base_pos: Array) -> torch.Tensor:
        """float32 (N, 7) [xyz, wxyz] tensor in the env frame from a chain evaluation
        `values` (N, K) float64 in the robot base frame; `base_rot` (3, 3) base -> env
        (None: unrotated), `base_pos` (3,) m, both float64 in the body's kind."""
        pos, rot = values[:, :3], values[:, 3:12].reshape(-1, 3, 3)
        if base_rot is not None:
            pos, rot = matvec3(base_rot, pos), matmul3(base_rot, rot)
        return self.tensor(self.float32(self.cat([pos + base_pos, matrix_to_quat(rot)], 1)))


class NumpyBody(StepMath):
    """CPU: numpy arrays sharing memory with CPU tensors."""

    def array(self, t: torch.Tensor) -> np.ndarray:
        return (t.detach() if t.requires_grad else t).numpy()

    def tensor(self, a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a)

    def keep(self, a: np.ndarray) -> np.ndarray:
        return a.copy()

    def same_bits(self, a: np.ndarray, b: np.ndarray) -> bool:
        # tobytes: bit for bit (NaN equals itself) and cheaper than array_equal for a few rows
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()

    def float64(self, a: np.ndarray) -> np.ndarray:
        return a.astype(np.float64, copy=False)

    def float32(self, a: np.ndarray) -> np.ndarray:
        return a.astype(np.float32, copy=False)

    def cat(self, parts: list, dim: int = -1) -> np.ndarray:
        return np.concatenate(parts, axis=dim)

    def clamp(self, a: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        return np.maximum(np.minimum(a, high), low)

    def damped_least_squares(self, jac: np.ndarray, error: np.ndarray, damping: float) -> np.ndarray:
        # numpy's stacked matmul and solve make the same per-matrix calls whatever B is
        j = np.ascontiguousarray(jac)
        jjt = j @ j.swapaxes(-1, -2)
        a = jjt + damping**2 * np.eye(jjt.shape[-1], dtype=jjt.dtype)
        return (j.swapaxes(-1, -2) @ np.linalg.solve(a, error[..., None]))[..., 0]

    def chain_values(self, chain: Any, q: np.ndarray, version: int | None, jacobian: bool) -> np.ndarray:
        return chain.values_numpy(q, version, jacobian)

    def drive_targets(self, arm: np.ndarray, width: np.ndarray, dof: int) -> np.ndarray:
        targets = np.empty((len(arm), dof), dtype=np.float32)
        targets[:, :arm.shape[1]] = arm
        targets[:, arm.shape[1]:] = width   # (N, 1) broadcast over the gripper joints
        return targets


class TorchBody(StepMath):
    """Any device: tensors where they are."""

    def array(self, t: torch.Tensor) -> torch.Tensor:
        return t.detach()

    def tensor(self, a: torch.Tensor) -> torch.Tensor:
        return a

    def keep(self, a: torch.Tensor) -> torch.Tensor:
        return a.clone()

    def same_bits(self, a: torch.Tensor, b: torch.Tensor) -> bool:
        return False   # comparing device tensors would wait for the device

    def float64(self, a: torch.Tensor) -> torch.Tensor:
        return a.double()

    def float32(self, a: torch.Tensor) -> torch.Tensor:
        return a.float()

    def cat(self, parts: list, dim: int = -1) -> torch.Tensor:
        return torch.cat(parts, dim=dim)

    def clamp(self, a: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
        return torch.maximum(torch.minimum(a, high), low)

    def damped_least_squares(self, jac: torch.Tensor, error: torch.Tensor, damping: float) -> torch.Tensor:
        jjt = jac @ jac.transpose(-1, -2)
        eye = torch.eye(jac.shape[-2], dtype=jac.dtype, device=jac.device).expand_as(jjt)
        # solve_ex: solve() checks for errors, a device synchronization
        x = torch.linalg.solve_ex(jjt + damping**2 * eye, error.unsqueeze(-1))[0]
        return (jac.transpose(-1, -2) @ x).squeeze(-1)

    def chain_values(self, chain: Any, q: torch.Tensor, version: int | None, jacobian: bool) -> torch.Tensor:
        return chain.values_torch(q.double(), version, jacobian)

    def drive_targets(self, arm: torch.Tensor, width: torch.Tensor, dof: int) -> torch.Tensor:
        return torch.cat([arm, width.expand(-1, dof - arm.shape[1])], dim=1)


NUMPY, TORCH = NumpyBody(), TorchBody()


def step_math(device: torch.device | str) -> StepMath:
    """The body for arrays on `device`: NumpyBody on the CPU, TorchBody elsewhere."""
    if torch.device(device).type == "cpu":
        return NUMPY
    return TORCH
