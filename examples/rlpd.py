"""RLPD (Ball et al., 2023) on robosim: off-policy learning from robosim's own
demonstrations, in one file, optionally with a reverse curriculum from demo states (RFCL).

    robosim demos generate PushCube-v1 -n 20 --out runs/push20.h5
    python examples/rlpd.py --demos runs/push20.h5 --curriculum --total-steps 20000 --out runs/rlpd_push
    ROBOSIM_POLICY=runs/rlpd_push/policy.pt robosim eval PushCube-v1 \\
        --policy robosim.rollout.checkpoint:from_env_var --episodes 20 --video runs/rlpd_push/eval.mp4

SAC whose every batch is half demonstration transitions and half online ones
(symmetric sampling), with LayerNorm critics, an ensemble of --critics Q networks
(targets: the min over a random --critic-subset of the target copies; the actor
maximizes the ensemble mean) and --utd critic updates per env step (the actor and
temperature once per step of the --num-envs envs that made a critic update; the actor's
input normalization from the demos' and the random warm-up's observations).
Demonstrations: every episode of the --demos file is re-simulated from its seed (DART
demos with their executed, noisy actions) in the learner's env and reward mode, so
rewards and observations are the learner's own.
--curriculum: every ended training episode of env i restarts from a demo state chosen
by robosim.demos.curriculum.ReverseCurriculum (robosim.demos.starts.DemoStarts: the
demo's seed, then its exact state); once every demo is solved from its initial state,
episodes start from the task's own seeded resets. Evaluation (robosim.record.evaluate,
every --eval-every env steps) always starts from the task's own seeded initial states
at --eval-seed and counts the task's success. policy.pt (robosim.rollout.checkpoint,
with the demos' seeds as demo_seeds) runs in `robosim eval`. The summary holds the mean
cost of an env step, an action (inference) and a critic update (--utd: choose by it).
"""
from __future__ import annotations

import argparse
import copy
import json
import shlex
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

