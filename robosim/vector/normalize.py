"""Observation and reward normalization for torch vector envs (MASA's VecNormWrapper,
SB3's VecNormalize), in all three autoreset modes.

Statistics are float64 running mean/variance (Chan et al.'s parallel update, starting
from zero samples: after any number of updates they equal the mean and population
variance of every sample seen). Place it inside TorchToNumpy, not outside.
"""
from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import torch
from gymnasium.vector import AutoresetMode

from robosim.core.tree import leaf_items
from robosim.envs.protocol import checked_device
from robosim.vector import tree
from robosim.vector.episode_tracker import EpisodeTracker


class RunningMeanStd:
    """Running mean and population variance of samples of shape `shape`, float64."""

    def __init__(self, shape: tuple[int, ...] = (), device: str | torch.device = "cpu"):
        self.mean = torch.zeros(shape, dtype=torch.float64, device=device)
        self.var = torch.ones(shape, dtype=torch.float64, device=device)
        self.count = 0

    def update(self, x: torch.Tensor) -> None:
        """Add a batch x (B, *shape) of samples (B may be 0)."""
        if x.shape[0] == 0:
            return
        x = x.to(torch.float64)
        batch_mean, batch_var, n = x.mean(dim=0), x.var(dim=0, unbiased=False), x.shape[0]
        if self.count == 0:
            self.mean, self.var, self.count = batch_mean, batch_var, n
            return
        total = self.count + n
        delta = batch_mean - self.mean
        m2 = self.var * self.count + batch_var * n + delta.square() * self.count * n / total
        self.mean = self.mean + delta * n / total
        self.var, self.count = m2 / total, total

    def state_dict(self) -> dict[str, Any]:
        return {"mean": self.mean.clone(), "var": self.var.clone(), "count": self.count}

    def load_state_dict(self, state: dict[str, Any], name: str = "state") -> None:
        """Load {"mean", "var", "count"} after checking all of it (nothing changes on error)."""
        if not isinstance(state, dict) or set(state) != {"mean", "var", "count"}:
            raise ValueError(f"{name} must be a dict with keys ['count', 'mean', 'var'], got "
                             f"{sorted(state) if isinstance(state, dict) else type(state).__name__}")
        shape = tuple(self.mean.shape)
        for key in ("mean", "var"):
            value = state[key]
            if not isinstance(value, torch.Tensor) or not value.dtype.is_floating_point:
                raise ValueError(f"{name}['{key}'] must be a float tensor, got {type(value).__name__}")
            if tuple(value.shape) != shape:
                raise ValueError(f"{name}['{key}'] must have shape {shape}, got {tuple(value.shape)}")
            if not torch.isfinite(value).all():
                raise ValueError(f"{name}['{key}'] must be finite, got NaN/inf")
        if (state["var"] < 0).any():
            raise ValueError(f"{name}['var'] must be >= 0, got min {float(state['var'].min())}")
        count = state["count"]
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"{name}['count'] must be an int >= 0, got {count!r}")
        device = self.mean.device
        self.mean = state["mean"].to(device, torch.float64).clone()
        self.var = state["var"].to(device, torch.float64).clone()
        self.count = count


def _leaves(obs: Any) -> dict[str, torch.Tensor]:
    """Floating leaves of an obs tree by path ("agent/qpos"; "obs" for a single tensor),
    for per-key statistics."""
    return {path or "obs": leaf for path, leaf in leaf_items(obs) if leaf.dtype.is_floating_point}


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


