"""Per-env counter-based random streams, on the env's device.

Env i owns a base seed s_i (int64). Its k-th episode after seeding draws from the
stream with key `mix(s_i, EPISODE_STREAM, k)`; scene building (asset randomization at
reconfigure time) draws from `mix(s_i, BUILD_STREAM, r)` for the r-th build; a declared
randomization event (robosim.randomization.manager) draws from
`mix(s_i, EVENT_STREAM, event, phase, count, firing, slot)`: phase EVENT_BUILD with
count r, or EVENT_EPISODE with count k and `firing`, the how-many-th firing of an
interval event in that episode (0 at reset). One EnvRandomStreams keys all four
families (episode, build, event, firing). The j-th
64-bit word a stream yields is `mix(key, j)`: a pure function of (s_i, stream, k, j).
So what env i draws depends only on (s_i, k) and on how many values it drew before,
never on i itself, on num_envs, on which other envs reset in the same call, or on the
device: the hash is integer arithmetic that CPU and CUDA compute bit for bit alike.

Every draw is a handful of elementwise tensor ops over all M envs at once (no
per-env generator objects, no host round trip), which is what lets a reset of
thousands of envs stay on the GPU.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

EPISODE_STREAM = 0x0E91_50DE
BUILD_STREAM = 0x5EED_B11D
EVENT_STREAM = 0x0E7E_A75D
EVENT_BUILD, EVENT_EPISODE = 1, 2   # the phase word of an event stream key

# splitmix64 constants as signed int64 (torch has no uint64 arithmetic)
_GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)
_M1 = 0xBF58476D1CE4E5B9 - (1 << 64)
_M2 = 0x94D049BB133111EB - (1 << 64)


def _srl(x: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 words (torch's >> is arithmetic)."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def _finalize(z: torch.Tensor) -> torch.Tensor:
    """splitmix64's output function: int64 -> well-mixed int64 (wrapping arithmetic)."""
    z = (z ^ _srl(z, 30)) * _M1
    z = (z ^ _srl(z, 27)) * _M2
    return z ^ _srl(z, 31)


def mix(first: torch.Tensor | int, *rest: torch.Tensor | int) -> torch.Tensor:
    """Hash int64 words (tensors that broadcast together, or ints) into int64 keys:
    h = fin(first + G), then h = fin(h + w + G) for each further word w."""
    acc = _finalize(torch.as_tensor(first, dtype=torch.int64) + _GOLDEN)
    for w in rest:
        acc = _finalize(acc + w + _GOLDEN)
    return acc


def _check_size(size) -> tuple[int, ...]:
    if isinstance(size, (int, np.integer)):
        size = (int(size),)
    if not isinstance(size, tuple) or not all(isinstance(s, (int, np.integer)) and s >= 0 for s in size):
        raise ValueError(f"size must be a tuple of ints >= 0, got {size!r}")
    return tuple(int(s) for s in size)


