"""Build, reconfigure and full-reset time against N: what domain randomization pays.

For each batch size N: `robosim.make(task, num_envs=N)` (build), then
`reset(options={"reconfigure": True})` (a rebuild of every env), then a plain full
`reset()`; each the median of `repeats` timings (seconds), state obs, no cameras.
"""
from __future__ import annotations

import statistics
import time
from typing import Sequence

from tqdm import tqdm


def measure_build_times(task_id: str = "PickCube-v1", num_envs: Sequence[int] = (1, 16, 64, 256),
                        repeats: int = 3, progress: bool = True) -> list[dict]:
    """[{num_envs, build_s, reconfigure_s, reset_s}] medians over `repeats`, after one
    untimed 1-env build (imports, model parsing and mesh caches are once per process)."""
    import robosim

    robosim.make(task_id, num_envs=1).close()
    rows = []
    bar = tqdm(total=len(num_envs) * repeats, desc="build times", disable=not progress, leave=False)
    for n in num_envs:
        build, reconf, reset = [], [], []
        for r in range(repeats):
            start = time.perf_counter()
            env = robosim.make(task_id, num_envs=n)
            build.append(time.perf_counter() - start)
            try:
                env.reset(seed=r)
                start = time.perf_counter()
                env.reset(options={"reconfigure": True})
                reconf.append(time.perf_counter() - start)
                start = time.perf_counter()
                env.reset()
                reset.append(time.perf_counter() - start)
            finally:
                env.close()
            bar.update()
        rows.append({"num_envs": n, "build_s": statistics.median(build),
                     "reconfigure_s": statistics.median(reconf), "reset_s": statistics.median(reset)})
    bar.close()
    return rows


def format_build_times(rows: list[dict], task_id: str = "PickCube-v1") -> str:
    lines = [f"build / reconfigure / full reset of {task_id} (median, state obs, no cameras; "
             "after one warm-up build per process)",
             f"{'N':>5}  {'build s':>8}  {'reconfigure s':>13}  {'full reset ms':>13}"]
    for row in rows:
        lines.append(f"{row['num_envs']:>5}  {row['build_s']:>8.3f}  {row['reconfigure_s']:>13.3f}  "
                     f"{row['reset_s'] * 1000:>13.1f}")
    return "\n".join(lines)
