"""Per-env random streams.

Env i owns a base seed s_i. The generator of its k-th episode after seeding is
`numpy.random.default_rng([s_i, k])`, so what env i draws depends only on (s_i, k):
never on i itself, on num_envs, or on which other envs reset in the same call.
Scene building (asset randomization at reconfigure time) draws from a separate stream
`default_rng([s_i, BUILD_STREAM, r])` for the r-th build.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

BUILD_STREAM = 0x5EED_B11D


class BatchRandom:
    """Draws for a subset of envs: one numpy Generator per env, stacked into tensors.

    Every method returns float32 (or int64) tensors shaped (M, *size) where M is the
    number of generators (the envs being reset or built)."""

    def __init__(self, generators: Sequence[np.random.Generator], device: torch.device | str = "cpu"):
        self.generators = list(generators)
        self.device = torch.device(device)

    def __len__(self) -> int:
        return len(self.generators)

    def subset(self, mask: torch.Tensor) -> "BatchRandom":
        """The streams of the rows where `mask` (M,) is True (for rejection sampling)."""
        return BatchRandom([g for g, keep in zip(self.generators, mask.tolist()) if keep], self.device)

    def uniform(self, low=0.0, high=1.0, size: tuple[int, ...] = ()) -> torch.Tensor:
        draws = [g.uniform(low, high, size) for g in self.generators]
        return torch.as_tensor(np.array(draws, dtype=np.float32).reshape(len(self), *size), device=self.device)

    def normal(self, loc=0.0, scale=1.0, size: tuple[int, ...] = ()) -> torch.Tensor:
        draws = [g.normal(loc, scale, size) for g in self.generators]
        return torch.as_tensor(np.array(draws, dtype=np.float32).reshape(len(self), *size), device=self.device)

    def integers(self, low: int, high: int, size: tuple[int, ...] = ()) -> torch.Tensor:
        draws = [g.integers(low, high, size) for g in self.generators]
        return torch.as_tensor(np.array(draws, dtype=np.int64).reshape(len(self), *size), device=self.device)


class EnvRandomStreams:
    """Base seeds and episode counters for N envs."""

    def __init__(self, num_envs: int, device: torch.device | str = "cpu"):
        self.num_envs = num_envs
        self.device = torch.device(device)
        entropy = np.random.SeedSequence().entropy % (2**62)
        self.base_seeds = np.arange(num_envs, dtype=np.int64) + entropy
        self.episode = np.full(num_envs, -1, dtype=np.int64)
        self.builds = 0

    def seed(self, seeds: Sequence[int], env_idx: np.ndarray) -> None:
        """Give env_idx[j] the base seed seeds[j] and restart its episode count."""
        self.base_seeds[env_idx] = np.asarray(seeds, dtype=np.int64)
        self.episode[env_idx] = -1

    def next_episode(self, env_idx: np.ndarray) -> BatchRandom:
        """Advance env_idx's episode counters; generators for the new episodes."""
        self.episode[env_idx] += 1
        return BatchRandom([np.random.default_rng([int(self.base_seeds[i]), int(self.episode[i])]) for i in env_idx], self.device)

    def next_build(self) -> BatchRandom:
        """Generators for one scene (re)build of all envs."""
        gens = [np.random.default_rng([int(s), BUILD_STREAM, self.builds]) for s in self.base_seeds]
        self.builds += 1
        return BatchRandom(gens, self.device)