import robosim
from robosim.demos.curriculum import ReverseCurriculum
from robosim.demos.generate import executed_actions
from robosim.demos.starts import DemoStarts
from robosim.envs.registry import import_modules
from robosim.record.evaluate import evaluate
from robosim.record.trajectory import TrajectoryFile
from robosim.rollout import RunLog, flatten_obs, save_policy


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--demos", required=True, help="robosim demos file (.h5, robosim demos generate)")
    p.add_argument("--import", dest="imports", metavar="MODULE", action="append", default=[],
                   help="import MODULE first (found in the current directory too) for user tasks (repeatable)")
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--total-steps", type=int, default=50_000, help="env steps (all envs together)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/rlpd")
    p.add_argument("--reward-mode", default="normalized_dense", help="<= 0 per step, 0 on success")
    p.add_argument("--batch-size", type=int, default=256, help="half demos, half online")
    p.add_argument("--buffer-size", type=int, default=200_000)
    p.add_argument("--learning-starts", type=int, default=512, help="env steps of random actions first")
    p.add_argument("--utd", type=float, default=0.25, help="critic updates per env step")
    p.add_argument("--critics", type=int, default=2, help="critic ensemble size (RLPD: 10; 3.5x the update cost)")
    p.add_argument("--critic-subset", type=int, default=2, help="target critics the min is taken over")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--init-alpha", type=float, default=0.1, help="initial entropy temperature")
    p.add_argument("--gamma", type=float, default=0.9)
    p.add_argument("--tau", type=float, default=0.005)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--curriculum", action="store_true", help="reverse curriculum from the demos' states")
    p.add_argument("--stride", type=int, default=4, help="curriculum: steps a start moves back")
    p.add_argument("--window", type=int, default=4, help="curriculum: episodes judged per start")
    p.add_argument("--threshold", type=float, default=0.75, help="curriculum: success rate that moves a start")
    p.add_argument("--eval-every", type=int, default=2_000, help="env steps between evaluations")
    p.add_argument("--eval-episodes", type=int, default=32)
    p.add_argument("--eval-envs", type=int, default=16)
    p.add_argument("--eval-seed", type=int, default=10_000, help="first eval episode seed")
    p.add_argument("--stop-success", type=float, default=None, help="stop once eval success >= this")
    p.add_argument("--torch-threads", type=int, default=1, help="0: torch's default")
    args = p.parse_args(argv)
    try:
        import_modules(args.imports, search_cwd=True)
    except ValueError as err:
        p.error(str(err))
    for name in ("num_envs", "total_steps", "batch_size", "eval_every", "eval_episodes", "eval_envs", "critics",
                 "critic_subset", "hidden"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.critic_subset > args.critics:
        p.error(f"--critic-subset must be <= --critics ({args.critics}), got {args.critic_subset}")
    if args.init_alpha <= 0:
        p.error(f"--init-alpha must be > 0, got {args.init_alpha}")
    if args.utd <= 0:
        p.error(f"--utd must be > 0, got {args.utd}")
    return args


class EnsembleLinear(nn.Module):
    """E independent Linear layers applied to (E, B, n_in) in one batched matmul."""

    def __init__(self, ensemble: int, n_in: int, n_out: int):
        super().__init__()
        bound = 1 / n_in ** 0.5
        self.weight = nn.Parameter(torch.empty(ensemble, n_in, n_out).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(ensemble, 1, n_out).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class Critics(nn.Module):
    """An ensemble of Q(s, a) MLPs with LayerNorm after every hidden layer: (B, D), (B, A) -> (E, B)."""

    def __init__(self, ensemble: int, obs_dim: int, act_dim: int, hidden: int):
        super().__init__()
        self.ensemble = ensemble
        self.net = nn.Sequential(EnsembleLinear(ensemble, obs_dim + act_dim, hidden), nn.LayerNorm(hidden), nn.ReLU(),
                                 EnsembleLinear(ensemble, hidden, hidden), nn.LayerNorm(hidden), nn.ReLU(),
                                 EnsembleLinear(ensemble, hidden, 1))

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, action], dim=-1).expand(self.ensemble, -1, -1)
        return self.net(x).squeeze(-1)


