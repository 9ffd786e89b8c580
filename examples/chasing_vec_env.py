"""ElegantRL's chasing task (seed 004) as a fully vectorized torch env on robosim's
vector API: every transition, termination and (partial) reset is a batched tensor op,
with no Python loop over envs.

An agent chases a randomly moving robot in `dim`-D space. Reward: the decrease in
distance minus 0.02 * |action|, plus init_distance (8.0) when the agent gets within
1.0 of the robot, which terminates the episode; episodes truncate after max_step.

The env follows robosim's batched env contract (like robosim.envs.BaseEnv: no
autoreset of its own), so BatchedVectorEnv gives it the gymnasium autoreset modes and
robosim's wrappers apply unchanged. Seeding follows robosim's contract too: env i's
k-th episode, including the robot's random moves, depends only on (seed_i, k), drawn
from a counter-based hash so that per-env streams need no per-env generator objects.

    python examples/chasing_vec_env.py --num-envs 4096 --steps 1000
"""
from __future__ import annotations

import argparse
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from robosim.envs import checks
from robosim.vector import BatchedVectorEnv, EpisodeStatistics

_M32 = 0xFFFFFFFF


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """(x * c) mod 2**32 for int64 x in [0, 2**32), split so no int64 product overflows."""
    return (x * (c & 0xFFFF) + (((x * (c >> 16)) & 0xFFFF) << 16)) & _M32


def hash32(x: torch.Tensor) -> torch.Tensor:
    """Chris Wellons' lowbias32 integer hash, elementwise on int64 tensors in [0, 2**32)."""
    x = x & _M32
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def uniform(keys: torch.Tensor, counters: torch.Tensor, n: int) -> torch.Tensor:
    """float32 (N, n) in [0, 1): draw j of row i depends only on (keys[i], counters[i], j)."""
    j = torch.arange(n, device=keys.device)
    h = hash32(keys.unsqueeze(1) ^ hash32(counters.unsqueeze(1) * 64 + j + 0x9E3779B9))
    return (hash32(h) >> 8).to(torch.float32) * (1.0 / 2**24)


def normal(keys: torch.Tensor, counters: torch.Tensor, n: int) -> torch.Tensor:
    """float32 (N, n) standard normal draws (Box-Muller over two uniform streams)."""
    u = uniform(keys, counters, 2 * n)
    radius = torch.sqrt(-2.0 * torch.log1p(-u[:, :n]))  # 1 - u in (0, 1]: log is finite
    return radius * torch.cos(2 * torch.pi * u[:, n:])


