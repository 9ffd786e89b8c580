"""Control-mode conversion: re-express recorded demos in another controller.

Every recorded state holds the robot's PD drive targets (the "drive_targets" columns
of `sim.state_layout()`), so state t+1 says
exactly which joint targets the source controller commanded during step t, whatever
that controller was. `convert_demos(path, out, mode)` re-runs each episode in `mode`
from its initial state (seeded reset, physics_isolation="separate") and, closed loop,
picks each step's action from the CURRENT simulator state and the recorded target
T = arm/gripper drive targets of recorded state t+1:
  pd_joint_pos        arm action = T (the same targets: the step is the source's step)
  pd_joint_delta_pos  (T - q) / joint_delta, clipped to [-1, 1]
  pd_ee_delta_pos     the command e whose damped-least-squares IK step from q is
  pd_ee_delta_pose    closest to T - q (the controller's own Jacobian and damping,
                      inverted: ActionSolver._ee_action), / ee_max_pos and ee_max_rot
  gripper             the action whose target is T's gripper target
(q: current arm qpos; scales from the robot's controller). pd_ee_delta_pos has no
rotation command: the orientation follows where the position-only IK takes it. A delta
controller moves at most its range per step (joint_delta rad,
ee_max_pos m, ee_max_rot rad), and the source's targets can lie further ahead (an
end-effector step of 0.1 m can need 0.5 rad at a wrist joint). Such an arm action is
scaled down as a whole, keeping its direction (a per-joint clip would bend the
path), and the episode stays on that recorded target for up to MAX_WAIT more steps
before moving to the next one: the converted demo follows the same path, slower. After
the last recorded target, it is held until the episode succeeds, fails or is
truncated (max_episode_steps, as recorded). Each converted
episode that succeeds is written to `out` (robosim.record.trajectory layout, header of
the converted env, root attribute `conversion` JSON); the report lists every
episode's success and two errors between its final state and the source episode's:
  final state error   max abs difference over the whole state vector (velocities
                      included: m/s and rad/s dominate it);
  final pose error    max abs difference over body positions (m), joint positions
                      (rad or m) and body quaternions (sign-aligned).
"""
from __future__ import annotations

import inspect
import json
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from robosim.agents import CONTROL_MODES
from robosim.agents.controllers import damped_least_squares
from robosim.core.rotations import matvec3, quat_to_matrix
from robosim.demos.recorder import DemoRecorder
from robosim.demos.source import make_recording_env, read_demos
from robosim.envs.faults import StateLayout
from robosim.record.files import check_output_path
from robosim.record.trajectory import TRAJECTORY_SUFFIXES, Episode

DLS_DAMPING = inspect.signature(damped_least_squares).parameters["damping"].default   # the EE controllers'
REACH_TOL = 1e-3   # an action 0.1% beyond full scale (rounding of a full-scale source action) still reaches
MAX_WAIT = 4   # extra steps a converted episode may spend on one recorded target it cannot reach in one


@dataclass
class ConvertReport:
    """Per source episode (file order): success of the converted episode, its length,
    and its final state and pose errors (module docstring)."""

    source: str
    path: str
    from_mode: str
    to_mode: str
    success: list[bool] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    final_error: list[float] = field(default_factory=list)
    final_pose_error: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def all_succeeded(self) -> bool:
        return all(self.success)

    def summary(self) -> str:
        n, ok = len(self.success), sum(self.success)
        state, pose = np.asarray(self.final_error), np.asarray(self.final_pose_error)
        head = (f"converted {n} episodes {self.from_mode} -> {self.to_mode}: {ok}/{n} = {ok / max(n, 1):.1%} "
                f"succeed; final pose error median {np.median(pose) if n else 0:.3g} (max "
                f"{pose.max(initial=0.0):.3g}), final state error median {np.median(state) if n else 0:.3g} (max "
                f"{state.max(initial=0.0):.3g}); {self.seconds:.1f} s -> {self.path} ({ok} episodes written)")
        failed = [k for k, s in enumerate(self.success) if not s]
        return head + "".join(f"\n  episode {k}: failed (final state error {self.final_error[k]:.3g})"
                              for k in failed[:20])


