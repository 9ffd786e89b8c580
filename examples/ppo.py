"""PPO on robosim in one file, in the shape of CleanRL's ppo_continuous_action.py: Args,
the agent, then main's one loop of evaluation, rollout (collect_rollout: T vector steps
into storage tensors), GAE (gae_batch: truncated episodes bootstrapped), clipped-surrogate
epochs (ppo_update) and logging. The extras are objects the loop calls in one line each:
Profiler (--profile), DemoTerm (--demos), VideoHook (--video-every), UpdatesCsv.

    python examples/ppo.py --task Reach-v1 --num-envs 32 --total-steps 150000 --out runs/ppo_reach
    ROBOSIM_POLICY=runs/ppo_reach/policy.pt robosim eval Reach-v1 \\
        --policy robosim.rollout.checkpoint:from_env_var --episodes 20 --video runs/ppo_reach/eval.mp4

Observations and rewards go through NormalizeVecEnv; robosim.rollout.RolloutCollector
steps the env (SAME_STEP autoreset: the final obs of an ended episode, valid rows, episode
statistics). Every --eval-every env steps the deterministic policy (the one saved to
policy.pt) runs --eval-episodes seeded episodes through robosim.record.evaluate, the loop
`robosim eval` uses. Writes <out>/log.csv, log.json, curve.png (one row per evaluation),
updates.csv (diagnostics of every update), policy.pt (runnable by `robosim eval`),
train_state.pt; with --profile profile.json (median seconds per iteration of env
stepping, policy inference and update); with --video-every K videos/iter*.mp4.
"""

import argparse
import copy
import csv
import json
import os
import shlex
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, field, fields

import gymnasium as gym
import torch
from torch import nn
from tqdm import tqdm

import robosim
from robosim.core.tree import leaf_items
from robosim.envs.registry import import_modules
from robosim.record import RecordEpisode
from robosim.record.evaluate import evaluate
from robosim.rollout import RolloutCollector, RunLog, compute_gae, flatten_obs, save_policy
from robosim.vector import NormalizeVecEnv


def arg(default, help: str, **argparse_kwargs):
    """A field of Args; parse_args turns it into --field-name (or argparse_kwargs["flag"])."""
    kind = {"default_factory": default} if default is list else {"default": default}
    return field(**kind, metadata={"help": help, **argparse_kwargs})


@dataclass
class Args:
    """Every flag of the script: field num_envs is --num-envs (imports: --import)."""

    task: str = arg("Reach-v1", "task id, or 'package.module:TaskClass'")
    imports: list[str] = arg(list, "import MODULE first (found in the current directory too), so tasks it registers "
                             "with @robosim.register_task can be trained (repeatable)",
                             flag="--import", metavar="MODULE", action="append")
    robot: str | None = arg(None, "robot plugin name (default: the task's)", type=str)
    num_envs: int = arg(32, "parallel envs N")
    total_steps: int = arg(150_000, "env steps (all envs together)")
    seed: int = arg(0, "seeds torch and the envs' resets")
    out: str = arg("runs/ppo", "output directory")
    num_steps: int = arg(16, "rollout length T per env")
    epochs: int = arg(4, "passes over each rollout")
    minibatches: int = arg(4, "minibatches per epoch")
    lr: float = arg(3e-4, "Adam learning rate")
    anneal_lr: bool = arg(False, "decay the learning rate linearly from --lr to 0 over --total-steps",
                          action="store_true")
    gamma: float = arg(0.95, "discount")
    gae_lambda: float = arg(0.95, "GAE lambda")
    clip: float = arg(0.2, "surrogate clipping coefficient")
    ent_coef: float = arg(0.0, "entropy bonus coefficient")
    target_kl: float | None = arg(None, "stop an update's epochs once approx_kl > this (default: off)", type=float)
    hidden: int = arg(128, "hidden units of both MLPs")
    demos: str | None = arg(None, "robosim demos file (robosim demos generate) of the same task, robot and "
                            "control mode: every minibatch's loss adds --demo-coef x the squared error of the "
                            "policy's mean action on as many demo steps (DAPG-style)", type=str)
    demo_coef: float = arg(1.0, "weight of the demo term at the start; it decays linearly to 0 over --demo-steps")
    demo_steps: int = arg(0, "env steps over which the demo term decays to 0 (0: --total-steps)")
    reward_mode: str = arg("dense", "the task's reward mode")
    eval_every: int = arg(10_000, "env steps between evaluations")
    eval_episodes: int = arg(32, "episodes per evaluation")
    stop_success: float | None = arg(None, "stop once eval success >= this", type=float)
    torch_threads: int = arg(1, "0: torch's default (slow next to PhysX on 2 cores)")
    profile: bool = arg(False, "print and write <out>/profile.json: median seconds per iteration of env "
                        "stepping, policy inference and update", action="store_true")
    video_every: int = arg(0, "record a 16-env evaluation clip to <out>/videos every K iterations (0: never)")
    video_size: int = arg(128, "pixels per side of each env's tile in the clips")


