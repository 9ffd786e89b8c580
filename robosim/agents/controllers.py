"""Batched PD controllers: map a normalized action (N, A) to joint drive targets (N, dof).

Every controller works on whole batches; the only per-env work is writing the targets
into PhysX (see `sim.views.ArticulationView.set_drive_targets`). Frames: end-effector
deltas are expressed in the robot base frame (axes of the env frame for an unrotated
base). Units: m, rad.
"""
from __future__ import annotations

import numpy as np
import torch

from robosim.agents.kinematics import SerialChain

CONTROL_MODES = ("pd_joint_pos", "pd_joint_delta_pos", "pd_ee_delta_pos", "pd_ee_delta_pose")


def damped_least_squares(jac: torch.Tensor | np.ndarray, error: torch.Tensor | np.ndarray,
                         damping: float = 0.05) -> torch.Tensor | np.ndarray:
    """Joint step (B, dof) that best moves the tip by `error` (B, k) given jac (B, k, dof):
    J^T (J J^T + damping^2 I)^-1 error, in jac's dtype, as numpy for numpy input and as a
    tensor on jac's device otherwise.

    On CPU the math runs in numpy: its stacked matmul and solve handle each env's small
    matrices with the same per-matrix LAPACK/BLAS calls whatever the batch size, cost
    microseconds for one env instead of torch's per-op overhead, and never wake torch's
    intra-op thread pool (a batched torch LU spread over it stalled 4-8 ms per call next
    to the PhysX threads on the 2-core project machine, docs/performance.md step 4)."""
    if isinstance(jac, np.ndarray):
        j = np.ascontiguousarray(jac)
        jjt = j @ j.swapaxes(-1, -2)
        a = jjt + damping**2 * np.eye(jjt.shape[-1], dtype=jjt.dtype)
        return (j.swapaxes(-1, -2) @ np.linalg.solve(a, error[..., None]))[..., 0]
    if jac.device.type == "cpu":
        return torch.from_numpy(damped_least_squares(jac.detach().numpy(), error.detach().numpy(), damping))
    jjt = jac @ jac.transpose(-1, -2)
    eye = torch.eye(jac.shape[-2], dtype=jac.dtype, device=jac.device).expand_as(jjt)
    # solve_ex: solve() checks for errors, a device synchronization
    x = torch.linalg.solve_ex(jjt + damping**2 * eye, error.unsqueeze(-1))[0]
    return (jac.transpose(-1, -2) @ x).squeeze(-1)


