"""Build, reconfigure, reset and object-pool swap time against N: what domain
randomization pays.

For each batch size N: `robosim.make(task, num_envs=N)` (build), then
`reset(options={"reconfigure": True})` (a rebuild of every env), then a plain full
`reset()`; each the median of `repeats` timings (seconds), state obs, no cameras. Next
to them, the reference: the same bodies built in plain SAPIEN without render components
(`robosim.bench.ceiling.bare_build_seconds`), timed in the same repeats.
`measure_swap_times` compares, on PickObject-v1 (a pool of 4 objects per env), a full
reset that swaps every env's object with a PickCube-v1 reset and with a reconfigure.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

from tqdm import tqdm


def measure_build_times(task_id: str = "PickCube-v1", num_envs: Sequence[int] = (1, 16, 64, 256),
                        repeats: int = 3, progress: bool = True) -> list[dict]:
    """[{num_envs, build_s, reconfigure_s, reset_s, bare_build_s}] medians over `repeats`,
    after one untimed 1-env build of each (imports, model parsing and mesh caches are once
    per process)."""
    from robosim.bench.ceiling import bare_build_seconds
    from robosim.envs import make

    make(task_id, num_envs=1).close()
    bare_build_seconds(1)
    rows = []
    bar = tqdm(total=len(num_envs) * repeats, desc="build times", disable=not progress, leave=False)
    for n in num_envs:
        build, reconf, reset, bare = [], [], [], []
        for r in range(repeats):
            bare.append(bare_build_seconds(n))
            start = time.perf_counter()
            env = make(task_id, num_envs=n)
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
                     "reconfigure_s": statistics.median(reconf), "reset_s": statistics.median(reset),
                     "bare_build_s": statistics.median(bare)})
    bar.close()
    return rows


def format_build_times(rows: list[dict], task_id: str = "PickCube-v1") -> str:
    lines = [f"build / reconfigure / full reset of {task_id} (median, state obs, no cameras; "
             "after one warm-up build per process),",
             "against the same bodies built in plain SAPIEN without render components (bare)",
             f"{'N':>5}  {'build s':>8}  {'reconfigure s':>13}  {'bare s':>7}  {'build/bare':>10}  "
             f"{'reconf/bare':>11}  {'full reset ms':>13}"]
    for row in rows:
        bare = row["bare_build_s"]
        lines.append(f"{row['num_envs']:>5}  {row['build_s']:>8.3f}  {row['reconfigure_s']:>13.3f}  {bare:>7.3f}  "
                     f"{row['build_s'] / bare:>9.1f}x  {row['reconfigure_s'] / bare:>10.1f}x  "
                     f"{row['reset_s'] * 1000:>13.1f}")
    return "\n".join(lines)


def measure_swap_times(num_envs: Sequence[int] = (16, 64), repeats: int = 5, progress: bool = True) -> list[dict]:
    """[{num_envs, cube_reset_s, pool_swap_reset_s, reconfigure_s}] medians: a PickCube-v1
    full reset, a PickObject-v1 full reset (every env swaps to a drawn pool variant),
    and a PickObject-v1 reconfigure (rebuilds every pool)."""
    import robosim_tasks.pick_object  # noqa: F401  (registers PickObject-v1 from a source tree)
    from robosim.envs import make

    rows = []
    bar = tqdm(total=len(num_envs) * 3, desc="pool swaps", disable=not progress, leave=False)
    for n in num_envs:
        row = {"num_envs": n}
        for key, task, options in (("cube_reset_s", "PickCube-v1", None), ("pool_swap_reset_s", "PickObject-v1", None),
                                   ("reconfigure_s", "PickObject-v1", {"reconfigure": True})):
            env = make(task, num_envs=n, seed=0)
            try:
                env.reset(seed=0)
                times = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    env.reset(options=options)
                    times.append(time.perf_counter() - start)
            finally:
                env.close()
            row[key] = statistics.median(times)
            bar.update()
        rows.append(row)
    bar.close()
    return rows


def format_swap_times(rows: list[dict]) -> str:
    lines = ["new objects per episode: PickObject-v1 pool swap (4 variants/env) vs a PickCube-v1 reset and a "
             "PickObject-v1 reconfigure (median ms)",
             f"{'N':>5}  {'PickCube reset':>14}  {'pool swap reset':>15}  {'reconfigure':>11}  "
             f"{'reconfigure/swap':>16}"]
    for r in rows:
        lines.append(f"{r['num_envs']:>5}  {r['cube_reset_s'] * 1e3:>14.1f}  {r['pool_swap_reset_s'] * 1e3:>15.1f}  "
                     f"{r['reconfigure_s'] * 1e3:>11.1f}  {r['reconfigure_s'] / r['pool_swap_reset_s']:>15.1f}x")
    return "\n".join(lines)
