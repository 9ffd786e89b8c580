"""Rendering benchmark: robosim vs ManiSkill3 on PickCube-v1, same resolution, same machine.

    .venv/bin/python examples/benchmark_rendering.py                 # 128x128, ~2-4 min
    .venv/bin/python examples/benchmark_rendering.py --res 64 --steps 20 --json out.json

Measures, each case in a fresh subprocess (one Vulkan/PhysX instance per case):
  rgb obs     env-steps/s of step() with obs_mode="rgb" (one 128x128 sensor camera per
              env: physics + render + readback), random actions
  rgb_array   env-frames/s of render() (human-view camera per env), scene at rest
for robosim at full detail and with render LOD (decimated visual meshes), and
ManiSkill3 3.0.1 (physx_cpu allows one env per process) as shipped and with robosim's
LOD applied to its scene after reset. Not a test: numbers depend on the machine's load,
so each case is timed in `--repeats` blocks and the median is reported.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = [
    # (name, system, mode, lod)
    ("robosim rgb obs, full detail", "robosim", "rgb", "full"),
    ("robosim rgb obs, LOD", "robosim", "rgb", "low"),
    ("ManiSkill3 rgb obs", "maniskill", "rgb", "full"),
    ("ManiSkill3 rgb obs + robosim LOD", "maniskill", "rgb", "low"),
    ("robosim rgb_array, full detail", "robosim", "rgb_array", "full"),
    ("robosim rgb_array, LOD", "robosim", "rgb_array", "low"),
    ("ManiSkill3 rgb_array", "maniskill", "rgb_array", "full"),
    ("ManiSkill3 rgb_array + robosim LOD", "maniskill", "rgb_array", "low"),
]


def _make_robosim(mode: str, lod: str, res: int, num_envs: int):
    import robosim

    if mode == "rgb":
        env = robosim.make("PickCube-v1", num_envs=num_envs, obs_mode="rgb", render_lod=lod,
                           sensor_configs={"width": res, "height": res})
    else:
        env = robosim.make("PickCube-v1", num_envs=num_envs, obs_mode="state", render_mode="rgb_array",
                           render_size=(res, res), render_lod=lod)
    env.reset(seed=0)
    return env, env.num_envs


def _make_maniskill(mode: str, lod: str, res: int):
    import gymnasium as gym
    import mani_skill.envs  # noqa: F401  (registers PickCube-v1)

    kwargs = dict(num_envs=1, sim_backend="physx_cpu", control_mode="pd_ee_delta_pose")
    if mode == "rgb":
        env = gym.make("PickCube-v1", obs_mode="rgb", sensor_configs=dict(width=res, height=res), **kwargs)
    else:
        env = gym.make("PickCube-v1", obs_mode="state", render_mode="rgb_array",
                       human_render_camera_configs=dict(width=res, height=res), **kwargs)
    env.reset(seed=0)
    if lod != "full":
        from robosim.sensors.lod import LOD_LEVELS, apply_render_lod

        stats = apply_render_lod(env.unwrapped.scene, LOD_LEVELS[lod])   # duck-typed: .sub_scenes
        print(f"ManiSkill3 scene LOD: {stats}", file=sys.stderr)
    return env, 1


def run_case(system: str, mode: str, lod: str, res: int, num_envs: int, steps: int, repeats: int) -> dict:
    import torch

    if system == "robosim":
        env, n = _make_robosim(mode, lod, res, num_envs)
    else:
        env, n = _make_maniskill(mode, lod, res)
    space = env.action_space
    low = torch.as_tensor(space.low, dtype=torch.float32).reshape(n, -1)
    high = torch.as_tensor(space.high, dtype=torch.float32).reshape(n, -1)
    gen = torch.Generator().manual_seed(0)

    def block() -> float:
        start = time.perf_counter()
        for _ in range(steps):
            if mode == "rgb":
                action = low + torch.rand(low.shape, generator=gen) * (high - low)
                env.step(action if system == "robosim" else action)
            else:
                env.render()
        return n * steps / (time.perf_counter() - start)

    block()                                                  # warm-up: first renders compile pipelines
    rates = [block() for _ in range(repeats)]
    env.close()
    return {"rate": statistics.median(rates), "rates": rates, "num_envs": n}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--res", type=int, default=128, help="square image size, pixels (default 128)")
    parser.add_argument("--num-envs", type=int, default=4, help="robosim envs per process (default 4)")
    parser.add_argument("--steps", type=int, default=20, help="steps or renders per timed block (default 20)")
    parser.add_argument("--repeats", type=int, default=3, help="timed blocks per case; median (default 3)")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)  # internal: run one case
    args = parser.parse_args(argv)
    if not 1 <= args.res <= 4096 or args.num_envs < 1 or args.steps < 1 or args.repeats < 1:
        parser.error("--res must be in [1, 4096]; --num-envs, --steps, --repeats >= 1")
    if args.case is not None:
        _, system, mode, lod = CASES[args.case]
        print(json.dumps(run_case(system, mode, lod, args.res, args.num_envs, args.steps, args.repeats)))
        return 0

    results = []
    print(f"PickCube-v1, {args.res}x{args.res}, physx_cpu, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; median of {args.repeats} blocks of {args.steps}")
    for k, (name, system, mode, lod) in enumerate(CASES):
        cmd = [sys.executable, __file__, "--case", str(k), "--res", str(args.res), "--num-envs",
               str(args.num_envs), "--steps", str(args.steps), "--repeats", str(args.repeats)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{name:<38} FAILED: {proc.stderr.strip().splitlines()[-1:]}")
            results.append({"case": name, "error": proc.stderr[-2000:]})
            continue
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        unit = "env-steps/s" if mode == "rgb" else "frames/s"
        print(f"{name:<38} {out['rate']:8.1f} {unit:<12} ({out['num_envs']} env{'s' * (out['num_envs'] > 1)})")
        results.append({"case": name, "system": system, "mode": mode, "lod": lod, **out})
    if args.json:
        from robosim.bench.runner import write_json_atomic

        write_json_atomic({"res": args.res, "results": results}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
