"""Batched forward kinematics and Jacobians of a serial URDF chain, in torch.

All math is elementwise over a leading batch dim (no per-env Python loop and no BLAS
batch kernels whose rounding could depend on the batch size), so FK of env i is
bit-identical whatever num_envs is. Frames: everything is in the chain's root link
frame (the robot base). Rotations are 3x3 matrices; quaternions are wxyz.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import torch


def _floats(text: str | None, default: tuple[float, float, float]) -> tuple[float, float, float]:
    return tuple(float(v) for v in text.split()) if text else default  # type: ignore[return-value]


def rpy_to_matrix(r: float, p: float, y: float) -> torch.Tensor:
    """URDF fixed-axis roll-pitch-yaw to a float64 (3, 3) rotation."""
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return torch.tensor(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ],
        dtype=torch.float64,
    )


def matmul3(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) @ (..., 3, 3) without batch-size dependent kernels."""
    return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)


def matvec3(a: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) @ (..., 3)."""
    return (a * v.unsqueeze(-2)).sum(-1)


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


class _FixedAxisRotation:
    """`axis_angle_matrix(axis, angle)` for one constant axis in 3 tensor ops instead of ~30.

    Every entry is evaluated with the same floating-point operations in the same order
    as in axis_angle_matrix ((t * a) * b, then + c or + s * (+-axis component), where
    a - b is a + (-b) in IEEE arithmetic), so the result is bit-identical to it. The
    constants are copied to each (device, dtype) once, so no call copies host data."""

    _A = (0, 0, 0, 0, 1, 1, 0, 1, 2)    # entry (i, j) of t * a * b: a = axis[_A], b = axis[_B]
    _B = (0, 1, 2, 1, 1, 2, 2, 2, 2)

    def __init__(self, axis: torch.Tensor):
        x, y, z = axis.tolist()
        zero = 0.0
        self._host = (axis[list(self._A)].clone(), axis[list(self._B)].clone(),
                      torch.tensor([zero, -z, y, z, zero, -x, -y, x, zero], dtype=axis.dtype))
        self.diagonal = torch.tensor([True, False, False, False, True, False, False, False, True])
        self._on: dict = {}

    def _constants(self, like: torch.Tensor):
        key = (like.device, like.dtype)
        consts = self._on.get(key)
        if consts is None:
            consts = self._on[key] = (*(c.to(like) for c in self._host), self.diagonal.to(like.device))
        return consts

    def __call__(self, angle: torch.Tensor) -> torch.Tensor:
        first, second, sin_factor, diagonal = self._constants(angle)
        c, s = torch.cos(angle).unsqueeze(-1), torch.sin(angle).unsqueeze(-1)
        t = 1 - c
        outer = (t * first) * second
        return (outer + torch.where(diagonal, c, s * sin_factor)).reshape(*angle.shape, 3, 3)


def matrix_to_quat(m: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) rotation -> (..., 4) unit quaternion wxyz with w >= 0.

    Shepperd's method: derive the quaternion from its largest component, so no
    component comes from the square root of a rounding error."""
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    diag = torch.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1)
    big = torch.sqrt(diag.clamp(min=1e-12)) * 0.5          # candidate |w|, |x|, |y|, |z|
    four = 4 * big
    candidates = torch.stack([
        torch.stack([big[..., 0], (m21 - m12) / four[..., 0], (m02 - m20) / four[..., 0], (m10 - m01) / four[..., 0]], -1),
        torch.stack([(m21 - m12) / four[..., 1], big[..., 1], (m01 + m10) / four[..., 1], (m02 + m20) / four[..., 1]], -1),
        torch.stack([(m02 - m20) / four[..., 2], (m01 + m10) / four[..., 2], big[..., 2], (m12 + m21) / four[..., 2]], -1),
        torch.stack([(m10 - m01) / four[..., 3], (m02 + m20) / four[..., 3], (m12 + m21) / four[..., 3], big[..., 3]], -1),
    ], dim=-2)                                             # (..., 4 candidates, 4)
    choice = diag.argmax(dim=-1, keepdim=True).unsqueeze(-1).expand(*diag.shape[:-1], 1, 4)
    q = candidates.gather(-2, choice).squeeze(-2)
    q = torch.where(q[..., :1] < 0, -q, q)
    return q / q.norm(dim=-1, keepdim=True)


def quat_to_matrix(q: torch.Tensor) -> torch.Tensor:
    """(..., 4) quaternion wxyz -> (..., 3, 3)."""
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


@dataclass(frozen=True)
class _Joint:
    origin_rot: torch.Tensor   # (3, 3) parent -> joint frame
    origin_pos: torch.Tensor   # (3,)
    axis: torch.Tensor         # (3,) unit, joint frame
    active_index: int          # column in the chain's q vector, -1 for fixed joints
    rotation: "_FixedAxisRotation | None" = None   # rotation about `axis` (movable joints)


