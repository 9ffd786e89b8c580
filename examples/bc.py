"""Behaviour cloning (MLP, state observations) from robosim demos in one file.

    robosim demos generate PickCube-v1 -n 100 --out runs/pick100.h5
    python examples/bc.py --demos runs/pick100.h5 --steps 20000 --out runs/bc_pick
    ROBOSIM_POLICY=runs/bc_pick/policy.pt robosim eval PickCube-v1 \\
        --policy robosim.rollout.checkpoint:from_env_var --episodes 20 --video runs/bc_pick/eval.mp4

Observations: the demos file holds env states and actions, not observations. Every
episode is re-simulated from its seed with its recorded actions (DART demos, `robosim
demos generate --action-noise`: with the noisy actions that were executed, re-created
from the seed; the clean recorded ones are the labels) (the file's env
settings, so physics_isolation="separate" demos replay bit for bit; a re-simulated state
that differs from the recorded one is reported), and the env's own state observations
(robosim.rollout.flatten_obs of what reset/step return) are the inputs. The policy is
an MLP from normalized observations to actions, trained by mean squared error
(--obs-noise SIGMA: on observations with Gaussian noise added after normalization;
--ignore-obs KEY: the named observation entries, e.g. agent/qvel, are held at their demo
mean, so the policy cannot read them). Every
--eval-every gradient steps it runs --eval-episodes seeded episodes through
robosim.record.evaluate (the loop `robosim eval` uses) and saves policy.pt, a
robosim.rollout.checkpoint that `robosim eval --policy` runs; its metadata holds the
demos' seeds (`demo_seeds`), so `robosim eval` picks held-out seeds by default and
warns when --seed overlaps them. --import MODULE trains on a task MODULE registers.
Writes <out>/log.csv,
log.json, curve.png (its "env steps" axis counts gradient steps), policy.pt.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

import robosim
from robosim.demos.generate import executed_actions
from robosim.envs.registry import get_task, import_modules
from robosim.record.evaluate import evaluate
from robosim.record.trajectory import TrajectoryFile
from robosim.rollout import RunLog, flatten_obs, save_policy
from robosim.rollout.checkpoint import flatten_space_keys


def learner_parser(doc: str, hidden: int, out: str) -> argparse.ArgumentParser:
    """The options both learners take (demos, optimisation, evaluation)."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--demos", required=True, help="robosim demos file (.h5, robosim demos generate)")
    p.add_argument("--import", dest="imports", metavar="MODULE", action="append", default=[],
                   help="import MODULE first (found in the current directory too), so tasks it registers "
                        "with @robosim.register_task can be learned (repeatable)")
    p.add_argument("--max-demos", type=int, default=None, help="use only the first N episodes (default: all)")
    p.add_argument("--steps", type=int, default=20_000, help="gradient steps")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (cosine decay to 0)")
    p.add_argument("--hidden", type=int, default=hidden, help="MLP width")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=out)
    p.add_argument("--eval-every", type=int, default=2_000, help="gradient steps between evaluations")
    p.add_argument("--eval-episodes", type=int, default=50)
    p.add_argument("--eval-envs", type=int, default=10)
    p.add_argument("--eval-seed", type=int, default=10_000, help="first eval episode seed (demos use 0, 1, ...)")
    p.add_argument("--stop-success", type=float, default=None, help="stop once eval success >= this")
    p.add_argument("--torch-threads", type=int, default=1, help="0: torch's default (slower next to PhysX on 2 cores)")
    p.add_argument("--obs-noise", type=float, default=0.0, metavar="SIGMA",
                   help="Gaussian noise of std SIGMA added to each training observation after normalization "
                        "(units of each dimension's std over the demos; 0: none)")
    p.add_argument("--ignore-obs", action="append", default=[], metavar="KEY",
                   help="leave the observation entry KEY out of the policy's input (held at its demo mean), "
                        "named as in the task's state_dict observation, e.g. agent/qvel (repeatable)")
    return p