def parse_args(argv: list[str] | None = None) -> Args:
    """Args from the command line (argparse generated from the fields of Args)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in fields(Args):
        kwargs = dict(f.metadata)
        flag = kwargs.pop("flag", "--" + f.name.replace("_", "-"))
        if "action" not in kwargs:
            kwargs.setdefault("type", type(f.default))
        p.add_argument(flag, dest=f.name, default=f.default_factory() if f.default is MISSING else f.default,
                       **kwargs)
    args = Args(**vars(p.parse_args(argv)))
    try:
        import_modules(args.imports, search_cwd=True)   # user packages in the current directory too
    except ValueError as err:
        p.error(str(err))
    for name in ("num_envs", "total_steps", "num_steps", "epochs", "minibatches", "eval_every", "eval_episodes"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.video_size < 16:
        p.error(f"--video-size must be >= 16 pixels, got {args.video_size}")
    if args.video_every < 0:
        p.error(f"--video-every must be >= 0 (0: no videos), got {args.video_every}")
    if args.demo_coef < 0 or args.demo_steps < 0:
        p.error(f"--demo-coef and --demo-steps must be >= 0, got {args.demo_coef} and {args.demo_steps}")
    if args.target_kl is not None and not args.target_kl > 0:
        p.error(f"--target-kl must be > 0, got {args.target_kl}")
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


def flat_obs_stats(norm: NormalizeVecEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """NormalizeVecEnv's per-leaf mean/std laid out like flatten_obs (the obs's key order,
    which the env's Dict spaces keep)."""
    pairs = []
    for path, leaf in leaf_items(norm.single_observation_space):
        rms = (norm.obs_rms or {}).get(path or "obs")
        size = int(torch.tensor(leaf.shape).prod())
        pairs.append((torch.zeros(size), torch.ones(size)) if rms is None else
                     (rms.mean.reshape(-1).float().cpu(), torch.sqrt(rms.var + norm.eps).reshape(-1).float().cpu()))
    return torch.cat([m for m, _ in pairs]), torch.cat([s for _, s in pairs])


def deterministic_actor(agent: ActorCritic, envs: NormalizeVecEnv) -> DeterministicActor:
    """The agent's mean action behind the env's current observation normalization."""
    mean, std = flat_obs_stats(envs)
    space = envs.single_action_space
    return DeterministicActor(agent, mean, std, envs.clip_obs, torch.as_tensor(space.low), torch.as_tensor(space.high))


def run_eval(actor: DeterministicActor, env, episodes: int, seed: int) -> tuple[float, float, dict]:
    """success rate, mean return, and {"eval_ever_<flag>": share of episodes} of the task's stages."""
    result = evaluate(env, lambda o: actor(flatten_obs(o)), episodes, seed=seed)
    flags = {f"eval_ever_{key}": sum(v) / result.episodes for key, v in result.flags.items()}
    return result.success_rate, sum(result.returns) / result.episodes, flags


