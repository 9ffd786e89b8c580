"""SAC (+HER on goal-conditioned tasks) on robosim in one file (CleanRL's shape over
robosim.rollout).

    python examples/sac.py --task Reach-v1 --num-envs 4 --total-steps 20000 --out runs/sac_reach
    ROBOSIM_POLICY=runs/sac_reach/policy.pt robosim eval Reach-v1 \\
        --policy robosim.rollout.checkpoint:from_env_var --episodes 20 --video runs/sac_reach/eval.mp4

The collector steps N envs (SAME_STEP autoreset) and hands each vector step to a
ReplayBuffer; on goal-conditioned tasks (obs keys observation/achieved_goal/
desired_goal) --her-ratio of each batch is relabeled with future achieved goals through
the task's compute_reward. Truncation bootstraps (only `terminated` stops the target).
Every --eval-every env steps the deterministic policy (tanh of the mean, saved to
policy.pt) runs --eval-episodes seeded episodes through robosim.record.evaluate.
"""
from __future__ import annotations

import argparse
import copy
import shlex
import sys
import time

import gymnasium as gym
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

import robosim
from robosim.envs.registry import import_modules
from robosim.record.evaluate import evaluate
from robosim.rollout import ReplayBuffer, RolloutCollector, RunLog, flatten_obs, save_policy
from robosim.rollout.replay_buffer import GOAL_KEYS


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="Reach-v1", help="task id, or 'package.module:TaskClass'")
    p.add_argument("--import", dest="imports", metavar="MODULE", action="append", default=[],
                   help="import MODULE first (found in the current directory too), so tasks it registers "
                        "with @robosim.register_task can be trained (repeatable)")
    p.add_argument("--robot", default=None, help="robot plugin name (default: the task's)")
    p.add_argument("--num-envs", type=int, default=4)
    p.add_argument("--total-steps", type=int, default=20_000, help="env steps (all envs together)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/sac")
    p.add_argument("--buffer-size", type=int, default=200_000)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--learning-starts", type=int, default=1_000, help="env steps of random actions first")
    p.add_argument("--updates-per-step", type=float, default=0.5, help="gradient steps per env step")
    p.add_argument("--her-ratio", type=float, default=0.8, help="fraction relabeled (goal tasks only)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--gamma", type=float, default=0.95)
    p.add_argument("--tau", type=float, default=0.05)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--reward-mode", default="dense")
    p.add_argument("--eval-every", type=int, default=2_000, help="env steps between evaluations")
    p.add_argument("--eval-episodes", type=int, default=32)
    p.add_argument("--stop-success", type=float, default=None, help="stop once eval success >= this")
    p.add_argument("--torch-threads", type=int, default=1, help="0: torch's default (slow next to PhysX on 2 cores)")
    args = p.parse_args(argv)
    try:
        import_modules(args.imports, search_cwd=True)   # user packages in the current directory too
    except ValueError as err:
        p.error(str(err))
    for name in ("num_envs", "total_steps", "batch_size", "eval_every", "eval_episodes"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    return args


def mlp(n_in: int, n_out: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, n_out))