def check_positive(p: argparse.ArgumentParser, args: argparse.Namespace, names: tuple[str, ...] = ()) -> None:
    """p.error for any of the common sizes or `names` below 1, a negative --obs-noise or a
    --import that fails; imports the --import modules."""
    for name in ("steps", "batch_size", "eval_every", "eval_episodes", "eval_envs", "hidden", *names):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not args.obs_noise >= 0:
        p.error(f"--obs-noise must be >= 0, got {args.obs_noise}")
    if args.max_demos is not None and args.max_demos < 1:
        p.error(f"--max-demos must be >= 1, got {args.max_demos}")
    try:
        import_modules(args.imports, search_cwd=True)   # user packages in the current directory too
    except ValueError as err:
        p.error(str(err))


def parse_args(argv=None) -> argparse.Namespace:
    p = learner_parser(__doc__, hidden=256, out="runs/bc")
    args = p.parse_args(argv)
    check_positive(p, args)
    return args


def input_mask(path: str, ignore: list[str]) -> torch.Tensor | None:
    """float32 (D,) over the flat state observation of the demos' env: 0 at the columns
    of the state_dict entries named in `ignore` (paths like "agent/qvel"), 1 elsewhere;
    None when `ignore` is empty. ValueError naming --ignore-obs for a name the task's
    observation lacks (checked before any run starts)."""
    if not ignore:
        return None
    traj = TrajectoryFile(path, arg="--demos")
    env = robosim.make(traj.spec.replace(obs_mode="state_dict"))
    try:
        layout = flatten_space_keys(env.single_observation_space)
    finally:
        env.close()
    names = [name for name, _ in layout]
    unknown = [key for key in ignore if key not in names]
    if unknown:
        raise ValueError(f"--ignore-obs must name entries of {traj.task_id}'s observation {names}, got {unknown}")
    widths = [int(np.prod(shape)) for _, shape in layout]
    return torch.cat([torch.full((w,), float(name not in ignore)) for name, w in zip(names, widths)])


@dataclass
class Demos:
    """Per-episode float32 arrays: obs[k] (T_k, D) observed before actions[k] (T_k, A)."""

    obs: list[np.ndarray]
    actions: list[np.ndarray]
    task_id: str
    make_kwargs: dict        # robosim.make kwargs of an env like the demos' (any num_envs)
    diverged: int            # episodes whose re-simulated states differ from the recorded ones
    seeds: list[int]         # each episode's reset seed (saved in checkpoints as demo_seeds)
    action_noise: float      # the DART noise the demos were generated with (0: none)


def load_demos(path: str, max_demos: int | None = None, progress: bool = True) -> Demos:
    """Re-simulate the demos in `path` (module docstring) into observations and actions.
    Episodes run in their recorded env slots, one per slot at a time."""
    traj = TrajectoryFile(path, arg="--demos")
    episodes = [traj.episode(k) for k in range(len(traj) if max_demos is None else min(max_demos, len(traj)))]
    if any(e.seed < 0 for e in episodes):
        raise ValueError(f"--demos episodes must have seeds (re-simulated from a seeded reset), got seed -1 "
                         f"in {path!r}")
    kwargs = {k: v for k, v in traj.spec.make_kwargs().items() if k not in ("obs_mode", "seed", "num_envs")}
    sigma = float(json.loads(traj.attrs.get("demos", "{}")).get("action_noise", 0.0))
    executed = [executed_actions(e, sigma) for e in episodes]
    env = robosim.make(traj.spec.replace(obs_mode="state"))
    per_slot = [[k for k, e in enumerate(episodes) if e.env_index == i] for i in range(env.num_envs)]
    obs_of, diverged = [None] * len(episodes), 0
    with tqdm(total=len(episodes), desc="re-simulate demos", unit="ep", disable=not progress) as bar:
        for r in range(max(len(s) for s in per_slot)):
            batch = [(i, s[r]) for i, s in enumerate(per_slot) if r < len(s)]
            idx = torch.tensor([i for i, _ in batch])
            obs, _ = env.reset(seed=[episodes[k].seed for _, k in batch], options={"env_idx": idx})
            rows = {k: [] for _, k in batch}
            error = {k: 0.0 for _, k in batch}
            for t in range(max(episodes[k].length for _, k in batch)):
                flat = flatten_obs(obs).numpy()
                action = np.zeros((env.num_envs, traj.action_dim), np.float32)
                for i, k in batch:
                    if t < episodes[k].length:
                        rows[k].append(flat[i])
                        action[i] = executed[k][t]
                obs, *_ = env.step(torch.from_numpy(action))
                state = env.get_state().numpy()
                for i, k in batch:
                    if t < episodes[k].length:
                        error[k] = max(error[k], float(np.abs(state[i] - episodes[k].states[t + 1]).max()))
            for _, k in batch:
                obs_of[k] = np.stack(rows[k])
                diverged += error[k] > 0
            bar.update(len(batch))
    env.close()
    return Demos(obs_of, [e.actions for e in episodes], traj.task_id, kwargs, diverged, [e.seed for e in episodes],
                 sigma)


