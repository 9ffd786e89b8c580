"""DemoRecorder: RecordEpisode that writes an ended episode only when it is wanted.

Generation and conversion both record through robosim.record's RecordEpisode (same
trajectory layout, same durable part files, same `robosim recover`); this subclass
adds what a demonstration file needs:
- `keep(episode) -> bool` decides, when an episode ends, whether it is written;
- `finish(env_idx)` ends episodes without resetting their envs;
- `start(env_idx, seeds, first_states)` begins episodes, with the recorded first state
  written back where a seeded reset does not reproduce it;
- `relabel_actions(actions)` records other actions than the executed ones for the last
  step (the clean expert action of a noisy DART step);
- running (unfinished) episodes are never written, and `abandon()` stops without
  merging: the finished episodes stay in the parts directory for `robosim recover`,
  and nothing appears under the final name.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from robosim.record.trajectory import Episode
from robosim.record.wrapper import RecordEpisode


class DemoRecorder(RecordEpisode):
    """Trajectory-only RecordEpisode over `env` writing to `path` (.h5) the ended
    episodes for which `keep(episode)` is True."""

    def __init__(self, env, path: str, keep: Callable[[Episode], bool]):
        super().__init__(env, trajectory=path)
        self.keep = keep
        self.trajectory.pending = list   # an unfinished episode is never a demonstration

    def _end_episode(self, i: int) -> None:
        run = self._running[i]
        self._running[i] = None
        if run is not None and run.actions:
            episode = run.episode()
            if self.keep(episode):
                self.trajectory.add_episode(episode)

    def finish(self, env_idx: Sequence[int]) -> None:
        """End the running episodes of env_idx (kept or dropped by `keep`); the envs are not reset."""
        for i in env_idx:
            self._end_episode(int(i))

    def start(self, env_idx: Sequence[int], seeds: Sequence[int],
              first_states: Sequence[np.ndarray] | None = None) -> None:
        """Begin an episode in each env of env_idx: a seeded reset (seed >= 0) or a plain
        one (seed < 0); where `first_states` (S,) rows are given and the reset state
        differs from one, that state is written back and recorded as the first state."""
        env_idx = [int(i) for i in env_idx]
        seeded = [(i, s) for i, s in zip(env_idx, seeds) if s >= 0]
        plain = [i for i, s in zip(env_idx, seeds) if s < 0]
        if seeded:
            self.reset(seed=[s for _, s in seeded], options={"env_idx": torch.tensor([i for i, _ in seeded])})
        if plain:
            self.reset(options={"env_idx": torch.tensor(plain)})
        if first_states is None:
            return
        state = self.env.get_state().cpu().numpy()
        differ = [(i, row) for i, row in zip(env_idx, first_states) if not np.array_equal(state[i], row)]
        if differ:
            self.env.set_state(torch.from_numpy(np.stack([row for _, row in differ])),
                               env_idx=torch.tensor([i for i, _ in differ]))
            for i, row in differ:
                self._running[i].states[0] = np.asarray(row, np.float32)

    def relabel_actions(self, actions: np.ndarray) -> None:
        """Record `actions` (N, A) as the last step's actions of the running episodes instead
        of the ones executed (DART demos: the executed action is noisy, the label is clean)."""
        for i, run in enumerate(self._running):
            if run is not None and run.actions:
                run.actions[-1] = np.asarray(actions[i], np.float32)

    def abandon(self) -> None:
        """Stop recording without a final file: finished episodes stay in the parts
        directory (`robosim recover DIR` merges them); closes the env (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self.trajectory.abandon()
        self.env.close()
