"""PPO on robosim in the shape of CleanRL's ppo_continuous_action.py: Args, the agent,
then main's one loop of evaluation, rollout (collect_rollout: T vector steps into storage
tensors), GAE (gae_batch: truncated episodes bootstrapped), clipped-surrogate epochs
(ppo_update) and logging. The extras are objects the loop calls in one line each, in the
sibling examples/ppo_hooks.py with the evaluation and policy.pt checkpointing
(evaluate_and_save): Profiler (--profile), DemoTerm (--demos), VideoHook (--video-every),
UpdatesCsv.

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
import os
import shlex
import sys
import time
from dataclasses import MISSING, asdict, dataclass, field, fields

import gymnasium as gym
import torch
from torch import nn
from tqdm import tqdm

import robosim
from robosim.envs.registry import import_modules
from robosim.rollout import RolloutCollector, RunLog, compute_gae, flatten_obs
from robosim.vector import NormalizeVecEnv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the sibling examples/ppo_hooks.py
from ppo_hooks import (  # noqa: E402
    DemoTerm,
    Profiler,
    UpdatesCsv,
    VideoHook,
    evaluate_and_save,
    write_profile,
)


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


def rollout_storage(T: int, N: int, obs_dim: int, act_dim: int) -> dict[str, torch.Tensor]:
    """Zeroed (T, N, ...) tensors; row t is the transition (obs_t, action_t) -> (reward_t,
    next obs). obs flat and normalized, rewards normalized; final_values: V(final obs)
    where an episode was truncated at t, else 0; valid False: the env only reset."""
    shapes = {"obs": (obs_dim,), "actions": (act_dim,), "logprobs": (), "rewards": (), "values": (), "final_values": ()}
    buf = {name: torch.zeros((T, N, *shape)) for name, shape in shapes.items()}
    return buf | {name: torch.zeros((T, N), dtype=torch.bool) for name in ("terminated", "truncated", "valid")}


def collect_rollout(collector: RolloutCollector, agent: ActorCritic, buf: dict, prof: Profiler) -> None:
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


def gae_batch(agent: ActorCritic, buf: dict, last_obs, args: Args, prof: Profiler) -> dict[str, torch.Tensor]:
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
               demo: DemoTerm) -> dict[str, float]:
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


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    env_kwargs = {"reward_mode": args.reward_mode, **({"robot": args.robot} if args.robot else {})}
    envs = NormalizeVecEnv(robosim.make_vec(args.task, num_envs=args.num_envs, autoreset_mode="SameStep",
                                            **env_kwargs), norm_obs=True, norm_rew=True, gamma=args.gamma)
    eval_env = robosim.make(args.task, num_envs=min(16, args.eval_episodes), **env_kwargs)
    video = VideoHook(args.video_every, args.out, args.task, args.video_size, env_kwargs)
    # a multi-robot task's action space is a Dict of slots; the env takes its flat view too
    obs_dim, act_dim = gym.spaces.flatdim(envs.single_observation_space), eval_env.single_flat_action_space.shape[0]
    agent = ActorCritic(obs_dim, act_dim, args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    demo = DemoTerm(args.demos, args.demo_coef, args.demo_steps or args.total_steps, eval_env, obs_dim)
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


if __name__ == "__main__":
    main()
