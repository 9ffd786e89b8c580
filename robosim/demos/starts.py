"""Episode starts from demonstration states: reset chosen envs, then write the state a
demonstration had at (episode, step) into them.

    starts = DemoStarts("runs/pick100.h5")
    env = robosim.make("PickCube-v1", num_envs=8, physics_isolation="separate")
    obs = starts.apply(env, env_idx=[0, 3], episodes=[4, 4], steps=[30, 12])

`apply` resets each env of env_idx with its demonstration's seed (so per-episode
randomization draws what the demo drew; elapsed_steps restarts at 0: the whole
episode budget is left), then `env.set_state(state, env_idx)` writes the recorded
state and returns `env.unwrapped.observe()`'s observations of it (BaseEnv.observe: as
reset builds them, declared observation noise included, nothing stepped). The env's
`get_state()` then equals the recorded state bit for bit. The physics
continues from there exactly as a fresh episode does with `physics_isolation="separate"`
(set_state starts the env's PhysX system afresh); from step 0 the demo's actions
reproduce its states bit for bit, from a later step they do not: PhysX's contact
cache of the recorded run is not part of the state (tests/demos/test_starts.py
measures it). The env must be the recording's task with the same state size (and, for
tasks that randomize assets, assets like the recording's slot).

`choose(n, seed)` draws (episode, step) pairs: episodes uniformly, steps uniformly in
each episode's [0, T], from a numpy generator seeded with `seed` alone.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from robosim.demos.source import read_demos
from robosim.envs.registry import get_task
from robosim.record.trajectory import Episode


class DemoStarts:
    """The recorded states of a demos file (robosim demos generate, RecordEpisode) as
    episode starts. `source`: a trajectory path. ValueError naming `arg` for a file
    that is not a readable trajectory of a registered task with seeded episodes."""

    def __init__(self, source: str, arg: str = "demos"):
        traj, episodes = read_demos(source, arg)
        unseeded = [k for k, e in enumerate(episodes) if e.seed < 0]
        if unseeded:
            raise ValueError(f"{arg} episodes must have seeds (each start resets with its demo's seed), got seed -1 "
                             f"in episodes {unseeded[:5]} of {source!r}")
        self.path = source
        self.task_id: str = traj.task_id
        self.state_dim: int = traj.state_dim
        self.episodes: list[Episode] = episodes

    def __len__(self) -> int:
        return len(self.episodes)

    @property
    def lengths(self) -> list[int]:
        """Actions per episode T_k: steps run over 0..T_k (T_k is the final state)."""
        return [e.length for e in self.episodes]

    @property
    def seeds(self) -> list[int]:
        """Each episode's reset seed."""
        return [e.seed for e in self.episodes]

    def state(self, episode: int, step: int) -> np.ndarray:
        """float32 (state_dim,): the state of `episode` after `step` actions (0: after reset)."""
        self._check_pair("episode", "step", episode, step)
        return self.episodes[episode].states[step]

    def choose(self, n: int, seed: int) -> tuple[list[int], list[int]]:
        """n (episode, step) pairs as two lists: episodes uniform, steps uniform in [0, T_k];
        the same seed gives the same pairs."""
        _check_int("n", n, 1)
        _check_int("seed", seed, 0)
        rng = np.random.default_rng(seed)
        episodes = rng.integers(0, len(self), size=n).tolist()
        steps = [int(rng.integers(0, self.episodes[k].length + 1)) for k in episodes]
        return episodes, steps

    def apply(self, env: Any, env_idx: Sequence[int], episodes: Sequence[int], steps: Sequence[int]) -> Any:
        """Reset env_idx[j] with episode episodes[j]'s seed and write its state after
        steps[j] actions; returns the observations of all N envs (only env_idx's are new).
        Everything is checked (ValueError naming the argument) before any env changes."""
        idx = [_check_int("env_idx", i, 0) for i in env_idx]
        if len(set(idx)) != len(idx) or any(i >= env.num_envs for i in idx):
            raise ValueError(f"env_idx must be distinct indices in [0, {env.num_envs}), got {list(env_idx)}")
        if not len(episodes) == len(steps) == len(idx):
            raise ValueError(f"episodes and steps must have one entry per env_idx ({len(idx)}), got "
                             f"{len(episodes)} and {len(steps)}")
        for k, t in zip(episodes, steps):
            self._check_pair("episodes", "steps", k, t)
        if type(env.unwrapped.task) is not get_task(self.task_id) or env.state_dim != self.state_dim:
            raise ValueError(f"env must be a {self.task_id} env with state_dim {self.state_dim} (the demos'), got "
                             f"{type(env.unwrapped.task).__name__} with state_dim {env.state_dim}")
        if not idx:
            raise ValueError("env_idx must name at least one env, got []")
        index = torch.tensor(idx)
        env.reset(seed=[self.episodes[k].seed for k in episodes], options={"env_idx": index})
        env.set_state(torch.from_numpy(np.stack([self.episodes[k].states[t] for k, t in zip(episodes, steps)])),
                      env_idx=index)
        return env.unwrapped.observe()[0]

    def _check_pair(self, episode_arg: str, step_arg: str, episode: int, step: int) -> None:
        _check_int(episode_arg, episode, 0)
        if episode >= len(self):
            raise ValueError(f"{episode_arg} must be in [0, {len(self)}) (episodes in {self.path!r}), got {episode}")
        _check_int(step_arg, step, 0)
        if step > self.episodes[episode].length:
            raise ValueError(f"{step_arg} must be in [0, {self.episodes[episode].length}] for episode {episode}, "
                             f"got {step}")


def _check_int(arg: str, value: Any, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{arg} must hold ints >= {minimum}, got {value!r}")
    return int(value)
