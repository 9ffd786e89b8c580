"""Control-mode conversion: re-express recorded demos in another controller.

Every recorded state holds the robot's PD drive targets (robosim.sim.views:
ArticulationView state = root pose, qpos, qvel, drive targets), so state t+1 says
exactly which joint targets the source controller commanded during step t, whatever
that controller was. `convert_demos(path, out, mode)` re-runs each episode in `mode`
from its initial state (seeded reset, physics_isolation="separate") and, closed loop,
picks each step's action from the CURRENT simulator state and the recorded target
T = arm/gripper drive targets of recorded state t+1:
  pd_joint_pos        arm action = T (the same targets: the step is the source's step)
  pd_joint_delta_pos  (T - q) / joint_delta, clipped to [-1, 1]
  pd_ee_delta_pos     (FK(T).pos - FK(q).pos) / ee_max_pos, clipped
  pd_ee_delta_pose    that, then rotation_log(R(T) R(q)^T) / ee_max_rot, clipped
  gripper             the action whose target is T's gripper target
(q: current arm qpos; FK: tcp pose in the env frame; scales from the robot's
controller). After the recorded T steps the last target is held until the episode
succeeds, fails or is truncated (max_episode_steps, as recorded). Each converted
episode that succeeds is written to `out` (robosim.record.trajectory layout, header of
the converted env, root attribute `conversion` JSON); the report lists every
episode's success and two errors between its final state and the source episode's:
  final state error   max abs difference over the whole state vector (velocities
                      included: m/s and rad/s dominate it);
  final pose error    max abs difference over body positions (m), joint positions
                      (rad or m) and body quaternions (sign-aligned).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import numpy as np
import torch

import robosim
from robosim.agents import CONTROL_MODES
from robosim.agents.kinematics import matmul3, quat_to_matrix, rotation_log
from robosim.demos.recorder import DemoRecorder
from robosim.envs.faults import StateLayout
from robosim.record.files import check_output_path
from robosim.record.trajectory import TRAJECTORY_SUFFIXES, Episode, TrajectoryFile

POSE_DIM = 7   # [x, y, z, qw, qx, qy, qz] root pose at the start of an articulation's state block


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
    """The action of `env`'s control mode that drives its robot toward given drive
    targets; reads the robot's block out of recorded states."""

    def __init__(self, env):
        robot = env.robot
        self.robot, self.mode = robot, env.control_mode
        start = 0
        for view in env.sim.articulations.values():   # state order: articulations first, in build order
            if view is robot.view:
                break
            start += view.state_dim
        dof = robot.dof
        self.targets = slice(start + POSE_DIM + 2 * dof, start + POSE_DIM + 3 * dof)

    def action(self, target_states: np.ndarray, qpos: torch.Tensor) -> torch.Tensor:
        """float32 (M, A) actions moving robots at qpos (M, dof) toward the drive targets
        held in target_states (M, S)."""
        robot, arm = self.robot, self.robot.arm
        target = torch.from_numpy(np.ascontiguousarray(target_states[:, self.targets])).float()
        qpos = qpos.float().cpu()
        d = robot.arm_dof
        if self.mode == "pd_joint_pos":
            parts = [target[:, :d]]
        elif self.mode == "pd_joint_delta_pos":
            parts = [torch.clamp((target[:, :d] - qpos[:, :d]) / arm.max_delta, -1.0, 1.0)]
        else:
            now, goal = robot.tcp_pose(qpos), robot.tcp_pose(target)
            parts = [torch.clamp((goal[:, :3] - now[:, :3]) / arm.max_pos, -1.0, 1.0)]
            if self.mode == "pd_ee_delta_pose":
                r_now, r_goal = quat_to_matrix(now[:, 3:].double()), quat_to_matrix(goal[:, 3:].double())
                rot = rotation_log(matmul3(r_goal, r_now.transpose(-1, -2))).float()
                parts.append(torch.clamp(rot / arm.max_rot, -1.0, 1.0))
        if robot.gripper is not None:
            g = robot.gripper
            width = target[:, d:].mean(dim=1, keepdim=True)
            parts.append(torch.clamp(2 * (width - g.closed) / (g.open - g.closed) - 1, -1.0, 1.0))
        return torch.cat(parts, dim=1)


def check_control_mode(arg: str, mode: str) -> str:
    if mode not in CONTROL_MODES:
        raise ValueError(f"{arg} must be one of {list(CONTROL_MODES)}, got {mode!r}")
    return mode


def convert_demos(path: str, out: str, control_mode: str, progress: bool = False) -> ConvertReport:
    """Convert every episode of the trajectory at `path` to `control_mode`, writing the
    converted episodes that succeed to `out` (.h5); see the module docstring. Checks
    the file, the mode and the output path (ValueError naming the argument) before any
    env is built."""
    check_control_mode("to_control_mode", control_mode)
    traj = TrajectoryFile(path, arg="TRAJ")
    if traj.task_id not in robosim.list_tasks():
        raise ValueError(f"TRAJ must be recorded on a registered task, one of {robosim.list_tasks()}, "
                         f"got {traj.task_id!r} in {path!r}")
    out = check_output_path("out", out, TRAJECTORY_SUFFIXES)
    episodes = [traj.episode(k) for k in range(len(traj))]
    kwargs = {**traj.env_kwargs, "control_mode": control_mode, "physics_isolation": "separate", "obs_mode": "none"}
    report = ConvertReport(path, out, str(traj.env_kwargs.get("control_mode")), control_mode)
    # as many envs as recorded, each episode in its recorded slot: env i's assets come from its build seed
    env = robosim.make(traj.task_id, num_envs=traj.num_envs, **kwargs)
    if env.state_dim != traj.state_dim:
        env.close()
        raise ValueError(f"TRAJ state_dim must match {traj.task_id}'s state_dim {env.state_dim}, got "
                         f"{traj.state_dim} in {path!r}")
    solver, layout = ActionSolver(env), StateLayout(env.sim)
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
    t_of = [0] * n
    success = [False] * n

    def begin(slots: list[int]) -> None:
        slots = [i for i in slots if queue[i]]
        for i in slots:
            current[i], t_of[i], success[i] = queue[i].pop(0), 0, False
        if slots:
            recorder.start(slots, [episodes[current[i]].seed for i in slots],
                           [episodes[current[i]].states[0] for i in slots])

    begin(list(range(n)))
    with tqdm(total=len(episodes), desc="convert", unit="ep", disable=not progress) as bar:
        while any(k is not None for k in current):
            # an idle slot's target is where it already is
            now = env.get_state().cpu().numpy() if None in current else None
            rows = np.stack([episodes[k].states[min(t_of[i] + 1, episodes[k].length)] if k is not None
                             else now[i] for i, k in enumerate(current)])
            action = solver.action(rows, env.robot.view.qpos())
            _, _, terminated, truncated, info = recorder.step(action)
            ended = (terminated | truncated).cpu()
            won = info["success"].cpu()
            done = []
            for i, k in enumerate(current):
                if k is None:
                    continue
                t_of[i] += 1
                success[i] = success[i] or bool(won[i])
                if ended[i]:
                    done.append(i)
            if not done:
                continue
            final = env.get_state().cpu().numpy()
            for i in done:
                results[current[i]] = (success[i], t_of[i], final[i])
                current[i] = None
            recorder.finish(done)
            bar.update(len(done))
            begin(done)

