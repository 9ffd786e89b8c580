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
from gymnasium.vector.utils import concatenate, create_empty_array

from robosim.core.tree import is_leaf, leading_dims, per_env, to_numpy_tree, tree_map
from robosim.envs import checks
from robosim.envs.protocol import BatchedEnv, BatchedEnvCore, check_env
from robosim.vector import tree
from robosim.vector.episode_stats import ending_flags
from robosim.vector.episode_tracker import EpisodeTracker
from robosim.vector.list_env import ListBatchedEnv

# NEXT_STEP / DISABLED: where the vector env puts ended episodes' metrics. Not "episode":
# gymnasium's RecordEpisodeStatistics (CleanRL's chain) refuses an info that has it.
EPISODE_METRICS_KEY = "episode_metrics"


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



def reset_mask_from_options(options: dict, autoreset_mode: AutoresetMode, num_envs: int) -> torch.Tensor | None:
    """Pop reset_mask / env_idx from a vector reset's options; a CPU bool (num_envs,) mask,
    or None for a reset of every env. reset_mask applies only in AutoresetMode.DISABLED."""
    has_mask, has_idx = "reset_mask" in options, options.get("env_idx") is not None
    if has_mask and has_idx:
        raise ValueError("options must hold either 'reset_mask' or 'env_idx', got both")
    if has_mask and autoreset_mode != AutoresetMode.DISABLED:
        raise ValueError(
            f"options['reset_mask'] applies only in AutoresetMode.DISABLED (this env resets ended "
            f"envs itself), got it with autoreset_mode={autoreset_mode}")
    if has_mask:
        mask = checks.to_bool_mask("options['reset_mask']", options.pop("reset_mask"), num_envs)
        if not bool(mask.any()):
            raise ValueError(f"options['reset_mask'] must contain at least one True value, "
                             f"got {mask.tolist()}")
        return mask
    if has_idx:
        idx = checks.to_env_index("options['env_idx']", options.pop("env_idx"), num_envs,
                                  torch.device("cpu"))
        mask = torch.zeros(num_envs, dtype=torch.bool)
        mask[idx] = True
        return mask
    options.pop("env_idx", None)
    return None


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
    ignore_terminations=True (ManiSkill3's option): terminated is always False and
    episodes end only on truncation (fixed-horizon episodes); success_at_end is recorded.
    Episode metrics (EpisodeTracker.finished: "r", "l", "return", "episode_len",
    "reward", "success_once", ...) of envs that ended are in final_info["episode"]
    (SAME_STEP, ManiSkill3's place) or info["episode_metrics"] (other modes; top-level
    info["episode"] is left to the statistics wrappers: gymnasium's
    RecordEpisodeStatistics, robosim's EpisodeStatistics), masked by "_episode" /
    "_episode_metrics". Every info key
    `k` comes with gymnasium's bool (N,) mask `_k`.
    """

    def __init__(self, env: BatchedEnvCore, autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                 ignore_terminations: bool = False):
        check_env("env", env)
        self.env = env
        self.autoreset_mode = to_autoreset_mode(autoreset_mode)
        if not isinstance(ignore_terminations, (bool, np.bool_)):
            raise TypeError(f"ignore_terminations must be a bool, got {ignore_terminations!r}")
        self.ignore_terminations = bool(ignore_terminations)
        self.num_envs = int(env.num_envs)
        self.device = torch.device(env.device)
        self.single_observation_space = env.single_observation_space
        self.single_action_space = env.single_action_space
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.metadata = dict(env.metadata)
        self.metadata["autoreset_mode"] = self.autoreset_mode
        self.render_mode = env.render_mode
        # envs whose episode ended on the last step and that were not reset since
        self._ended = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        self.episodes = EpisodeTracker(self.num_envs, self.device, self.autoreset_mode)
        self._seeds: list[int] = self._initial_seeds()  # the per-env seeds in use

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
        rows = torch.ones(self.num_envs, dtype=torch.bool) if mask is None else mask
        self.episodes.on_reset(rows.to(self.device))
        self._remember_seeds(seed, rows)
        return obs, tree.add_masks(tree.batch_scalars(info, self.num_envs, self.device), rows.to(self.device))

    def _remember_seeds(self, seed: Any, rows: torch.Tensor) -> None:
        if seed is None:
            return
        per_env = isinstance(seed, (list, tuple, np.ndarray, torch.Tensor))
        for i in rows.nonzero().squeeze(1).tolist():
            self._seeds[i] = int(seed[i]) if per_env else int(seed) + i

    def _reset_mask(self, options: dict) -> torch.Tensor | None:
        return reset_mask_from_options(options, self.autoreset_mode, self.num_envs)

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
        actions = self._check_actions(actions)
        ended = self._ended
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            any_ended = bool(ended.any())
            if any_ended and actions is not None:
                actions = _ignore_rows(actions, ended)  # their action is ignored, even NaN
            obs, reward, terminated, truncated, info = self._env_step(actions)
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
            info = self._with_episode(info, self._track(info, reward, terminated, truncated))

        elif self.autoreset_mode == AutoresetMode.SAME_STEP:
            obs, reward, terminated, truncated, info = self._env_step(actions)
            episode = self._track(info, reward, terminated, truncated)
            done = terminated | truncated
            if bool(done.any()):
                final_obs, final_info = obs, tree.masked_info(info, done)
                final_info["episode"], final_info["_episode"] = episode.finished, done.clone()
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
            obs, reward, terminated, truncated, info = self._env_step(actions)
            episode = self._track(info, reward, terminated, truncated)
            self._ended = terminated | truncated
            info = self._with_episode(info, episode)

        else:  # pragma: no cover - AutoresetMode has exactly three members
            raise ValueError(f"autoreset_mode must be one of {list(AutoresetMode)}, got {self.autoreset_mode}")
        return obs, reward, terminated, truncated, tree.add_masks(info, torch.ones_like(terminated))

    def _env_step(self, actions: Any):
        obs, reward, terminated, truncated, info = self.env.step(actions)
        if "success" in info and "is_success" not in info:
            info["is_success"] = info["success"]  # the key SB3 and panda-gym read
        if self.ignore_terminations:
            terminated = torch.zeros_like(terminated)
        return obs, reward, terminated, truncated, info

    def _track(self, info: dict, reward: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor):
        """Episode bookkeeping of the step just taken (before any autoreset touches info)."""
        done = terminated | truncated
        return self.episodes.on_step(reward, terminated, truncated,
                                     ending_flags(info, done, "success", self.autoreset_mode, self.device),
                                     ending_flags(info, done, "fail", self.autoreset_mode, self.device))

    @staticmethod
    def _with_episode(info: dict, episode: Any) -> dict:
        if episode.finished is not None:
            info = dict(info)
            info[EPISODE_METRICS_KEY], info[f"_{EPISODE_METRICS_KEY}"] = episode.finished, episode.done.clone()
        return info

    def _check_actions(self, actions: Any) -> Any:
        """Leading dim must be num_envs: no silent broadcasting of a single action. A list
        of num_envs per-env actions (what gymnasium's SyncVectorEnv accepts) is stacked."""
        if actions is None:
            return None
        if isinstance(actions, list):
            actions = self._stack_actions(actions)
        dims = leading_dims(actions) if isinstance(actions, (dict, tuple)) else None
        if dims is not None:
            if dims != {self.num_envs}:
                raise ValueError(f"actions must have leading dim num_envs={self.num_envs} in every entry, "
                                 f"got leading dims {sorted(dims)}")
            return actions
        if not isinstance(actions, (torch.Tensor, np.ndarray)):
            raise TypeError(f"actions must be a torch.Tensor, numpy array or list of {self.num_envs} per-env "
                            f"actions, shaped {self.action_space.shape}, got {type(actions).__name__}")
        expected = self.action_space.shape
        if expected is not None and tuple(actions.shape) != tuple(expected):
            raise ValueError(f"actions must have shape {tuple(expected)} (num_envs={self.num_envs}), "
                             f"got {tuple(actions.shape)}")
        return actions

    def _stack_actions(self, actions: list) -> Any:
        """A list of num_envs single-env actions -> one batched action (torch stays torch)."""
        if len(actions) != self.num_envs:
            raise ValueError(f"actions must be a list of one action per env (num_envs={self.num_envs}), "
                             f"got a list of {len(actions)}")
        if all(isinstance(a, torch.Tensor) for a in actions):
            try:
                return torch.stack(actions)
            except RuntimeError as err:
                raise ValueError(f"actions must be per-env actions of shape {self.single_action_space.shape}, "
                                 f"got a list of tensors shaped {[tuple(a.shape) for a in actions]}") from err
        rows = [to_numpy_tree(a) for a in actions]
        out = create_empty_array(self.single_action_space, n=self.num_envs, fn=np.zeros)
        try:
            return concatenate(self.single_action_space, rows, out)
        except (ValueError, TypeError, KeyError, IndexError) as err:
            raise ValueError(f"actions must be a list of {self.num_envs} actions of the single action space "
                             f"{self.single_action_space}, got {actions!r}") from err

    # -- gymnasium VectorEnv extras -------------------------------------------------------
    @property
    def np_random_seed(self) -> tuple[int, ...]:
        """Per-env seeds in use, as gymnasium's vector envs report them: seed + i (or
        seed[i]) after a seeded reset; before one, the env's own seeds (robosim envs
        draw random ones, or take make(seed=...)). A batched env that reports a tuple of
        per-env seeds itself (ListBatchedEnv) is asked; -1 where a seed is unknown."""
        if isinstance(self.env, ListBatchedEnv):
            return self.env.np_random_seed
        return tuple(self._seeds)

    def _initial_seeds(self) -> list[int]:
        if isinstance(self.env, BatchedEnv):   # a robosim env: the seeds its streams use
            return [int(s) for s in self.env.build_seeds]
        return [-1] * self.num_envs   # gymnasium's value for "not known"

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The batched env's attribute `name`, one entry per env: row i of a batched
        tensor/array (leading dim num_envs), else the one shared value repeated. A batched
        env with its own per-env get_attr (ListBatchedEnv) answers itself."""
        if isinstance(self.env, ListBatchedEnv):
            return tuple(self.env.get_attr(name))
        if not hasattr(self.env, name):
            raise AttributeError(f"name must be an attribute of {type(self.env).__name__}, got {name!r}")
        return per_env(getattr(self.env, name), self.num_envs)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call the batched env's method `name` once (it acts on all N envs) and return
        one entry per env as gymnasium does: row i of a batched result (e.g. call("render")
        gives env i's frame), else the result repeated. A non-callable attribute is
        returned as get_attr does. A batched env with its own per-env `call` answers itself."""
        if isinstance(self.env, ListBatchedEnv):
            return tuple(self.env.call(name, *args, **kwargs))
        if not hasattr(self.env, name):
            raise AttributeError(f"name must be an attribute of {type(self.env).__name__}, got {name!r}")
        attr = getattr(self.env, name)
        return per_env(attr(*args, **kwargs) if callable(attr) else attr, self.num_envs)

    def set_attr(self, name: str, values: Any) -> None:
        """Set the batched env's attribute `name`: one value for every env, or a list of
        num_envs values. Per-env different values go into the rows of a batched tensor
        attribute (leading dim num_envs); for any other attribute the N envs share one
        object, so they must be equal. ListBatchedEnv sets each env's own attribute."""
        if isinstance(self.env, ListBatchedEnv):
            self.env.set_attr(name, values)
            return
        if not isinstance(values, (list, tuple)):
            setattr(self.env, name, values)
            return
        if len(values) != self.num_envs:
            raise ValueError(f"values must be one value or a list of num_envs={self.num_envs} values, "
                             f"got a list of {len(values)}")
        current = getattr(self.env, name, None)
        if isinstance(current, torch.Tensor) and is_leaf(current, self.num_envs):
            rows = torch.stack([torch.as_tensor(v, dtype=current.dtype) for v in values]).to(current.device)
            if rows.shape != current.shape:
                raise ValueError(f"values must be {self.num_envs} rows shaped {tuple(current.shape[1:])} for "
                                 f"`{name}`, got {[tuple(torch.as_tensor(v).shape) for v in values]}")
            current.copy_(rows)
            return
        if any(v is not values[0] and v != values[0] for v in values[1:]):
            raise ValueError(f"values must be equal for every env: `{name}` is one object shared by the "
                             f"{self.num_envs} envs of a batched env, got {list(values)!r}")
        setattr(self.env, name, values[0])

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """Goal-conditioned tasks: reward of any (..., goal_dim) goal pairs (HER relabeling)."""
        return self.env.compute_reward(achieved_goal, desired_goal, info)

    # -- passthrough ----------------------------------------------------------------------
    def render(self) -> Any:
        return self.env.render()

    def close_extras(self, **kwargs: Any) -> None:
        self.env.close()

    @property
    def unwrapped_env(self) -> Any:
        """The batched env inside (e.g. robosim's BaseEnv)."""
        return self.env

    def __repr__(self) -> str:
        return f"BatchedVectorEnv({type(self.env).__name__}, num_envs={self.num_envs}, {self.autoreset_mode})"


def _ignore_rows(actions: Any, rows: torch.Tensor) -> Any:
    """actions with `rows` zeroed, so ignored (maybe NaN) entries cannot trip the env's checks."""
    zeros = tree_map(lambda x: np.zeros_like(x) if isinstance(x, np.ndarray) else torch.zeros_like(x), actions)
    return tree.where(rows, zeros, actions)
