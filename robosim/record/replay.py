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
as many envs as were recorded, on the recording's schedule: every slot starts its first
episode at step 0 and each next one right after the previous one ends (a recorded
episode lasts until its slot is reset again), the slots that end at the same step reset
together, and a slot with no episode left idles with zero actions. The report lists the
episodes in file order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from robosim.envs import list_tasks, make_env
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
    if traj.task_id not in list_tasks():
        raise ValueError(f"trajectory task must be one of {list_tasks()}, got {traj.task_id!r} in {path!r}")
    episodes = [traj.episode(k) for k in range(len(traj))]
    batch = int(traj.attrs["num_envs"])
    per_slot: list[list[int]] = [[] for _ in range(batch)]   # episode numbers of each slot, in order
    for k, e in enumerate(episodes):
        if not 0 <= e.env_index < batch:
            raise ValueError(f"trajectory episode env_index must be in [0, {batch - 1}], got {e.env_index} in {path!r}")
        per_slot[e.env_index].append(k)
    writer = VideoWriter(video) if video is not None else None
    spec = traj.spec
    report = ReplayReport(mode=mode, isolation=spec.physics_isolation)
    env = None
    try:
        env = make_env(spec, num_envs=batch, obs_mode="none", render_mode="rgb_array" if video else None,
                       render_size=render_size, device=None)
        if env.state_dim != traj.state_dim:
            raise ValueError(f"trajectory state_dim must match {traj.task_id}'s state_dim {env.state_dim}, "
                             f"got {traj.state_dim} (recorded with another version?) in {path!r}")
        from tqdm import tqdm

        bar = tqdm(total=len(episodes), desc="replay", unit="ep", disable=not progress)
        errors, first = _replay_schedule(env, episodes, per_slot, writer, mode, bar.update)
        bar.close()
        report.episodes, report.steps = len(episodes), sum(e.length for e in episodes)
        report.max_abs_error, report.first_divergence = errors.tolist(), first.tolist()
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


def _replay_schedule(env, episodes, per_slot: list[list[int]], writer, mode: str, done) -> tuple:
    """Replay every slot's episodes back to back on the recording's schedule (module
    docstring). Returns (max abs error, first diverging step) per episode, file order."""
    n, a = env.num_envs, env.header()["action_dim"]   # a multi-robot env's flat view (robosim.envs.robots)
    errors, first = np.zeros(len(episodes)), np.full(len(episodes), -1)
    current: list[int | None] = [None] * n       # episode number running in each slot
    next_of = [0] * n
    t_of = [0] * n                               # steps done in the slot's episode

    def start(slots: list[int]) -> None:
        """Reset `slots` into their next episodes (again while an episode has 0 steps)."""
        while slots:
            ks = [per_slot[i][next_of[i]] for i in slots]
            for i in slots:
                next_of[i] += 1
            seeded = [(i, k) for i, k in zip(slots, ks) if mode == "actions" and episodes[k].seed >= 0]
            unseeded = [(i, k) for i, k in zip(slots, ks) if (i, k) not in seeded]
            if seeded:   # the same writes as when recorded
                env.reset(seed=[episodes[k].seed for _, k in seeded],
                          options={"env_idx": torch.tensor([i for i, _ in seeded])})
            if unseeded:
                idx = torch.tensor([i for i, _ in unseeded])
                env.reset(options={"env_idx": idx})
                env.set_state(torch.from_numpy(np.stack([episodes[k].states[0] for _, k in unseeded])), env_idx=idx)
            for i, k in zip(slots, ks):
                current[i], t_of[i] = k, 0
            _compare(env, episodes, [(i, k, 0) for i, k in zip(slots, ks)], errors, first)
            ended = [i for i, k in zip(slots, ks) if episodes[k].length == 0]
            _finish(ended)
            slots = [i for i in ended if next_of[i] < len(per_slot[i])]

    def _finish(slots: list[int]) -> None:
        for i in slots:
            current[i] = None
        if slots:
            done(len(slots))

    start([i for i in range(n) if per_slot[i]])
    _frame(env, writer, episodes, current, t_of)
    while any(k is not None for k in current):
        live = [(i, k) for i, k in enumerate(current) if k is not None]
        if mode == "states":
            env.set_state(torch.from_numpy(np.stack([episodes[k].states[t_of[i] + 1] for i, k in live])),
                          env_idx=torch.tensor([i for i, _ in live]))
        else:
            action = np.zeros((n, a), np.float32)
            for i, k in live:
                action[i] = episodes[k].actions[t_of[i]]
            nan_rows = np.isnan(action).all(axis=1)
            if nan_rows[[i for i, _ in live]].all():
                env.step(None)
            else:
                if nan_rows.any():  # "no control" next to control: not exact
                    action[nan_rows] = 0.0
                env.step(torch.from_numpy(action))
        for i, _ in live:
            t_of[i] += 1
        _compare(env, episodes, [(i, k, t_of[i]) for i, k in live], errors, first)
        _frame(env, writer, episodes, current, t_of)
        ended = [i for i, k in live if t_of[i] == episodes[k].length]
        _finish(ended)
        restart = [i for i in ended if next_of[i] < len(per_slot[i])]
        if restart:   # as recorded: a partial reset, then its own frame
            start(restart)
            _frame(env, writer, episodes, current, t_of)
    return errors, first


def _compare(env, episodes, rows: list[tuple[int, int, int]], errors: np.ndarray, first: np.ndarray) -> None:
    """Update episode k's max abs error with slot i's state, its step t, for each (i, k, t)."""
    state = env.get_state().cpu().numpy()
    for i, k, t in rows:
        diff = np.abs(state[i] - episodes[k].states[t])
        err = float(diff.max()) if np.isfinite(diff).all() else float("inf")   # NaN: diverged, not 0
        errors[k] = max(errors[k], err)
        if err > 0 and first[k] < 0:
            first[k] = t


def _frame(env, writer, episodes, current: list, t_of: list) -> None:
    """One tiled picture of all env slots; slots with no episode running are blanked."""
    if writer is None:
        return
    frames = env.render().clone()
    overlays = [["idle"] for _ in range(env.num_envs)]
    active = torch.zeros(env.num_envs, dtype=torch.bool)
    for i, k in enumerate(current):
        if k is None:
            continue
        e, t = episodes[k], t_of[i]
        lines = [f"env {i} step {t}"]
        if t > 0:
            lines.append(f"r {e.rewards[t - 1]:.2f}")
            if e.success[t - 1]:
                lines.append("success")
        overlays[i] = lines
        active[i] = True
    frames[~active] = 0
    writer.add_batch(frames, overlays)
