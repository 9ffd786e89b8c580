"""SB3VecEnv: a numpy gymnasium vector env in SAME_STEP mode as a Stable-Baselines3 VecEnv.

    venv = TorchToNumpy(robosim.make_vec("PickCube-v1", num_envs=8,
                                         autoreset_mode=gym.vector.AutoresetMode.SAME_STEP))
    model = stable_baselines3.PPO("MlpPolicy", SB3VecEnv(venv)).learn(10_000)

Needs stable-baselines3 (the `test` extra); robosim.vector does not import this module.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv


class SB3VecEnv(VecEnv):
    """SB3 resets envs within the step that ends them, which is gymnasium's SAME_STEP
    mode: info["final_obs"][i] becomes infos[i]["terminal_observation"] and truncation
    without termination sets infos[i]["TimeLimit.truncated"], as SB3's DummyVecEnv does;
    infos[i] of an env that ended is the ending step's info (is_success, the episode's
    "episode" {"r", "l", ...}), not the next episode's reset info. env_method/get_attr
    reach the first wrapper that has the attribute (e.g. compute_reward for HER).
    Observations (N, ...) numpy, rewards float32 (N,), dones bool (N,)."""

    def __init__(self, venv: gym.vector.VectorEnv):
        mode = venv.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError(f"venv must use autoreset_mode=AutoresetMode.SAME_STEP (SB3 resets in the same step), "
                             f"got {mode}")
        self.venv = venv
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions: np.ndarray | None = None

    def reset(self) -> Any:
        seeds = None if all(s is None for s in self._seeds) else [int(s) for s in self._seeds]
        obs, info = self.venv.reset(seed=seeds)
        self._reset_seeds()
        self.reset_infos = self._per_env(info)
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, list[dict]]:
        obs, reward, terminated, truncated, info = self.venv.step(self._actions)
        dones = np.logical_or(terminated, truncated)
        infos = self._per_env({k: v for k, v in info.items() if k not in ("final_obs", "final_info")})
        ending = self._per_env(info.get("final_info", {}))
        for i in np.flatnonzero(dones):
            infos[i] = ending[i]
            infos[i]["terminal_observation"] = info["final_obs"][i]
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        return obs, np.asarray(reward, dtype=np.float32), dones, infos

    def _per_env(self, info: dict) -> list[dict]:
        """Batched info (N, ...) -> one dict per env (keys with a `_k` mask only where set)."""
        out: list[dict] = [{} for _ in range(self.num_envs)]
        for key, value in info.items():
            if key.startswith("_"):
                continue
            held = info.get(f"_{key}", np.ones(self.num_envs, dtype=bool))
            if isinstance(value, dict):
                rows = self._per_env(value)
                for i in np.flatnonzero(held):
                    out[i][key] = rows[i]
                continue
            if not isinstance(value, np.ndarray) or value.shape[:1] != (self.num_envs,):
                continue
            for i in np.flatnonzero(held):
                out[i][key] = value[i]
        return out

    def _find(self, attr_name: str) -> Any:
        """The attribute from the outermost wrapper of venv that has it."""
        env = self.venv
        while env is not None:
            if attr_name in dir(env) or attr_name in getattr(env, "__dict__", {}):
                return getattr(env, attr_name)
            env = getattr(env, "env", None)
        raise AttributeError(f"attr_name must be an attribute of {self.venv} or an env inside it, got {attr_name!r}")

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [self._find(attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        result = self._find(method_name)(*args, **kwargs)
        return [result] * len(self._get_indices(indices))

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        env, wrapped = self.venv, False
        while env is not None and not wrapped:
            wrapped = isinstance(env, wrapper_class)
            env = getattr(env, "env", None)
        return [wrapped] * len(self._get_indices(indices))

    def _get_indices(self, indices: Any) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else list(indices)
