"""What physics_isolation="separate" costs: env-steps/s of shared vs separate PhysX systems.

For each batch size N, one PickCube env per mode (pd_ee_delta_pose, state obs, no
cameras) steps with seeded random actions; the two modes alternate block by block so
machine noise hits both alike. Reported: the median env-steps/s of each mode and their
ratio (separate / shared).
"""
from __future__ import annotations

import statistics
import time
from typing import Sequence

import torch
from tqdm import tqdm

MODES = ("shared", "separate")


def measure_isolation_cost(task_id: str = "PickCube-v1", num_envs: Sequence[int] = (16, 64), steps: int = 50,
                           repeats: int = 5, progress: bool = True) -> list[dict]:
    """[{num_envs, shared, separate, ratio}] (env-steps/s medians over `repeats` blocks of
    `steps` control steps, each block after an untimed seeded reset)."""
    import robosim

    rows = []
    bar = tqdm(total=len(num_envs) * repeats * len(MODES), desc="isolation cost", disable=not progress,
               leave=False)
    for n in num_envs:
        envs = {mode: robosim.make(task_id, num_envs=n, physics_isolation=mode) for mode in MODES}
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
