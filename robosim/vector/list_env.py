"""Adapters for ordinary single gymnasium envs (CartPole, a panda-gym style GoalEnv, a
num_envs=1 robosim env behind UnbatchedEnv, ...).

ListVecEnv / SingleVecEnv: MASA's list-based vector API (seed 001): Python lists in and
out, plus `reset_done(dones)` that resets only the envs flagged in `dones`.
ListBatchedEnv: the same list seen through robosim's batched env contract (torch
tensors with leading dim N, `reset(options={"env_idx": ...})`), so BatchedVectorEnv
gives it the three gymnasium autoreset modes and every robosim vector wrapper.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from robosim.core.tree import to_numpy_tree, tree_map
from robosim.envs import checks


def _check_dones(dones: Any, n_envs: int) -> np.ndarray:
    """dones: list/array/tensor of n_envs bools -> numpy bool (n_envs,)."""
    if isinstance(dones, torch.Tensor):
        dones = dones.cpu().numpy()
    if isinstance(dones, (list, tuple)):
        if not all(isinstance(d, (bool, np.bool_)) for d in dones):
            raise ValueError(f"dones must hold bools, got {list(dones)!r}")
        dones = np.array(dones, dtype=bool)
    if not isinstance(dones, np.ndarray):
        raise TypeError(f"dones must be a list, numpy array or tensor of {n_envs} bools, got {type(dones).__name__}")
    if dones.dtype != np.bool_:
        raise ValueError(f"dones must have dtype bool, got {dones.dtype}")
    if dones.shape != (n_envs,):
        raise ValueError(f"dones must have shape ({n_envs},), got {dones.shape}")
    return dones


def _base_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int (env i gets seed + i) or None, got {seed!r}")
    return int(seed)


class ListVecEnv:
    """A Python list of gymnasium envs behind MASA's list vector API.

    reset() -> (obs_list, info_list); step(actions) -> (obs, rew, term, trunc, info)
    lists of length n_envs; reset_done(dones) resets only the flagged envs. With an int
    seed, env i gets seed + i. Envs are stepped one after another in Python."""

    def __init__(self, envs: Sequence[gym.Env] | Sequence[Callable[[], gym.Env]]):
        if not isinstance(envs, (list, tuple)) or len(envs) == 0:
            raise ValueError(f"envs must be a non-empty list of gymnasium envs (or env factories), got {envs!r}")
        self.envs = [e() if callable(e) and not isinstance(e, gym.Env) else e for e in envs]
        for i, env in enumerate(self.envs):
            if not isinstance(env, gym.Env):
                raise TypeError(f"envs[{i}] must be a gymnasium.Env, got {type(env).__name__}")
        self.n_envs = len(self.envs)
        self.env = self.envs[0]  # MASA: a Gymnasium-like surface (spaces, metadata)
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space

    @property
    def num_envs(self) -> int:
        return self.n_envs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[list, list[dict]]:
        """Reset every env (env i with seed + i when seed is an int)."""
        base = _base_seed(seed)
        results = [env.reset(seed=None if base is None else base + i, options=options)
                   for i, env in enumerate(self.envs)]
        return [r[0] for r in results], [r[1] for r in results]

    def step(self, actions: Sequence[Any]) -> tuple[list, list, list, list, list[dict]]:
        """Step env i with actions[i]; `actions` must hold exactly n_envs actions."""
        if isinstance(actions, (str, bytes)) or not hasattr(actions, "__len__"):
            raise TypeError(f"actions must be a sequence of {self.n_envs} actions, got {type(actions).__name__}")
        if len(actions) != self.n_envs:
            raise ValueError(f"actions must hold one action per env ({self.n_envs}), got {len(actions)}")
        results = [env.step(a) for env, a in zip(self.envs, actions)]
        return tuple(list(column) for column in zip(*results))  # type: ignore[return-value]

    def reset_done(self, dones: Any, *, seed: int | None = None,
                   options: dict | None = None) -> tuple[list, list[dict]]:
        """Reset the envs where dones[i] is True (env i with seed + i when seed is an int).

        Returns (reset_obs, reset_infos), lists of length n_envs holding None / {} at
        the envs not reset."""
        mask = _check_dones(dones, self.n_envs)
        base = _base_seed(seed)
        reset_obs: list[Any] = [None] * self.n_envs
        reset_infos: list[dict] = [{} for _ in range(self.n_envs)]
        for i in np.flatnonzero(mask).tolist():
            reset_obs[i], reset_infos[i] = self.envs[i].reset(seed=None if base is None else base + i,
                                                              options=options)
        return reset_obs, reset_infos

    def close(self) -> None:
        for env in self.envs:
            env.close()


class SingleVecEnv(ListVecEnv):
    """One env behind the list API (MASA's DummyVecWrapper): n_envs = 1, `step` takes
    the single env's action and returns lists of length 1."""

    def __init__(self, env: gym.Env):
        super().__init__([env])

    def step(self, action: Any) -> tuple[list, list, list, list, list[dict]]:
        return super().step([action])


def _add_info(infos: dict, env_info: dict, i: int, n: int) -> dict:
    """Put env i's info into the batched info dict, gymnasium style: numbers go into
    (n,) arrays, everything else into object arrays, nested dicts recurse, and a bool
    mask `_key` marks the envs holding the key."""
    for key, value in env_info.items():
        if isinstance(value, dict):
            array = _add_info(infos.get(key, {}), value, i, n)
        else:
            array = infos.get(key)
            if array is None:
                if isinstance(value, (bool, int, float, np.number, np.bool_)):
                    array = np.zeros(n, dtype=np.asarray(value).dtype)
                elif isinstance(value, np.ndarray):
                    array = np.zeros((n, *value.shape), dtype=value.dtype)
                else:
                    array = np.full(n, None, dtype=object)
            array[i] = value
        mask = infos.get(f"_{key}", np.zeros(n, dtype=bool))
        mask[i] = True
        infos[key], infos[f"_{key}"] = array, mask
    return infos


def _to_torch(tree: Any, device: torch.device) -> Any:
    """numpy numeric/bool leaves -> torch on device; object/str arrays stay numpy."""
    return tree_map(lambda x: torch.from_numpy(np.array(x)).to(device) if x.dtype.kind in "biuf" else x, tree)


class ListBatchedEnv:
    """A list of gymnasium envs as a robosim batched env (BaseEnv's reset/step contract).

    obs: torch tensors (N, ...) stacked with gymnasium's `concatenate` (dtype of the
    single observation space); reward float64 (N,); terminated/truncated bool (N,);
    info: gymnasium's batched layout (arrays + `_key` masks) as tensors. An env whose
    episode ended is frozen (not stepped, reward 0) until it is reset."""

    def __init__(self, envs: ListVecEnv | Sequence[gym.Env] | Sequence[Callable[[], gym.Env]],
                 device: str | torch.device = "cpu"):
        self.list_env = envs if isinstance(envs, ListVecEnv) else ListVecEnv(envs)
        self.envs = self.list_env.envs
        self.num_envs = self.list_env.n_envs
        self.device = torch.device(device)
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        for i, env in enumerate(self.envs[1:], start=1):   # one batch layout, as SyncVectorEnv's "same" mode
            for kind, space in (("observation_space", self.single_observation_space),
                                ("action_space", self.single_action_space)):
                if getattr(env, kind) != space:
                    raise ValueError(f"envs[{i}].{kind} must equal envs[0].{kind} ({space}), "
                                     f"got {getattr(env, kind)}")
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = dict(self.envs[0].metadata)
        self.render_mode = self.envs[0].render_mode
        self._obs: list[Any] = [None] * self.num_envs
        self._ended = np.zeros(self.num_envs, dtype=bool)
        self._terminated = np.zeros(self.num_envs, dtype=bool)
        self._truncated = np.zeros(self.num_envs, dtype=bool)

    def reset(self, *, seed: Any = None, options: dict | None = None) -> tuple[Any, dict]:
        """Reset all envs or options["env_idx"]; seed int -> env i gets seed + i, list ->
        one seed per env reset. Other options go to every env's reset."""
        options = dict(options or {})
        env_idx = options.pop("env_idx", None)
        idx = (torch.arange(self.num_envs) if env_idx is None
               else checks.to_env_index("options['env_idx']", env_idx, self.num_envs, torch.device("cpu")))
        seeds = checks.to_seeds("seed", seed, idx)
        infos: dict = {}
        for j, i in enumerate(idx.tolist()):
            self._obs[i], info = self.envs[i].reset(seed=None if seeds is None else seeds[j], options=options or None)
            infos = _add_info(infos, info, i, self.num_envs)
        self._ended[idx.numpy()] = False
        self._terminated[idx.numpy()] = False
        self._truncated[idx.numpy()] = False
        return self._stacked_obs(), _to_torch(infos, self.device)

    def step(self, actions: Any) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        """Step every env that has not ended with its row of `actions` (N, ...)."""
        if actions is None:
            raise ValueError("actions must be given for list-backed envs (gymnasium envs have no no-op), got None")
        actions = to_numpy_tree(actions)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        infos: dict = {}
        for i, action in enumerate(iterate(self.action_space, actions)):
            if self._ended[i]:
                continue
            self._obs[i], rewards[i], term, trunc, info = self.envs[i].step(action)
            self._terminated[i], self._truncated[i] = bool(term), bool(trunc)
            infos = _add_info(infos, info, i, self.num_envs)
        self._ended |= self._terminated | self._truncated
        return (self._stacked_obs(), torch.from_numpy(rewards).to(self.device),
                torch.from_numpy(self._terminated.copy()).to(self.device),
                torch.from_numpy(self._truncated.copy()).to(self.device), _to_torch(infos, self.device))

    def _stacked_obs(self) -> Any:
        out = create_empty_array(self.single_observation_space, n=self.num_envs, fn=np.zeros)
        return _to_torch(concatenate(self.single_observation_space, self._obs, out), self.device)

    def render(self) -> tuple[Any, ...]:
        return tuple(env.render() for env in self.envs)

    # -- gymnasium's per-env extras, as its SyncVectorEnv has them ------------------------
    @property
    def np_random_seed(self) -> tuple[int, ...]:
        """Each env's own np_random_seed (a random one until seeded, as in gymnasium)."""
        return tuple(env.np_random_seed for env in self.envs)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute `name` of every env (through its wrappers)."""
        return tuple(env.get_wrapper_attr(name) for env in self.envs)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Env i's method `name` called with args (or its attribute), for every env."""
        out = []
        for env in self.envs:
            attr = env.get_wrapper_attr(name)
            out.append(attr(*args, **kwargs) if callable(attr) else attr)
        return tuple(out)

    def set_attr(self, name: str, values: Any) -> None:
        """Set `name` on every env: values[i] on env i for a list/tuple, else one value for all."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"values must be one value or a list of num_envs={self.num_envs} values, "
                             f"got {len(values)} values")
        for env, value in zip(self.envs, values):
            env.set_wrapper_attr(name, value)

    def close(self) -> None:
        self.list_env.close()
