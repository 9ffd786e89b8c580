"""Checks of poses written through the views (set_pose of every backend).

A pose is [x, y, z, qw, qx, qy, qz] (m, unit quaternion wxyz). A pose that is refused
here never reaches PhysX: a non-finite one used to pass and was only reported as a
fault after the next physics step, with the env already stepped from it.
"""
from __future__ import annotations

import numpy as np
import torch

from robosim.core.rotations import check_unit_quats

POSE_DIM = 7
QUAT_NORM_TOL = 1e-2   # how far from 1 a written quaternion's norm may be (set_pose and set_state alike)


def checked_poses(name: str, pose: torch.Tensor | np.ndarray, rows: int) -> np.ndarray:
    """float32 (rows, 7) from `pose`, or a ValueError naming `name`: shape (rows, 7) (or
    (7,) for one row), finite, and unit-norm (+-QUAT_NORM_TOL) quaternions."""
    arr = pose.detach().cpu().numpy().astype(np.float32) if isinstance(pose, torch.Tensor) else \
        np.asarray(pose, dtype=np.float32)
    if arr.shape != (rows, POSE_DIM) and not (rows == 1 and arr.shape == (POSE_DIM,)):
        raise ValueError(f"{name} must have shape ({rows}, {POSE_DIM}) [x, y, z, qw, qx, qy, qz] (one row per "
                         f"env in env_idx), got shape {tuple(arr.shape)}")
    arr = arr.reshape(rows, POSE_DIM)
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(f"{name} must be finite, got {arr[row].tolist()} in row {row}")
    check_unit_quats(name, arr[:, 3:], QUAT_NORM_TOL)
    return arr
