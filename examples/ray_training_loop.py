"""A training-style loop on envs sharded over Ray workers (one machine or a cluster).

    python examples/ray_training_loop.py --workers 2 --num-envs 16 --iterations 5
    python examples/ray_training_loop.py --address HEAD_IP:6379 --workers 8 --num-envs 256

A tiny Gaussian linear policy on PickCube-v1 state obs, updated by REINFORCE with a
batch-mean baseline every `--horizon` steps. The loop is pipelined: step_async() sends
the actions, the driver computes the log-probabilities it needs for the update while
the workers simulate, then step_wait() brings the next obs. Prints env-steps/s and the mean reward per iteration.
"""
from __future__ import annotations

import argparse
import time

import torch
from gymnasium.vector import AutoresetMode

import robosim


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--address", default=None, help="Ray cluster (HEAD_IP:6379); default: a local Ray")
    p.add_argument("--workers", type=int, default=2, help="Ray worker processes (default: 2)")
    p.add_argument("--num-envs", type=int, default=16, help="envs in all, split over the workers (default: 16)")
    p.add_argument("--iterations", type=int, default=5, help="policy updates (default: 5)")
    p.add_argument("--horizon", type=int, default=20, help="steps per update (default: 20)")
    p.add_argument("--worker-cpus", type=float, default=1.0, help="Ray CPUs per worker (default: 1)")
    args = p.parse_args(argv)

    venv = robosim.make_vec("PickCube-v1", num_envs=args.num_envs, workers=args.workers,
                            ray_address=args.address, worker_cpus=args.worker_cpus,
                            autoreset_mode=AutoresetMode.SAME_STEP, control_mode="pd_ee_delta_pose")
    obs_dim, act_dim = venv.single_observation_space.shape[0], venv.single_action_space.shape[0]
    policy = torch.nn.Linear(obs_dim, act_dim)
    log_std = torch.nn.Parameter(torch.full((act_dim,), -0.5))
    optim = torch.optim.Adam([*policy.parameters(), log_std], lr=3e-3)
    print(f"{venv}: workers on nodes {sorted(set(venv.worker_nodes))}")

    obs, _ = venv.reset(seed=0)
    start, steps = time.perf_counter(), 0
    for it in range(args.iterations):
        log_probs, rewards = [], []
        for _t in range(args.horizon):
            dist = torch.distributions.Normal(policy(obs), log_std.exp())
            action = dist.sample()
            venv.step_async(action.clamp(-1, 1))          # workers simulate from here ...
            log_probs.append(dist.log_prob(action).sum(-1))  # ... while the driver keeps working
            obs, reward, terminated, truncated, info = venv.step_wait()
            rewards.append(reward)
            steps += venv.num_envs
        returns = torch.stack(rewards).flip(0).cumsum(0).flip(0)        # (T, N) reward-to-go
        advantage = (returns - returns.mean()) / (returns.std() + 1e-8)
        loss = -(torch.stack(log_probs) * advantage).mean()
        optim.zero_grad()
        loss.backward()
        optim.step()
        rate = steps / (time.perf_counter() - start)
        print(f"iteration {it}: mean reward {torch.stack(rewards).mean():.3f}, {rate:,.0f} env-steps/s")
    venv.close()


if __name__ == "__main__":
    main()