class Actor(nn.Module):
    """Tanh-squashed Gaussian over the action box from normalized flat obs; forward is
    the deterministic action (what policy.pt holds)."""

    def __init__(self, obs: torch.Tensor, low: torch.Tensor, high: torch.Tensor, hidden: int):
        super().__init__()
        self.register_buffer("obs_mean", torch.zeros(obs.shape[1]))
        self.register_buffer("obs_std", torch.ones(obs.shape[1]))
        self.normalize_by(obs)
        self.register_buffer("scale", ((high - low) / 2).float())
        self.register_buffer("bias", ((high + low) / 2).float())
        self.net = nn.Sequential(nn.Linear(obs.shape[1], hidden), nn.LayerNorm(hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 2 * len(low)))

    def normalize_by(self, obs: torch.Tensor) -> None:
        """Normalize inputs by the mean and std (at least 0.01) of obs (M, D)."""
        self.obs_mean.copy_(obs.mean(0))
        self.obs_std.copy_(obs.std(0).clamp(min=1e-2))

    def _head(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.net((x - self.obs_mean) / self.obs_std).chunk(2, dim=-1)
        return mean, log_std.clamp(-5, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self._head(x)[0]) * self.scale + self.bias

    def sample(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self._head(x)
        std = log_std.exp()
        u = mean + std * torch.randn_like(mean)
        y = torch.tanh(u)
        logp = torch.distributions.Normal(mean, std).log_prob(u) - torch.log(self.scale * (1 - y.square()) + 1e-6)
        return y * self.scale + self.bias, logp.sum(-1)


class Transitions:
    """A ring buffer of flat float32 transitions (obs, action, reward, next_obs, terminated)."""

    def __init__(self, capacity: int, obs_dim: int, act_dim: int):
        self.obs = torch.zeros(capacity, obs_dim)
        self.next_obs = torch.zeros(capacity, obs_dim)
        self.actions = torch.zeros(capacity, act_dim)
        self.rewards = torch.zeros(capacity)
        self.terminated = torch.zeros(capacity)
        self.capacity, self.size, self.head = capacity, 0, 0

    def add(self, obs, actions, rewards, next_obs, terminated) -> None:
        n = len(obs)
        idx = (self.head + torch.arange(n)) % self.capacity
        for store, value in ((self.obs, obs), (self.actions, actions), (self.rewards, rewards),
                             (self.next_obs, next_obs), (self.terminated, terminated)):
            store[idx] = value.detach().cpu().float()
        self.head = (self.head + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, n: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
        idx = torch.randint(self.size, (n,), generator=gen)
        return self.obs[idx], self.actions[idx], self.rewards[idx], self.next_obs[idx], self.terminated[idx]


def demo_transitions(env, starts: DemoStarts, sigma: float) -> Transitions:
    """Every demo step as a transition of `env` (its reward mode and observations): each
    episode re-simulated from its seed with its executed actions, env.num_envs at a time."""
    n, act_dim = env.num_envs, env.single_flat_action_space.shape[0]
    episodes = starts.episodes
    out = None
    for first in range(0, len(episodes), n):
        batch = episodes[first:first + n]
        idx = list(range(len(batch)))
        obs = starts.apply(env, idx, list(range(first, first + len(batch))), [0] * len(batch))
        if out is None:
            out = Transitions(sum(starts.lengths), flatten_obs(obs).shape[1], act_dim)
        executed = [executed_actions(e, sigma) for e in batch]
        for t in range(max(e.length for e in batch)):
            action = torch.zeros(n, act_dim)
            live = [i for i in idx if t < batch[i].length]
            for i in live:
                action[i] = torch.from_numpy(executed[i][t])
            next_obs, reward, terminated, _, _ = env.step(action)
            label = torch.stack([torch.from_numpy(batch[i].actions[t]) for i in live])   # the clean action
            out.add(flatten_obs(obs)[live], label, reward[live], flatten_obs(next_obs)[live], terminated[live].float())
            obs = next_obs
    return out


class RLPD:
    def __init__(self, actor: Actor, obs_dim: int, act_dim: int, args: argparse.Namespace):
        self.actor = actor
        self.critics = Critics(args.critics, obs_dim, act_dim, args.hidden)
        self.target = copy.deepcopy(self.critics).requires_grad_(False)
        self.log_alpha = torch.full((1,), float(args.init_alpha)).log().requires_grad_(True)
        self.target_entropy = -float(act_dim) / 2
        self.q_opt = torch.optim.Adam(self.critics.parameters(), lr=args.lr)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=args.lr)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=args.lr)
        self.args = args

    def update_critics(self, batch: tuple[torch.Tensor, ...], gen: torch.Generator) -> float:
        obs, actions, rewards, next_obs, terminated = batch
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            next_a, next_logp = self.actor.sample(next_obs)
            subset = torch.randperm(self.args.critics, generator=gen)[:self.args.critic_subset]
            next_q = self.target(next_obs, next_a)[subset].min(0).values - alpha * next_logp
            target = rewards + self.args.gamma * (1 - terminated) * next_q
        loss = F.mse_loss(self.critics(obs, actions), target.expand(self.args.critics, -1), reduction="none")
        loss = loss.mean(1).sum()
        self.q_opt.zero_grad()
        loss.backward()
        self.q_opt.step()
        with torch.no_grad():
            for p, tp in zip(self.critics.parameters(), self.target.parameters()):
                tp.lerp_(p, self.args.tau)
        return loss.item()

    def update_actor(self, obs: torch.Tensor) -> dict:
        alpha = self.log_alpha.exp().detach()
        action, logp = self.actor.sample(obs)
        actor_loss = (alpha * logp - self.critics(obs, action).mean(0)).mean()
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()
        alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()
        return {"actor_loss": round(actor_loss.item(), 5), "alpha": round(alpha.item(), 5)}


def make_env(traj_spec, num_envs: int, reward_mode: str, seed: int):
    """An env like the demos' (task, robot, control mode, physics, separate isolation:
    exact demo starts), state obs, `num_envs` envs."""
    kwargs = {k: v for k, v in traj_spec.make_kwargs().items()
              if k not in ("obs_mode", "seed", "num_envs", "reward_mode", "render_mode")}
    return robosim.make(traj_spec.task_id, num_envs=num_envs, obs_mode="state", reward_mode=reward_mode,
                        seed=seed, **kwargs)


def main(argv=None) -> dict:
    args = parse_args(argv)
    return train(args, shlex.join(["python", "examples/rlpd.py", *(sys.argv[1:] if argv is None else argv)]))


def train(args: argparse.Namespace, command: str | None = None) -> dict:
    """One run of parse_args's flags, in this process: the run log's summary (final
    eval success, env_steps, costs; the rows are in <out>/log.json). The torch thread
    count and global RNG state are restored on return, so a caller (a test) keeps its own."""
    threads = torch.get_num_threads()
    try:
        with torch.random.fork_rng(devices=[]):
            return _train(args, command)
    finally:
        torch.set_num_threads(threads)


def _train(args: argparse.Namespace, command: str | None) -> dict:
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    start = time.perf_counter()
    starts = DemoStarts(args.demos, arg="--demos")
    traj = TrajectoryFile(args.demos, arg="--demos")
    sigma = float(json.loads(traj.attrs.get("demos", "{}")).get("action_noise", 0.0))
    env = make_env(traj.spec, args.num_envs, args.reward_mode, args.seed)
    eval_env = make_env(traj.spec, args.eval_envs, args.reward_mode, args.seed)
    demos = demo_transitions(env, starts, sigma)
    obs_dim, act_dim = demos.obs.shape[1], demos.actions.shape[1]
    low, high = (torch.as_tensor(b) for b in (env.single_flat_action_space.low, env.single_flat_action_space.high))
    actor = Actor(demos.obs, low, high, args.hidden)
    agent = RLPD(actor, obs_dim, act_dim, args)
    online = Transitions(args.buffer_size, obs_dim, act_dim)
    curriculum = (ReverseCurriculum(starts.lengths, args.stride, args.window, args.threshold) if args.curriculum
                  else None)
    overlap = set(starts.seeds) & set(range(args.eval_seed, args.eval_seed + args.eval_episodes + args.eval_envs))
    if overlap:
        print(f"warning: {len(overlap)} eval seeds are seeds of the demos: the eval success is not held-out",
              file=sys.stderr)
    log = RunLog(args.out, {**vars(args), "demos_action_noise": sigma},
                 f"RLPD {starts.task_id} ({len(starts)} demos, {args.num_envs} envs, seed {args.seed})",
                 command=command)
    log.summary.update(demos=len(starts), demo_transitions=demos.size, load_s=round(time.perf_counter() - start, 2))
    cost = {"env_step": [0.0, 0], "act": [0.0, 0], "critic_update": [0.0, 0]}

    def timed(name: str, fn, *a):
        t0 = time.perf_counter()
        out = fn(*a)
        cost[name][0] += time.perf_counter() - t0
        cost[name][1] += 1
        return out

    def run_eval() -> tuple[float, float]:
        with torch.no_grad():
            result = evaluate(eval_env, lambda o: actor(flatten_obs(o)), args.eval_episodes, seed=args.eval_seed)
        return result.success_rate, sum(result.returns) / result.episodes

    def checkpoint(env_steps: int) -> None:
        save_policy(log.path("policy.pt"), actor, eval_env,
                    extra={"algo": "rlpd", "env_steps": env_steps, "demo_seeds": starts.seeds})

    # training episodes: seeds far from the demos' (0, 1, ...) and the evaluation's
    next_seed = 1_000_000 * (args.seed + 1)
    started_from = [None] * args.num_envs   # (demo, start step) of each env's episode, or None

    def restart(idx: list[int]):
        nonlocal next_seed
        if curriculum is not None and not curriculum.done:
            episodes, steps = curriculum.sample(len(idx), seed=next_seed)
            next_seed += len(idx)
            for i, k, t in zip(idx, episodes, steps):
                started_from[i] = (k, t)
            return starts.apply(env, idx, episodes, steps)
        for i in idx:
            started_from[i] = None
        obs, _ = env.reset(seed=list(range(next_seed, next_seed + len(idx))), options={"env_idx": torch.tensor(idx)})
        next_seed += len(idx)
        return obs

    obs = restart(list(range(args.num_envs)))
    env_steps, next_eval, updates_due, losses, ended, succeeded = 0, 0, 0.0, {}, 0, 0
    learning = False   # updates began
    with tqdm(total=args.total_steps, unit="step", desc=f"RLPD {starts.task_id}") as bar:
        while True:
            if env_steps >= next_eval or env_steps >= args.total_steps:
                success, ret = run_eval()
                checkpoint(env_steps)
                extra = {"train_success": round(succeeded / max(ended, 1), 4), **losses}
                if curriculum is not None:
                    extra["curriculum_progress"] = round(curriculum.progress(), 4)
                log.add_eval(env_steps, time.perf_counter() - start, success, ret, **extra)
                bar.set_postfix(success=f"{success:.2f}", **({"curriculum": f"{curriculum.progress():.2f}"}
                                                              if curriculum is not None else {}))
                ended = succeeded = 0
                next_eval += args.eval_every
                if env_steps >= args.total_steps or (args.stop_success is not None and success >= args.stop_success):
                    break
            flat = flatten_obs(obs)
            if env_steps < args.learning_starts:
                action = low + torch.rand(args.num_envs, act_dim, generator=gen) * (high - low)
            else:
                with torch.no_grad():
                    action = timed("act", lambda x: actor.sample(x)[0], flat)
            next_obs, reward, terminated, truncated, info = timed("env_step", env.step, action)
            online.add(flat, action, reward, flatten_obs(next_obs), terminated.float())
            obs = next_obs
            env_steps += args.num_envs
            bar.update(args.num_envs)
            done = (terminated | truncated).nonzero().flatten().tolist()
            if done:
                for i in done:
                    won = bool(info["success"][i])
                    ended, succeeded = ended + 1, succeeded + won
                    if curriculum is not None and started_from[i] is not None:
                        curriculum.record(started_from[i][0], won, step=started_from[i][1])
                obs = restart(done)
            if env_steps >= args.learning_starts:
                if not learning:
                    learning = True
                    # the demos alone leave dims the scripted expert never moves (an open
                    # gripper) at std ~0: the random warm-up's states widen the statistics
                    actor.normalize_by(torch.cat([demos.obs[:demos.size], online.obs[:online.size]]))
                updates_due += args.utd * args.num_envs
                half, batch = args.batch_size // 2, None
                while updates_due >= 1:
                    batch = [torch.cat(pair) for pair in zip(demos.sample(half, gen),
                                                             online.sample(args.batch_size - half, gen))]
                    losses["q_loss"] = round(timed("critic_update", agent.update_critics, batch, gen), 5)
                    updates_due -= 1
                if batch is not None:
                    losses.update(agent.update_actor(batch[0]))
    log.summary.update(final_success=success, env_steps=env_steps, wall_s=round(time.perf_counter() - start, 2),
                       torch_threads=torch.get_num_threads(),
                       cost_ms={k: round(1e3 * s / max(n, 1), 3) for k, (s, n) in cost.items()},
                       curriculum=None if curriculum is None else curriculum.state_dict()["start"])
    log.write()
    env.close()
    eval_env.close()
    print(f"final eval success {success:.2f} after {env_steps} env steps, {log.summary['wall_s']} s; "
          f"cost per call (ms) {log.summary['cost_ms']}; logs in {args.out}")
    return log.summary


if __name__ == "__main__":
    main()