class ChasingVecEnv:
    """N chasing envs as one batch. obs float32 (N, 4 * dim) = [robot pos, robot vel,
    agent pos, agent vel]; action float32 (N, dim) (rescaled to norm <= 1); reward
    float32 (N,); info: success (caught), fail, elapsed_steps, distance."""

    metadata: dict[str, Any] = {"render_modes": []}
    render_mode = None

    def __init__(self, dim: int = 2, num_envs: int = 4096, device: str | torch.device = "cpu",
                 max_step: int = 2**10, init_distance: float = 8.0):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive int, got {dim!r}")
        self.dim, self.num_envs, self.device = dim, num_envs, torch.device(device)
        self.init_distance = float(init_distance)  # robot starts ~init_distance per axis away
        # ElegantRL's env info
        self.env_name = "ChasingVecEnv"
        self.state_dim = 4 * dim
        self.action_dim = dim
        self.max_step = int(max_step)
        self.if_discrete = False
        self.target_return = 6.3

        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (self.state_dim,), np.float32)
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, (dim,), np.float32)
        zeros = lambda *shape, dtype=torch.float32: torch.zeros(shape, dtype=dtype, device=self.device)  # noqa: E731
        self.p0s, self.v0s, self.p1s, self.v1s = (zeros(num_envs, dim) for _ in range(4))
        self.distances = zeros(num_envs)
        self.elapsed_steps = zeros(num_envs, dtype=torch.int64)
        self.base_seeds = torch.randint(0, 2**31, (num_envs,), device=self.device)
        self.episodes = zeros(num_envs, dtype=torch.int64) - 1
        self.episode_keys = zeros(num_envs, dtype=torch.int64)

    def reset(self, *, seed: Any = None, options: dict | None = None) -> tuple[torch.Tensor, dict]:
        """Reset all envs or options["env_idx"]; seed int -> env i gets seed + i."""
        options = options or {}
        idx = options.get("env_idx")
        idx = (torch.arange(self.num_envs, device=self.device) if idx is None
               else checks.to_env_index("options['env_idx']", idx, self.num_envs, self.device))
        if seed is not None:
            if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
                self.base_seeds[idx] = int(seed) + idx  # vectorized: no per-env list
            else:
                seeds = checks.to_seeds("seed", seed, idx.cpu())  # lists, and the error messages
                self.base_seeds[idx] = torch.as_tensor(seeds, device=self.device)
            self.episodes[idx] = -1
        self.episodes[idx] += 1
        keys = hash32(hash32(self.base_seeds[idx]) ^ hash32(self.episodes[idx] + 0x51ED))
        self.episode_keys[idx] = keys
        start = normal(keys, torch.full_like(keys, -1), 2 * self.dim)  # counter -1: the start draw
        self.p0s[idx] = start[:, : self.dim]
        self.p1s[idx] = start[:, self.dim:] - self.init_distance
        self.v0s[idx] = 0.0
        self.v1s[idx] = 0.0
        self.elapsed_steps[idx] = 0
        self.distances = (self.p0s - self.p1s).norm(dim=1)
        return self._obs(), self._info(torch.zeros(self.num_envs, dtype=torch.bool, device=self.device))

    def step(self, action: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        action1s = checks.to_float_tensor("action", action, (self.num_envs, self.dim), self.device)
        # the robot: a random push each step, as in ElegantRL (uniform [0, 1) per axis)
        action0s = uniform(self.episode_keys, self.elapsed_steps, self.dim)
        action0s = action0s / action0s.norm(dim=1, keepdim=True).clamp_min(1.0)
        self.v0s = self.v0s * 0.50 + action0s
        self.p0s = self.p0s + self.v0s * 0.01

        action1s_l2 = action1s.norm(dim=1, keepdim=True)
        action1s = action1s / action1s_l2.clamp_min(1.0)
        self.v1s = self.v1s * 0.75 + action1s
        self.p1s = self.p1s + self.v1s * 0.01

        distances = (self.p0s - self.p1s).norm(dim=1)
        reward = self.distances - distances - action1s_l2.squeeze(1) * 0.02
        self.distances = distances
        self.elapsed_steps += 1
        caught = distances < 1.0
        reward = reward + caught * self.init_distance
        truncated = (self.elapsed_steps >= self.max_step) & ~caught
        return self._obs(), reward, caught, truncated, self._info(caught)

    def _obs(self) -> torch.Tensor:
        return torch.cat([self.p0s, self.v0s, self.p1s, self.v1s], dim=1)

    def _info(self, caught: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"success": caught, "fail": torch.zeros_like(caught),
                "elapsed_steps": self.elapsed_steps.clone(), "distance": self.distances.clone()}

    def render(self) -> None:
        return None

    def close(self) -> None:
        pass


def pursuit_policy(obs: torch.Tensor, dim: int) -> torch.Tensor:
    """Head straight for the robot: (N, dim) unit vectors from agent to robot."""
    direction = obs[:, :dim] - obs[:, 2 * dim: 3 * dim]
    return direction / direction.norm(dim=1, keepdim=True).clamp_min(1e-6)


def benchmark(num_envs: int = 4096, steps: int = 1000, autoreset_mode: str = "SameStep",
              seed: int = 0) -> dict[str, float]:
    """Run the pursuit policy through BatchedVectorEnv + EpisodeStatistics; env-steps/s."""
    torch.manual_seed(seed)
    env = ChasingVecEnv(num_envs=num_envs)
    venv = EpisodeStatistics(BatchedVectorEnv(env, autoreset_mode), buffer_length=100_000)
    obs, _ = venv.reset(seed=seed)
    start = time.perf_counter()
    for _ in range(steps):
        obs, reward, terminated, truncated, info = venv.step(pursuit_policy(obs, env.dim))
        if autoreset_mode == "Disabled" and bool((terminated | truncated).any()):
            obs, _ = venv.reset(options={"reset_mask": terminated | truncated})
    elapsed = time.perf_counter() - start
    returns = list(venv.return_queue)
    return {"env_steps_per_s": num_envs * steps / elapsed, "seconds": elapsed, "episodes": len(returns),
            "mean_return": float(np.mean(returns)) if returns else float("nan"), "target_return": env.target_return}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--autoreset-mode", default="SameStep", choices=["NextStep", "SameStep", "Disabled"])
    args = parser.parse_args()
    result = benchmark(args.num_envs, args.steps, args.autoreset_mode)
    print(f"{args.num_envs} envs x {args.steps} steps ({args.autoreset_mode}): "
          f"{result['env_steps_per_s']:,.0f} env-steps/s in {result['seconds']:.2f} s; "
          f"{result['episodes']} episodes, mean return {result['mean_return']:.2f} "
          f"(target_return {result['target_return']})")


if __name__ == "__main__":
    main()
