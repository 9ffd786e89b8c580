"""Stable-Baselines3 on robosim's Reach-v1, unmodified: the runs behind the SB3 rows of
the time-to-solve table (logs beside this file; commands in each log.json).

    python examples/results/sb3_reach.py ppo --total-steps 250000 --out runs/sb3_ppo_reach
    python examples/results/sb3_reach.py sac-her --hparams zoo --gradient-steps -1 \
        --total-steps 16000 --out runs/sb3_sac_her_reach
    python examples/results/sb3_reach.py sac-her --hparams zoo --gradient-steps -1 \
        --total-steps 30000 --reward-mode sparse --out runs/sb3_sac_her_reach_sparse

Training envs: SB3VecEnv(TorchToNumpy(robosim.make_vec(..., SAME_STEP))), the documented
adapter. Every --eval-every env steps the deterministic SB3 policy runs --eval-episodes
seeded episodes through robosim.record.evaluate (the loop `robosim eval` uses).
"""
from __future__ import annotations

import argparse
import shlex
import sys
import time

import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from stable_baselines3 import PPO, SAC, HerReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from tqdm import tqdm

import robosim
from robosim.record.evaluate import evaluate
from robosim.rollout import RunLog
from robosim.vector import TorchToNumpy
from robosim.vector.sb3 import SB3VecEnv


class EvalCallback(BaseCallback):
    """Seeded evaluation every `every` env steps into a RunLog, with a progress bar."""

    def __init__(self, eval_env, log: RunLog, every: int, episodes: int, total: int):
        super().__init__()
        self.eval_env, self.log, self.every, self.episodes = eval_env, log, every, episodes
        self.next_eval, self.start = 0, time.perf_counter()
        self.bar = tqdm(total=total, unit="step", desc=log.title)
        self.reached: dict = {}

    def evaluate_now(self) -> None:
        def policy(obs):
            obs_np = {k: v.cpu().numpy() for k, v in obs.items()} if isinstance(obs, dict) else obs.cpu().numpy()
            return torch.as_tensor(self.model.predict(obs_np, deterministic=True)[0])

        result = evaluate(self.eval_env, policy, self.episodes, seed=10_000)
        row = {"env_steps": self.num_timesteps, "wall_s": round(time.perf_counter() - self.start, 2),
               "eval_success": result.success_rate, "eval_return": round(sum(result.returns) / result.episodes, 4)}
        self.log.add(row)
        for level in (0.9, 0.95):
            if result.success_rate >= level and str(level) not in self.reached:
                self.reached[str(level)] = {"env_steps": row["env_steps"], "wall_s": row["wall_s"]}
        self.log.summary = {"reached": self.reached}
        self.bar.set_postfix(success=f"{result.success_rate:.2f}")

    def _on_step(self) -> bool:
        self.bar.update(self.model.n_envs)
        if self.num_timesteps >= self.next_eval:
            self.evaluate_now()
            self.next_eval += self.every
        return True


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("algo", choices=["ppo", "sac-her"])
    p.add_argument("--total-steps", type=int, default=200_000)
    p.add_argument("--num-envs", type=int, default=None, help="default: 16 for ppo, 4 for sac-her")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=None, help="default: 10000 for ppo, 2000 for sac-her")
    p.add_argument("--eval-episodes", type=int, default=32)
    p.add_argument("--out", required=True)
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--hparams", default="sb3", choices=["sb3", "zoo"],
                   help="sac-her: sb3 = SB3's defaults; zoo = rl-baselines3-zoo's HER set for panda-gym/Fetch "
                        "(gamma 0.95, lr 1e-3, tau 0.05)")
    p.add_argument("--reward-mode", default="dense", choices=["dense", "normalized_dense", "sparse"])
    p.add_argument("--gradient-steps", type=int, default=1,
                   help="sac-her: SB3's gradient_steps per vector step (-1: one per env step)")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    ppo = args.algo == "ppo"
    num_envs = args.num_envs or (16 if ppo else 4)
    every = args.eval_every or (10_000 if ppo else 2_000)
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    venv = SB3VecEnv(TorchToNumpy(robosim.make_vec("Reach-v1", num_envs=num_envs, reward_mode=args.reward_mode,
                                                   autoreset_mode=AutoresetMode.SAME_STEP)))
    eval_env = robosim.make("Reach-v1", num_envs=16, reward_mode=args.reward_mode)
    if ppo:  # SB3 defaults, as the run
        model = PPO("MultiInputPolicy", venv, seed=args.seed, device="cpu")
    else:
        zoo = {"gamma": 0.95, "learning_rate": 1e-3, "tau": 0.05} if args.hparams == "zoo" else {}
        model = SAC("MultiInputPolicy", venv, replay_buffer_class=HerReplayBuffer, seed=args.seed, device="cpu",
                    learning_starts=1_000, gradient_steps=args.gradient_steps, **zoo,
                    replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"})
    config = {**vars(args), "num_envs": num_envs, "eval_every": every,
              "sb3": __import__("stable_baselines3").__version__}
    title = f"SB3 {args.algo.upper()} Reach-v1 ({num_envs} envs, seed {args.seed}, {args.reward_mode} reward)"
    log = RunLog(args.out, config, title,
                 command=shlex.join(["python", "examples/results/sb3_reach.py",
                                     *(sys.argv[1:] if argv is None else argv)]))
    callback = EvalCallback(eval_env, log, every, args.eval_episodes, args.total_steps)
    model.learn(total_timesteps=args.total_steps, callback=callback)
    callback.evaluate_now()
    callback.bar.close()
    successes = [r["eval_success"] for r in log.rows]
    first = next((i for i, s in enumerate(successes) if s >= 0.95), None)
    log.summary = {"reached": callback.reached, "final_success": successes[-1],
                   "min_success_after_first_0.95": None if first is None else float(np.min(successes[first:])),
                   "env_steps": model.num_timesteps, "wall_s": log.rows[-1]["wall_s"]}
    log.write()
    venv.close()
    eval_env.close()
    print(log.summary)
    return log.summary


if __name__ == "__main__":
    main()