class NormalizeVecEnv(gym.vector.VectorWrapper):
    """Normalize obs to (obs - mean) / sqrt(var + eps) clipped to [-clip_obs, clip_obs]
    (each floating obs entry separately for Dict spaces) and rewards to
    reward / sqrt(var(returns) + eps) clipped to [-clip_rew, clip_rew], where returns
    are per-env discounted returns R <- gamma * R + r, zeroed when an episode ends.

    training=True updates the statistics (obs: every returned row that is a new
    observation; returns: every env that took a real transition), training=False
    freezes them. info["final_obs"] (SAME_STEP) is normalized too, without updating.
    Raw values of the last call: `raw_obs`, `raw_reward`. Dtypes of obs are kept."""

    def __init__(self, env: gym.vector.VectorEnv, norm_obs: bool = True, norm_rew: bool = True,
                 training: bool = True, clip_obs: float = 10.0, clip_rew: float = 10.0,
                 gamma: float = 0.99, eps: float = 1e-8):
        super().__init__(env)
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be a number in [0, 1], got {gamma!r}")
        self.clip_obs, self.clip_rew = _positive("clip_obs", clip_obs), _positive("clip_rew", clip_rew)
        self.eps, self.gamma = _positive("eps", eps), float(gamma)
        self.norm_obs, self.norm_rew, self.training = bool(norm_obs), bool(norm_rew), bool(training)
        self.device = checked_device(env)
        self.autoreset_mode = self.env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.obs_rms: dict[str, RunningMeanStd] | None = None  # built from the first obs
        self.ret_rms = RunningMeanStd((), self.device)
        self.tracker = EpisodeTracker(self.num_envs, self.device, self.autoreset_mode, self.gamma)
        self.raw_obs: Any = None
        self.raw_reward: torch.Tensor | None = None

    # -- gymnasium API --------------------------------------------------------------------
    def reset(self, *, seed: Any = None, options: dict | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        rows = tree.reset_rows(options, self.num_envs, self.device)
        self.tracker.on_reset(rows)
        self.raw_obs = obs
        self._update_obs(obs, rows)
        return self.normalize_obs(obs), info

    def step(self, actions: Any) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        self.raw_obs, self.raw_reward = obs, reward
        # NEXT_STEP: envs reset by this step took no transition (reward 0 by contract)
        episode = self.tracker.on_step(reward, terminated, truncated)
        self._update_obs(obs, torch.ones_like(episode.done))
        if self.training and self.norm_rew:
            self.ret_rms.update(episode.discounted_returns[episode.moved])
        out_reward = self.normalize_reward(reward)
        if "final_obs" in info:
            info = dict(info)
            info["final_obs"] = self.normalize_obs(info["final_obs"])
        return self.normalize_obs(obs), out_reward, terminated, truncated, info

    # -- normalization ---------------------------------------------------------------------
    def normalize_obs(self, obs: Any) -> Any:
        """obs tree -> normalized, clipped obs tree (same dtypes); identity if norm_obs is False."""
        if not self.norm_obs or self.obs_rms is None:
            return obs
        return self._map_leaves(obs, "", lambda path, x: torch.clamp(
            (x.to(torch.float64) - self.obs_rms[path].mean) / torch.sqrt(self.obs_rms[path].var + self.eps),
            -self.clip_obs, self.clip_obs).to(x.dtype))

    def normalize_reward(self, reward: torch.Tensor) -> torch.Tensor:
        """reward (N,) -> reward / sqrt(var(returns) + eps), clipped; same dtype."""
        if not self.norm_rew:
            return reward
        scaled = reward.to(torch.float64) / torch.sqrt(self.ret_rms.var + self.eps)
        return torch.clamp(scaled, -self.clip_rew, self.clip_rew).to(reward.dtype)

    def _map_leaves(self, obs: Any, prefix: str, fn) -> Any:
        if isinstance(obs, dict):
            return {k: self._map_leaves(v, f"{prefix}{k}/", fn) for k, v in obs.items()}
        path = prefix.rstrip("/") or "obs"
        return fn(path, obs) if path in self.obs_rms else obs

    def _update_obs(self, obs: Any, rows: torch.Tensor) -> None:
        if not self.norm_obs:
            return
        leaves = _leaves(obs)
        if self.obs_rms is None:
            self.obs_rms = {p: RunningMeanStd(tuple(x.shape[1:]), self.device) for p, x in leaves.items()}
        if self.training:
            for path, x in leaves.items():
                self.obs_rms[path].update(x[rows.to(x.device)])

    # -- statistics I/O ---------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Statistics and settings, as tensors and numbers (torch.save-able)."""
        return {
            "obs_rms": None if self.obs_rms is None else {p: r.state_dict() for p, r in self.obs_rms.items()},
            "ret_rms": self.ret_rms.state_dict(),
            "settings": {"clip_obs": self.clip_obs, "clip_rew": self.clip_rew, "gamma": self.gamma, "eps": self.eps},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Load statistics from state_dict(); everything is checked first, so a bad state
        raises ValueError and leaves the statistics as they were."""
        if not isinstance(state, dict) or not {"obs_rms", "ret_rms"} <= set(state) <= {"obs_rms", "ret_rms",
                                                                                       "settings"}:
            raise ValueError(f"state must be a dict from NormalizeVecEnv.state_dict() (keys obs_rms, ret_rms, "
                             f"settings), got {sorted(state) if isinstance(state, dict) else type(state).__name__}")
        obs_rms = self.obs_rms
        if state["obs_rms"] is not None:
            if not isinstance(state["obs_rms"], dict):
                raise ValueError(f"state['obs_rms'] must be a dict of statistics per obs key, "
                                 f"got {type(state['obs_rms']).__name__}")
            if self.obs_rms is not None and set(state["obs_rms"]) != set(self.obs_rms):
                raise ValueError(f"state['obs_rms'] must have this env's obs keys {sorted(self.obs_rms)}, "
                                 f"got {sorted(state['obs_rms'])}")
            obs_rms = {}
            for path, rms_state in state["obs_rms"].items():
                mean = rms_state.get("mean") if isinstance(rms_state, dict) else None
                shape = (tuple(self.obs_rms[path].mean.shape) if self.obs_rms is not None
                         else tuple(mean.shape) if isinstance(mean, torch.Tensor) else ())
                rms = RunningMeanStd(shape, self.device)
                rms.load_state_dict(rms_state, name=f"state['obs_rms'][{path!r}]")
                obs_rms[path] = rms
        ret_rms = RunningMeanStd((), self.device)
        ret_rms.load_state_dict(state["ret_rms"], name="state['ret_rms']")
        self.obs_rms, self.ret_rms = obs_rms, ret_rms

    def save(self, path: str | os.PathLike) -> None:
        torch.save(self.state_dict(), path)

    def load(self, path: str | os.PathLike) -> None:
        """Load statistics saved by save(); a missing, corrupt or foreign file raises
        ValueError naming it, and the statistics stay as they were."""
        if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
            raise ValueError(f"path must be an existing file written by NormalizeVecEnv.save(), got {path!r}")
        try:
            state = torch.load(path, weights_only=True)
        except Exception as err:   # torch raises EOFError, UnpicklingError, RuntimeError, ...
            raise ValueError(f"path must be a file written by NormalizeVecEnv.save(), got {path!r} "
                             f"({type(err).__name__}: {err})") from None
        self.load_state_dict(state)