class BatchRandom:
    """Draws for a subset of M envs (the envs being reset or built).

    keys: int64 (M,) stream keys; counters: int64 (R,) words drawn so far, shared with
    the parent batch when this is a `subset` (rows: int64 (M,) indices into counters).
    Every method returns float32 (or int64) tensors of shape (M, *size) on `device`."""

    def __init__(self, keys: torch.Tensor, counters: torch.Tensor | None = None, rows: torch.Tensor | None = None):
        self.keys = keys
        self.device = keys.device
        self.counters = torch.zeros(len(keys), dtype=torch.int64, device=self.device) if counters is None else counters
        self.rows = rows

    def __len__(self) -> int:
        return len(self.keys)

    def subset(self, mask: torch.Tensor) -> BatchRandom:
        """The streams of the rows where `mask` (M,) bool is True (for rejection
        sampling); drawing from the subset advances those rows' streams here too."""
        mask = torch.as_tensor(mask, device=self.device)
        if mask.dtype != torch.bool or mask.shape != (len(self),):
            raise ValueError(f"mask must be a bool tensor of shape ({len(self)},), "
                             f"got {mask.dtype} {tuple(mask.shape)}")
        rows = torch.arange(len(self), device=self.device) if self.rows is None else self.rows
        return BatchRandom(self.keys[mask], self.counters, rows[mask])

    def _words(self, n: int) -> torch.Tensor:
        """int64 (M, n): the next n words of every stream."""
        ctr = self.counters if self.rows is None else self.counters[self.rows]
        j = ctr[:, None] + torch.arange(n, dtype=torch.int64, device=self.device)
        words = mix(self.keys[:, None], j)
        if self.rows is None:
            self.counters += n
        else:
            self.counters[self.rows] += n
        return words

    def _unit(self, size: tuple[int, ...]) -> torch.Tensor:
        """float64 (M, *size) uniform in [0, 1) with 53 random bits each."""
        n = math.prod(size)
        u = _srl(self._words(n), 11).to(torch.float64) * (2.0 ** -53)
        return u.reshape(len(self), *size)

    def _param(self, value):
        """Python numbers stay numbers (a scalar copied to the GPU would be a host sync)."""
        if isinstance(value, (int, float)):
            return float(value)
        return torch.as_tensor(value, dtype=torch.float64, device=self.device)

    def uniform(self, low=0.0, high=1.0, size: tuple[int, ...] = ()) -> torch.Tensor:
        """float32 (M, *size) uniform in [low, high) (low/high: floats or tensors that
        broadcast to size)."""
        u = self._unit(_check_size(size))
        low, high = self._param(low), self._param(high)
        return (low + (high - low) * u).to(torch.float32)

    def normal(self, loc=0.0, scale=1.0, size: tuple[int, ...] = ()) -> torch.Tensor:
        """float32 (M, *size) Gaussian (Box-Muller over two uniform words per value)."""
        size = _check_size(size)
        u = self._unit((2, *size))
        radius = torch.sqrt(-2.0 * torch.log1p(-u[:, 0]))      # 1 - u in (0, 1]: log is finite
        z = radius * torch.cos(2.0 * math.pi * u[:, 1])
        return (self._param(loc) + self._param(scale) * z).to(torch.float32)

    def integers(self, low: int, high: int, size: tuple[int, ...] = ()) -> torch.Tensor:
        """int64 (M, *size) uniform in [low, high)."""
        if not high > low:
            raise ValueError(f"integers needs high > low, got low={low!r}, high={high!r}")
        u = self._unit(_check_size(size))
        return torch.clamp(low + torch.floor(u * (high - low)).to(torch.int64), max=high - 1)


def _as_index(name: str, env_idx, num_envs: int, device: torch.device) -> torch.Tensor:
    idx = torch.as_tensor(env_idx, device=device)
    if idx.dtype not in (torch.int64, torch.int32) or idx.dim() != 1:
        raise ValueError(f"{name} must be a 1-D int tensor or array, got {idx.dtype} of shape {tuple(idx.shape)}")
    return idx.to(torch.int64)


@dataclass(frozen=True)
class StreamsSnapshot:
    """Where N envs' streams stand (EnvRandomStreams.snapshot): base seeds and episode
    counters, int64 (N,) clones on the streams' device."""

    base_seeds: torch.Tensor
    episode: torch.Tensor


