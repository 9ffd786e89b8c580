"""Generalized advantage estimation with explicit episode boundaries.

Convention shared with RolloutCollector: row t of every (T, N) tensor is the
transition (s_t, a_t) -> (r_t, s'_t). next_values[t] is V(s'_t), the value of the TRUE
next observation: for an episode that was truncated at t it is the value of its final
observation (bootstrapped, never treated as terminal); terminated[t] zeroes it.
An episode boundary (terminated | truncated) stops the advantage recursion.
"""
from __future__ import annotations

import torch


def _check(name: str, x: torch.Tensor, shape: tuple[int, ...]) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {shape}, got {type(x).__name__}")
    if tuple(x.shape) != shape:
        raise ValueError(f"{name} must have shape {shape} (same as rewards), got {tuple(x.shape)}")


def compute_gae(rewards: torch.Tensor, values: torch.Tensor, next_values: torch.Tensor,
                terminated: torch.Tensor, truncated: torch.Tensor, gamma: float = 0.99,
                gae_lambda: float = 0.95) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns (both float32 (T, N)) of a rollout.

    rewards, values, next_values: float (T, N); terminated, truncated: bool (T, N).
      delta_t = r_t + gamma * (1 - terminated_t) * next_values_t - values_t
      A_t     = delta_t + gamma * lambda * (1 - (terminated_t | truncated_t)) * A_{t+1}
    with A_T = 0; returns = A + values (the value targets)."""
    if not isinstance(rewards, torch.Tensor) or rewards.ndim != 2:
        raise ValueError(f"rewards must be a (T, N) tensor, got {getattr(rewards, 'shape', type(rewards).__name__)}")
    shape = tuple(rewards.shape)
    for name, x in (("values", values), ("next_values", next_values), ("terminated", terminated),
                    ("truncated", truncated)):
        _check(name, x, shape)
    for name, x in (("gamma", gamma), ("gae_lambda", gae_lambda)):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0.0 <= x <= 1.0:
            raise ValueError(f"{name} must be a number in [0, 1], got {x!r}")
    not_terminal = 1.0 - terminated.float()
    continues = 1.0 - (terminated | truncated).float()
    deltas = rewards.float() + gamma * not_terminal * next_values.float() - values.float()
    advantages = torch.zeros_like(deltas)
    running = torch.zeros_like(deltas[0])
    for t in range(shape[0] - 1, -1, -1):
        running = deltas[t] + gamma * gae_lambda * continues[t] * running
        advantages[t] = running
    return advantages, advantages + values.float()
