"""EpisodeStatistics: per-episode return, length and success for torch vector envs, in
all three autoreset modes (the torch counterpart of gymnasium's RecordEpisodeStatistics)."""
from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import torch
from gymnasium.vector import AutoresetMode

from robosim.vector import tree

class EpisodeStatistics(gym.vector.VectorWrapper):
    """When episodes end, adds info[stats_key] = {"r": float64 (N,) return, "l": int64
    (N,) length, "success_once": bool (N,) success at any step, "success_at_end": bool
    (N,) success on the last step} and the bool (N,) mask info["_" + stats_key] of the
    envs whose episode ended on this step (other rows hold running values). Success
    entries appear only when the env reports info["success"]. The last `buffer_length`
    finished episodes are kept in `return_queue`, `length_queue`, `success_queue`.

    NEXT_STEP: the step that resets an env does not count toward any episode.
    SAME_STEP: the ending step's success is read from info["final_info"]."""

    def __init__(self, env: gym.vector.VectorEnv, buffer_length: int = 100, stats_key: str = "episode"):
        super().__init__(env)
        if isinstance(buffer_length, bool) or not isinstance(buffer_length, int) or buffer_length < 1:
            raise ValueError(f"buffer_length must be a positive int, got {buffer_length!r}")
        self.stats_key = stats_key
        self.autoreset_mode = self.env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.device = torch.device(getattr(env, "device", "cpu"))
        n = self.num_envs
        self.episode_returns = torch.zeros(n, dtype=torch.float64, device=self.device)
        self.episode_lengths = torch.zeros(n, dtype=torch.int64, device=self.device)
        self.success_once = torch.zeros(n, dtype=torch.bool, device=self.device)
        self._fresh = torch.zeros(n, dtype=torch.bool, device=self.device)
        self.return_queue: deque[float] = deque(maxlen=buffer_length)
        self.length_queue: deque[int] = deque(maxlen=buffer_length)
        self.success_queue: deque[bool] = deque(maxlen=buffer_length)

    def reset(self, *, seed: Any = None, options: dict | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        rows = tree.reset_rows(options, self.num_envs, self.device)
        self._clear(rows)
        self._fresh[rows] = False
        return obs, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        done = terminated | truncated
        counted = ~self._fresh if self.autoreset_mode == AutoresetMode.NEXT_STEP else torch.ones_like(done)
        success = self._success_now(info, done)
        self.episode_returns += torch.where(counted, reward.to(torch.float64), 0.0)
        self.episode_lengths += counted.long()
        if success is not None:
            self.success_once |= success & counted
        if bool(done.any()):
            stats = {"r": self.episode_returns.clone(), "l": self.episode_lengths.clone()}
            if success is not None:
                stats["success_once"] = self.success_once.clone()
                stats["success_at_end"] = success & done
            info = dict(info)
            info[self.stats_key], info[f"_{self.stats_key}"] = stats, done.clone()
            rows = done.nonzero().squeeze(1)
            self.return_queue.extend(stats["r"][rows].tolist())
            self.length_queue.extend(stats["l"][rows].tolist())
            if success is not None:
                self.success_queue.extend(stats["success_once"][rows].tolist())
            self._clear(done)
        self._fresh = done.clone()
        return obs, reward, terminated, truncated, info

    def _success_now(self, info: dict, done: torch.Tensor) -> torch.Tensor | None:
        """bool (N,) success of the step just taken (None when the env reports none)."""
        if "success" not in info:
            return None
        success = torch.as_tensor(info["success"], device=self.device).to(torch.bool)
        final = info.get("final_info", {})
        if self.autoreset_mode == AutoresetMode.SAME_STEP and "success" in final:
            success = torch.where(done, torch.as_tensor(final["success"], device=self.device).to(torch.bool), success)
        return success

    def _clear(self, rows: torch.Tensor) -> None:
        self.episode_returns[rows] = 0.0
        self.episode_lengths[rows] = 0
        self.success_once[rows] = False