def evaluate_and_save(agent: ActorCritic, envs: NormalizeVecEnv, eval_env, episodes: int, path: str,
                      env_steps: int) -> tuple[float, float, dict]:
    """run_eval of the deterministic policy on eval_env (seed 10000), which is saved to path."""
    actor = deterministic_actor(agent, envs)
    result = run_eval(actor, eval_env, episodes, seed=10_000)
    save_policy(path, actor, envs.env, extra={"algo": "ppo", "env_steps": env_steps})
    return result


def rollout_storage(T: int, N: int, obs_dim: int, act_dim: int) -> dict[str, torch.Tensor]:
    """Zeroed (T, N, ...) tensors; row t is the transition (obs_t, action_t) -> (reward_t,
    next obs). obs flat and normalized, rewards normalized; final_values: V(final obs)
    where an episode was truncated at t, else 0; valid False: the env only reset."""
    shapes = {"obs": (obs_dim,), "actions": (act_dim,), "logprobs": (), "rewards": (), "values": (), "final_values": ()}
    buf = {name: torch.zeros((T, N, *shape)) for name, shape in shapes.items()}
    return buf | {name: torch.zeros((T, N), dtype=torch.bool) for name in ("terminated", "truncated", "valid")}


def collect_rollout(collector: RolloutCollector, agent: ActorCritic, buf: dict, prof: "Profiler") -> None:
    """Fill buf with T collector steps of all N envs (collector.step calls policy, then steps them)."""
    def policy(next_obs):
        with prof.part("sample"), torch.no_grad():
            x = flatten_obs(next_obs)
            dist = agent.dist(x)
            action = dist.sample()
            return action, dist.log_prob(action).sum(-1), agent.value(x)

    for step in range(buf["obs"].shape[0]):
        with prof.part("step"):
            tr = collector.step(policy)
        buf["obs"][step] = flatten_obs(tr.obs)
        buf["actions"][step], buf["logprobs"][step], buf["values"][step] = tr.action, tr.log_prob, tr.value
        buf["rewards"][step], buf["terminated"][step], buf["truncated"][step], buf["valid"][step] = (
            tr.reward, tr.terminated, tr.truncated, tr.valid)
        # a truncated episode is not terminal: bootstrap it from V(its final obs), tr.next_obs
        with prof.part("values"):
            boot = tr.truncated & ~tr.terminated
            if bool(boot.any()):
                with torch.no_grad():
                    v = agent.value(flatten_obs(tr.next_obs))
                buf["final_values"][step] = torch.where(boot, v, torch.zeros_like(v))
            else:
                buf["final_values"][step] = 0.0


def gae_batch(agent: ActorCritic, buf: dict, last_obs, args: Args, prof: "Profiler") -> dict[str, torch.Tensor]:
    """buf's valid rows flattened to (B, ...), with GAE advantages and returns.
    next_values[t] = V(true next obs of row t); the last row's from last_obs."""
    with prof.part("values"), torch.no_grad():
        next_value = agent.value(flatten_obs(last_obs))
    next_values = torch.cat([buf["values"][1:], next_value.unsqueeze(0)], dim=0)
    ended = buf["terminated"] | buf["truncated"]
    next_values = torch.where(ended, buf["final_values"], next_values)
    advantages, returns = compute_gae(buf["rewards"], buf["values"], next_values, buf["terminated"],
                                      buf["truncated"], args.gamma, args.gae_lambda)
    keep = buf["valid"].reshape(-1)
    rows = {**{k: buf[k] for k in ("obs", "actions", "logprobs", "values")}, "advantages": advantages,
            "returns": returns}
    return {name: x.flatten(0, 1)[keep] for name, x in rows.items()}


