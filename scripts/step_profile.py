"""Where one control step's time goes: each stage BaseEnv.step calls, timed inside real steps.

    python scripts/step_profile.py                      # PickCube-v1, one env, both control modes
    python scripts/step_profile.py --num-envs 64 --json runs/step_profile.json

The stages of this env instance (and the action check, module-wide) are wrapped with
timers, then the env steps with seeded random actions in blocks. Per block the mean time
of each stage per control step is taken; the table shows the median over blocks, in
microseconds per control step (not per env-step). "bookkeeping" is the step's own
remainder: the whole step, timed in the same blocks, minus the stages (it absorbs the
timers' own cost, ~0.3 us each); "without timers" is the whole step in separate blocks
with nothing wrapped. The stages do not overlap: the first
reader of a physics quantity after the substeps pays for it (the fault check reads the
whole state, so evaluate finds qpos, qvel and poses already read).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

import robosim
from robosim.envs import checks

STAGES = ("action check", "controller (apply_action)", "physics substeps", "fault check",
          "evaluate (task)", "observation", "reward")


def _timed(table: dict, name: str, fn):
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            table[name] += time.perf_counter() - t0
    return wrapper


def profile(task: str, control_mode: str, num_envs: int, blocks: int, steps: int, seed: int) -> dict:
    """Median over `blocks` of the mean us per control step of each stage, and the whole."""
    env = robosim.make(task, num_envs=num_envs, control_mode=control_mode)
    env.reset(seed=seed)
    gen = torch.Generator().manual_seed(seed)
    shape = (num_envs, env.single_action_space.shape[0])
    actions = [torch.rand(shape, generator=gen) * 2 - 1 for _ in range(steps)]

    def run_block() -> float:
        t0 = time.perf_counter()
        for a in actions:
            env.step(a)
        return (time.perf_counter() - t0) / steps * 1e6

    run_block()                      # warm-up: caches, FK programs
    whole = [run_block() for _ in range(blocks)]
    acc = dict.fromkeys((*STAGES, "whole"), 0.0)
    original_check = checks.to_float_tensor
    checks.to_float_tensor = _timed(acc, "action check", original_check)
    env.robot.apply_action = _timed(acc, "controller (apply_action)", env.robot.apply_action)
    env.parts.sim.step = _timed(acc, "physics substeps", env.parts.sim.step)
    env._faults.after_control_step = _timed(acc, "fault check", env._faults.after_control_step)
    env.task.evaluate = _timed(acc, "evaluate (task)", env.task.evaluate)
    env._obs.build = _timed(acc, "observation", env._obs.build)
    env._reward = _timed(acc, "reward", env._reward)
    env.step = _timed(acc, "whole", env.step)
    per_stage = {name: [] for name in (*STAGES, "bookkeeping", "whole")}
    try:
        for _ in range(blocks):
            for name in acc:
                acc[name] = 0.0
            run_block()
            for name in STAGES:
                per_stage[name].append(acc[name] / steps * 1e6)
            per_stage["whole"].append(acc["whole"] / steps * 1e6)
            per_stage["bookkeeping"].append((acc["whole"] - sum(acc[n] for n in STAGES)) / steps * 1e6)
    finally:
        checks.to_float_tensor = original_check
        env.close()
    stages = {name: statistics.median(v) for name, v in per_stage.items() if name != "whole"}
    return {"task": task, "control_mode": control_mode, "num_envs": num_envs, "blocks": blocks,
            "steps_per_block": steps, "us_per_control_step": statistics.median(per_stage["whole"]),
            "us_per_control_step_without_timers": statistics.median(whole), "stages_us": stages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="PickCube-v1", help="registered task id (default PickCube-v1)")
    parser.add_argument("--num-envs", type=int, default=1, help="parallel envs (default 1)")
    parser.add_argument("--control-modes", nargs="+", default=["pd_joint_delta_pos", "pd_ee_delta_pose"],
                        help="control modes to profile (default: pd_joint_delta_pos pd_ee_delta_pose)")
    parser.add_argument("--blocks", type=int, default=9, help="timed blocks per mode (default 9)")
    parser.add_argument("--steps", type=int, default=300, help="control steps per block (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="reset and action seed (default 0)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    if args.num_envs < 1 or args.blocks < 1 or args.steps < 1:
        parser.error(f"--num-envs, --blocks and --steps must be >= 1, got {args.num_envs}, {args.blocks}, {args.steps}")
    torch.set_num_threads(1)
    results = [profile(args.task, mode, args.num_envs, args.blocks, args.steps, args.seed)
               for mode in args.control_modes]
    width = max(len(s) for s in (*STAGES, "bookkeeping", "whole env.step"))
    print(f"{args.task}, N={args.num_envs}: us per control step, median of {args.blocks} blocks of {args.steps} steps")
    print(f"{'':{width}s}" + "".join(f"{r['control_mode']:>22s}" for r in results))
    for name in (*STAGES, "bookkeeping"):
        print(f"{name:{width}s}" + "".join(f"{r['stages_us'][name]:22.1f}" for r in results))
    print(f"{'whole env.step':{width}s}" + "".join(f"{r['us_per_control_step']:22.1f}" for r in results))
    print(f"{'  without timers':{width}s}"
          + "".join(f"{r['us_per_control_step_without_timers']:22.1f}" for r in results))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"results": results, "torch_threads": 1}, indent=1))
        print(f"results: {args.json}")


if __name__ == "__main__":
    main()
