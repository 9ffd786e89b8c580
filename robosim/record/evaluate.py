"""Policy evaluation over many episodes on a batch of envs.

A policy is given as "module:callable". The callable is called once with the env and
returns the policy: `policy(obs) -> action` (N, A), torch or numpy float. Built in:
  robosim.record.policies:scripted   the task's scripted solution
  robosim.record.policies:random     uniform random actions (seeded)

Episodes are counted in the order they end. An env whose episode ends after enough
episodes have started is parked (left running but excluded from the statistics),
so exactly `episodes` episodes are measured and longer episodes are not censored.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from gymnasium.vector import AutoresetMode

from robosim.core.registry import import_object
from robosim.envs.protocol import BatchedEnvCore
from robosim.vector.episode_tracker import EpisodeTracker

_NOT_FLAGS = ("success", "is_success", "fail")


def load_policy_factory(spec: str) -> Callable:
    """"package.module:callable" -> the callable (raises ValueError naming the problem)."""
    factory = import_object(spec, "policy", example="module:callable")
    if not callable(factory):
        raise ValueError(f"policy {spec!r} must name a callable, got {type(factory).__name__}")
    return factory


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a success rate (valid near 0 and 1, small n)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class EvalResult:
    """Per-episode success (ever succeeded), return (sum of rewards) and length (steps);
    `flags`: for every other boolean (N,) entry of the step info (a task's stages, such as
    is_grasped), whether it was true at any step of each episode."""

    success: list[bool] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    flags: dict[str, list[bool]] = field(default_factory=dict)

    @property
    def episodes(self) -> int:
        return len(self.success)

    @property
    def success_rate(self) -> float:
        return sum(self.success) / max(self.episodes, 1)

    def summary(self) -> str:
        low, high = wilson_interval(sum(self.success), self.episodes)
        n = max(self.episodes, 1)
        mean_ret = sum(self.returns) / n
        std_ret = math.sqrt(sum((r - mean_ret) ** 2 for r in self.returns) / n)
        return (f"success rate:   {self.success_rate:.1%} ({sum(self.success)}/{self.episodes}), "
                f"95% CI [{low:.1%}, {high:.1%}] (Wilson)\n"
                f"mean return:    {mean_ret:.3f} (std {std_ret:.3f})\n"
                f"episode length: {sum(self.lengths) / n:.1f} steps (mean)"
                + "".join(f"\n{'ever ' + key + ':':<15} {sum(v) / n:.1%} ({sum(v)}/{self.episodes})"
                          for key, v in self.flags.items()))


def evaluate(env: BatchedEnvCore, policy: Callable[[Any], Any], episodes: int, seed: int = 0,
             progress: bool = False) -> EvalResult:
    """Run `policy` on `env` (a robosim.envs.protocol.BatchedEnvCore that never
    autoresets: a BaseEnv, a RecordEpisode, a ShardedEvalEnv) until `episodes` episodes end.

    Env i's k-th episode is seeded with seed + i + k * num_envs, so every episode has its
    own seed and the run is reproducible. The flags are the info's boolean (N,) entries
    other than success, is_success and fail, tracked from the first step's info on."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive int, got {episodes!r}")
    from tqdm import tqdm

    n = env.num_envs
    result = EvalResult()
    started = min(n, episodes)
    counted = torch.zeros(n, dtype=torch.bool)
    counted[:started] = True
    # the env never autoresets: ended envs are reset here (or parked), as in DISABLED mode
    tracker = EpisodeTracker(n, "cpu", AutoresetMode.DISABLED)
    next_seed = seed + n
    obs, _ = env.reset(seed=seed)
    with tqdm(total=episodes, desc="eval", unit="ep", disable=not progress) as bar:
        while result.episodes < episodes:
            action = policy(obs)
            obs, reward, terminated, truncated, info = env.step(action)
            flags = {key: value.detach().cpu() for key, value in info.items()
                     if key not in _NOT_FLAGS and isinstance(value, torch.Tensor) and value.dtype == torch.bool
                     and value.shape == (n,)}
            step = tracker.on_step(reward.detach().cpu(), terminated.detach().cpu(), truncated.detach().cpu(),
                                   success=info["success"].detach().cpu(), flags=flags)
            done = step.done & counted
            if not done.any():
                continue
            idx = done.nonzero().flatten().tolist()
            for i in idx:
                result.success.append(bool(step.finished["success_once"][i]))
                result.returns.append(float(step.finished["return"][i]))
                result.lengths.append(int(step.finished["episode_len"][i]))
                for key, seen in step.flags_once.items():
                    result.flags.setdefault(key, []).append(bool(seen[i]))
            bar.update(len(idx))
            restart = []
            for i in idx:
                if started < episodes:
                    started += 1
                    restart.append(i)
                else:
                    counted[i] = False
            if restart and result.episodes < episodes:
                seeds = list(range(next_seed, next_seed + len(restart)))
                next_seed += len(restart)
                obs, _ = env.reset(seed=seeds, options={"env_idx": torch.tensor(restart)})
    return result
