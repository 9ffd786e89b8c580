"""Batched PD controllers: map a normalized action (N, A) to joint drive targets (N, dof).

Every controller works on whole batches; the only per-env work is writing the targets
into PhysX (see `sim.views.ArticulationView.set_drive_targets`). Frames: end-effector
deltas are expressed in the robot base frame (axes of the env frame for an unrotated
base). Units: m, rad.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from robosim.agents.kinematics import SerialChain
from robosim.agents.step_math import NUMPY, StepMath, step_math

CONTROL_MODES = ("pd_joint_pos", "pd_joint_delta_pos", "pd_ee_delta_pos", "pd_ee_delta_pose")
DLS_DAMPING = 0.05   # the IK step's damping (m, rad)


def damped_least_squares(jac: torch.Tensor | np.ndarray, error: torch.Tensor | np.ndarray,
                         damping: float = DLS_DAMPING) -> torch.Tensor | np.ndarray:
    """Joint step (B, dof) that best moves the tip by `error` (B, k) given jac (B, k, dof):
    J^T (J J^T + damping^2 I)^-1 error, in jac's dtype, as numpy for numpy input and as a
    tensor on jac's device otherwise, computed by the step-math body of that device
    (robosim.agents.step_math; CPU tensors go through numpy)."""
    if isinstance(jac, np.ndarray):
        return NUMPY.damped_least_squares(jac, error, damping)
    body = step_math(jac.device)
    return body.tensor(body.damped_least_squares(body.array(jac), body.array(error), damping))


class ArmController:
    """Base class: `targets(action, qpos)` returns arm joint targets (N, arm_dof).

    A controller does its math in the step-math body it is given (NumpyBody on CPU,
    TorchBody elsewhere; robosim.agents.step_math), on that body's arrays."""

    action_dim: int

    def __init__(self, qlimits: torch.Tensor, body: StepMath):
        self.qlimits = qlimits  # (arm_dof, 2)
        self.body = body
        # contiguous (arm_dof,) bounds in the body's kind, made once
        self._low = body.array(qlimits[:, 0].contiguous())
        self._high = body.array(qlimits[:, 1].contiguous())

    def action_bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        ones = torch.ones(self.action_dim)
        return -ones, ones

    def targets(self, action: Any, qpos: Any, version: int | None = None) -> Any:
        """float32 arm joint targets (N, arm_dof) for `action` (N, action_dim) at arm
        joint positions `qpos` (N, arm_dof), all float32 arrays of the controller's body;
        `version`: the scene ReadCache version qpos was read at (lets FK reuse its last
        result, see SerialChain)."""
        raise NotImplementedError

    def _clamp(self, q: Any) -> Any:
        return self.body.clamp(q, self._low, self._high)


class JointPosController(ArmController):
    """Absolute joint targets in rad; the action space is the joint limit box."""

    def __init__(self, qlimits: torch.Tensor, body: StepMath):
        super().__init__(qlimits, body)
        self.action_dim = qlimits.shape[0]

    def action_bounds(self):
        return self.qlimits[:, 0].clone(), self.qlimits[:, 1].clone()

    def targets(self, action, qpos, version=None):
        return self._clamp(action)


class JointDeltaPosController(ArmController):
    """Action in [-1, 1] per joint -> target = current qpos + action * max_delta (rad)."""

    def __init__(self, qlimits: torch.Tensor, body: StepMath, max_delta: float = 0.1):
        super().__init__(qlimits, body)
        self.action_dim = qlimits.shape[0]
        self.max_delta = max_delta

    def targets(self, action, qpos, version=None):
        return self._clamp(qpos + action * self.max_delta)