class ActionSolver:
    """The action of `env`'s control mode that drives its robot (`robot`: one of
    env.robots; None: the env's one robot) toward given drive targets; reads the robot's
    block out of recorded states."""

    def __init__(self, env, robot=None):
        robot = env.robot if robot is None else robot
        self.robot, self.mode = robot, robot.control_mode
        self.targets = env.sim.state_layout()[robot.view.name]["drive_targets"]   # columns of the state row
        self.base_rot = quat_to_matrix(robot.base_quat.double())   # (3, 3) base axes -> env axes

    def action(self, target_states: np.ndarray, qpos: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(float32 (M, A) actions, bool (M,) reached): actions moving robots at qpos
        (M, dof; None: the robot's current) toward the drive targets held in target_states (M, S). Where the arm
        part needs more than the controller's range (some |component| > 1), it is
        scaled down as a whole (the direction kept, unlike a per-component clip) and
        `reached` is False: the target is not reached in this step."""
        robot, arm = self.robot, self.robot.arm
        target = torch.from_numpy(np.ascontiguousarray(target_states[:, self.targets])).float()
        qpos = (robot.view.qpos() if qpos is None else qpos).float().cpu()
        d = robot.arm_dof
        if self.mode == "pd_joint_pos":
            parts, reached = [target[:, :d]], torch.ones(len(target), dtype=torch.bool)
        else:
            if self.mode == "pd_joint_delta_pos":
                raw = (target[:, :d] - qpos[:, :d]) / arm.max_delta
            else:
                raw = self._ee_action(target[:, :d] - qpos[:, :d], qpos[:, :d])
            scale = raw.abs().amax(dim=1, keepdim=True).clamp(min=1.0)
            parts, reached = [raw / scale], scale.squeeze(1) <= 1.0 + REACH_TOL
        if robot.gripper is not None:
            g = robot.gripper
            width = target[:, d:].mean(dim=1, keepdim=True)
            parts.append(torch.clamp(2 * (width - g.closed) / (g.open - g.closed) - 1, -1.0, 1.0))
        return torch.cat(parts, dim=1), reached

    def _ee_action(self, step: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """Unclipped (M, 3 or 6) end-effector action (env axes) whose damped-least-squares
        IK step at arm qpos q (M, arm_dof) is the joint step closest to `step` (M, arm_dof).

        The controller's step is J^T (J J^T + l^2 I)^-1 e (J the base-frame Jacobian, e the
        commanded [translation m, rotation vector rad]): J^T y with y = pinv(J^T) step,
        then e = (J J^T + l^2 I) y. A step the source's own end-effector controller made
        is in the range of J^T, so e is its command (up to rounding)."""
        arm = self.robot.arm
        jac, _, _ = arm.chain.jacobian(q.double())
        if self.mode == "pd_ee_delta_pos":
            jac = jac[:, :3]
        jjt = jac @ jac.transpose(-1, -2)
        y = torch.linalg.pinv(jac.transpose(-1, -2)) @ step.double().unsqueeze(-1)
        e = ((jjt + DLS_DAMPING ** 2 * torch.eye(jjt.shape[-1], dtype=jjt.dtype)) @ y).squeeze(-1)
        blocks = [e[:, :3] / arm.max_pos] + ([e[:, 3:] / arm.max_rot] if e.shape[1] == 6 else [])
        return torch.cat([matvec3(self.base_rot.expand(len(b), 3, 3), b) for b in blocks], dim=1).float()

def check_control_mode(arg: str, mode: str) -> str:
    if mode not in CONTROL_MODES:
        raise ValueError(f"{arg} must be one of {list(CONTROL_MODES)}, got {mode!r}")
    return mode



class RobotsActionSolver:
    """An ActionSolver per robot of `env` (one for a single-robot env); `action` gives
    their actions concatenated in slot order (the flat action), reached where all are."""

    def __init__(self, env):
        self.solvers = [ActionSolver(env, robot) for robot in env.robots.values()]

    def action(self, target_states: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        parts = [solver.action(target_states) for solver in self.solvers]
        reached = torch.stack([r for _, r in parts]).all(dim=0)
        return torch.cat([a for a, _ in parts], dim=1), reached

def convert_demos(path: str, out: str, control_mode: str, progress: bool = False) -> ConvertReport:
    """Convert every episode of the trajectory at `path` to `control_mode`, writing the
    converted episodes that succeed to `out` (.h5); see the module docstring. Checks
    the mode, the whole file (robosim.demos.source.read_demos: a damaged or empty file
    is refused naming the episode and field) and the output path (ValueError naming the
    argument) before any env is built or anything written."""
    check_control_mode("to_control_mode", control_mode)
    traj, episodes = read_demos(path)
    out = check_output_path("out", out, TRAJECTORY_SUFFIXES)
    report = ConvertReport(path, out, str(traj.attrs.get("control_mode", traj.spec.control_mode)), control_mode)
    env = make_recording_env(traj, control_mode=control_mode, physics_isolation="separate", obs_mode="none")
    solver, layout = RobotsActionSolver(env), StateLayout(env.sim)
    results: dict[int, tuple[bool, int, np.ndarray]] = {}
    recorder = DemoRecorder(env, out, keep=lambda e: bool(e.success.any()))
    recorder.trajectory.header["conversion"] = json.dumps({"source": path, "from_control_mode": report.from_mode,
                                                           "to_control_mode": control_mode})
    start = time.perf_counter()
    try:
        _convert_all(recorder, solver, episodes, results, progress)
    except BaseException:
        recorder.abandon()
        raise
    recorder.close()
    report.seconds = time.perf_counter() - start
    for k, episode in enumerate(episodes):
        ok, length, final = results[k]
        report.success.append(ok)
        report.lengths.append(length)
        report.final_error.append(_max_abs(final - episode.states[-1]))
        report.final_pose_error.append(pose_error(layout, final, episode.states[-1]))
    return report


def _max_abs(diff: np.ndarray) -> float:
    """max |diff|; inf when it holds a NaN/inf (a NaN must never read as 0 error)."""
    return float(np.abs(diff).max(initial=0.0)) if np.isfinite(diff).all() else float("inf")


def pose_error(layout: StateLayout, a: np.ndarray, b: np.ndarray) -> float:
    """Max abs difference of two states (S,) over body positions, joint positions and
    body quaternions (q and -q are the same rotation: the closer sign counts)."""
    qa, qb = a[layout.quat.numpy()], b[layout.quat.numpy()]                  # (Q, 4)
    flip = np.abs(qa - qb).max(axis=1, initial=0.0) > np.abs(qa + qb).max(axis=1, initial=0.0)
    quat = np.where(flip[:, None], qa + qb, qa - qb)
    cols = np.concatenate([layout.pos.numpy().reshape(-1), layout.qpos.numpy()])
    return _max_abs(np.concatenate([a[cols] - b[cols], quat.reshape(-1)]))


def _convert_all(recorder: DemoRecorder, solver: ActionSolver, episodes: list[Episode],
                 results: dict[int, tuple[bool, int, np.ndarray]], progress: bool) -> None:
    """Run the episodes, each in the env slot that recorded it (in file order per slot)."""
    from tqdm import tqdm

    env = recorder.env
    n = env.num_envs
    queue = [[k for k, e in enumerate(episodes) if e.env_index == i] for i in range(n)]
    current: list[int | None] = [None] * n
    steps = [0] * n      # converted steps of the slot's episode
    source = [0] * n     # the recorded step whose target the slot drives toward
    waited = [0] * n     # steps spent on that target so far
    success = [False] * n

    def begin(slots: list[int]) -> None:
        slots = [i for i in slots if queue[i]]
        for i in slots:
            current[i], steps[i], source[i], waited[i], success[i] = queue[i].pop(0), 0, 0, 0, False
        if slots:
            recorder.start(slots, [episodes[current[i]].seed for i in slots],
                           [episodes[current[i]].states[0] for i in slots])

    begin(list(range(n)))
    with tqdm(total=len(episodes), desc="convert", unit="ep", disable=not progress) as bar:
        while any(k is not None for k in current):
            # an idle slot's target is where it already is
            now = env.get_state().cpu().numpy() if None in current else None
            rows = np.stack([episodes[k].states[min(source[i] + 1, episodes[k].length)] if k is not None
                             else now[i] for i, k in enumerate(current)])
            action, reached = solver.action(rows)
            _, _, terminated, truncated, info = recorder.step(action)
            ended = (terminated | truncated).cpu()
            won = info["success"].cpu()
            done = []
            for i, k in enumerate(current):
                if k is None:
                    continue
                steps[i] += 1
                waited[i] += 1
                if bool(reached[i]) or waited[i] > MAX_WAIT:   # next recorded target (time stretched)
                    source[i], waited[i] = source[i] + 1, 0
                success[i] = success[i] or bool(won[i])
                if ended[i]:
                    done.append(i)
            if not done:
                continue
            final = env.get_state().cpu().numpy()
            for i in done:
                results[current[i]] = (success[i], steps[i], final[i])
                current[i] = None
            recorder.finish(done)
            bar.update(len(done))
            begin(done)