def ppo_update(agent: ActorCritic, optimizer: torch.optim.Optimizer, b: dict[str, torch.Tensor], args: Args,
               demo: "DemoTerm") -> dict[str, float]:
    """Clipped-surrogate epochs over shuffled minibatches of the batch b (gae_batch);
    returns the update's diagnostics (losses of its last minibatch)."""
    n = b["obs"].shape[0]
    size = max(1, n // args.minibatches)
    clipfracs, epochs_run = [], 0
    for _ in range(args.epochs):
        for idx in torch.randperm(n).split(size):
            dist = agent.dist(b["obs"][idx])
            logratio = dist.log_prob(b["actions"][idx]).sum(-1) - b["logprobs"][idx]
            ratio = logratio.exp()
            with torch.no_grad():
                old_approx_kl = (-logratio).mean()
                approx_kl = ((ratio - 1) - logratio).mean()   # http://joschu.net/blog/kl-approx.html
                clipfracs.append(((ratio - 1.0).abs() > args.clip).float().mean().item())
            adv = b["advantages"][idx]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8) if len(idx) > 1 else adv
            pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip, 1 + args.clip)).mean()
            v_loss = 0.5 * (agent.value(b["obs"][idx]) - b["returns"][idx]).square().mean()
            entropy = dist.entropy().sum(-1).mean()
            loss = demo.add_to(pg_loss + 0.5 * v_loss - args.ent_coef * entropy, agent, len(idx))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            optimizer.step()
        epochs_run += 1
        if args.target_kl is not None and approx_kl.item() > args.target_kl:
            break
    returns, var_returns = b["returns"], b["returns"].var().item()
    explained_var = float("nan") if var_returns == 0 else 1 - (returns - b["values"]).var().item() / var_returns
    return {"pg_loss": pg_loss.item(), "v_loss": v_loss.item(), "entropy": entropy.item(),
            "approx_kl": approx_kl.item(), "old_approx_kl": old_approx_kl.item(),
            "clipfrac": sum(clipfracs) / len(clipfracs), "explained_variance": explained_var,
            "epochs": epochs_run, "lr": optimizer.param_groups[0]["lr"], **demo.stats()}


class DemoTerm:
    """--demos, DAPG-style: each minibatch's loss gains weight x the squared error of the
    policy's mean action on as many random demo steps (obs normalized as the rollout's);
    weight = --demo-coef x max(0, 1 - env_steps / --demo-steps), set by at() before each
    update. Without --demos the weight stays 0 and stats() is empty."""

    def __init__(self, args: Args, eval_env, obs_dim: int):
        self.coef, self.steps = args.demo_coef, args.demo_steps or args.total_steps
        self.obs = self.actions = None
        self.info: dict[str, int] = {}   # goes into the run's config
        if args.demos:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the sibling examples/bc.py
            from bc import load_demo_steps
            try:
                self.obs, self.actions, episodes = load_demo_steps(args.demos, eval_env, obs_dim)
            except ValueError as err:
                sys.exit(f"ppo.py: error: {err}")
            self.info = {"demo_episodes": episodes, "demo_env_steps": len(self.obs)}
        self.weight, self.loss = 0.0, torch.zeros(())

    def at(self, env_steps: int, envs: NormalizeVecEnv) -> "DemoTerm":
        """Set the weight and observation normalization of the update starting at env_steps."""
        self.weight = 0.0 if self.obs is None else self.coef * max(0.0, 1 - env_steps / self.steps)
        self.loss = torch.zeros(())
        if self.weight > 0:
            self.mean, self.std, self.clip = *flat_obs_stats(envs), envs.clip_obs
        return self

    def add_to(self, loss: torch.Tensor, agent: ActorCritic, n: int) -> torch.Tensor:
        """loss + weight x the demo term on n demo steps (loss itself while the weight is 0)."""
        if self.weight <= 0:
            return loss
        j = torch.randint(len(self.obs), (n,))
        x = ((self.obs[j] - self.mean) / self.std).clamp(-self.clip, self.clip)
        self.loss = (agent.actor_mean(x) - self.actions[j]).square().sum(-1).mean()
        return loss + self.weight * self.loss

    def stats(self) -> dict[str, float]:
        return {} if self.obs is None else {"demo_loss": self.loss.item(), "demo_weight": self.weight}