def load_demo_steps(path: str, eval_env: Any, obs_dim: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Every step of the demos in `path` as float32 raw flat observations (M, obs_dim) and
    actions (M, A) (re-simulated by load_demos), and the number of
    episodes; ValueError when they come from another task, robot or control mode than
    `eval_env`."""
    demos = load_demos(path)
    want = (type(eval_env.task).__name__, eval_env.robot.spec.name, eval_env.control_mode)
    got = (get_task(demos.task_id).__name__, demos.make_kwargs.get("robot"), demos.make_kwargs.get("control_mode"))
    obs = torch.from_numpy(np.concatenate(demos.obs)).float()
    if got != want or obs.shape[1] != obs_dim:
        raise ValueError(f"--demos must hold episodes of (task, robot, control mode) {want} with {obs_dim}-dim "
                         f"observations, got {got} with {obs.shape[1]}-dim observations in {path!r}")
    return obs, torch.from_numpy(np.concatenate(demos.actions)).float(), len(demos.obs)


class Normalizer(nn.Module):
    """x -> (x - mean) / std * keep, std floored at 1e-2 (constant features stay finite);
    `keep` (D,) is 1 except at the columns --ignore-obs holds at their mean (0)."""

    def __init__(self, data: torch.Tensor, keep: torch.Tensor | None = None):
        super().__init__()
        self.register_buffer("mean", data.mean(0))
        self.register_buffer("std", data.std(0).clamp(min=1e-2))
        self.register_buffer("keep", torch.ones(data.shape[1]) if keep is None else keep.float())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std * self.keep

    def jitter(self, x: torch.Tensor, sigma: float, gen: torch.Generator) -> torch.Tensor:
        """Normalized `x` plus Gaussian noise of std `sigma` (--obs-noise), the ignored
        columns kept at 0: nearby states get the demo's label, smoother off its path."""
        return (x + sigma * torch.randn(x.shape, generator=gen)) * self.keep


def mlp(n_in: int, n_out: int, hidden: int, layers: int = 3) -> nn.Sequential:
    mods, width = [], n_in
    for _ in range(layers):
        mods += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    return nn.Sequential(*mods, nn.Linear(width, n_out))


class BCPolicy(nn.Module):
    """flat obs (N, D) -> action (N, A), clipped to the action box (what policy.pt holds);
    `keep` (D,): Normalizer's."""

    def __init__(self, obs: torch.Tensor, act_dim: int, hidden: int, low: torch.Tensor, high: torch.Tensor,
                 keep: torch.Tensor | None = None):
        super().__init__()
        self.norm = Normalizer(obs, keep)
        self.net = mlp(obs.shape[1], act_dim, hidden)
        self.register_buffer("low", low.float())
        self.register_buffer("high", high.float())

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        return torch.maximum(torch.minimum(self.net(self.norm(flat_obs)), self.high), self.low)


def make_eval_env(demos: Demos, num_envs: int):
    """An env like the demos' (task, robot, control mode, task parameters), state obs."""
    return robosim.make(demos.task_id, num_envs=num_envs, obs_mode="state", **demos.make_kwargs)


def run_eval(env, policy, episodes: int, seed: int) -> tuple[float, float]:
    """(success rate, mean return) of `policy` (flat obs -> action) over seeded episodes."""
    with torch.no_grad():
        result = evaluate(env, policy, episodes, seed=seed)
    return result.success_rate, sum(result.returns) / result.episodes


def start_run(args: argparse.Namespace, script: str, title: str,
              argv) -> tuple[Demos, Any, RunLog, float, torch.Tensor | None]:
    """Threads and seed, the --ignore-obs mask (input_mask; checked before anything is
    written), the demos re-simulated, an eval env and the RunLog of a learner."""
    keep = input_mask(args.demos, args.ignore_obs)
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    demos = load_demos(args.demos, args.max_demos)
    eval_env = make_eval_env(demos, args.eval_envs)
    log = RunLog(args.out, vars(args), f"{title} {demos.task_id} ({len(demos.obs)} demos, seed {args.seed})",
                 command=shlex.join(["python", script, *(sys.argv[1:] if argv is None else argv)]))
    log.summary.update(demos=len(demos.obs), demos_diverged=demos.diverged, demos_action_noise=demos.action_noise,
                       load_s=round(time.perf_counter() - start, 2))
    overlap = set(demos.seeds) & set(range(args.eval_seed, args.eval_seed + args.eval_episodes + args.eval_envs))
    if overlap:
        print(f"warning: {len(overlap)} eval seeds (--eval-seed {args.eval_seed}) are seeds of the demos: the eval "
              f"success is not held-out", file=sys.stderr)
    return demos, eval_env, log, start, keep


def fit(args: argparse.Namespace, log: RunLog, start: float, desc: str, params,
        batch_loss: Callable[[torch.Generator], torch.Tensor],
        checkpoint: Callable[[int], tuple[float, float]],
        after_step: Callable[[int], None] | None = None) -> float:
    """The learners' loop: AdamW on `params` (--lr, cosine decay over --steps) minimizing
    `batch_loss(gen)` (a seeded generator draws the batch), then `after_step(steps done)`;
    at step 0, every --eval-every steps and at the end `checkpoint(step)` evaluates and
    saves the policy, returning (success rate, mean return). Returns the last success rate."""
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=1e-6)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.steps)
    gen = torch.Generator().manual_seed(args.seed)
    loss, step = torch.zeros(()), 0
    with tqdm(total=args.steps, unit="step", desc=desc) as bar:
        while True:
            if step % args.eval_every == 0 or step == args.steps:
                success, ret = checkpoint(step)
                log.add_eval(step, time.perf_counter() - start, success, ret, loss=round(loss.item(), 6))
                bar.set_postfix(success=f"{success:.2f}", loss=f"{loss.item():.4f}")
                if step == args.steps or (args.stop_success is not None and success >= args.stop_success):
                    break
            loss = batch_loss(gen)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            step += 1
            if after_step is not None:
                after_step(step)
            bar.update(1)
    log.summary.update(final_success=success, grad_steps=step, wall_s=round(time.perf_counter() - start, 2),
                       torch_threads=torch.get_num_threads())
    log.write()
    print(f"final eval success {success:.2f} after {step} gradient steps, {log.summary['wall_s']} s; "
          f"logs in {args.out}")
    return success


