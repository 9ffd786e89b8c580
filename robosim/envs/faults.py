"""Per-env fault detection and containment, and validation of states written from outside.

After every control step's physics `FaultMonitor.after_control_step()` checks each env's physics state
(one batched pass over the (N, S) tensor the step reads anyway) for:
  1 NON_FINITE   a NaN/inf anywhere in the state
  2 RUNAWAY      a linear speed above MAX_LINEAR_SPEED m/s, an angular speed above
                 MAX_ANGULAR_SPEED rad/s or a joint speed above MAX_JOINT_SPEED
  3 OUTSIDE_CELL a body's position outside its env's cell (|x|, |y| > CELL_HALF m or
                 z outside [-CELL_HALF, CELL_HEIGHT] m, env frame)
On the CPU backends a faulted env gets its last valid physics state back (the state it had after the last
step that passed the check, or after its reset / set_state) before anything else runs;
when that restored state faults again on the very next step (its own momentum carries
it out: the env would repeat the fault forever), the env gets it back with every
velocity set to zero, so it moves on from rest,
and the step reports info["sim_fault"] (int8 (N,) code, FAULT_NAMES[code] names it) and
info["fail"] True for it. With physics_isolation="separate" nothing of a faulted env can
reach the others. When the physics state lives on a GPU (physx_cuda, or physx_gpu_emulated with
sim_device='cuda') faults are reported (sim_fault, fail), not restored.
In the shared system a fault that arises inside a control step can
reach other envs during that step's remaining substeps (PhysX steps them together).

`check_state` refuses, before anything is written, a state with a non-finite value, a
quaternion whose norm is not 1 (within QUAT_NORM_TOL), joint positions outside the
limits by more than JOINT_LIMIT_MARGIN, speeds above the runaway limits, or a
position outside the cell.
"""
from __future__ import annotations

import numpy as np
import torch

from robosim.sim.layout import GRID_SPACING
from robosim.sim.pose_input import QUAT_NORM_TOL

NONE, NON_FINITE, RUNAWAY, OUTSIDE_CELL = 0, 1, 2, 3
FAULT_NAMES = ("none", "non-finite state", "runaway velocity", "body outside its cell")
MAX_LINEAR_SPEED = 50.0      # m/s
MAX_ANGULAR_SPEED = 500.0    # rad/s
MAX_JOINT_SPEED = 100.0      # rad/s or m/s
CELL_HALF = GRID_SPACING / 2  # m
CELL_HEIGHT = 3.0            # m
JOINT_LIMIT_MARGIN = 0.1     # rad or m


