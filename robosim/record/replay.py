"""Replay a trajectory file, re-render it, and report how far the replay is from it.

Two modes:
- "states": every recorded state is written back with set_state and rendered. The
  replayed states are the recorded ones by construction (error 0 means the state
  round-trips through set_state/get_state bit-exactly); use it for videos.
- "actions": each episode is re-simulated: its env slot is reset (with the recorded
  seed, else set_state of the first recorded state), then its actions are applied, and
  every replayed state is compared with the recorded one. The report gives each
  episode's first diverging step and max abs error.
  What makes a re-simulation exact (measured, SAPIEN 3.0.3 PhysX CPU): PhysX keeps
  articulation state that get_state cannot read (set_qacc and PhysxCpuSystem.pack /
  unpack do not restore it either); any write (reset, set_state) re-initializes it, so
  two runs from the same write and the same actions match bit for bit. An episode that
  started with a seeded reset therefore replays exactly as long as nothing else
  reaches its physics: guaranteed with physics_isolation="separate"; in the default
  shared system other envs' sleeping and contacts can change it in the last bits, and
  contacts amplify that (docs/reliability.md has the measurements).
Each episode is replayed in the env slot that recorded it (`env_index`), in a batch of
as many envs as were recorded; round r replays the r-th recorded episode of every slot.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

import robosim
from robosim.record.trajectory import TrajectoryFile
from robosim.record.video import VideoWriter


REPLAY_MODES = ("actions", "states")


@dataclass
class ReplayReport:
    """mode: "actions" | "states"; max_abs_error[k]: max |replayed - recorded| over episode k's states (float32 units:
    m, rad, m/s, ...), inf when a recorded or replayed state holds a NaN/inf (never "exact");
    first_divergence[k]: first step with any difference (or a non-finite value), or -1."""

    mode: str = "actions"
    isolation: str = "shared"
    episodes: int = 0
    steps: int = 0
    max_abs_error: list[float] = field(default_factory=list)
    first_divergence: list[int] = field(default_factory=list)

    @property
    def worst(self) -> float:
        """The largest error; inf if any is inf or NaN (max() would skip a NaN)."""
        errors = np.asarray(self.max_abs_error, dtype=np.float64)
        if errors.size and not np.isfinite(errors).all():
            return float("inf")
        return float(errors.max(initial=0.0))

    @property
    def exact(self) -> bool:
        return self.worst == 0.0 and all(s < 0 for s in self.first_divergence)

    def summary(self) -> str:
        diverged = [k for k, s in enumerate(self.first_divergence) if s >= 0]
        head = (f"replayed {self.episodes} episodes, {self.steps} steps by {self.mode}: max abs state error "
                f"{self.worst:.3g}" + (" (exact)" if self.exact else
                                       f", {len(diverged)} of {self.episodes} episodes diverge"))
        if not diverged:
            return head
        lines = [head]
        if self.mode == "actions" and self.isolation == "shared":
            lines.append("  (recorded with physics_isolation='shared': envs that share one PhysX system "
                         "influence each other, so a re-simulation differs once the batch around an episode "
                         "differs; record with --physics-isolation separate for an exact replay, or replay "
                         "--mode states)")
        lines += [f"  episode {k}: first differs at step {self.first_divergence[k]}, max abs error "
                  f"{self.max_abs_error[k]:.3g}" for k in diverged[:20]]
        return "\n".join(lines)


def replay(path: str, video: str | None = None, render_size=(256, 256),
           task_id: str | None = None, progress: bool = False, mode: str = "actions") -> ReplayReport:
    """Replay every episode of the trajectory at `path`; write a video when `video` is set.

    Validates the file (format, version, task, every episode's fields) and the video
    path before building any env. task_id: require the file to be a recording of this
    task. mode: "actions" (re-simulate) or "states" (re-render recorded states)."""
    if mode not in REPLAY_MODES:
        raise ValueError(f"mode must be one of {list(REPLAY_MODES)}, got {mode!r}")
    traj = TrajectoryFile(path, task_id=task_id)
    if traj.task_id not in robosim.list_tasks():
        raise ValueError(f"trajectory task must be one of {robosim.list_tasks()}, got {traj.task_id!r} in {path!r}")
    episodes = [traj.episode(k) for k in range(len(traj))]
    batch = int(traj.attrs["num_envs"])
    rounds: list[list] = []
    per_slot = [0] * batch
    for e in episodes:
        if not 0 <= e.env_index < batch:
            raise ValueError(f"trajectory episode env_index must be in [0, {batch - 1}], got {e.env_index} in {path!r}")
        if per_slot[e.env_index] == len(rounds):
            rounds.append([])
        rounds[per_slot[e.env_index]].append(e)
        per_slot[e.env_index] += 1
    writer = VideoWriter(video) if video is not None else None
    report = ReplayReport(mode=mode, isolation=str(traj.env_kwargs.get("physics_isolation", "shared")))
    env = None
    try:
        env = robosim.make(traj.task_id, num_envs=batch, render_mode="rgb_array" if video else None,
                           render_size=render_size, **traj.env_kwargs)
        if env.state_dim != traj.state_dim:
            raise ValueError(f"trajectory state_dim must match {traj.task_id}'s state_dim {env.state_dim}, "
                             f"got {traj.state_dim} (recorded with another version?) in {path!r}")
        from tqdm import tqdm

        bar = tqdm(total=len(episodes), desc="replay", unit="ep", disable=not progress)
        for episodes_of_round in rounds:
            _replay_round(env, episodes_of_round, writer, report, mode)
            bar.update(len(episodes_of_round))
        bar.close()
    except Exception:   # an error discards the video; Ctrl-C/SIGTERM keep what was rendered (finally)
        if writer is not None:
            writer.discard()
            writer = None
        raise
    finally:
        if writer is not None:
            writer.close()
        if env is not None:
            env.close()
    return report


def _replay_round(env, episodes, writer, report: ReplayReport, mode: str) -> None:
    """Replay episodes (at most one per env slot) side by side, each in its own slot."""
    n, m = env.num_envs, len(episodes)
    slots = [e.env_index for e in episodes]
    idx = torch.tensor(slots)
    seeds = [e.seed for e in episodes]
    if mode == "actions" and min(seeds) >= 0:
        env.reset(seed=seeds, options={"env_idx": idx})   # the same writes as when recorded
    else:
        env.reset(options={"env_idx": idx})
        env.set_state(torch.from_numpy(np.stack([e.states[0] for e in episodes])), env_idx=idx)
    errors = np.zeros(m)
    first = np.full(m, -1)
    _compare(env, episodes, 0, errors, first)
    _frame(env, writer, episodes, 0)
    a = env.single_action_space.shape[0]
    for t in range(max(e.length for e in episodes)):
        if mode == "states":
            live = [e for e in episodes if t < e.length]
            env.set_state(torch.from_numpy(np.stack([e.states[t + 1] for e in live])),
                          env_idx=torch.tensor([e.env_index for e in live]))
        else:
            action = np.zeros((n, a), np.float32)
            for e in episodes:
                if t < e.length:
                    action[e.env_index] = e.actions[t]
            nan_rows = np.isnan(action).all(axis=1)
            if nan_rows[slots].all():
                env.step(None)
            else:
                if nan_rows.any():  # "no control" next to control (mixed rounds): not exact
                    action[nan_rows] = 0.0
                env.step(torch.from_numpy(action))
        _compare(env, episodes, t + 1, errors, first)
        _frame(env, writer, episodes, t + 1)
    report.episodes += m
    report.steps += sum(e.length for e in episodes)
    report.max_abs_error.extend(errors.tolist())
    report.first_divergence.extend(first.tolist())


def _compare(env, episodes, t: int, errors: np.ndarray, first: np.ndarray) -> None:
    """Update each episode's max abs error with its state at step t (if it lasts that long)."""
    state = env.get_state().cpu().numpy()
    for j, e in enumerate(episodes):
        if t <= e.length:
            diff = np.abs(state[e.env_index] - e.states[t])
            err = float(diff.max()) if np.isfinite(diff).all() else float("inf")   # NaN: diverged, not 0
            errors[j] = max(errors[j], err)
            if err > 0 and first[j] < 0:
                first[j] = t


def _frame(env, writer, episodes, t: int) -> None:
    """One tiled picture of all env slots; slots idle in this round are blanked."""
    if writer is None:
        return
    frames = env.render().clone()
    overlays = [["idle"] for _ in range(env.num_envs)]
    active = torch.zeros(env.num_envs, dtype=torch.bool)
    for e in episodes:
        k = min(t, e.length)
        lines = [f"env {e.env_index} step {k}"]
        if k > 0:
            lines.append(f"r {e.rewards[k - 1]:.2f}")
            if e.success[k - 1]:
                lines.append("success")
        overlays[e.env_index] = lines
        active[e.env_index] = True
    frames[~active] = 0
    writer.add_batch(frames, overlays)