def main(argv=None) -> dict:
    args = parse_args(argv)
    demos, eval_env, log, start, keep = start_run(args, "examples/bc.py", "BC", argv)
    obs = torch.from_numpy(np.concatenate(demos.obs))
    act = torch.from_numpy(np.concatenate(demos.actions))
    box = eval_env.single_flat_action_space   # a multi-robot task's Dict of slots: its flat view
    low, high = torch.as_tensor(box.low), torch.as_tensor(box.high)
    policy = BCPolicy(obs, act.shape[1], args.hidden, low, high, keep)

    def batch_loss(gen: torch.Generator) -> torch.Tensor:
        idx = torch.randint(len(obs), (args.batch_size,), generator=gen)
        x = policy.norm(obs[idx])
        if args.obs_noise > 0:
            x = policy.norm.jitter(x, args.obs_noise, gen)
        return (policy.net(x) - act[idx]).square().mean()

    def checkpoint(step: int) -> tuple[float, float]:
        save_policy(log.path("policy.pt"), policy, eval_env,
                    extra={"algo": "bc", "grad_steps": step, "demo_seeds": demos.seeds,
                           "ignored_obs": args.ignore_obs})
        return run_eval(eval_env, lambda o: policy(flatten_obs(o)), args.eval_episodes, args.eval_seed)

    fit(args, log, start, f"BC {demos.task_id}", policy.net.parameters(), batch_loss, checkpoint)
    eval_env.close()
    return log.summary


if __name__ == "__main__":
    main()
