"""BatchedVectorEnv: a gymnasium VectorEnv over a natively batched env, with the three
gymnasium 1.x autoreset modes as three explicit branches of one `step`.

The wrapped env follows robosim's BaseEnv contract (a "batched env"): `num_envs`,
`device`, `single_observation_space`, `single_action_space`,
`reset(seed=, options={"env_idx": idx, ...}) -> (obs, info)` for all N envs,
`step(action) -> (obs, reward, terminated, truncated, info)` with leading dim N, and
no autoreset of its own. BaseEnv, ListBatchedEnv (a list of gymnasium envs) and the
chasing example satisfy it. Everything stays on the env's device: tensors in,
tensors out, no per-env Python loop.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from robosim.envs import checks
from robosim.vector import tree


def to_autoreset_mode(value: Any) -> AutoresetMode:
    """Accept an AutoresetMode or its value string ("NextStep", "SameStep", "Disabled")."""
    if isinstance(value, AutoresetMode):
        return value
    try:
        return AutoresetMode(value)
    except ValueError:
        choices = [m.value for m in AutoresetMode]
        raise ValueError(f"autoreset_mode must be a gymnasium.vector.AutoresetMode or one of {choices}, "
                         f"got {value!r}") from None


class BatchedVectorEnv(gym.vector.VectorEnv):
    """gymnasium.vector.VectorEnv over a batched env (see module docstring).

    Returns torch tensors: obs (N, ...) (dict of tensors for Dict spaces), reward (N,),
    terminated/truncated bool (N,), info a dict of (N, ...) tensors. Autoreset modes
    (gymnasium 1.x SyncVectorEnv semantics):
      NEXT_STEP  envs that ended on the previous step are reset by this step; their
                 action is ignored, their reward is 0, terminated/truncated False and
                 obs/info are the reset ones.
      SAME_STEP  envs that end are reset within the same step; obs/info rows are the
                 reset ones and the ending step is in info["final_obs"] (N, ...) and
                 info["final_info"], with bool (N,) masks info["_final_obs"],
                 info["_final_info"] and final_info["_<key>"] (rows outside the mask
                 hold the current values and must be ignored).
      DISABLED   nothing resets itself: call reset(options={"reset_mask": mask}) (or
                 {"env_idx": idx}); stepping an env that ended raises ValueError.
    """

    def __init__(self, env: Any, autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP):
        for attr in ("num_envs", "device", "single_observation_space", "single_action_space", "reset", "step"):
            if not hasattr(env, attr):
                raise TypeError(f"env must follow the batched env contract (missing `{attr}`), "
                                f"got {type(env).__name__}")
        self.env = env
        self.autoreset_mode = to_autoreset_mode(autoreset_mode)
        self.num_envs = int(env.num_envs)
        self.device = torch.device(env.device)
        self.single_observation_space = env.single_observation_space
        self.single_action_space = env.single_action_space
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.metadata = dict(getattr(env, "metadata", {}) or {})
        self.metadata["autoreset_mode"] = self.autoreset_mode
        self.render_mode = getattr(env, "render_mode", None)
        # envs whose episode ended on the last step and that were not reset since
        self._ended = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)

    # -- reset ----------------------------------------------------------------------------
    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        """Reset all envs, or (any mode) the envs in options["reset_mask"] (bool (N,),
        numpy or torch; DISABLED mode only) / options["env_idx"] (int indices).

        seed: int -> env i gets seed + i; list of N ints -> env i gets seed[i] (only the
        reset envs' entries are used). Other options go to the env. Returns (obs, info)
        for all N envs; rows of envs not reset hold their current obs."""
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        options = {} if options is None else dict(options)  # never mutate the caller's dict
        mask = self._reset_mask(options)
        if mask is None:
            env_seed = seed
            self._ended.zero_()
        else:
            env_idx = mask.nonzero().squeeze(1)
            options["env_idx"] = env_idx.to(self.device)
            env_seed = self._partial_seeds(seed, env_idx)
            self._ended[mask.to(self.device)] = False
        obs, info = self.env.reset(seed=env_seed, options=options or None)
        return obs, info

    def _reset_mask(self, options: dict) -> torch.Tensor | None:
        """Pop reset_mask / env_idx from options and return a CPU bool mask (or None)."""
        has_mask, has_idx = "reset_mask" in options, options.get("env_idx") is not None
        if has_mask and has_idx:
            raise ValueError("options must hold either 'reset_mask' or 'env_idx', got both")
        if has_mask and self.autoreset_mode != AutoresetMode.DISABLED:
            raise ValueError(
                f"options['reset_mask'] applies only in AutoresetMode.DISABLED (this env resets ended "
                f"envs itself), got it with autoreset_mode={self.autoreset_mode}")
        if has_mask:
            mask = checks.to_bool_mask("options['reset_mask']", options.pop("reset_mask"), self.num_envs)
            if not bool(mask.any()):
                raise ValueError(f"options['reset_mask'] must contain at least one True value, "
                                 f"got {mask.tolist()}")
            return mask
        if has_idx:
            idx = checks.to_env_index("options['env_idx']", options.pop("env_idx"), self.num_envs,
                                      torch.device("cpu"))
            mask = torch.zeros(self.num_envs, dtype=torch.bool)
            mask[idx] = True
            return mask
        options.pop("env_idx", None)
        return None

    def _partial_seeds(self, seed: Any, env_idx: torch.Tensor) -> Any:
        """A list seed is given for all N envs (gymnasium's convention); the env wants
        the entries of the envs being reset. An int passes through (env i: seed + i)."""
        if isinstance(seed, (list, tuple, np.ndarray, torch.Tensor)):
            seeds = list(seed.tolist() if hasattr(seed, "tolist") else seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed list must have one entry per env ({self.num_envs}), got {len(seeds)}")
            return [seeds[i] for i in env_idx.tolist()]
        return seed

    # -- step -----------------------------------------------------------------------------
    def step(self, actions: Any):
        """Step all N envs with `actions` (N, ...) (tensor or array; None = no control).

        Returns obs, reward (N,), terminated (N,), truncated (N,), info: see the class
        docstring for what the rows of envs that end or restart hold in each mode."""
        self._check_actions(actions)
        ended = self._ended
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            any_ended = bool(ended.any())
            if any_ended and actions is not None:
                actions = _ignore_rows(actions, ended)  # their action is ignored, even NaN
            obs, reward, terminated, truncated, info = self.env.step(actions)
            if any_ended:
                # The whole batch stepped (one physics step for all envs); the envs that
                # had ended are now reset, which overwrites that step entirely.
                reset_obs, reset_info = self.env.reset(options={"env_idx": ended.nonzero().squeeze(1)})
                obs = tree.where(ended, reset_obs, obs)
                info = tree.merge_info(info, reset_info, ended)
                reward = torch.where(ended, torch.zeros_like(reward), reward)
                terminated = terminated & ~ended
                truncated = truncated & ~ended
            self._ended = terminated | truncated

        elif self.autoreset_mode == AutoresetMode.SAME_STEP:
            obs, reward, terminated, truncated, info = self.env.step(actions)
            done = terminated | truncated
            if bool(done.any()):
                final_obs, final_info = obs, tree.masked_info(info, done)
                reset_obs, reset_info = self.env.reset(options={"env_idx": done.nonzero().squeeze(1)})
                obs = tree.where(done, reset_obs, obs)
                info = tree.merge_info(info, reset_info, done)
                info["final_obs"], info["_final_obs"] = final_obs, done
                info["final_info"], info["_final_info"] = final_info, done.clone()

        elif self.autoreset_mode == AutoresetMode.DISABLED:
            if bool(ended.any()):
                raise ValueError(
                    f"envs {ended.nonzero().squeeze(1).tolist()} ended (terminated or truncated); with "
                    f"AutoresetMode.DISABLED reset them with reset(options={{'reset_mask': mask}}) before step")
            obs, reward, terminated, truncated, info = self.env.step(actions)
            self._ended = terminated | truncated

        else:  # pragma: no cover - AutoresetMode has exactly three members
            raise ValueError(f"autoreset_mode must be one of {list(AutoresetMode)}, got {self.autoreset_mode}")
        return obs, reward, terminated, truncated, info

    def _check_actions(self, actions: Any) -> None:
        """Leading dim must be num_envs: no silent broadcasting of a single action."""
        if actions is None:
            return
        dims = tree.leading_dims(actions) if isinstance(actions, (dict, tuple)) else None
        if dims is not None:
            if dims != {self.num_envs}:
                raise ValueError(f"actions must have leading dim num_envs={self.num_envs} in every entry, "
                                 f"got leading dims {sorted(dims)}")
            return
        if not isinstance(actions, (torch.Tensor, np.ndarray)):
            raise TypeError(f"actions must be a torch.Tensor or numpy array of shape {self.action_space.shape}, "
                            f"got {type(actions).__name__}")
        expected = self.action_space.shape
        if expected is not None and tuple(actions.shape) != tuple(expected):
            raise ValueError(f"actions must have shape {tuple(expected)} (num_envs={self.num_envs}), "
                             f"got {tuple(actions.shape)}")

    # -- passthrough ----------------------------------------------------------------------
    def render(self) -> Any:
        return self.env.render() if hasattr(self.env, "render") else None

    def close_extras(self, **kwargs: Any) -> None:
        if hasattr(self.env, "close"):
            self.env.close()

    @property
    def unwrapped_env(self) -> Any:
        """The batched env inside (e.g. robosim's BaseEnv)."""
        return self.env

    def __repr__(self) -> str:
        return f"BatchedVectorEnv({type(self.env).__name__}, num_envs={self.num_envs}, {self.autoreset_mode})"


def _ignore_rows(actions: Any, rows: torch.Tensor) -> Any:
    """actions with `rows` zeroed, so ignored (maybe NaN) entries cannot trip the env's checks."""
    zeros = tree.tree_map(lambda x: np.zeros_like(x) if isinstance(x, np.ndarray) else torch.zeros_like(x), actions)
    return tree.where(rows, zeros, actions)
