"""EpisodeStatistics: per-episode return, length and success for torch vector envs, in
all three autoreset modes (the torch counterpart of gymnasium's RecordEpisodeStatistics).
The bookkeeping itself is robosim.vector.episode_tracker.EpisodeTracker."""
from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import torch
from gymnasium.vector import AutoresetMode

from robosim.envs.protocol import checked_device
from robosim.vector import tree
from robosim.vector.episode_tracker import EpisodeTracker


def ending_flags(info: dict, done: torch.Tensor, key: str, autoreset_mode: AutoresetMode,
                 device: torch.device) -> torch.Tensor | None:
    """bool (N,) info[key] of the step just taken (None when absent). In SAME_STEP mode
    the rows of envs that ended come from info["final_info"] (info holds the reset's)."""
    if key not in info:
        return None
    value = torch.as_tensor(info[key], device=device).to(torch.bool)
    final = info.get("final_info", {})
    if autoreset_mode == AutoresetMode.SAME_STEP and key in final:
        value = torch.where(done, torch.as_tensor(final[key], device=device).to(torch.bool), value)
    return value


class EpisodeStatistics(gym.vector.VectorWrapper):
    """When episodes end, adds info[stats_key] = {"r": float64 (N,) return, "l": int64
    (N,) length, "success_once": bool (N,) success at any step, "success_at_end": bool
    (N,) success on the last step, plus ManiSkill's names "return", "episode_len",
    "reward" (mean per step) and "fail_once"/"fail_at_end"} and the bool (N,) mask
    info["_" + stats_key] of the envs whose episode ended on this step (other rows hold
    running values). Success/fail entries appear only when the env reports them. The
    last `buffer_length` finished episodes are kept in `return_queue`, `length_queue`,
    `success_queue`; "sim_fault_once" marks episodes in which the env reported a
    simulation fault (info["sim_fault"]) and `fault_episodes` counts them. Place it
    inside NormalizeVecEnv to record raw returns.

    NEXT_STEP: the step that resets an env does not count toward any episode.
    SAME_STEP: the ending step's success is read from info["final_info"]."""

    def __init__(self, env: gym.vector.VectorEnv, buffer_length: int = 100, stats_key: str = "episode"):
        super().__init__(env)
        if isinstance(buffer_length, bool) or not isinstance(buffer_length, int) or buffer_length < 1:
            raise ValueError(f"buffer_length must be a positive int, got {buffer_length!r}")
        self.stats_key = stats_key
        self.autoreset_mode = self.env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.device = checked_device(env)
        self.tracker = EpisodeTracker(self.num_envs, self.device, self.autoreset_mode)
        self.return_queue: deque[float] = deque(maxlen=buffer_length)
        self.length_queue: deque[int] = deque(maxlen=buffer_length)
        self.success_queue: deque[bool] = deque(maxlen=buffer_length)
        self.fault_episodes = 0   # finished episodes in which the env reported a sim_fault

    def reset(self, *, seed: Any = None, options: dict | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.tracker.on_reset(tree.reset_rows(options, self.num_envs, self.device))
        return obs, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        done = (terminated | truncated).to(self.device)
        success = ending_flags(info, done, "success", self.autoreset_mode, self.device)
        fail = ending_flags(info, done, "fail", self.autoreset_mode, self.device)
        fault = ending_flags(info, done, "sim_fault", self.autoreset_mode, self.device)
        step = self.tracker.on_step(reward, terminated, truncated, success, fail, fault=fault)
        if step.finished is not None:
            info = dict(info)
            info[self.stats_key], info[f"_{self.stats_key}"] = step.finished, done.clone()
            rows = done.nonzero().squeeze(1)
            self.return_queue.extend(step.finished["r"][rows].tolist())
            self.length_queue.extend(step.finished["l"][rows].tolist())
            if success is not None:
                self.success_queue.extend(step.finished["success_once"][rows].tolist())
            if fault is not None:
                self.fault_episodes += int(step.finished["sim_fault_once"][rows].sum())
        return obs, reward, terminated, truncated, info