class Actor(nn.Module):
    """Tanh-squashed Gaussian over the action box (flat obs in)."""

    def __init__(self, obs_dim: int, low: torch.Tensor, high: torch.Tensor, hidden: int):
        super().__init__()
        self.net = mlp(obs_dim, 2 * len(low), hidden)
        self.register_buffer("scale", ((high - low) / 2).float())
        self.register_buffer("bias", ((high + low) / 2).float())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Deterministic action (what policy.pt holds)."""
        mean, _ = self.net(x).chunk(2, dim=-1)
        return torch.tanh(mean) * self.scale + self.bias

    def sample(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.net(x).chunk(2, dim=-1)
        std = log_std.clamp(-5, 2).exp()
        u = mean + std * torch.randn_like(mean)
        y = torch.tanh(u)
        logp = torch.distributions.Normal(mean, std).log_prob(u) - torch.log(self.scale * (1 - y.square()) + 1e-6)
        return y * self.scale + self.bias, logp.sum(-1)


class QNet(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, hidden: int):
        super().__init__()
        self.net = mlp(obs_dim + act_dim, 1, hidden)

    def forward(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, a], dim=-1)).squeeze(-1)


class SAC:
    """Twin Q critics with target copies, automatic entropy temperature."""

    def __init__(self, obs_dim: int, low: torch.Tensor, high: torch.Tensor, args: argparse.Namespace):
        self.actor = Actor(obs_dim, low, high, args.hidden)
        self.q1, self.q2 = QNet(obs_dim, len(low), args.hidden), QNet(obs_dim, len(low), args.hidden)
        self.q1_target, self.q2_target = copy.deepcopy(self.q1), copy.deepcopy(self.q2)
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.target_entropy = -float(len(low))
        self.q_opt = torch.optim.Adam([*self.q1.parameters(), *self.q2.parameters()], lr=args.lr)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=args.lr)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=args.lr)
        self.gamma, self.tau = args.gamma, args.tau

    def update(self, batch: dict) -> dict:
        obs, next_obs = flatten_obs(batch["obs"]), flatten_obs(batch["next_obs"])
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            next_a, next_logp = self.actor.sample(next_obs)
            next_q = torch.min(self.q1_target(next_obs, next_a), self.q2_target(next_obs, next_a)) - alpha * next_logp
            target = batch["rewards"] + self.gamma * (~batch["terminated"]).float() * next_q
        q_loss = F.mse_loss(self.q1(obs, batch["actions"]), target) + F.mse_loss(self.q2(obs, batch["actions"]), target)
        self.q_opt.zero_grad()
        q_loss.backward()
        self.q_opt.step()
        action, logp = self.actor.sample(obs)
        actor_loss = (alpha * logp - torch.min(self.q1(obs, action), self.q2(obs, action))).mean()
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()
        alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()
        with torch.no_grad():
            for net, target_net in ((self.q1, self.q1_target), (self.q2, self.q2_target)):
                for p, tp in zip(net.parameters(), target_net.parameters()):
                    tp.lerp_(p, self.tau)
        return {"q_loss": q_loss.item(), "actor_loss": actor_loss.item(), "alpha": alpha.item()}


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    env_kwargs = {"reward_mode": args.reward_mode}
    if args.robot:
        env_kwargs["robot"] = args.robot
    venv = robosim.make_vec(args.task, num_envs=args.num_envs, autoreset_mode="SameStep", **env_kwargs)
    eval_env = robosim.make(args.task, num_envs=min(16, args.eval_episodes), **env_kwargs)
    space = venv.single_observation_space
    goal_task = isinstance(space, gym.spaces.Dict) and set(GOAL_KEYS) <= set(space.spaces)
    her_ratio = args.her_ratio if goal_task else 0.0
    leaves = space.spaces.values() if isinstance(space, gym.spaces.Dict) else [space]
    obs_dim = sum(int(torch.tensor(s.shape).prod()) for s in leaves)
    action_space = eval_env.single_flat_action_space   # a multi-robot task's Dict of slots: its flat view
    low, high = torch.as_tensor(action_space.low), torch.as_tensor(action_space.high)
    sac = SAC(obs_dim, low, high, args)
    buffer = ReplayBuffer(args.buffer_size, space, action_space, args.num_envs, venv.device,
                          her_ratio=her_ratio, compute_reward=venv.compute_reward if her_ratio else None)
    collector = RolloutCollector(venv, 1)
    log = RunLog(args.out, {**vars(args), "her_ratio_used": her_ratio},
                 f"SAC{'+HER' if her_ratio else ''} {args.task} ({args.num_envs} envs, seed {args.seed})",
                 command=shlex.join(["python", "examples/sac.py", *(sys.argv[1:] if argv is None else argv)]))

    def explore(obs):
        if env_steps < args.learning_starts:
            return low + torch.rand(args.num_envs, len(low)) * (high - low)
        with torch.no_grad():
            return sac.actor.sample(flatten_obs(obs))[0]

    def run_eval() -> tuple[float, float]:
        result = evaluate(eval_env, lambda obs: sac.actor(flatten_obs(obs)).detach(), args.eval_episodes, seed=10_000)
        return result.success_rate, sum(result.returns) / result.episodes

    collector.reset(seed=args.seed)
    start, env_steps, next_eval, updates_due, losses = time.perf_counter(), 0, 0, 0.0, {}
    with tqdm(total=args.total_steps, unit="step", desc=f"SAC {args.task}") as bar:
        while env_steps < args.total_steps:
            if env_steps >= next_eval:
                success, ret = run_eval()
                save_policy(log.path("policy.pt"), sac.actor, venv, extra={"algo": "sac", "env_steps": env_steps})
                log.add_eval(env_steps, time.perf_counter() - start, success, ret,
                             **collector.pop_episode_stats(), **losses)
                bar.set_postfix(success=f"{success:.2f}")
                next_eval += args.eval_every
                if args.stop_success is not None and success >= args.stop_success:
                    break
            buffer.add(collector.step(explore))
            env_steps += args.num_envs
            bar.update(args.num_envs)
            if env_steps >= args.learning_starts:
                updates_due += args.updates_per_step * args.num_envs
                while updates_due >= 1:
                    losses = sac.update(buffer.sample(args.batch_size))
                    updates_due -= 1
    success, ret = run_eval()
    save_policy(log.path("policy.pt"), sac.actor, venv, extra={"algo": "sac", "env_steps": env_steps})
    torch.save({"actor": sac.actor.state_dict(), "q1": sac.q1.state_dict(), "q2": sac.q2.state_dict()},
               log.path("train_state.pt"))
    log.summary = {**log.summary, "final_success": success, "env_steps": env_steps, "buffer_size": len(buffer),
                   "wall_s": round(time.perf_counter() - start, 2), "torch_threads": torch.get_num_threads()}
    log.add({"env_steps": env_steps, "wall_s": log.summary["wall_s"], "eval_success": success,
             "eval_return": round(ret, 4), **collector.pop_episode_stats(), **losses})
    venv.close()
    eval_env.close()
    print(f"final eval success {success:.2f} after {env_steps} env steps, {log.summary['wall_s']} s; "
          f"logs in {args.out}")
    return log.summary


if __name__ == "__main__":
    main()