class StateLayout:
    """Column indices of the physics state (N, S) of a SimScene, from its named columns
    (`sim.state_layout()`): positions (K, 3), quaternions (Q, 4), linear / angular
    velocities (3 each) and joint blocks."""

    def __init__(self, sim):
        pos, quat, lin, ang, qpos, qvel, low, high = [], [], [], [], [], [], [], []
        columns = sim.state_layout()
        start = 0
        for view in sim._views():
            cols = columns[view.name]
            pose = cols.get("pose", cols.get("root_pose"))
            pos.append(list(range(pose.start, pose.start + 3)))
            quat.append(list(range(pose.start + 3, pose.stop)))
            if "qpos" in cols:                       # articulation: root pose, qpos, qvel, targets
                qpos += range(cols["qpos"].start, cols["qpos"].stop)
                qvel += range(cols["qvel"].start, cols["qvel"].stop)
                limits = view.qlimits_per_env()      # (N, dof, 2)
                low.append(limits[..., 0])
                high.append(limits[..., 1])
            elif "velocity" in cols:                 # dynamic actor: linear, angular velocity
                v = cols["velocity"].start
                lin.append(list(range(v, v + 3)))
                ang.append(list(range(v + 3, v + 6)))
            start += view.state_dim
        self.state_dim = start
        self.names = [view.name for view in sim._views()]
        self.pos, self.lin, self.ang = (torch.tensor(rows, dtype=torch.long).reshape(len(rows), 3)
                                        for rows in (pos, lin, ang))
        self.quat = torch.tensor(quat, dtype=torch.long).reshape(len(quat), 4)
        self.qpos, self.qvel = torch.tensor(qpos, dtype=torch.long), torch.tensor(qvel, dtype=torch.long)
        self.velocities = torch.cat([self.lin.reshape(-1), self.ang.reshape(-1), self.qvel])   # every speed column
        n = sim.num_envs
        self.qlow = torch.cat(low, dim=1) if low else torch.zeros(n, 0)
        self.qhigh = torch.cat(high, dim=1) if high else torch.zeros(n, 0)
        # per-column bounds of a cheap first pass: every row that `faults` would flag has an
        # entry above its bound (|v| > M / sqrt(3) in some component when |v| > M; |z| >
        # CELL_HALF when z leaves [-CELL_HALF, CELL_HEIGHT]) or a non-finite entry
        bound = torch.full((self.state_dim,), torch.finfo(torch.float32).max)
        bound[self.pos.reshape(-1)] = CELL_HALF
        bound[self.lin.reshape(-1)] = MAX_LINEAR_SPEED / 3 ** 0.5
        bound[self.ang.reshape(-1)] = MAX_ANGULAR_SPEED / 3 ** 0.5
        bound[self.qvel] = MAX_JOINT_SPEED
        self._bound_np = bound.numpy()
        self._scratch: tuple[np.ndarray, np.ndarray] | None = None   # all_clear's |state| and verdicts
        # index and limit tensors live where the state does: indexing a device tensor
        # with CPU indices would copy them to the device (a host sync) on every step
        self.device = sim.device
        for name in ("pos", "lin", "ang", "quat", "qpos", "qvel", "velocities", "qlow", "qhigh"):
            setattr(self, name, getattr(self, name).to(self.device))

    def all_clear(self, state: torch.Tensor) -> bool:
        """True when no row of a CPU state (N, S) can have a fault (every entry finite
        and within its first-pass bound; one numpy pass); False on other devices."""
        if state.device.type != "cpu":
            return False
        values = (state.detach() if state.requires_grad else state).numpy()
        scratch = self._scratch
        if scratch is None or scratch[0].shape != values.shape:   # kept buffers: no allocation per step
            scratch = self._scratch = (np.empty(values.shape, np.float32), np.empty(values.shape, bool))
        return bool(np.less_equal(np.abs(values, out=scratch[0]), self._bound_np, out=scratch[1]).all())

    def faults(self, state: torch.Tensor) -> torch.Tensor:
        """int8 (N,) fault code of each row of a physics state (N, S) (0: none)."""
        code = torch.zeros(state.shape[0], dtype=torch.int8, device=state.device)
        if self.all_clear(state):
            return code     # the common case: one cheap pass in numpy (a GPU takes the full pass: no sync)
        speed = torch.zeros(state.shape[0], dtype=torch.bool, device=state.device)
        if self.lin.numel():
            speed |= (state[:, self.lin].norm(dim=2) > MAX_LINEAR_SPEED).any(dim=1)
            speed |= (state[:, self.ang].norm(dim=2) > MAX_ANGULAR_SPEED).any(dim=1)
        if self.qvel.numel():
            speed |= (state[:, self.qvel].abs() > MAX_JOINT_SPEED).any(dim=1)
        p = state[:, self.pos]
        outside = ((p[..., :2].abs() > CELL_HALF).any(dim=2) | (p[..., 2] < -CELL_HALF)
                   | (p[..., 2] > CELL_HEIGHT)).any(dim=1)
        code[outside] = OUTSIDE_CELL
        code[speed] = RUNAWAY
        code[~torch.isfinite(state).all(dim=1)] = NON_FINITE
        return code


