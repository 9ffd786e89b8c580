"""ReplayBuffer for off-policy learners, with hindsight relabeling (HER, "future"
strategy) through the task's `compute_reward` on batched tensors.

Storage is (capacity_per_env, N, ...) on the env's device, one column per env, so each
env's transitions stay in time order and an episode's future is the rows after it in
its column (ring buffer: the oldest rows are overwritten).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import torch

from robosim.core.tree import tree_map, write_rows
from robosim.rollout.collector import Transition, space_buffers, space_layout
from robosim.rollout.memory import check_fits, tree_nbytes

GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")


class ReplayBuffer:
    """Transitions of N envs: obs/next_obs trees, actions float32 (A,), rewards float32,
    terminated bool. `add(transition)` stores the valid rows of one vector step;
    `sample(batch_size)` draws uniformly from the stored ones.

    her_ratio > 0 (goal-conditioned obs with keys observation/achieved_goal/
    desired_goal, and `compute_reward(achieved, desired, info)` batched over a leading
    dim): that fraction of each batch whose episode has ended gets its desired goal
    replaced by an achieved goal of a later step of the same episode, and its reward
    recomputed as compute_reward(next achieved goal, new goal, None). Termination flags
    are kept, as Stable-Baselines3's HerReplayBuffer does."""

    def __init__(self, capacity: int, observation_space: gym.Space, action_space: gym.Space, num_envs: int,
                 device: str | torch.device = "cpu", her_ratio: float = 0.0,
                 compute_reward: Callable[[Any, Any, Any], Any] | None = None):
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < num_envs:
            raise ValueError(f"capacity must be an int >= num_envs ({num_envs}), got {capacity!r}")
        if isinstance(her_ratio, bool) or not isinstance(her_ratio, (int, float)) or not 0.0 <= her_ratio <= 1.0:
            raise ValueError(f"her_ratio must be a number in [0, 1], got {her_ratio!r}")
        if her_ratio > 0:
            keys = set(getattr(observation_space, "spaces", {}) or {})
            if not set(GOAL_KEYS) <= keys:
                raise ValueError(f"her_ratio > 0 needs a Dict observation space with keys {list(GOAL_KEYS)}, "
                                 f"got {sorted(keys) or type(observation_space).__name__}")
            if compute_reward is None:
                raise ValueError("her_ratio > 0 needs compute_reward (e.g. venv.compute_reward)")
        self.num_envs, self.device = int(num_envs), torch.device(device)
        self.rows = math.ceil(capacity / num_envs)
        self.her_ratio, self.compute_reward = float(her_ratio), compute_reward
        lead = (self.rows, self.num_envs)
        layout = {**space_layout(observation_space, lead, "obs"), **space_layout(observation_space, lead, "next_obs")}
        layout.update(actions=(lead + tuple(action_space.shape), torch.float32), rewards=(lead, torch.float32),
                      terminated=(lead, torch.bool), step=(lead, torch.int64), episode_end=(lead, torch.int64))
        check_fits(f"replay buffer (capacity={capacity}, num_envs={num_envs})", tree_nbytes(layout), self.device)
        self.obs = space_buffers(observation_space, lead, self.device)
        self.next_obs = space_buffers(observation_space, lead, self.device)
        self.actions = torch.zeros(lead + tuple(action_space.shape), dtype=torch.float32, device=self.device)
        self.rewards = torch.zeros(lead, dtype=torch.float32, device=self.device)
        self.terminated = torch.zeros(lead, dtype=torch.bool, device=self.device)
        # per-env step counter of each row, and the counter of its episode's last step (-1: running)
        self.step = torch.full(lead, -1, dtype=torch.int64, device=self.device)
        self.episode_end = torch.full(lead, -1, dtype=torch.int64, device=self.device)
        self.count = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)  # rows written per env
        self.episode_start = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)

    def __len__(self) -> int:
        return int(self.count.clamp(max=self.rows).sum())

    def add(self, tr: Transition) -> None:
        """Store the valid rows of one vector step (a Transition of RolloutCollector.step)."""
        cols = tr.valid.nonzero().squeeze(1)
        if cols.numel() == 0:
            return
        rows = self.count[cols] % self.rows
        write_rows(self.obs, (rows, cols), tree_map(lambda x: x[cols], tr.obs))
        write_rows(self.next_obs, (rows, cols), tree_map(lambda x: x[cols], tr.next_obs))
        self.actions[rows, cols] = tr.action[cols].float()
        self.rewards[rows, cols] = tr.reward[cols].float()
        self.terminated[rows, cols] = tr.terminated[cols]
        self.step[rows, cols] = self.count[cols]
        self.episode_end[rows, cols] = -1
        done = (tr.terminated | tr.truncated)[cols]
        for col in cols[done].tolist():  # close finished episodes: only envs that ended
            first, last = int(self.episode_start[col]), int(self.count[col])
            first = max(first, last - self.rows + 1)
            span = torch.arange(first, last + 1, device=self.device) % self.rows
            self.episode_end[span, col] = last
            self.episode_start[col] = last + 1
        self.count[cols] += 1

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> dict[str, Any]:
        """A batch dict: obs, next_obs (trees), actions (B, A), rewards (B,), terminated (B,)."""
        filled = self.count.clamp(max=self.rows)
        if int(filled.sum()) == 0:
            raise ValueError("sample needs at least one stored transition, the buffer is empty")
        weights = filled.float()
        cols = torch.multinomial(weights, batch_size, replacement=True, generator=generator)
        u = torch.rand(batch_size, device=self.device, generator=generator)
        rows = (u * filled[cols]).long().clamp(max=self.rows - 1)
        batch = {"obs": tree_map(lambda x: x[rows, cols], self.obs),
                 "next_obs": tree_map(lambda x: x[rows, cols], self.next_obs),
                 "actions": self.actions[rows, cols], "rewards": self.rewards[rows, cols].clone(),
                 "terminated": self.terminated[rows, cols]}
        if self.her_ratio > 0:
            self._relabel(batch, rows, cols, generator)
        return batch

    def _relabel(self, batch: dict, rows: torch.Tensor, cols: torch.Tensor, generator: Any) -> None:
        step, end = self.step[rows, cols], self.episode_end[rows, cols]
        pick = (end >= 0) & (torch.rand(rows.shape[0], device=self.device, generator=generator) < self.her_ratio)
        if not bool(pick.any()):
            return
        u = torch.rand(rows.shape[0], device=self.device, generator=generator)
        future = step + (u * (end - step + 1).clamp(min=1).float()).long()
        future_rows = torch.where(pick, future % self.rows, rows)
        new_goal = self.next_obs["achieved_goal"][future_rows, cols]
        goal = torch.where(pick.unsqueeze(1), new_goal, batch["obs"]["desired_goal"])
        batch["obs"] = {**batch["obs"], "desired_goal": goal}
        batch["next_obs"] = {**batch["next_obs"], "desired_goal": goal}
        reward = torch.as_tensor(self.compute_reward(batch["next_obs"]["achieved_goal"], goal, None),
                                 device=self.device).float()
        batch["rewards"] = torch.where(pick, reward, batch["rewards"])
