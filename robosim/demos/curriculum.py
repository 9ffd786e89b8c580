"""A reverse curriculum over demonstration states (RFCL, Tao et al. 2024): episodes
start near the end of each demonstration and move back as the learner succeeds.

    curriculum = ReverseCurriculum(starts.lengths, stride=4, window=8, threshold=0.8)
    episodes, steps = curriculum.sample(n, seed)        # where to start n episodes
    obs = starts.apply(env, env_idx, episodes, steps)    # robosim.demos.starts.DemoStarts
    ... curriculum.record(episode, success)             # when each such episode ends

Per demonstration k a start step s_k, first max(0, T_k - stride). Each ended episode
that began from demo k's current start is recorded (success: bool). Once its last
`window` records from that start reach a success rate >= `threshold`, s_k moves back by
`stride` (never below 0) and the window empties; a demo whose start is 0 and passes
again is `solved`. When every demo is solved `done` is True and learners start from
the task's own seeded initial states (sample returns no pair). The object only counts:
no env, no training, usable from any learner.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np


class ReverseCurriculum:
    """Start steps over demonstrations of `lengths` (actions per demo, T_k >= 1).
    stride >= 1 steps; window >= 1 episodes; threshold in (0, 1]."""

    def __init__(self, lengths: Sequence[int], stride: int = 4, window: int = 8, threshold: float = 0.8):
        lengths = list(lengths)
        if not lengths or any(isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 1 for t in lengths):
            raise ValueError(f"lengths must be a non-empty list of ints >= 1 (actions per demo), got {lengths!r}")
        for arg, value in (("stride", stride), ("window", window)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{arg} must be an int >= 1, got {value!r}")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
            raise ValueError(f"threshold must be a number in (0, 1], got {threshold!r}")
        self.lengths = [int(t) for t in lengths]
        self.stride, self.window, self.threshold = stride, window, float(threshold)
        self.start = [max(0, t - stride) for t in self.lengths]
        self.solved = [False] * len(lengths)
        self._results: list[deque] = [deque(maxlen=window) for _ in lengths]

    @property
    def done(self) -> bool:
        """Every demo solved from its initial state: start from the task's own resets."""
        return all(self.solved)

    def progress(self) -> float:
        """Fraction of the demos' steps the starts have moved back over (1.0 when done)."""
        moved = sum(t if s else t - start for t, start, s in zip(self.lengths, self.start, self.solved))
        return moved / sum(self.lengths)

    def sample(self, n: int, seed: int) -> tuple[list[int], list[int]]:
        """n (episode, step) pairs: demos drawn uniformly among the unsolved ones, each at its
        current start; ([], []) when done. The same seed and state give the same pairs."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n must be an int >= 0, got {n!r}")
        unsolved = [k for k, s in enumerate(self.solved) if not s]
        if not unsolved:
            return [], []
        picks = np.random.default_rng(seed).integers(0, len(unsolved), size=n)
        episodes = [unsolved[int(p)] for p in picks]
        return episodes, [self.start[k] for k in episodes]

    def record(self, episode: int, success: bool, step: int | None = None) -> None:
        """An episode begun from demo `episode` ended (success: the task's success).
        step: the start it began from (default: the current one); a result from an older
        start than the current one is ignored, so stale episodes never move the start."""
        is_int = isinstance(episode, (int, np.integer)) and not isinstance(episode, bool)
        if not is_int or not 0 <= episode < len(self.lengths):
            raise ValueError(f"episode must be an int in [0, {len(self.lengths)}), got {episode!r}")
        if self.solved[episode] or (step is not None and step != self.start[episode]):
            return
        results = self._results[episode]
        results.append(bool(success))
        if len(results) < self.window or sum(results) / self.window < self.threshold:
            return
        results.clear()
        if self.start[episode] == 0:
            self.solved[episode] = True
        else:
            self.start[episode] = max(0, self.start[episode] - self.stride)

    def state_dict(self) -> dict:
        """JSON-able state (log it, or restore with load_state_dict)."""
        return {"start": list(self.start), "solved": list(self.solved),
                "results": [list(r) for r in self._results]}

    def load_state_dict(self, state: dict) -> None:
        if len(state.get("start", ())) != len(self.lengths):
            raise ValueError(f"state must hold {len(self.lengths)} demos' starts, got {state.get('start')!r}")
        self.start = [int(s) for s in state["start"]]
        self.solved = [bool(s) for s in state["solved"]]
        self._results = [deque(map(bool, r), maxlen=self.window) for r in state["results"]]
