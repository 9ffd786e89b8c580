"""UnbatchedEnv: a num_envs=1 robosim env as an ordinary single gymnasium.Env (numpy).

This is what gymnasium's own SyncVectorEnv, its env checker and single-env libraries
expect: obs shaped like `single_observation_space`, a float reward, bool flags."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from robosim.core.tree import tree_map
from robosim.envs.protocol import BatchedEnvCore, checked_device


def _row0(value: Any) -> Any:
    """Row 0 of a batched tensor as numpy: 0-d bools -> bool, other 0-d -> numpy scalar."""
    if isinstance(value, dict):
        return {k: _row0(v) for k, v in value.items()}
    if not isinstance(value, torch.Tensor):
        return value
    row = value[0].detach().cpu().numpy()
    if row.ndim == 0:
        return bool(row) if row.dtype == np.bool_ else row[()]
    return row


def is_goal_env(env: Any) -> bool:
    """True for a goal-conditioned batched env: a Dict observation with "achieved_goal"
    and "desired_goal" and a compute_reward method (panda-gym's GoalEnv shape)."""
    if not isinstance(env, BatchedEnvCore):
        return False
    space = env.single_observation_space
    return (isinstance(space, gym.spaces.Dict) and {"achieved_goal", "desired_goal"} <= set(space.spaces)
            and callable(getattr(type(env), "compute_reward", None)))


class UnbatchedEnv(gym.Env):
    """Wrap a batched env with num_envs == 1 (e.g. `robosim.make(..., num_envs=1)`).

    Only goal-conditioned envs (is_goal_env) come out with `compute_reward` (as an
    UnbatchedGoalEnv, a subclass): SB3's check_env and HER take any env that has it for
    a GoalEnv, so PushCube, PickCube, ... must not.

    reset(seed, options) -> (obs, info); step(action (A,)) -> (obs, float reward,
    bool terminated, bool truncated, info); obs are numpy arrays (dicts of them for
    Dict spaces) of the single observation space's shape and dtype. The env does not
    reset itself; seeding follows the batched env (seed s here == env 0 seeded s)."""

    def __new__(cls, env: Any = None, *args: Any, **kwargs: Any) -> UnbatchedEnv:
        if cls is UnbatchedEnv and is_goal_env(env):
            cls = UnbatchedGoalEnv
        return super().__new__(cls)

    def __init__(self, env: Any):
        self.device = checked_device(env)
        if env.num_envs != 1:
            raise ValueError(f"env must be a batched env with num_envs=1, got num_envs={env.num_envs!r}")
        self.env = env
        self.observation_space = env.single_observation_space
        self.action_space = env.single_action_space
        self.metadata = dict(env.metadata)
        self.render_mode = env.render_mode

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        obs, info = self.env.reset(seed=seed, options=options)
        return _row0(obs), _row0(info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        batched = tree_map(lambda a: torch.as_tensor(np.asarray(a), device=self.device).unsqueeze(0), action)
        obs, reward, terminated, truncated, info = self.env.step(batched)
        info = _row0(info)
        if "success" in info:
            info.setdefault("is_success", info["success"])  # the key SB3 and panda-gym read
        return _row0(obs), float(reward[0]), bool(terminated[0]), bool(truncated[0]), info

    def render(self) -> Any:
        frames = self.env.render()
        return None if frames is None else frames[0].cpu().numpy()

    def close(self) -> None:
        self.env.close()


class UnbatchedGoalEnv(UnbatchedEnv):
    """UnbatchedEnv of a goal-conditioned env (UnbatchedEnv(env) picks it itself)."""

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """Goal-conditioned tasks: reward of any (..., goal_dim) goal pairs, numpy in and
        out (what SB3's HER and check_env call through their wrappers)."""
        reward = self.env.compute_reward(np.asarray(achieved_goal, dtype=np.float32),
                                         np.asarray(desired_goal, dtype=np.float32), info)
        return reward.detach().cpu().numpy() if isinstance(reward, torch.Tensor) else reward