class VideoHook:
    """--video-every K: after every K-th iteration, a 16-env evaluation clip of the
    deterministic policy (seed 20000) to <out>/videos/iterNNNNN.mp4, on a rendering env
    built once (env is None without videos)."""

    def __init__(self, args: Args, env_kwargs: dict):
        self.every, self.dir = args.video_every, os.path.join(args.out, "videos")
        self.env = robosim.make(args.task, num_envs=16, render_mode="rgb_array", render_size=(args.video_size,) * 2,
                                **env_kwargs) if self.every else None

    def after_iteration(self, iteration: int, agent: ActorCritic, envs: NormalizeVecEnv, prof: "Profiler") -> None:
        if not self.every or iteration % self.every:
            return
        with prof.part("video"):
            os.makedirs(self.dir, exist_ok=True)
            recorder = RecordEpisode(self.env, video=os.path.join(self.dir, f"iter{iteration:05d}.mp4"))
            try:
                run_eval(deterministic_actor(agent, envs), recorder, 16, seed=20_000)
            finally:
                recorder.close(close_env=False)   # self.env records the next clip too

    def close(self) -> None:
        if self.env is not None:
            self.env.close()


class Profiler:
    """Wall time of each iteration's parts (always measured; --profile writes them):
    iterations[k] = {"env": collector.step less the policy call, "policy": sampling and
    bootstrap values, "update", "iteration" (the whole iteration but its clip), "video"}."""

    def __init__(self):
        self.iterations: list[dict[str, float]] = []
        self.seconds: dict[str, float] = {}

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0

    def start_iteration(self) -> None:
        self.seconds, self.t0 = {}, time.perf_counter()

    def end_iteration(self) -> None:
        s = self.seconds
        s["iteration"] = time.perf_counter() - self.t0 - s.get("video", 0.0)
        self.iterations.append({"env": s.pop("step") - s["sample"], "policy": s.pop("sample") + s.pop("values"), **s})


