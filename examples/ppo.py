"""PPO on robosim in one file (CleanRL's shape over robosim.rollout).

    python examples/ppo.py --task Reach-v1 --num-envs 32 --total-steps 150000 --out runs/ppo_reach
    ROBOSIM_POLICY=runs/ppo_reach/policy.pt robosim eval Reach-v1 \\
        --policy robosim.rollout.checkpoint:from_env_var --episodes 20 --video runs/ppo_reach/eval.mp4

Observations go through NormalizeVecEnv; the collector fills (T, N, ...) buffers; GAE
bootstraps truncated episodes from their final observation. Every --eval-every env steps
the deterministic policy (the one saved to policy.pt) runs --eval-episodes seeded
episodes through robosim.record.evaluate, the loop `robosim eval` uses. Writes
<out>/log.csv, log.json, curve.png, policy.pt (runnable by `robosim eval`), train_state.pt.
"""
from __future__ import annotations

import argparse
import copy
import shlex
import sys
import time

import gymnasium as gym
import torch
from torch import nn
from tqdm import tqdm

import robosim
from robosim.envs.registry import import_modules
from robosim.record.evaluate import evaluate
from robosim.rollout import RolloutCollector, RunLog, flatten_obs, save_policy
from robosim.vector import NormalizeVecEnv


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="Reach-v1", help="task id, or 'package.module:TaskClass'")
    p.add_argument("--import", dest="imports", metavar="MODULE", action="append", default=[],
                   help="import MODULE first (found in the current directory too), so tasks it registers "
                        "with @robosim.register_task can be trained (repeatable)")
    p.add_argument("--robot", default=None, help="robot plugin name (default: the task's)")
    p.add_argument("--num-envs", type=int, default=32)
    p.add_argument("--total-steps", type=int, default=150_000, help="env steps (all envs together)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/ppo")
    p.add_argument("--num-steps", type=int, default=16, help="rollout length T per env")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--gamma", type=float, default=0.95)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--clip", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.0)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--reward-mode", default="dense")
    p.add_argument("--eval-every", type=int, default=10_000, help="env steps between evaluations")
    p.add_argument("--eval-episodes", type=int, default=32)
    p.add_argument("--stop-success", type=float, default=None, help="stop once eval success >= this")
    p.add_argument("--torch-threads", type=int, default=1, help="0: torch's default (slow next to PhysX on 2 cores)")
    args = p.parse_args(argv)
    try:
        import_modules(args.imports, search_cwd=True)   # user packages in the current directory too
    except ValueError as err:
        p.error(str(err))
    for name in ("num_envs", "total_steps", "num_steps", "epochs", "minibatches", "eval_every", "eval_episodes"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    return args


def layer(n_in: int, n_out: int, std: float = 2 ** 0.5) -> nn.Linear:
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.zeros_(lin.bias)
    return lin


class ActorCritic(nn.Module):
    """Gaussian policy with a state-independent log std, and a value function (flat obs)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int):
        super().__init__()
        self.critic = nn.Sequential(layer(obs_dim, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(),
                                    layer(hidden, 1, 1.0))
        self.actor_mean = nn.Sequential(layer(obs_dim, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(),
                                        layer(hidden, act_dim, 0.01))
        self.actor_logstd = nn.Parameter(torch.full((1, act_dim), -0.5))

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)

    def dist(self, x: torch.Tensor) -> torch.distributions.Normal:
        mean = self.actor_mean(x)
        return torch.distributions.Normal(mean, self.actor_logstd.expand_as(mean).exp())


class DeterministicActor(nn.Module):
    """What policy.pt holds: raw flat obs -> normalized -> mean action, clipped to the space."""

    def __init__(self, agent: ActorCritic, mean: torch.Tensor, std: torch.Tensor, clip: float,
                 low: torch.Tensor, high: torch.Tensor):
        super().__init__()
        self.net = copy.deepcopy(agent.actor_mean).cpu()
        for name, value in (("mean", mean), ("std", std), ("low", low), ("high", high)):
            self.register_buffer(name, value.float().cpu())
        self.clip = clip

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        x = ((flat_obs - self.mean) / self.std).clamp(-self.clip, self.clip)
        return torch.maximum(torch.minimum(self.net(x), self.high), self.low)


def flat_obs_stats(norm: NormalizeVecEnv, space: gym.Space) -> tuple[torch.Tensor, torch.Tensor]:
    """NormalizeVecEnv's per-leaf mean/std laid out like flatten_obs (sorted keys)."""
    def leaves(sp: gym.Space, prefix: str):
        if isinstance(sp, gym.spaces.Dict):
            for key in sorted(sp.spaces):
                yield from leaves(sp.spaces[key], f"{prefix}{key}/")
            return
        path = prefix.rstrip("/") or "obs"
        rms = (norm.obs_rms or {}).get(path)
        size = int(torch.tensor(sp.shape).prod())
        if rms is None:
            yield torch.zeros(size), torch.ones(size)
        else:
            yield rms.mean.reshape(-1).float().cpu(), torch.sqrt(rms.var + norm.eps).reshape(-1).float().cpu()
    pairs = list(leaves(space, ""))
    return torch.cat([m for m, _ in pairs]), torch.cat([s for _, s in pairs])


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    env_kwargs = {"reward_mode": args.reward_mode}
    if args.robot:
        env_kwargs["robot"] = args.robot
    venv = robosim.make_vec(args.task, num_envs=args.num_envs, autoreset_mode="SameStep", **env_kwargs)
    envs = NormalizeVecEnv(venv, norm_obs=True, norm_rew=True, gamma=args.gamma)
    eval_env = robosim.make(args.task, num_envs=min(16, args.eval_episodes), **env_kwargs)
    space = venv.single_observation_space
    obs_dim = sum(int(torch.tensor(s.shape).prod()) for s in (space.spaces.values() if isinstance(space, gym.spaces.Dict) else [space]))
    act_low = torch.as_tensor(venv.single_action_space.low)
    act_high = torch.as_tensor(venv.single_action_space.high)
    agent = ActorCritic(obs_dim, len(act_low), args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    collector = RolloutCollector(envs, args.num_steps)
    log = RunLog(args.out, vars(args), f"PPO {args.task} ({args.num_envs} envs, seed {args.seed})",
                 command=shlex.join(["python", "examples/ppo.py", *(sys.argv[1:] if argv is None else argv)]))

    def act(obs):
        with torch.no_grad():
            x = flatten_obs(obs)
            dist = agent.dist(x)
            action = dist.sample()
            return action, dist.log_prob(action).sum(-1), agent.value(x)

    def value_fn(obs):
        return agent.value(flatten_obs(obs))

    def deterministic_actor() -> DeterministicActor:
        mean, std = flat_obs_stats(envs, space)
        return DeterministicActor(agent, mean, std, envs.clip_obs, act_low, act_high)

    def run_eval(actor: DeterministicActor) -> tuple[float, float]:
        result = evaluate(eval_env, lambda obs: actor(flatten_obs(obs)), args.eval_episodes, seed=10_000)
        return result.success_rate, sum(result.returns) / result.episodes

    collector.reset(seed=args.seed)
    start, env_steps, next_eval, losses = time.perf_counter(), 0, 0, {}
    batch = args.num_steps * args.num_envs
    with tqdm(total=args.total_steps, unit="step", desc=f"PPO {args.task}") as bar:
        while env_steps < args.total_steps:
            if env_steps >= next_eval:
                actor = deterministic_actor()
                success, ret = run_eval(actor)
                save_policy(log.path("policy.pt"), actor, venv, extra={"algo": "ppo", "env_steps": env_steps})
                log.add_eval(env_steps, time.perf_counter() - start, success, ret,
                             **collector.pop_episode_stats(), **losses)
                bar.set_postfix(success=f"{success:.2f}")
                next_eval += args.eval_every
                if args.stop_success is not None and success >= args.stop_success:
                    break
            roll = collector.collect(act, value_fn)
            adv, ret = roll.advantages(args.gamma, args.gae_lambda)
            valid = roll.valid.reshape(-1)
            b_obs = flatten_obs({k: v.reshape(batch, *v.shape[2:]) for k, v in roll.obs.items()}
                                if isinstance(roll.obs, dict) else roll.obs.reshape(batch, -1))[valid]
            b_act, b_logp = roll.actions.reshape(batch, -1)[valid], roll.log_probs.reshape(-1)[valid]
            b_adv, b_ret = adv.reshape(-1)[valid], ret.reshape(-1)[valid]
            losses = update(agent, optimizer, args, b_obs, b_act, b_logp, b_adv, b_ret)
            env_steps += batch
            bar.update(batch)
    actor = deterministic_actor()
    success, ret = run_eval(actor)
    save_policy(log.path("policy.pt"), actor, venv, extra={"algo": "ppo", "env_steps": env_steps})
    torch.save({"agent": agent.state_dict(), "optimizer": optimizer.state_dict(), "normalizer": envs.state_dict()},
               log.path("train_state.pt"))
    log.summary = {**log.summary, "final_success": success, "env_steps": env_steps,
                   "wall_s": round(time.perf_counter() - start, 2), "torch_threads": torch.get_num_threads()}
    log.add({"env_steps": env_steps, "wall_s": log.summary["wall_s"], "eval_success": success,
             "eval_return": round(ret, 4), **collector.pop_episode_stats(), **losses})
    envs.close()
    eval_env.close()
    print(f"final eval success {success:.2f} after {env_steps} env steps, {log.summary['wall_s']} s; "
          f"logs in {args.out}")
    return log.summary


def update(agent: ActorCritic, optimizer: torch.optim.Optimizer, args: argparse.Namespace, obs: torch.Tensor,
           actions: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, returns: torch.Tensor) -> dict:
    """Clipped-surrogate PPO epochs over the valid samples; returns the last losses."""
    n = obs.shape[0]
    size = max(1, n // args.minibatches)
    stats = {}
    for _ in range(args.epochs):
        for idx in torch.randperm(n).split(size):
            dist = agent.dist(obs[idx])
            logp = dist.log_prob(actions[idx]).sum(-1)
            ratio = (logp - old_logp[idx]).exp()
            adv = advantages[idx]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(idx) > 1 else adv
            pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip, 1 + args.clip)).mean()
            v_loss = 0.5 * (agent.value(obs[idx]) - returns[idx]).square().mean()
            entropy = dist.entropy().sum(-1).mean()
            loss = pg_loss + 0.5 * v_loss - args.ent_coef * entropy
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            optimizer.step()
            stats = {"pg_loss": pg_loss.item(), "v_loss": v_loss.item(), "entropy": entropy.item()}
    return stats


if __name__ == "__main__":
    main()
