"""Rotations and quaternions in torch (matmul3, matvec3 and matrix_to_quat also take
numpy arrays): the one home of robosim's rotation math.

Conventions: quaternions are [w, x, y, z] (SAPIEN's order), Hamilton product, unit
norm; a rotation matrix R maps body-frame vectors into the parent frame (v_parent =
R v_body); angles are radians; yaw is a rotation about +z.

All math is elementwise over leading batch dims (no BLAS batch kernels whose rounding
could depend on the batch size), so the result for row i is bit-identical whatever the
batch size. Replays repeat recorded trajectories bit for bit only under the code that
recorded them: changing the order of an operation here changes the last bits.
"""
from __future__ import annotations

import math
from typing import Any, TypeVar, cast

import numpy as np
import torch

IDENTITY_QUAT = (1.0, 0.0, 0.0, 0.0)   # wxyz
Array = TypeVar("Array", torch.Tensor, np.ndarray)


def check_unit_quats(name: str, quats: np.ndarray, tol: float) -> np.ndarray:
    """The norms (...,) of wxyz quaternions `quats` (..., 4), or a ValueError naming `name`
    when one is more than `tol` from 1 (and, for more than one, its row). A NaN norm
    passes: finiteness is the caller's check."""
    # one quaternion: norm's dot-product formula (the camera normalizes by it; the
    # axis= form sums differently and can differ in the last bit)
    norms = cast(np.ndarray, np.linalg.norm(quats) if quats.ndim == 1 else np.linalg.norm(quats, axis=-1))
    bad = np.abs(norms - 1.0) > tol
    if bad.any():
        row = np.unravel_index(int(np.argmax(bad)), bad.shape)
        where = f" in row {row[0] if len(row) == 1 else row}" if bad.ndim else ""
        raise ValueError(f"{name} quaternion must have unit norm (+-{tol}), got norm {float(norms[row]):.6g}{where}")
    return norms


# -- 3x3 matrices ---------------------------------------------------------------------
def matmul3(a: Array, b: Array) -> Array:
    """(..., 3, 3) @ (..., 3, 3) (torch or numpy, broadcast) without batch-size
    dependent kernels."""
    return (a[..., :, :, None] * b[..., None, :, :]).sum(-2)


def matvec3(a: Array, v: Array) -> Array:
    """(..., 3, 3) @ (..., 3) (torch or numpy, broadcast)."""
    return (a * v[..., None, :]).sum(-1)


def rpy_to_matrix(r: float, p: float, y: float) -> torch.Tensor:
    """URDF fixed-axis roll-pitch-yaw (rad) to a float64 (3, 3) rotation: R = Rz(y) Ry(p) Rx(r)."""
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return torch.tensor(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ],
        dtype=torch.float64,
    )


