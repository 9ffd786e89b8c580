"""Memory over a long camera run: does a rendering env's memory stay flat?

    .venv/bin/python examples/rendering_memory_soak.py                       # 10^5 env-steps, ~20 min
    .venv/bin/python examples/rendering_memory_soak.py --env-steps 4000 --json soak.json

Steps PickCube-v1 with obs_mode="rgb" (one 128x128 sensor camera per env, render LOD
"low", as in examples/benchmark_rendering.py) with seeded random actions and a full
reset every 50 control steps (the episode length), and samples the process's resident
set size (RSS; lavapipe renders on the CPU, so its buffers are in it) every `--every`
env-steps. Prints the RSS after the warm-up sample, at the end and at its peak, and the
least-squares slope over the second half of the run in MB per 10^4 env-steps; writes
every sample as JSON (atomically) with --json. Not a test: a benchmark to rerun.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

EPISODE_STEPS = 50


def _slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope dy/dx (0 for fewer than two points)."""
    if len(xs) < 2:
        return 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-steps", type=int, default=100_000, help="rendered env-steps in all (default 100000)")
    parser.add_argument("--num-envs", type=int, default=4, help="envs in the batch (default 4)")
    parser.add_argument("--res", type=int, default=128, help="square camera image size, pixels (default 128)")
    parser.add_argument("--every", type=int, default=2_000, help="env-steps between RSS samples (default 2000)")
    parser.add_argument("--json", help="also write every sample to this JSON file")
    args = parser.parse_args(argv)
    if args.env_steps < 1 or args.num_envs < 1 or args.every < 1 or not 1 <= args.res <= 4096:
        parser.error(f"--env-steps, --num-envs and --every must be >= 1 and --res in [1, 4096], got "
                     f"{args.env_steps}, {args.num_envs}, {args.every} and {args.res}")

    import psutil
    import torch
    from tqdm import tqdm

    import robosim

    torch.set_num_threads(1)
    env = robosim.make("PickCube-v1", num_envs=args.num_envs, obs_mode="rgb", render_lod="low",
                       sensor_configs={"width": args.res, "height": args.res})
    proc = psutil.Process()
    low = torch.as_tensor(env.single_action_space.low)
    high = torch.as_tensor(env.single_action_space.high)
    gen = torch.Generator().manual_seed(0)
    steps = -(-args.env_steps // args.num_envs)          # control steps, rounded up
    samples: list[tuple[int, float]] = []                 # (env-steps done, RSS MB)
    next_sample, start = args.every, time.perf_counter()
    try:
        with tqdm(total=steps * args.num_envs, unit="env-step", desc="rgb soak") as bar:
            for t in range(steps):
                if t % EPISODE_STEPS == 0:
                    env.reset(seed=t)
                env.step(low + torch.rand((args.num_envs, len(low)), generator=gen) * (high - low))
                done = (t + 1) * args.num_envs
                bar.update(args.num_envs)
                if done >= next_sample:
                    samples.append((done, proc.memory_info().rss / 2**20))
                    next_sample += args.every
    finally:
        env.close()
    seconds = time.perf_counter() - start
    if not samples:
        samples.append((steps * args.num_envs, proc.memory_info().rss / 2**20))
    half = samples[len(samples) // 2:]
    slope = _slope([s for s, _ in half], [m for _, m in half]) * 1e4
    first, last, peak = samples[0][1], samples[-1][1], max(m for _, m in samples)
    print(f"PickCube-v1 rgb {args.res}x{args.res}, {args.num_envs} envs, {steps * args.num_envs:,} env-steps in "
          f"{seconds:.0f} s ({steps * args.num_envs / seconds:.1f} env-steps/s), {os.cpu_count()} CPUs")
    print(f"RSS after {samples[0][0]:,} env-steps {first:.1f} MB, at the end {last:.1f} MB "
          f"({last - first:+.1f} MB), peak {peak:.1f} MB; second-half slope {slope:+.2f} MB per 10^4 env-steps")
    if args.json:
        from robosim.bench.runner import write_json_atomic

        write_json_atomic({"task": "PickCube-v1", "obs_mode": "rgb", "res": args.res, "num_envs": args.num_envs,
                           "env_steps": steps * args.num_envs, "seconds": seconds,
                           "rss_mb": [{"env_steps": s, "rss_mb": m} for s, m in samples],
                           "rss_first_mb": first, "rss_last_mb": last, "rss_peak_mb": peak,
                           "second_half_slope_mb_per_1e4_env_steps": slope}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
