"""examples/ppo.py's evaluation, checkpointing and hook objects, kept apart so that ppo.py
reads top to bottom as the training loop: the deterministic policy saved to policy.pt
(DeterministicActor, evaluate_and_save), the demonstration term (DemoTerm, --demos),
training videos (VideoHook, --video-every), timing (Profiler, write_profile, --profile)
and updates.csv (UpdatesCsv).

This module does not import ppo.py: the agent is anything with an actor_mean (Agent),
and the hooks take the flags they need as arguments.
"""

import copy
import csv
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

import torch
from torch import nn

import robosim
from robosim.core.tree import leaf_items
from robosim.record import RecordEpisode
from robosim.record.evaluate import evaluate
from robosim.rollout import flatten_obs, save_policy
from robosim.vector import NormalizeVecEnv


class Agent(Protocol):
    """What the hooks use of ppo.py's ActorCritic."""

    @property
    def actor_mean(self) -> nn.Module:
        """Normalized flat obs (B, obs_dim) -> mean action (B, act_dim)."""
        ...


class DeterministicActor(nn.Module):
    """What policy.pt holds: raw flat obs -> normalized -> mean action, clipped to the space."""

    def __init__(self, agent: Agent, mean: torch.Tensor, std: torch.Tensor, clip: float,
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


def deterministic_actor(agent: Agent, envs: NormalizeVecEnv) -> DeterministicActor:
    """The agent's mean action behind the env's current observation normalization."""
    mean, std = flat_obs_stats(envs)
    space = envs.env.unwrapped_env.single_flat_action_space   # a multi-robot env's Dict: its flat view
    return DeterministicActor(agent, mean, std, envs.clip_obs, torch.as_tensor(space.low), torch.as_tensor(space.high))


def run_eval(actor: DeterministicActor, env, episodes: int, seed: int) -> tuple[float, float, dict]:
    """success rate, mean return, and {"eval_ever_<flag>": share of episodes} of the task's stages."""
    result = evaluate(env, lambda o: actor(flatten_obs(o)), episodes, seed=seed)
    flags = {f"eval_ever_{key}": sum(v) / result.episodes for key, v in result.flags.items()}
    return result.success_rate, sum(result.returns) / result.episodes, flags


def evaluate_and_save(agent: Agent, envs: NormalizeVecEnv, eval_env, episodes: int, path: str,
                      env_steps: int) -> tuple[float, float, dict]:
    """run_eval of the deterministic policy on eval_env (seed 10000), which is saved to path."""
    actor = deterministic_actor(agent, envs)
    result = run_eval(actor, eval_env, episodes, seed=10_000)
    save_policy(path, actor, envs.env, extra={"algo": "ppo", "env_steps": env_steps})
    return result


class DemoTerm:
    """--demos, DAPG-style: each minibatch's loss gains weight x the squared error of the
    policy's mean action on as many random demo steps (obs normalized as the rollout's);
    weight = coef x max(0, 1 - env_steps / steps), set by at() before each update.
    Without demos (None) the weight stays 0 and stats() is empty."""

    def __init__(self, demos: str | None, coef: float, steps: int, eval_env, obs_dim: int):
        self.coef, self.steps = coef, steps
        self.obs = self.actions = None
        self.info: dict[str, int] = {}   # goes into the run's config
        if demos:
            # examples/bc.py, beside this file: ppo.py put this directory on sys.path
            from bc import load_demo_steps
            try:
                self.obs, self.actions, episodes = load_demo_steps(demos, eval_env, obs_dim)
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

    def add_to(self, loss: torch.Tensor, agent: Agent, n: int) -> torch.Tensor:
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
    deterministic policy (seed 20000) to <out>/videos/iterNNNNN.mp4, on a rendering env of
    task built once with size x size tiles (env is None without videos, every 0)."""

    def __init__(self, every: int, out: str, task: str, size: int, env_kwargs: dict):
        self.every, self.dir = every, os.path.join(out, "videos")
        self.env = robosim.make(task, num_envs=16, render_mode="rgb_array", render_size=(size,) * 2,
                                **env_kwargs) if self.every else None

    def after_iteration(self, iteration: int, agent: Agent, envs: NormalizeVecEnv, prof: "Profiler") -> None:
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