def axis_angle_matrix(axis: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """Rotation about unit `axis` (3,) or (..., 3) by `angle` (...,) rad -> (..., 3, 3)."""
    x, y, z = axis.unbind(-1)
    c, s = torch.cos(angle), torch.sin(angle)
    t = 1 - c
    rows = [
        [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
        [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
        [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
    ]
    return torch.stack([torch.stack(r, dim=-1) for r in rows], dim=-2)


# -- quaternions <-> matrices -----------------------------------------------------------
# Shepperd's method, table-driven: diagonal k of the 4 candidates is 1 + s_k . (m00, m11, m22);
# the off-diagonal sums p = [m21 - m12, m02 - m20, m10 - m01, m01 + m10, m02 + m20, m12 + m21]
# are flat[_P_LEFT] + _P_SIGN * flat[_P_RIGHT]; candidate k's quaternion is
# [big, p / (4 big)][_CANDIDATE[k]] (index 0: big itself).
_DIAG_SIGNS = ((1.0, 1.0, 1.0), (1.0, -1.0, -1.0), (-1.0, 1.0, -1.0), (-1.0, -1.0, 1.0))
_P_LEFT, _P_RIGHT, _P_SIGN = (7, 2, 3, 1, 2, 5), (5, 6, 1, 3, 6, 7), (-1.0, -1.0, -1.0, 1.0, 1.0, 1.0)
_CANDIDATE = ((0, 1, 2, 3), (1, 0, 4, 5), (2, 4, 0, 6), (3, 5, 6, 0))


def matrix_to_quat(m: Array) -> Array:
    """(..., 3, 3) rotation -> (..., 4) unit quaternion wxyz with w >= 0, torch or numpy
    (float64 numpy is how robosim computes TCP orientations on CPU).

    Shepperd's method: derive the quaternion from its largest component, so no
    component comes from the square root of a rounding error."""
    if isinstance(m, np.ndarray):
        if m.shape == (1, 3, 3) and m.dtype == np.float64:   # one TCP pose a step: Python floats
            flat = m.reshape(9).tolist()
            if math.isfinite(sum(flat)):   # (numpy's argmax ranks nan first; max() does not)
                return np.array([_matrix_to_quat_floats(flat)])
        xp: Any = np
        cat: Any = np.concatenate

        def take(a: Any, index: Any) -> Any:
            return np.take_along_axis(a, index, -1)
    else:
        xp, cat = torch, torch.cat

        def take(a: Any, index: Any) -> Any:
            return torch.gather(a, -1, index)
    const = _quat_tables(m)
    flat = m.reshape(*m.shape[:-2], 9)
    signs = const["signs"]
    diag = ((1 + signs[:, 0] * flat[..., 0:1]) + signs[:, 1] * flat[..., 4:5]) + signs[:, 2] * flat[..., 8:9]
    choice = xp.argmax(diag, -1)[..., None]                              # (..., 1)
    chosen = take(diag, choice)
    big = xp.sqrt(xp.maximum(chosen, xp.full_like(chosen, 1e-12))) * 0.5  # |largest component|
    pairs = flat[..., const["left"]] + const["psign"] * flat[..., const["right"]]
    values = cat([big, pairs / (4 * big)], -1)                          # (..., 7)
    index = const["cand"][choice[..., 0]]
    q = take(values, index)
    q = xp.where(q[..., :1] < 0, -q, q)
    norm = np.linalg.norm(q, axis=-1, keepdims=True) if xp is np else q.norm(dim=-1, keepdim=True)
    return q / norm


def _matrix_to_quat_floats(f: list[float]) -> list[float]:
    """matrix_to_quat of one row-major float64 matrix `f` (9 floats) in Python floats: the
    same IEEE operations in the same order as the numpy path (argmax takes the first
    largest; numpy sums the 4 squares left to right), so the same bits
    (tests/core/test_rotations.py compares them)."""
    diag = [((1 + s0 * f[0]) + s1 * f[4]) + s2 * f[8] for s0, s1, s2 in _DIAG_SIGNS]
    k = max(range(4), key=diag.__getitem__)
    big = math.sqrt(max(diag[k], 1e-12)) * 0.5
    four = 4 * big
    values = [big, *((f[a] + s * f[b]) / four for a, b, s in zip(_P_LEFT, _P_RIGHT, _P_SIGN))]
    q = [values[i] for i in _CANDIDATE[k]]
    if q[0] < 0:
        q = [-v for v in q]
    norm = math.sqrt(((q[0] * q[0] + q[1] * q[1]) + q[2] * q[2]) + q[3] * q[3])
    return [v / norm for v in q]


_QUAT_TABLES: dict = {}


def _quat_tables(like: Array) -> dict:
    """matrix_to_quat's tables as arrays like `like` (numpy, or tensors on its device),
    made once per (kind, dtype, device)."""
    is_numpy = isinstance(like, np.ndarray)
    key = (is_numpy, like.dtype, None if is_numpy else like.device)
    tables = _QUAT_TABLES.get(key)
    if tables is None:
        if isinstance(like, np.ndarray):
            def make(values: tuple, real: bool) -> Any:
                return np.asarray(values, dtype=like.dtype if real else np.int64)
        else:
            def make(values: tuple, real: bool) -> Any:
                return torch.tensor(values, dtype=like.dtype if real else torch.int64, device=like.device)
        tables = _QUAT_TABLES[key] = {
            "signs": make(_DIAG_SIGNS, True), "left": make(_P_LEFT, False), "right": make(_P_RIGHT, False),
            "psign": make(_P_SIGN, True), "cand": make(_CANDIDATE, False)}
    return tables


def quat_to_matrix(q: torch.Tensor) -> torch.Tensor:
    """(..., 4) quaternion wxyz (normalized here) -> (..., 3, 3)."""
    q = q / q.norm(dim=-1, keepdim=True)
    w, x, y, z = q.unbind(-1)
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return torch.stack([torch.stack(r, dim=-1) for r in rows], dim=-2)


def rotation_log(m: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) rotation -> (..., 3) axis-angle vector (rad), angle in [0, pi]."""
    q = matrix_to_quat(m)
    vec = q[..., 1:]
    sin_half = vec.norm(dim=-1, keepdim=True)
    angle = 2 * torch.atan2(sin_half, q[..., :1])
    scale = torch.where(sin_half > 1e-9, angle / sin_half.clamp(min=1e-12), torch.full_like(sin_half, 2.0))
    return vec * scale


# -- yaw (rotation about +z) -----------------------------------------------------------
def yaw_quat(yaw: torch.Tensor) -> torch.Tensor:
    """(M,) yaw angles (rad) -> (M, 4) wxyz quaternions about +z."""
    half = yaw * 0.5
    zeros = torch.zeros_like(half)
    return torch.stack([torch.cos(half), zeros, zeros, torch.sin(half)], dim=1)


def quat_yaw(q: torch.Tensor) -> torch.Tensor:
    """(..., 4) wxyz -> (...,) yaw (rad, in [-pi, pi]) of the body x axis about +z."""
    w, x, y, z = q.unbind(-1)
    return torch.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def yaw_then_quat(yaw: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """(..., 4) wxyz orientations `q` turned by `yaw` (...,) rad about the parent's +z:
    the product yaw_quat(yaw) * q, computed without the zero terms (same dtype as q)."""
    half = yaw * 0.5
    w, x, y, z = q.unbind(-1)
    c, s = torch.cos(half), torch.sin(half)
    return torch.stack([c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w], -1)


def wrap_angle(a: torch.Tensor, period: float = 2 * math.pi) -> torch.Tensor:
    """Angles (rad) wrapped to [-period / 2, period / 2): [-pi, pi) by default; a shape
    with n-fold symmetry about an axis folds its angle with period 2 pi / n."""
    half = period / 2   # exact (a power-of-two scaling): 2 pi / 2 is math.pi to the bit
    return torch.remainder(a + half, period) - half


def rotation_between(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """float64 (N, 3, 3): the smallest rotation taking unit vectors a (N, 3) onto b (N, 3)
    (about a x b; any axis when they are parallel)."""
    a, b = a.double(), b.double()
    cross = torch.linalg.cross(a, b)
    sin = cross.norm(dim=1)
    return axis_angle_matrix(cross / sin.clamp(min=1e-9).unsqueeze(1), torch.atan2(sin, (a * b).sum(1)))
