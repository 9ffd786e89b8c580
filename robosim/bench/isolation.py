"""What reliability costs: physics_isolation="separate" vs "shared", and the per-step
fault check (robosim.envs.faults) on vs replaced by no-ops.

For each batch size N, PickCube envs (pd_ee_delta_pose, state obs, no cameras) step
with seeded random actions; the two variants alternate block by block so machine noise
hits both alike. Reported: the median env-steps/s of each variant and their ratio.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

import torch
from tqdm import tqdm

MODES = ("shared", "separate")


def measure_isolation_cost(task_id: str = "PickCube-v1", num_envs: Sequence[int] = (16, 64), steps: int = 50,
                           repeats: int = 5, progress: bool = True) -> list[dict]:
    """[{num_envs, shared, separate, ratio}] (env-steps/s medians over `repeats` blocks of
    `steps` control steps, each block after an untimed seeded reset)."""
    from robosim.envs import make

    rows = []
    bar = tqdm(total=len(num_envs) * repeats * len(MODES), desc="isolation cost", disable=not progress,
               leave=False)
    for n in num_envs:
        envs = {mode: make(task_id, num_envs=n, physics_isolation=mode) for mode in MODES}
        try:
            gen = torch.Generator().manual_seed(0)
            env = envs["shared"]
            low, high = (torch.as_tensor(b) for b in (env.single_action_space.low, env.single_action_space.high))
            actions = low + torch.rand(steps, n, len(low), generator=gen) * (high - low)
            rates: dict[str, list[float]] = {mode: [] for mode in MODES}
            for r in range(repeats):
                for mode in MODES:
                    env = envs[mode]
                    env.reset(seed=r)
                    start = time.perf_counter()
                    for t in range(steps):
                        env.step(actions[t])
                    rates[mode].append(steps * n / (time.perf_counter() - start))
                    bar.update(1)
        finally:
            for env in envs.values():
                env.close()
        shared, separate = (statistics.median(rates[m]) for m in MODES)
        rows.append({"num_envs": n, "shared": shared, "separate": separate, "ratio": separate / shared})
    bar.close()
    return rows


def format_isolation_cost(rows: list[dict]) -> str:
    lines = ["physics_isolation cost (env-steps/s, median; PickCube pd_ee_delta_pose, state obs):",
             f"{'N':>5} {'shared':>10} {'separate':>10} {'separate/shared':>16}"]
    lines += [f"{r['num_envs']:>5} {r['shared']:>10,.0f} {r['separate']:>10,.0f} {r['ratio']:>16.2f}" for r in rows]
    return "\n".join(lines)


def measure_fault_check_cost(task_id: str = "PickCube-v1", num_envs: Sequence[int] = (16, 64), steps: int = 50,
                             repeats: int = 5) -> list[dict]:
    """[{num_envs, with_check, without_check, ratio}] env-steps/s medians; "without" swaps
    the env's FaultMonitor hooks for no-ops (same env, alternating blocks)."""
    from robosim.envs import make

    rows = []
    for n in num_envs:
        env = make(task_id, num_envs=n)
        try:
            low, high = (torch.as_tensor(b) for b in (env.single_action_space.low, env.single_action_space.high))
            actions = low + torch.rand(steps, n, len(low), generator=torch.Generator().manual_seed(0)) * (high - low)
            hooks = {"with_check": (env._faults.before_control_step, env._faults.after_control_step),
                     "without_check": (lambda action: None, lambda: None)}
            rates: dict[str, list[float]] = {k: [] for k in hooks}
            for r in range(repeats):
                for label, (before, after) in hooks.items():
                    env._faults.before_control_step, env._faults.after_control_step = before, after
                    env.reset(seed=r)
                    start = time.perf_counter()
                    for t in range(steps):
                        env.step(actions[t])
                    rates[label].append(steps * n / (time.perf_counter() - start))
        finally:
            env.close()
        on, off = (statistics.median(rates[k]) for k in ("with_check", "without_check"))
        rows.append({"num_envs": n, "with_check": on, "without_check": off, "ratio": on / off})
    return rows


def format_fault_check_cost(rows: list[dict]) -> str:
    lines = ["per-step fault check cost (env-steps/s, median; PickCube pd_ee_delta_pose, state obs):",
             f"{'N':>5} {'with check':>11} {'without':>10} {'with/without':>13}"]
    lines += [f"{r['num_envs']:>5} {r['with_check']:>11,.0f} {r['without_check']:>10,.0f} {r['ratio']:>13.3f}"
              for r in rows]
    return "\n".join(lines)