class EnvRandomStreams:
    """Base seeds and episode counters of N envs, int64 (N,) tensors on `device`, and
    the build counter: `builds` builds started so far, `build` the index of the current
    scene's build (-1 before the first), `build_seeds` int64 (N,) the base seeds that
    build drew from (None before the first)."""

    def __init__(self, num_envs: int, device: torch.device | str = "cpu"):
        self.num_envs = num_envs
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device must be one torch can use, got {self.device} with no CUDA GPU visible "
                             "(sim_backend 'physx_cuda' needs a CUDA GPU; use 'physx_cpu')")
        entropy = int(np.random.SeedSequence().entropy % (2**62))
        self.base_seeds = torch.arange(num_envs, dtype=torch.int64, device=self.device) + entropy
        self.episode = torch.full((num_envs,), -1, dtype=torch.int64, device=self.device)
        self.builds = 0
        self.build = -1
        self.build_seeds: torch.Tensor | None = None

    def seed(self, seeds: Sequence[int], env_idx) -> None:
        """Give env_idx[j] the base seed seeds[j] (ints in [-2**63, 2**63)) and restart
        its episode count."""
        idx = _as_index("env_idx", env_idx, self.num_envs, self.device)
        values = torch.as_tensor(np.asarray(seeds, dtype=np.int64), device=self.device)
        if values.shape != idx.shape:
            raise ValueError(f"seeds must have one entry per env_idx entry ({len(idx)}), got {tuple(values.shape)}")
        self.base_seeds[idx] = values
        self.episode[idx] = -1

    def next_episode(self, env_idx) -> BatchRandom:
        """Advance env_idx's episode counters; the streams of the new episodes."""
        idx = _as_index("env_idx", env_idx, self.num_envs, self.device)
        self.episode[idx] += 1
        return BatchRandom(mix(self.base_seeds[idx], EPISODE_STREAM, self.episode[idx]))

    def next_build(self) -> BatchRandom:
        """Start a scene (re)build of all envs (it becomes `build`, drawn from the current
        base seeds, which become `build_seeds`); its streams."""
        self.build = self.builds
        self.build_seeds = self.base_seeds.clone()
        keys = mix(self.base_seeds, BUILD_STREAM, self.build)
        self.builds += 1
        return BatchRandom(keys)

    def seeds_changed_since_build(self) -> bool:
        """True when some env's base seed differs from the one the current scene's build
        drew from (or nothing is built yet): a rebuild would give other assets."""
        return self.build_seeds is None or not torch.equal(self.build_seeds, self.base_seeds)

    def restart_builds(self) -> None:
        """Make the next build build 0 of the current seeds, so a seeded full reset
        builds the assets make(seed=...) with those seeds builds."""
        self.builds = 0

    def snapshot(self) -> StreamsSnapshot:
        """Clones of every env's base seed and episode counter (save_state). The build
        counters are not in it: they describe the scene that exists, which a restore
        does not rebuild."""
        return StreamsSnapshot(self.base_seeds.clone(), self.episode.clone())

    def restore(self, snapshot: StreamsSnapshot) -> None:
        """Put every env's base seed and episode counter back to `snapshot` (restore_state),
        so the draws that follow repeat those that followed the snapshot."""
        if not isinstance(snapshot, StreamsSnapshot):
            raise TypeError(f"snapshot must be a StreamsSnapshot from EnvRandomStreams.snapshot(), "
                            f"got {type(snapshot).__name__}")
        if snapshot.base_seeds.shape != (self.num_envs,) or snapshot.episode.shape != (self.num_envs,):
            raise ValueError(f"snapshot must hold ({self.num_envs},) seeds and episodes, got "
                             f"{tuple(snapshot.base_seeds.shape)} and {tuple(snapshot.episode.shape)}")
        self.base_seeds.copy_(snapshot.base_seeds)
        self.episode.copy_(snapshot.episode)

    def event(self, event_key: int, phase: int, env_idx: torch.Tensor, firing: torch.Tensor | int = 0,
              slot: int = 0) -> BatchRandom:
        """CPU streams of one randomization event for the envs env_idx (int64 (M,), CPU):
        phase EVENT_BUILD draws for the current `build`, EVENT_EPISODE for each env's
        current episode and `firing` (int, or int64 (N,) per env); `event_key` (int64)
        names the event, `slot` separates its draws (0 probability, 1 value, 2 period)."""
        seeds = self.base_seeds[env_idx.to(self.device)].cpu()
        if phase == EVENT_BUILD:
            counts = torch.full((len(env_idx),), self.build, dtype=torch.int64)
        elif phase == EVENT_EPISODE:
            counts = self.episode[env_idx.to(self.device)].cpu()
        else:
            raise ValueError(f"phase must be EVENT_BUILD ({EVENT_BUILD}) or EVENT_EPISODE ({EVENT_EPISODE}), "
                             f"got {phase!r}")
        if isinstance(firing, torch.Tensor):
            firing = firing[env_idx].cpu()
        return BatchRandom(mix(seeds, EVENT_STREAM, event_key, phase, counts, firing, slot))