class SerialChain:
    """Kinematic chain from `root_link` to `tip_link` of a URDF, plus an optional fixed
    `tip_offset` (m, in the tip link's frame) for a tool centre point between links.

    `joint_names` lists the chain's movable joints in root-to-tip order; q passed to
    `forward` / `jacobian` is (B, len(joint_names)) in that order. Constants live on each
    device they are used on (copied once), so evaluating on a GPU copies no host data."""

    def __init__(self, urdf_path: str, root_link: str, tip_link: str,
                 tip_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)):
        tree = ET.parse(urdf_path).getroot()
        by_child = {j.find("child").get("link"): j for j in tree.findall("joint")}
        chain = []
        link = tip_link
        while link != root_link:
            if link not in by_child:
                raise ValueError(f"link {tip_link!r} is not below {root_link!r} in {urdf_path}")
            joint = by_child[link]
            chain.append(joint)
            link = joint.find("parent").get("link")
        chain.reverse()
        self.joint_names: list[str] = []
        self._joints: list[_Joint] = []
        for j in chain:
            origin = j.find("origin")
            xyz = _floats(origin.get("xyz") if origin is not None else None, (0.0, 0.0, 0.0))
            rpy = _floats(origin.get("rpy") if origin is not None else None, (0.0, 0.0, 0.0))
            axis_el = j.find("axis")
            axis = torch.tensor(_floats(axis_el.get("xyz") if axis_el is not None else None, (1.0, 0.0, 0.0)),
                                dtype=torch.float64)
            movable = j.get("type") in ("revolute", "continuous")
            if j.get("type") == "prismatic":
                raise ValueError("prismatic joints inside an IK chain are not supported")
            if movable:
                self.joint_names.append(j.get("name"))
            self._joints.append(
                _Joint(rpy_to_matrix(*rpy), torch.tensor(xyz, dtype=torch.float64), axis / axis.norm(),
                       len(self.joint_names) - 1 if movable else -1,
                       _FixedAxisRotation(axis / axis.norm()) if movable else None)
            )
        if any(v != 0.0 for v in tip_offset):
            self._joints.append(_Joint(torch.eye(3, dtype=torch.float64),
                                       torch.tensor(tip_offset, dtype=torch.float64), torch.zeros(3), -1))
        self._on: dict = {}   # (device, dtype) -> per-joint (origin_rot, origin_pos, axis) there
        # (key, frames) of the last evaluation: one control step asks for the same q's FK
        # several times (reward, success, obs, the next step's IK Jacobian)
        self._last: tuple | None = None

    def forget(self) -> None:
        """Drop the cached last evaluation (call when the scene whose versions keyed it
        is replaced)."""
        self._last = None

    def _constants(self, q: torch.Tensor) -> list:
        key = (q.device, q.dtype)
        consts = self._on.get(key)
        if consts is None:
            consts = self._on[key] = [(j.origin_rot.to(q), j.origin_pos.to(q), j.axis.to(q)) for j in self._joints]
        return consts

    def _cached_frames(self, q: torch.Tensor, version: int | None) -> list:
        """The frames of `_frames(q)`, reused while q is the last q: `version` (the
        scene's ReadCache version q was read at) equal to the last one, or, on CPU, q
        bit-for-bit equal to the last q (a GPU compare would wait for the device, so
        there it recomputes). Calls with and without a version can be mixed: the last q
        is kept either way."""
        last = self._last
        if last is not None and last[1].shape == q.shape and last[1].dtype == q.dtype and last[1].device == q.device:
            if version is not None and last[0] == version:
                return last[2]
            if q.device.type == "cpu" and torch.equal(last[1], q):
                if version is not None:
                    self._last = (version, last[1], last[2])
                return last[2]
        frames = list(self._frames(q))
        self._last = (version, q.detach().clone(), frames)
        return frames

    def _frames(self, q: torch.Tensor):
        """Yield (R, p, axis_world | None) of every joint frame after its rotation."""
        batch = q.shape[0]
        rot = torch.eye(3, dtype=q.dtype, device=q.device).expand(batch, 3, 3)
        pos = torch.zeros(batch, 3, dtype=q.dtype, device=q.device)
        for joint, (origin_rot, origin_pos, axis) in zip(self._joints, self._constants(q)):
            pos = pos + matvec3(rot, origin_pos)
            rot = matmul3(rot, origin_rot.expand(batch, 3, 3))
            axis_world = None
            if joint.active_index >= 0:
                axis_world = matvec3(rot, axis.expand(batch, 3))
                rot = matmul3(rot, joint.rotation(q[:, joint.active_index]))
            yield rot, pos, axis_world

    def forward(self, q: torch.Tensor, version: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Tip pose in the root frame: position (B, 3) m and rotation (B, 3, 3).
        `version`: see `_cached_frames`."""
        rot, pos, _ = self._cached_frames(q, version)[-1]
        return pos.clone(), rot.clone()

    def jacobian(self, q: torch.Tensor, version: int | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Geometric Jacobian (B, 6, dof) of the tip in the root frame [linear; angular],
        with the tip position (B, 3) and rotation (B, 3, 3)."""
        axes, origins = [], []
        frames = self._cached_frames(q, version)
        for _, pos, axis_world in frames:
            if axis_world is not None:
                axes.append(axis_world)
                origins.append(pos)
        rot, pos, _ = frames[-1]
        z = torch.stack(axes, dim=-1)                                # (B, 3, dof)
        r = pos.unsqueeze(-1) - torch.stack(origins, dim=-1)         # (B, 3, dof)
        linear = torch.linalg.cross(z, r, dim=-2)
        return torch.cat([linear, z], dim=-2), pos.clone(), rot.clone()