class ArmController:
    """Base class: `targets(action, qpos)` returns arm joint targets (N, arm_dof).

    Every controller also takes and returns float32 numpy arrays: on CPU the robot runs
    it in numpy, the same IEEE operations as with tensors (tests/agents/test_controllers.py
    compares the bits) at about a quarter of torch's per-operation cost for one env."""

    action_dim: int

    def __init__(self, qlimits: torch.Tensor):
        self.qlimits = qlimits  # (arm_dof, 2)
        self._qlimits_np: tuple[np.ndarray, np.ndarray] | None = None

    def action_bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        ones = torch.ones(self.action_dim)
        return -ones, ones

    def targets(self, action: torch.Tensor | np.ndarray, qpos: torch.Tensor | np.ndarray,
                version: int | None = None) -> torch.Tensor | np.ndarray:
        """Arm joint targets (N, arm_dof) for `action` (N, action_dim) at arm joint
        positions `qpos` (N, arm_dof), both tensors or both float32 numpy (CPU), answered
        in the same kind; `version`: the scene ReadCache version qpos was read at (lets
        FK reuse its last result, see SerialChain)."""
        raise NotImplementedError

    def _clamp(self, q: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
        if isinstance(q, np.ndarray):
            if self._qlimits_np is None:   # (low, high), contiguous float32 (arm_dof,)
                limits = self.qlimits.cpu().numpy()
                self._qlimits_np = (np.ascontiguousarray(limits[:, 0]), np.ascontiguousarray(limits[:, 1]))
            low, high = self._qlimits_np
            return np.maximum(np.minimum(q, high), low)
        return torch.maximum(torch.minimum(q, self.qlimits[:, 1]), self.qlimits[:, 0])


class JointPosController(ArmController):
    """Absolute joint targets in rad; the action space is the joint limit box."""

    def __init__(self, qlimits: torch.Tensor):
        super().__init__(qlimits)
        self.action_dim = qlimits.shape[0]

    def action_bounds(self):
        return self.qlimits[:, 0].clone(), self.qlimits[:, 1].clone()

    def targets(self, action, qpos, version=None):
        return self._clamp(action)


class JointDeltaPosController(ArmController):
    """Action in [-1, 1] per joint -> target = current qpos + action * max_delta (rad)."""

    def __init__(self, qlimits: torch.Tensor, max_delta: float = 0.1):
        super().__init__(qlimits)
        self.action_dim = qlimits.shape[0]
        self.max_delta = max_delta

    def targets(self, action, qpos, version=None):
        return self._clamp(qpos + action * self.max_delta)


class EEDeltaController(ArmController):
    """End-effector delta control with one damped-least-squares IK step per control step.

    `rotation=False`: action (N, 3) in [-1, 1] -> tcp translation of up to `max_pos` m.
    `rotation=True`: action (N, 6): translation, then an axis-angle rotation of up to
    `max_rot` rad per axis, applied about the tcp, both in the robot base frame."""

    def __init__(self, qlimits: torch.Tensor, chain: SerialChain, rotation: bool,
                 max_pos: float = 0.1, max_rot: float = 0.1):
        super().__init__(qlimits)
        self.chain = chain
        self.rotation = rotation
        self.action_dim = 6 if rotation else 3
        self.max_pos, self.max_rot = max_pos, max_rot

    def targets(self, action, qpos, version=None):
        if isinstance(action, np.ndarray):
            jac = self.chain.jacobian_numpy(qpos, version)
            action, cat = action.astype(np.float64), np.concatenate
        else:
            jac = self.chain.jacobian(qpos.double(), version)[0]
            action, cat = action.double(), torch.cat
        delta_pos = action[:, :3] * self.max_pos
        if self.rotation:
            # the target orientation is exp([w]x) R: its error from R as a rotation vector
            # is w itself (|w| <= sqrt(3) max_rot < pi), so no matrix round trip is needed
            rotvec = action[:, 3:6] * self.max_rot
            step = damped_least_squares(jac, cat([delta_pos, rotvec], -1))
        else:
            step = damped_least_squares(jac[:, :3], delta_pos)
        step = step.astype(np.float32) if isinstance(step, np.ndarray) else step.float()
        return self._clamp(qpos + step)


class GripperController:
    """One action in [-1, 1] -> the same target for every gripper joint, linear between
    `closed` (-1) and `open_` (+1), in joint units (m or rad)."""

    action_dim = 1

    def __init__(self, closed: float = -0.01, open_: float = 0.04, num_fingers: int = 2):
        self.closed, self.open, self.num_fingers = closed, open_, num_fingers

    def width(self, action: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
        """(N, 1) target shared by every gripper joint, from action (N, 1), in its kind."""
        return self.closed + (action[:, :1] + 1) * 0.5 * (self.open - self.closed)

    def targets(self, action: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
        """(N, num_fingers) targets from action (N, 1); a float32 numpy action gives numpy."""
        width = self.width(action)
        if isinstance(width, np.ndarray):
            return np.repeat(width, self.num_fingers, axis=1)
        return width.expand(-1, self.num_fingers)


def make_arm_controller(control_mode: str, qlimits: torch.Tensor, chain: SerialChain, joint_delta: float = 0.1,
                        ee_max_pos: float = 0.1, ee_max_rot: float = 0.1) -> ArmController:
    """Build the arm part of `control_mode` (one of CONTROL_MODES); qlimits (arm_dof, 2)."""
    if control_mode == "pd_joint_pos":
        return JointPosController(qlimits)
    if control_mode == "pd_joint_delta_pos":
        return JointDeltaPosController(qlimits, joint_delta)
    if control_mode == "pd_ee_delta_pos":
        return EEDeltaController(qlimits, chain, rotation=False, max_pos=ee_max_pos, max_rot=ee_max_rot)
    if control_mode == "pd_ee_delta_pose":
        return EEDeltaController(qlimits, chain, rotation=True, max_pos=ee_max_pos, max_rot=ee_max_rot)
    raise ValueError(f"control_mode must be one of {CONTROL_MODES}, got {control_mode!r}")
