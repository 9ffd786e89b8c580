"""Soak test: many env-steps with random partial resets, periodic reconfigures and rendering,
reporting RSS, open file descriptors, threads and env-steps/s over time.

    python scripts/soak.py                                  # 1,000,000 env-steps, 16 envs
    python scripts/soak.py --env-steps 4000 --num-envs 4    # the bounded CI version

Then `--close-cycles K` builds and closes K envs (with a camera) and reports the same
resources, to show that close() gives PhysX and render resources back.
Exit status 1 when, between the first report after warm-up and the end, RSS grew by
more than --max-rss-growth-mb or the number of file descriptors or threads changed.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time

import psutil
import torch

import robosim


def resources() -> dict:
    """rss_mb (resident set, MiB), fds (open file descriptors), threads (OS threads)."""
    proc = psutil.Process()
    return {"rss_mb": proc.memory_info().rss / 2**20, "fds": proc.num_fds(), "threads": proc.num_threads(),
            "py_threads": threading.active_count()}


def soak(args: argparse.Namespace) -> list[dict]:
    """Run the soak; returns one report row per --report-every env-steps."""
    env = robosim.make(args.task, num_envs=args.num_envs, render_mode="rgb_array", render_size=(64, 64),
                       physics_isolation=args.physics_isolation)
    gen = torch.Generator().manual_seed(args.seed)
    low, high = (torch.as_tensor(b) for b in (env.single_action_space.low, env.single_action_space.high))
    n, rows, done, step = env.num_envs, [], 0, 0
    env.reset(seed=args.seed)
    start = last_time = time.perf_counter()
    last_done = 0
    try:
        while done < args.env_steps:
            action = low + torch.rand(n, len(low), generator=gen) * (high - low)
            _, _, terminated, truncated, _ = env.step(action)
            step += 1
            done += n
            ended = terminated | truncated | (torch.rand(n, generator=gen) < args.partial_reset_prob)
            if ended.any():
                env.reset(seed=int(torch.randint(0, 2**31, (1,), generator=gen)),
                          options={"env_idx": ended.nonzero().flatten()})
            if args.reconfigure_every and step % args.reconfigure_every == 0:
                env.reset(seed=step, options={"reconfigure": True})
            if args.render_every and step % args.render_every == 0:
                frames = env.render()
                assert frames.shape == (n, 64, 64, 3)
            if done - last_done >= args.report_every or done >= args.env_steps:
                now = time.perf_counter()
                row = {"env_steps": done, "seconds": now - start,
                       "env_steps_per_s": (done - last_done) / (now - last_time), **resources()}
                rows.append(row)
                print(f"{done:>10,} env-steps {row['seconds']:8.1f} s {row['env_steps_per_s']:8,.0f}/s  "
                      f"RSS {row['rss_mb']:7.1f} MiB  fds {row['fds']:4d}  threads {row['threads']:3d}",
                      flush=True)
                last_done, last_time = done, now
    finally:
        env.close()
    return rows


def close_cycles(args: argparse.Namespace) -> list[dict]:
    """make + reset + render + close, args.close_cycles times; resources after each."""
    rows = []
    for k in range(args.close_cycles):
        env = robosim.make(args.task, num_envs=2, render_mode="rgb_array", render_size=(32, 32),
                           physics_isolation=args.physics_isolation)
        env.reset(seed=k)
        env.step(torch.zeros(2, env.single_action_space.shape[0]))
        env.render()
        env.close()
        rows.append({"cycle": k + 1, **resources()})
    last = rows[-1]
    print(f"{args.close_cycles} make/close cycles: RSS {rows[0]['rss_mb']:.1f} -> {last['rss_mb']:.1f} MiB, "
          f"fds {rows[0]['fds']} -> {last['fds']}, threads {rows[0]['threads']} -> {last['threads']}", flush=True)
    return rows


def verdict(rows: list[dict], warmup: int, max_rss_growth_mb: float, what: str) -> list[str]:
    """Problems between row `warmup` and the last row (empty list: stable)."""
    if len(rows) <= warmup:
        return []
    first, last = rows[warmup], rows[-1]
    problems = []
    if last["rss_mb"] - first["rss_mb"] > max_rss_growth_mb:
        problems.append(f"{what}: RSS grew {last['rss_mb'] - first['rss_mb']:.1f} MiB (> {max_rss_growth_mb})")
    for key in ("fds", "threads"):
        if last[key] != first[key]:
            problems.append(f"{what}: {key} changed {first[key]} -> {last[key]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="PickCube-v1")
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--env-steps", type=int, default=1_000_000, help="total env-steps (control steps x envs)")
    p.add_argument("--partial-reset-prob", type=float, default=0.01, help="per env and step (default 0.01)")
    p.add_argument("--reconfigure-every", type=int, default=2000, help="control steps (0: never)")
    p.add_argument("--render-every", type=int, default=100, help="control steps (0: never)")
    p.add_argument("--report-every", type=int, default=50_000, help="env-steps between reports")
    p.add_argument("--close-cycles", type=int, default=50, help="make/close cycles after the soak (0: none)")
    p.add_argument("--physics-isolation", default="shared", choices=["shared", "separate"])
    p.add_argument("--max-rss-growth-mb", type=float, default=64.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the report rows to this JSON file")
    args = p.parse_args(argv)
    rows = soak(args)
    cycles = close_cycles(args) if args.close_cycles else []
    problems = (verdict(rows, 1, args.max_rss_growth_mb, "soak")
                + verdict(cycles, min(5, len(cycles) - 1), args.max_rss_growth_mb, "close cycles"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"soak": rows, "close_cycles": cycles, "problems": problems, "args": vars(args)}, f, indent=1)
    for problem in problems:
        print(f"soak: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