class EEDeltaController(ArmController):
    """End-effector delta control with one damped-least-squares IK step per control step.

    `rotation=False`: action (N, 3) in [-1, 1] -> tcp translation of up to `max_pos` m.
    `rotation=True`: action (N, 6): translation, then an axis-angle rotation of up to
    `max_rot` rad per axis, applied about the tcp, both in the robot base frame."""

    def __init__(self, qlimits: torch.Tensor, body: StepMath, chain: SerialChain, rotation: bool,
                 max_pos: float = 0.1, max_rot: float = 0.1):
        super().__init__(qlimits, body)
        self.chain = chain
        self.rotation = rotation
        self.action_dim = 6 if rotation else 3
        self.max_pos, self.max_rot = max_pos, max_rot

    def targets(self, action, qpos, version=None):
        body = self.body
        jac = self.chain.jacobian_of(body.chain_values(self.chain, qpos, version, jacobian=True))
        action = body.float64(action)
        delta_pos = action[:, :3] * self.max_pos
        if self.rotation:
            # the target orientation is exp([w]x) R: its error from R as a rotation vector
            # is w itself (|w| <= sqrt(3) max_rot < pi), so no matrix round trip is needed
            rotvec = action[:, 3:6] * self.max_rot
            step = body.damped_least_squares(jac, body.cat([delta_pos, rotvec], -1), DLS_DAMPING)
        else:
            step = body.damped_least_squares(jac[:, :3], delta_pos, DLS_DAMPING)
        return self._clamp(qpos + body.float32(step))


class GripperController:
    """One action in [-1, 1] -> the same target for every gripper joint, linear between
    `closed` (-1) and `open_` (+1), in joint units (m or rad)."""

    action_dim = 1

    def __init__(self, closed: float = -0.01, open_: float = 0.04, num_fingers: int = 2):
        self.closed, self.open, self.num_fingers = closed, open_, num_fingers

    def width(self, action: Any) -> Any:
        """(N, 1) target shared by every gripper joint, from action (N, 1) (any array
        kind: plain arithmetic)."""
        return self.closed + (action[:, :1] + 1) * 0.5 * (self.open - self.closed)


class BaseVelocityController:
    """A planar base's (forward, turn) action (N, 2) in [-1, 1] -> drive targets (N, 3)
    for its (x, y, yaw) joints: the base pose one control step ahead when moving at the
    commanded speed, up to `max_forward` m along the current heading and `max_turn` rad
    (env frame). Runs on any array kind (numpy or torch: the body's)."""

    action_dim = 2

    def __init__(self, max_forward: float, max_turn: float, body: StepMath):
        self.max_forward, self.max_turn = max_forward, max_turn
        self.body = body
        self._trig = (np.cos, np.sin) if body is NUMPY else (torch.cos, torch.sin)

    def heading(self, yaw: Any) -> tuple[Any, Any]:
        """(cos, sin) of yaw (N,), in the body's array kind."""
        cos, sin = self._trig
        return cos(yaw), sin(yaw)

    def targets(self, action: Any, base_q: Any) -> Any:
        """float32 (N, 3) targets from action (N, 2) and base qpos (N, 3) [x m, y m, yaw rad]."""
        c, s = self.heading(base_q[:, 2])
        forward = action[:, 0] * self.max_forward
        step = [forward * c, forward * s, action[:, 1] * self.max_turn]
        stack = np.stack if self.body is NUMPY else torch.stack
        return self.body.float32(base_q + stack(step, 1))


def make_arm_controller(control_mode: str, qlimits: torch.Tensor, chain: SerialChain | None,
                        joint_delta: float = 0.1, ee_max_pos: float = 0.1, ee_max_rot: float = 0.1,
                        body: StepMath | None = None) -> ArmController:
    """Build the arm part of `control_mode` (one of CONTROL_MODES); qlimits (arm_dof, 2);
    `body`: the step math it runs on (default: the one of qlimits' device)."""
    body = step_math(qlimits.device) if body is None else body
    if control_mode == "pd_joint_pos":
        return JointPosController(qlimits, body)
    if control_mode == "pd_joint_delta_pos":
        return JointDeltaPosController(qlimits, body, joint_delta)
    if control_mode in ("pd_ee_delta_pos", "pd_ee_delta_pose") and chain is None:
        raise ValueError(f"chain must be the arm's SerialChain for control_mode {control_mode!r}, got None")
    if control_mode == "pd_ee_delta_pos":
        return EEDeltaController(qlimits, body, chain, rotation=False, max_pos=ee_max_pos, max_rot=ee_max_rot)
    if control_mode == "pd_ee_delta_pose":
        return EEDeltaController(qlimits, body, chain, rotation=True, max_pos=ee_max_pos, max_rot=ee_max_rot)
    raise ValueError(f"control_mode must be one of {CONTROL_MODES}, got {control_mode!r}")