def check_state(layout: StateLayout, state: torch.Tensor, env_idx: torch.Tensor) -> None:
    """Raise ValueError naming the first absurd entry of `state` (M, S) for env_idx
    (either on any device: checked where the layout lives)."""
    state, env_idx = state.to(layout.device), env_idx.to(layout.device)
    norms = state[:, layout.quat].norm(dim=2)
    bad = ((norms - 1).abs() > QUAT_NORM_TOL).nonzero()
    if len(bad):
        r, k = bad[0].tolist()
        raise ValueError(f"state row {r} ({layout.names[k]}) must hold a unit quaternion (norm within "
                         f"{QUAT_NORM_TOL} of 1), got norm {float(norms[r, k]):.6g}")
    if layout.qpos.numel():
        q = state[:, layout.qpos]
        low, high = layout.qlow[env_idx] - JOINT_LIMIT_MARGIN, layout.qhigh[env_idx] + JOINT_LIMIT_MARGIN
        bad = ((q < low) | (q > high)).nonzero()
        if len(bad):
            r, j = bad[0].tolist()
            raise ValueError(f"state row {r} joint position {j} must be within its limits "
                             f"[{float(low[r, j]):.4g}, {float(high[r, j]):.4g}] (margin {JOINT_LIMIT_MARGIN}), "
                             f"got {float(q[r, j]):.6g}")
    code = layout.faults(state)
    if (code > 0).any():
        r = int((code > 0).nonzero()[0])
        raise ValueError(f"state row {r} must describe a valid physical state, got {FAULT_NAMES[int(code[r])]} "
                         f"(speeds must stay below {MAX_LINEAR_SPEED} m/s, {MAX_ANGULAR_SPEED} rad/s and "
                         f"{MAX_JOINT_SPEED} per joint; positions within +-{CELL_HALF} m in x and y and "
                         f"[-{CELL_HALF}, {CELL_HEIGHT}] m in z of the env frame)")


class FaultMonitor:
    """Checks a SimScene after each control step and restores faulted envs (see module).

    A subscriber of BaseEnv.step's schedule, first at both points: `before_control_step`
    runs before anything else touches the step (interval events, the task's hook), so
    the state it keeps after a reset or set_state is that state; `after_control_step()`
    runs first after the physics and leaves the step's fault codes in `fault`."""

    def __init__(self, sim, layout: StateLayout):
        self.sim = sim
        self.layout = layout
        self.fault = torch.zeros(sim.num_envs, dtype=torch.int8, device=sim.device)   # int8 (N,), last step
        self.any_fault = False   # False: `fault` is all zero for sure (True: it may hold codes)
        self._valid: torch.Tensor | None = None   # (N, S) last valid physics state
        self._faulted: torch.Tensor | None = None  # bool (N,): faulted on the last step
        self.faults_seen = 0

    def states_written(self, env_idx: torch.Tensor | None = None, source: str | None = None) -> None:
        """Call after reset / set_state: the next step re-reads the valid state. With
        `source` (the task hook that wrote env_idx), raise RuntimeError naming it when
        what it wrote is already a fault."""
        self._valid = None
        self._faulted = None
        if source is not None:
            code = self.layout.faults(self.sim.get_state())[env_idx]
            if (code > 0).any():
                bad = env_idx[code > 0].tolist()
                raise RuntimeError(f"{source} wrote an invalid state for envs {bad}: "
                                   f"{FAULT_NAMES[int(code[code > 0][0])]}")

    def before_control_step(self, action: torch.Tensor | None) -> None:
        """Keep the valid state to restore from (the first step after a write reads it)."""
        if self._valid is None and self.sim.device.type == "cpu":
            self._valid = self.sim.get_state().clone()

    def after_control_step(self) -> None:
        """Set `fault`, the int8 (N,) fault codes of this step; on the CPU backend faulted
        envs are restored before this returns. On physx_cuda faults are reported only:
        deciding to restore would make the host wait for the GPU every step."""
        state = self.sim.get_state()
        if self.layout.all_clear(state):    # the common case on CPU: nothing to restore
            self.fault = torch.from_numpy(np.zeros(state.shape[0], dtype=np.int8))   # CPU only: cheaper
            self.any_fault = False
            self._faulted = None
            self._valid = state
            return
        code = self.layout.faults(state)
        self.fault = code
        self.any_fault = True       # may be (a GPU state is not inspected on the host)
        if state.device.type != "cpu":
            return
        bad = code > 0
        if bad.any():
            idx = bad.nonzero().flatten()
            restored = self._valid[idx].clone()
            if self._faulted is not None:        # restored last step and faulted again: from rest
                again = self._faulted[idx]
                restored[again.nonzero().flatten()[:, None], self.layout.velocities] = 0.0
            self.sim.set_state(restored, idx.to(self.sim.device))
            state = state.clone()
            state[idx] = restored
            self.faults_seen += len(idx)
        self._faulted = bad
        self._valid = state
