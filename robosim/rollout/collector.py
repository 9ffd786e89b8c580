"""RolloutCollector: fills preallocated (T, N, ...) torch buffers on the env's device from
any callable policy, one batched step for all N envs, in all three autoreset modes.

Row t holds the transition (obs_t, action_t) -> (reward_t, true next obs). Rows that are
not transitions (the NEXT_STEP step that only resets an env) have valid[t] = False and
must be left out of losses; no row ever spans an episode boundary. next_values[t] is the
value of the TRUE next observation: after a truncation it is V(final obs), so truncated
episodes are bootstrapped, never treated as terminal (see robosim.rollout.gae).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from robosim.core.tree import write_rows
from robosim.envs.protocol import checked_device
from robosim.rollout.gae import compute_gae
from robosim.rollout.memory import check_fits, tree_nbytes
from robosim.vector import tree
from robosim.vector.episode_stats import ending_flags
from robosim.vector.episode_tracker import EpisodeTracker

Policy = Callable[[Any], Any]  # obs (N, ...) -> action (N, A) or (action, log_prob (N,), value (N,))


def space_buffers(space: gym.Space, lead: tuple[int, ...], device: torch.device) -> Any:
    """Zero tensors (*lead, *shape) for every Box of a (Dict) space, in its dtype."""
    if isinstance(space, gym.spaces.Dict):
        return {k: space_buffers(s, lead, device) for k, s in space.spaces.items()}
    return torch.zeros(lead + tuple(space.shape), dtype=torch.from_numpy(np.zeros(0, space.dtype)).dtype,
                       device=device)


def space_layout(space: gym.Space, lead: tuple[int, ...], prefix: str = "obs") -> dict:
    """{name: (shape, torch dtype)} of space_buffers(space, lead), for memory checks."""
    if isinstance(space, gym.spaces.Dict):
        out: dict = {}
        for k, s in space.spaces.items():
            out.update(space_layout(s, lead, f"{prefix}/{k}"))
        return out
    return {prefix: (lead + tuple(space.shape), torch.from_numpy(np.zeros(0, space.dtype)).dtype)}


@dataclass
class Transition:
    """One vector step, all leading dim N on the env's device. next_obs is the true next
    observation (the final one for envs whose episode ended); valid marks real
    transitions; episode: EpisodeTracker metrics (rows where done hold the finished
    episode's values)."""

    obs: Any
    action: torch.Tensor
    reward: torch.Tensor
    next_obs: Any
    terminated: torch.Tensor
    truncated: torch.Tensor
    valid: torch.Tensor
    info: dict
    log_prob: torch.Tensor | None
    value: torch.Tensor | None
    episode: dict[str, torch.Tensor]


@dataclass
class Rollout:
    """Buffers of T vector steps: obs tree (T, N, ...), actions float32 (T, N, A),
    rewards float32 (T, N), terminated/truncated/valid bool (T, N), log_probs/values/
    next_values float32 (T, N) (None when the policy gives no values)."""

    obs: Any
    actions: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    valid: torch.Tensor
    log_probs: torch.Tensor | None
    values: torch.Tensor | None
    next_values: torch.Tensor | None

    def advantages(self, gamma: float = 0.99, gae_lambda: float = 0.95) -> tuple[torch.Tensor, torch.Tensor]:
        """(advantages, returns) float32 (T, N) by GAE (robosim.rollout.gae)."""
        if self.values is None or self.next_values is None:
            raise ValueError("advantages need values: the policy must return (action, log_prob, value) "
                             "and collect() must get value_fn")
        return compute_gae(self.rewards, self.values, self.next_values, self.terminated, self.truncated,
                           gamma, gae_lambda)


class RolloutCollector:
    """Steps a torch vector env (robosim.make_vec, possibly wrapped) with a policy.

    venv: gymnasium VectorEnv with torch outputs on `venv.device` in any autoreset mode
    (DISABLED: the collector resets ended envs itself). num_steps: T of `collect`.
    ignore_terminations: terminations are bootstrapped like truncations (infinite-horizon
    view; pair it with make_vec(..., ignore_terminations=True) for ManiSkill3's
    fixed-horizon episodes). check_actions: check each action's shape, dtype, device
    and finiteness (one device sync per step on CUDA). A Dict of Box action spaces (a
    multi-robot env) is collected as its flat view: actions (N, sum of the slots' sizes),
    which robosim's envs take as the slots concatenated in their declaration order."""

    def __init__(self, venv: gym.vector.VectorEnv, num_steps: int, ignore_terminations: bool = False,
                 check_actions: bool = True):
        device = checked_device(venv, "venv")
        if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
            raise ValueError(f"num_steps must be a positive int, got {num_steps!r}")
        self.venv, self.num_steps, self.num_envs = venv, num_steps, int(venv.num_envs)
        self.device = device
        self.mode = venv.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.ignore_terminations, self.check_actions = bool(ignore_terminations), bool(check_actions)
        space = venv.single_action_space
        if isinstance(space, gym.spaces.Dict) and all(isinstance(s, gym.spaces.Box) for s in space.spaces.values()):
            action_shape: tuple[int, ...] = (gym.spaces.flatdim(space),)
        elif isinstance(space, gym.spaces.Box):
            action_shape = tuple(space.shape)
        else:
            raise TypeError(f"venv.single_action_space must be a Box or a Dict of Boxes, got {space}")
        self.action_shape = (self.num_envs, *action_shape)
        lead = (num_steps, self.num_envs)
        layout = space_layout(venv.single_observation_space, lead)
        layout.update(actions=(lead + action_shape, torch.float32))
        for name in ("rewards", "log_probs", "values", "next_values", "final_values"):
            layout[name] = (lead, torch.float32)
        for name in ("terminated", "truncated", "valid"):
            layout[name] = (lead, torch.bool)
        check_fits(f"rollout buffers (num_steps={num_steps}, num_envs={self.num_envs})", tree_nbytes(layout),
                   self.device)
        self._obs_buf = space_buffers(venv.single_observation_space, lead, self.device)
        self._act_buf = torch.zeros(lead + action_shape, dtype=torch.float32, device=self.device)
        self._f = {n: torch.zeros(lead, dtype=torch.float32, device=self.device)
                   for n in ("rewards", "log_probs", "values", "final_values")}
        self._b = {n: torch.zeros(lead, dtype=torch.bool, device=self.device)
                   for n in ("terminated", "truncated", "valid")}
        self.tracker = EpisodeTracker(self.num_envs, self.device, self.mode)
        self.obs: Any = None
        self.global_step = 0  # vector steps taken
        self._done_count = torch.zeros((), dtype=torch.int64, device=self.device)
        self._sums = {k: torch.zeros((), dtype=torch.float64, device=self.device)
                      for k in ("return", "episode_len", "success_once", "success_at_end")}

    # -- episodes -------------------------------------------------------------------------
    def reset(self, seed: int | list[int] | None = None) -> Any:
        """Reset every env (seed as robosim's reset) and return the first obs."""
        self.obs, _ = self.venv.reset(seed=seed)
        self.tracker.on_reset(torch.ones(self.num_envs, dtype=torch.bool, device=self.device))
        return self.obs

    def pop_episode_stats(self) -> dict[str, float]:
        """Means over the episodes finished since the last call: "episodes" (count),
        "return", "episode_len", "success_once", "success_at_end" (empty when none)."""
        count = int(self._done_count)
        out = {"episodes": count}
        if count:
            out.update({k: float(v) / count for k, v in self._sums.items()})
        self._done_count.zero_()
        for v in self._sums.values():
            v.zero_()
        return out

    # -- one step -------------------------------------------------------------------------
    def step(self, policy: Policy) -> Transition:
        """Act with `policy` on the current obs and step all N envs once."""
        if self.obs is None:
            self.reset()
        out = policy(self.obs)
        action, log_prob, value = out if isinstance(out, tuple) else (out, None, None)
        if self.check_actions:
            self._check_action(action)
        valid = self.tracker.transition_rows()
        obs, reward, terminated, truncated, info = self.venv.step(action)
        done = terminated | truncated
        if self.mode == AutoresetMode.SAME_STEP and "final_obs" in info:
            next_obs = tree.where(info["_final_obs"].to(self.device), info["final_obs"], obs)
        else:  # NEXT_STEP: the obs of an ended env is its final obs; DISABLED: reset below
            next_obs = obs
        if self.mode == AutoresetMode.DISABLED and bool(done.any()):
            reset_obs, _ = self.venv.reset(options={"reset_mask": done})
            obs = tree.where(done, reset_obs, obs)
        success = ending_flags(info, done, "success", self.mode, self.device)
        episode = self.tracker.on_step(reward, terminated, truncated, success, always_metrics=True).finished
        self._accumulate(done & valid, episode)
        if self.ignore_terminations:  # a boundary still, but bootstrapped like a truncation
            terminated, truncated = torch.zeros_like(terminated), terminated | truncated
        transition = Transition(self.obs, action, reward, next_obs, terminated, truncated, valid, info,
                                log_prob, value, episode)
        self.obs = obs
        self.global_step += 1
        return transition

    def _accumulate(self, ended: torch.Tensor, episode: dict[str, torch.Tensor]) -> None:
        self._done_count += ended.sum()
        for key, total in self._sums.items():
            if key in episode:
                total += torch.where(ended, episode[key].to(torch.float64), 0.0).sum()

    def _check_action(self, action: Any) -> None:
        where = f"policy output at step {self.global_step}"
        if not isinstance(action, torch.Tensor):
            raise TypeError(f"{where}: action must be a torch.Tensor of shape {self.action_shape} on "
                            f"{self.device}, got {type(action).__name__}")
        if tuple(action.shape) != self.action_shape:
            raise ValueError(f"{where}: action must have shape {self.action_shape}, got {tuple(action.shape)}")
        if action.dtype != torch.float32:
            raise ValueError(f"{where}: action must have dtype torch.float32, got {action.dtype}")
        if action.device != self.device:
            raise ValueError(f"{where}: action must be on the env's device {self.device}, got {action.device}")
        bad = ~torch.isfinite(action).all(dim=1)
        if bool(bad.any()):
            rows = bad.nonzero().squeeze(1).tolist()
            raise ValueError(f"{where}: action must be finite, got NaN/inf for env index {rows[0]}"
                             f"{f' (and {len(rows) - 1} more)' if len(rows) > 1 else ''}: "
                             f"{action[rows[0]].tolist()}")

    # -- T steps ----------------------------------------------------------------------------
    def collect(self, policy: Policy, value_fn: Callable[[Any], torch.Tensor] | None = None) -> Rollout:
        """num_steps steps of `policy` into the preallocated buffers (overwritten on every
        call; clone what you keep). value_fn(obs) -> (N,) values bootstraps truncated
        episodes and the rollout's last step; needed when the policy returns values."""
        T = self.num_steps
        has_values = None
        for t in range(T):
            tr = self.step(policy)
            has_values = tr.value is not None if has_values is None else has_values
            write_rows(self._obs_buf, t, tr.obs)
            self._act_buf[t] = tr.action
            self._f["rewards"][t] = tr.reward
            self._b["terminated"][t], self._b["truncated"][t], self._b["valid"][t] = (
                tr.terminated, tr.truncated, tr.valid)
            if has_values:
                if tr.log_prob is not None:
                    self._f["log_probs"][t] = tr.log_prob
                self._f["values"][t] = tr.value
                if self.mode != AutoresetMode.NEXT_STEP:
                    self._final_values(t, tr, value_fn)
        if not has_values:
            return Rollout(self._obs_buf, self._act_buf, self._f["rewards"], self._b["terminated"],
                           self._b["truncated"], self._b["valid"], None, None, None)
        if value_fn is None:
            raise ValueError("value_fn must be given when the policy returns values (it bootstraps the last step)")
        with torch.no_grad():
            last = value_fn(self.obs).reshape(self.num_envs).float()
        values = self._f["values"]
        next_values = torch.cat([values[1:], last.unsqueeze(0)], dim=0)
        if self.mode != AutoresetMode.NEXT_STEP:  # NEXT_STEP: values[t + 1] already is V(final obs)
            ended = self._b["terminated"] | self._b["truncated"]
            next_values = torch.where(ended, self._f["final_values"], next_values)
        return Rollout(self._obs_buf, self._act_buf, self._f["rewards"], self._b["terminated"],
                       self._b["truncated"], self._b["valid"], self._f["log_probs"], values, next_values)

    def _final_values(self, t: int, tr: Transition, value_fn: Callable | None) -> None:
        """V(final obs) of envs whose episode was truncated at t (0 elsewhere)."""
        boot = tr.truncated & ~tr.terminated
        if value_fn is None or not bool(boot.any()):
            self._f["final_values"][t] = 0.0
            return
        with torch.no_grad():
            v = value_fn(tr.next_obs).reshape(self.num_envs).float()
        self._f["final_values"][t] = torch.where(boot, v, torch.zeros_like(v))
