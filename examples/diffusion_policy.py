"""State-based Diffusion Policy with action chunking, from robosim demos, in one file.

    robosim demos generate PickCube-v1 -n 100 --out runs/pick100.h5
    python examples/diffusion_policy.py --demos runs/pick100.h5 --steps 20000 --out runs/dp_pick
    ROBOSIM_POLICY=runs/dp_pick/policy.pt robosim eval PickCube-v1 \\
        --policy examples.diffusion_policy:from_env_var --episodes 20 --video runs/dp_pick/eval.mp4

Chi et al.'s recipe on state observations: the noise model sees the last --obs-horizon
observations (normalized) and a diffusion time step, and predicts the noise of a chunk of
--pred-horizon actions (scaled to [-1, 1] per dimension); the policy executes
--action-horizon of them, starting at the current step, then plans again. Training is
DDPM (squared-cosine schedule, 100 steps, epsilon prediction); acting samples with DDIM
(--ddim-steps, deterministic, the initial noise from a seeded generator). The noise
model is an MLP with a sinusoidal time embedding. --obs-noise adds Gaussian noise to the
normalized observations in training, as in examples/bc.py; --ema-decay evaluates and
saves an exponential moving average of the weights instead of the weights themselves.
Observations come from re-simulating the demos (examples/bc.py load_demos). The policy
keeps per-env state (observation history, queued actions) and starts afresh in an env
whose elapsed_steps is 0, so policy.pt is run by this file's from_env_var factory (from
the repository root, as above), not by robosim.rollout.checkpoint. Writes <out>/log.csv,
log.json, curve.png (its "env steps" axis counts gradient steps), policy.pt.
"""
from __future__ import annotations

import argparse
import copy
import io
import math
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the sibling examples/bc.py
from bc import Normalizer, check_positive, fit, learner_parser, mlp, run_eval, start_run  # noqa: E402

from robosim.core.atomic import write_bytes_atomic  # noqa: E402
from robosim.rollout import flatten_obs  # noqa: E402
from robosim.rollout.checkpoint import ENV_VAR, check_layout, env_layout  # noqa: E402

FORMAT = "robosim-diffusion-policy-v1"
TRAIN_STEPS = 100


def parse_args(argv=None) -> argparse.Namespace:
    p = learner_parser(__doc__, hidden=512, out="runs/dp")
    p.add_argument("--obs-horizon", type=int, default=2, help="observations the noise model sees")
    p.add_argument("--action-horizon", type=int, default=8, help="actions executed per plan")
    p.add_argument("--pred-horizon", type=int, default=16, help="actions predicted per plan")
    p.add_argument("--ddim-steps", type=int, default=10, help=f"DDIM sampling steps (of {TRAIN_STEPS} DDPM steps)")
    p.add_argument("--ema-decay", type=float, default=0.0, metavar="D",
                   help="evaluate and save an exponential moving average of the weights, its decay after k "
                        "steps min(D, 1 - (1 + k)^-0.75) (Chi et al.'s warm-up; they use D = 0.9999); "
                        "0: the trained weights themselves")
    args = p.parse_args(argv)
    check_positive(p, args, ("obs_horizon", "action_horizon", "pred_horizon", "ddim_steps"))
    if args.obs_horizon - 1 + args.action_horizon > args.pred_horizon:
        p.error(f"--obs-horizon - 1 + --action-horizon must be <= --pred-horizon, got "
                f"{args.obs_horizon} - 1 + {args.action_horizon} > {args.pred_horizon}")
    if not 0 <= args.ema_decay < 1:
        p.error(f"--ema-decay must be in [0, 1), got {args.ema_decay}")
    if args.ddim_steps > TRAIN_STEPS:
        p.error(f"--ddim-steps must be in [1, {TRAIN_STEPS}], got {args.ddim_steps}")
    return args


def cosine_alphas_cumprod(steps: int = TRAIN_STEPS) -> torch.Tensor:
    """alpha-bar of the squared-cosine schedule (Nichol & Dhariwal), betas capped at 0.999."""
    f = [math.cos((t / steps + 0.008) / 1.008 * math.pi / 2) ** 2 for t in range(steps + 1)]
    betas = torch.tensor([min(1 - f[t + 1] / f[t], 0.999) for t in range(steps)], dtype=torch.float64)
    return torch.cumprod(1 - betas, 0).float()