class UpdatesCsv:
    """<out>/updates.csv: a row (iteration, env_steps, the update's stats) per update,
    flushed at once; the columns are the first update's."""

    def __init__(self, path: str):
        self.file, self.writer = open(path, "w", newline=""), None

    def write(self, iteration: int, env_steps: int, stats: dict[str, float]) -> None:
        if self.writer is None:
            self.writer = csv.DictWriter(self.file, fieldnames=["iteration", "env_steps", *stats])
            self.writer.writeheader()
        self.writer.writerow({"iteration": iteration, "env_steps": env_steps, **stats})
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    env_kwargs = {"reward_mode": args.reward_mode, **({"robot": args.robot} if args.robot else {})}
    envs = NormalizeVecEnv(robosim.make_vec(args.task, num_envs=args.num_envs, autoreset_mode="SameStep",
                                            **env_kwargs), norm_obs=True, norm_rew=True, gamma=args.gamma)
    eval_env = robosim.make(args.task, num_envs=min(16, args.eval_episodes), **env_kwargs)
    video = VideoHook(args, env_kwargs)
    obs_dim, act_dim = gym.spaces.flatdim(envs.single_observation_space), envs.single_action_space.shape[0]
    agent = ActorCritic(obs_dim, act_dim, args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    demo = DemoTerm(args, eval_env, obs_dim)
    log = RunLog(args.out, {**asdict(args), **demo.info}, f"PPO {args.task} ({args.num_envs} envs, seed {args.seed})",
                 command=shlex.join(["python", "examples/ppo.py", *(sys.argv[1:] if argv is None else argv)]))
    updates, prof = UpdatesCsv(log.path("updates.csv")), Profiler()
    T, N = args.num_steps, args.num_envs
    buf = rollout_storage(T, N, obs_dim, act_dim)
    collector = RolloutCollector(envs, T)   # the stepping primitive; its own (T, N) buffers stay unused
    collector.reset(seed=args.seed)
    start, env_steps, next_eval, iteration, stats = time.perf_counter(), 0, 0, 0, {}
    with tqdm(total=args.total_steps, unit="step", desc=f"PPO {args.task}") as bar:
        while env_steps < args.total_steps:
            if env_steps >= next_eval:
                success, ret, flags = evaluate_and_save(agent, envs, eval_env, args.eval_episodes,
                                                        log.path("policy.pt"), env_steps)
                log.add_eval(env_steps, time.perf_counter() - start, success, ret, load_1min=os.getloadavg()[0],
                             **flags, **collector.pop_episode_stats(), **stats)
                bar.set_postfix(success=f"{success:.2f}")
                next_eval += args.eval_every
                if args.stop_success is not None and success >= args.stop_success:
                    break
            iteration += 1
            if args.anneal_lr:
                optimizer.param_groups[0]["lr"] = args.lr * (1 - env_steps / args.total_steps)
            prof.start_iteration()
            collect_rollout(collector, agent, buf, prof)
            batch = gae_batch(agent, buf, collector.obs, args, prof)
            with prof.part("update"):
                stats = ppo_update(agent, optimizer, batch, args, demo.at(env_steps, envs))
            env_steps += T * N
            bar.update(T * N)
            updates.write(iteration, env_steps, stats)
            video.after_iteration(iteration, agent, envs, prof)
            prof.end_iteration()

    success, ret, flags = evaluate_and_save(agent, envs, eval_env, args.eval_episodes, log.path("policy.pt"), env_steps)
    torch.save({"agent": agent.state_dict(), "optimizer": optimizer.state_dict(), "normalizer": envs.state_dict()},
               log.path("train_state.pt"))
    log.summary = {**log.summary, "final_success": success, "env_steps": env_steps,
                   "wall_s": round(time.perf_counter() - start, 2), "torch_threads": torch.get_num_threads()}
    log.add({"env_steps": env_steps, "wall_s": log.summary["wall_s"], "eval_success": success,
             "eval_return": round(ret, 4), **flags, **collector.pop_episode_stats(), **stats})
    for closable in (updates, envs, eval_env, video):
        closable.close()
    if args.profile and prof.iterations:
        write_profile(log.path("profile.json"), prof.iterations, args.video_every, log.summary["wall_s"])
    print(f"final eval success {success:.2f} after {env_steps} env steps, {log.summary['wall_s']} s; "
          f"logs in {args.out}")
    return log.summary


def write_profile(path: str, iterations: list[dict[str, float]], video_every: int, wall_s: float) -> dict:
    """Median seconds per training iteration of env stepping, policy inference (sampling
    and bootstrap values) and update, and their fractions of the median iteration; with
    videos every clip's seconds and overhead_fraction = median clip / (video_every x median
    iteration). wall_s: the whole run, evaluations included. Printed and written to path."""
    median = {k: statistics.median(it[k] for it in iterations) for k in ("env", "policy", "update", "iteration")}
    doc = {"iterations": len(iterations), "torch_threads": torch.get_num_threads(),
           "load_1min_at_end": os.getloadavg()[0], "wall_s": wall_s, "median_s": median,
           "fraction_of_iteration": {k: median[k] / median["iteration"] for k in ("env", "policy", "update")}}
    clips = [it["video"] for it in iterations if "video" in it]
    if clips:
        doc["video"] = {"every": video_every, "clip_s": clips, "median_clip_s": statistics.median(clips),
                        "overhead_fraction": statistics.median(clips) / (video_every * median["iteration"])}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(json.dumps(doc, indent=1))
    return doc


if __name__ == "__main__":
    main()