class NoiseModel(nn.Module):
    """(noisy chunk (N, Tp*A), time step (N,), obs window (N, To*D)) -> predicted noise."""

    def __init__(self, chunk_dim: int, cond_dim: int, hidden: int, emb: int = 64):
        super().__init__()
        self.emb = emb
        self.net = mlp(chunk_dim + cond_dim + emb, chunk_dim, hidden)

    def forward(self, x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        freqs = torch.exp(-math.log(10_000) * torch.arange(self.emb // 2) / (self.emb // 2))
        angle = t.float()[:, None] * freqs[None]
        return self.net(torch.cat([x, cond, angle.sin(), angle.cos()], dim=1))


class DiffusionPolicy(nn.Module):
    """Obs normalizer, action scaling and the noise model; sample() runs DDIM."""

    def __init__(self, obs: torch.Tensor, actions: torch.Tensor, cfg: dict, keep: torch.Tensor | None = None):
        super().__init__()
        self.cfg = dict(cfg)
        self.norm = Normalizer(obs, keep)
        self.register_buffer("act_low", actions.min(0).values)
        self.register_buffer("act_high", actions.max(0).values)
        self.register_buffer("alpha_bar", cosine_alphas_cumprod())
        a, to, tp = actions.shape[1], cfg["obs_horizon"], cfg["pred_horizon"]
        self.model = NoiseModel(tp * a, to * obs.shape[1], cfg["hidden"])

    def scale(self, actions: torch.Tensor) -> torch.Tensor:
        span = (self.act_high - self.act_low).clamp(min=1e-6)
        return 2 * (actions - self.act_low) / span - 1

    def loss(self, obs_window: torch.Tensor, chunk: torch.Tensor, gen: torch.Generator,
             obs_noise: float = 0.0) -> torch.Tensor:
        """DDPM epsilon loss; obs_window (N, To, D) raw, chunk (N, Tp, A) raw actions;
        `obs_noise`: std of Gaussian noise added to the normalized observations (as BC's)."""
        x0 = self.scale(chunk).flatten(1)
        t = torch.randint(TRAIN_STEPS, (len(x0),), generator=gen)
        noise = torch.randn(x0.shape, generator=gen)
        ab = self.alpha_bar[t][:, None]
        xt = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
        cond = self.norm(obs_window)
        if obs_noise > 0:   # drawn after the rest, so runs without it repeat the earlier ones bit for bit
            cond = self.norm.jitter(cond, obs_noise, gen)
        return (self.model(xt, t, cond.flatten(1)) - noise).square().mean()

    @torch.no_grad()
    def sample(self, obs_window: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """Deterministic DDIM: obs_window (N, To, D) raw -> action chunk (N, Tp, A) raw."""
        cond = self.norm(obs_window).flatten(1)
        n, a = len(cond), len(self.act_low)
        x = torch.randn((n, self.cfg["pred_horizon"] * a), generator=gen)
        times = torch.linspace(TRAIN_STEPS - 1, 0, self.cfg["ddim_steps"]).round().long().tolist()
        for k, t in enumerate(times):
            ab = self.alpha_bar[t]
            eps = self.model(x, torch.full((n,), t), cond)
            x0 = ((x - (1 - ab).sqrt() * eps) / ab.sqrt()).clamp(-1, 1)
            ab_prev = self.alpha_bar[times[k + 1]] if k + 1 < len(times) else torch.tensor(1.0)
            x = ab_prev.sqrt() * x0 + (1 - ab_prev).sqrt() * eps
        chunk = x.reshape(n, -1, a)
        return self.act_low + (chunk + 1) / 2 * (self.act_high - self.act_low)


class ChunkedPolicy:
    """policy(obs) -> action (N, A) for robosim.record.evaluate: per env an observation
    history and a queue of planned actions, both restarted when env.elapsed_steps is 0."""

    def __init__(self, env, model: DiffusionPolicy, seed: int = 0):
        self.env, self.model = env, model
        self.gen = torch.Generator().manual_seed(seed)
        n, cfg = env.num_envs, model.cfg
        self.history: torch.Tensor | None = None          # (N, To, D)
        self.queue = torch.zeros(n, cfg["action_horizon"], len(model.act_low))
        self.left = torch.zeros(n, dtype=torch.long)       # queued actions not yet taken

    def __call__(self, obs) -> torch.Tensor:
        flat = flatten_obs(obs).cpu()
        fresh = self.env.elapsed_steps.cpu() == 0
        if self.history is None:
            self.history = flat[:, None].repeat(1, self.model.cfg["obs_horizon"], 1)
        self.history = torch.cat([self.history[:, 1:], flat[:, None]], dim=1)
        self.history[fresh] = flat[fresh][:, None]
        self.left[fresh] = 0
        plan = (self.left == 0).nonzero().flatten()
        if len(plan):
            start = self.model.cfg["obs_horizon"] - 1
            chunk = self.model.sample(self.history[plan], self.gen)
            self.queue[plan] = chunk[:, start:start + self.queue.shape[1]]
            self.left[plan] = self.queue.shape[1]
        action = self.queue[torch.arange(len(flat)), self.queue.shape[1] - self.left]
        self.left -= 1
        return action.to(getattr(self.env, "device", "cpu"))


def windows(obs: list[np.ndarray], actions: list[np.ndarray], to: int, tp: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every step t of every episode: obs of steps t-To+1..t, actions of t-To+1..t-To+Tp
    (indices clamped to the episode: the first obs/action repeated before, the last after)."""
    obs_w, act_w = [], []
    for o, a in zip(obs, actions):
        t = np.arange(len(a))[:, None]
        obs_w.append(o[np.clip(t + np.arange(-to + 1, 1), 0, len(o) - 1)])
        act_w.append(a[np.clip(t + np.arange(-to + 1, tp - to + 1), 0, len(a) - 1)])
    return torch.from_numpy(np.concatenate(obs_w)), torch.from_numpy(np.concatenate(act_w))


def save(path: str, model: DiffusionPolicy, env, extra: dict) -> None:
    """policy.pt: format, config, the env layout it was trained on, the weights."""
    data = io.BytesIO()
    torch.save({"format": FORMAT, "config": model.cfg, "layout": env_layout(env), "extra": extra,
                "obs_dim": int(model.norm.mean.shape[0]), "action_dim": int(model.act_low.shape[0]),
                "state_dict": model.state_dict()}, data)
    write_bytes_atomic(path, data.getvalue())


def from_env_var(env) -> ChunkedPolicy:
    """Policy factory for `robosim eval --policy examples.diffusion_policy:from_env_var`:
    the checkpoint named by ROBOSIM_POLICY (ValueError when it is not one, or was trained
    on another task, robot, control mode or observation layout)."""
    path = os.environ.get(ENV_VAR)
    if not path or not os.path.isfile(path):
        raise ValueError(f"the environment variable {ENV_VAR} must name a diffusion policy checkpoint, got {path!r}")
    try:
        ckpt = torch.load(path, weights_only=True)
    except Exception as err:   # torch raises many types for a file that is not a checkpoint
        raise ValueError(f"{ENV_VAR} {path!r} is not a diffusion policy checkpoint ({err})") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        got = ckpt.get("format") if isinstance(ckpt, dict) else type(ckpt).__name__
        raise ValueError(f"{ENV_VAR} {path!r} must have format {FORMAT!r}, got {got!r}")
    check_layout(ckpt["layout"], env, f"{ENV_VAR} {path!r}")
    model = DiffusionPolicy(torch.zeros(2, ckpt["obs_dim"]), torch.zeros(2, ckpt["action_dim"]), ckpt["config"])
    state = ckpt["state_dict"]
    state.setdefault("norm.keep", torch.ones(ckpt["obs_dim"]))   # saved before --ignore-obs: every column
    model.load_state_dict(state)
    return ChunkedPolicy(env, model.eval())


def main(argv=None) -> dict:
    args = parse_args(argv)
    demos, eval_env, log, start, keep = start_run(args, "examples/diffusion_policy.py", "Diffusion Policy", argv)
    obs_w, act_w = windows(demos.obs, demos.actions, args.obs_horizon, args.pred_horizon)
    cfg = {k: getattr(args, k) for k in ("obs_horizon", "action_horizon", "pred_horizon", "ddim_steps", "hidden")}
    model = DiffusionPolicy(torch.from_numpy(np.concatenate(demos.obs)),
                            torch.from_numpy(np.concatenate(demos.actions)), cfg, keep)

    ema = copy.deepcopy(model) if args.ema_decay > 0 else None   # what is evaluated and saved, when on

    def batch_loss(gen: torch.Generator) -> torch.Tensor:
        idx = torch.randint(len(obs_w), (args.batch_size,), generator=gen)
        return model.loss(obs_w[idx], act_w[idx], gen, args.obs_noise)

    def average(step: int) -> None:
        decay = min(args.ema_decay, 1 - (1 + step) ** -0.75)
        with torch.no_grad():
            for avg, weight in zip(ema.model.parameters(), model.model.parameters()):
                avg.lerp_(weight, 1 - decay)

    def checkpoint(step: int) -> tuple[float, float]:
        acting = model if ema is None else ema
        save(log.path("policy.pt"), acting, eval_env, extra={"algo": "diffusion_policy", "grad_steps": step,
                                                             "demo_seeds": demos.seeds,
                                                             "ignored_obs": args.ignore_obs})
        acting.eval()
        result = run_eval(eval_env, ChunkedPolicy(eval_env, acting, args.seed), args.eval_episodes, args.eval_seed)
        acting.train()
        return result

    fit(args, log, start, f"DP {demos.task_id}", model.model.parameters(), batch_loss, checkpoint,
        after_step=None if ema is None else average)
    eval_env.close()
    return log.summary


if __name__ == "__main__":
    main()
