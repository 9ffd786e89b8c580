"""`robosim bench --workers 1,2`: the sharded env (RayVecEnv) against one process.

For every total N (default 64 and 256) it builds robosim's single-process vector env
and one RayVecEnv per K in --workers (K workers of about N/K envs; all cases of one N are alive together, so each
worker reserves min(1, free CPUs / sum of K) Ray CPUs: Ray CPUs place workers, they
do not pin them),
all PickCube-v1, state obs, pd_joint_delta_pos, random actions, NEXT_STEP autoreset.
Each repeat times one block of `steps` steps of every case (odd repeats in reverse
order, so drift of the shared machine lands on every case alike); rates are medians.

Where the time goes: every worker times its own step (env + autoreset + numpy
conversion). Ray's per-step overhead = the driver's step wall time minus the slowest
worker's own time in that step: submitting, serialization, the object store, waiting
and the driver's validation and concatenation. The projection for M machines
assumes one worker of n envs per machine stepping at the measured per-worker rate
r (env-steps/s) and the measured overhead t_ray (s):
    env-steps/s(M) = M * n / (n / r + t_ray)
(the driver and the network are assumed to add no more than t_ray as measured here).
"""
from __future__ import annotations

import datetime as _dt
import os
import statistics
import time
from dataclasses import dataclass

import torch
from tqdm import tqdm

from robosim.bench.runner import _machine

TASK, CONTROL_MODE = "PickCube-v1", "pd_joint_delta_pos"
FORMULA = "env-steps/s(M) = M * n / (n / r + t_ray)"
MACHINES = (1, 2, 4, 8, 16)


@dataclass
class WorkersBenchConfig:
    workers: tuple[int, ...] = (1, 2)
    num_envs: tuple[int, ...] = (64, 256)
    repeats: int = 5
    steps: int = 30                  # timed steps per block
    worker_cpus: float = 1.0
    seed: int = 0
    label: str = "workers"


def parse_workers(text: str) -> tuple[int, ...]:
    """"1,2" -> (1, 2); ValueError naming --workers for anything else."""
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise ValueError(f"--workers must be comma-separated ints such as 1,2, got {text!r}") from None
    if not values or min(values) < 1:
        raise ValueError(f"--workers must be ints >= 1, got {text!r}")
    return values


class _Case:
    """One env (one process or Ray-sharded) and its timed blocks."""

    def __init__(self, n: int, workers: int | None, cfg: WorkersBenchConfig):
        from robosim.distributed import RayVecEnv
        from robosim.vector import make_vec

        self.n, self.workers = n, workers
        start = time.perf_counter()
        if workers is None:
            self.env = make_vec(TASK, num_envs=n, control_mode=CONTROL_MODE)
        else:
            self.env = RayVecEnv(TASK, n, workers, worker_cpus=cfg.worker_cpus, control_mode=CONTROL_MODE)
        self.build_seconds = time.perf_counter() - start
        gen = torch.Generator().manual_seed(1234)
        low = torch.tensor(self.env.single_action_space.low)    # Ray's copies are read-only arrays
        high = torch.tensor(self.env.single_action_space.high)
        self.actions = low + (high - low) * torch.rand((16, n, len(low)), generator=gen)
        self.rates: list[float] = []
        self.step_ms: list[float] = []        # driver wall time per step
        self.worker_ms: list[float] = []      # slowest worker's own time per step
        self.payload_bytes = 0

    @property
    def name(self) -> str:
        return "one process" if self.workers is None else f"{self.workers} Ray worker{'s' * (self.workers > 1)}"

    def run_block(self, steps: int, seed: int) -> None:
        env = self.env
        env.reset(seed=seed)
        if self.workers is not None:
            env.pool.call("take_step_seconds", {k: () for k in range(env.workers)})
        walls = []
        for t in range(steps):
            start = time.perf_counter()
            out = env.step(self.actions[t % len(self.actions)])
            walls.append(time.perf_counter() - start)
        self.rates.append(self.n * steps / sum(walls))
        self.step_ms += [1e3 * w for w in walls]
        if self.workers is not None:
            own = env.pool.call("take_step_seconds", {k: () for k in range(env.workers)})
            self.worker_ms += [1e3 * max(per_step) for per_step in zip(*own.values())]
            self.payload_bytes = _nbytes(out)

    def record(self) -> dict:
        med = statistics.median(self.rates)
        rec = {"case": self.name, "num_envs": self.n, "workers": self.workers, "env_steps_per_s": med,
               "runs": self.rates, "build_seconds": round(self.build_seconds, 2),
               "step_ms_median": statistics.median(self.step_ms)}
        if self.workers is not None:
            worker_ms = statistics.median(self.worker_ms)
            overhead = statistics.median([s - w for s, w in zip(self.step_ms, self.worker_ms)])
            shard = self.n // self.workers
            rec.update({"worker_step_ms_median": worker_ms, "ray_overhead_ms_median": overhead,
                        "envs_per_worker": shard, "per_worker_env_steps_per_s": 1e3 * shard / worker_ms,
                        "step_result_bytes": self.payload_bytes,
                        "action_bytes": int(self.actions[0].numel() * 4)})
        return rec

    def close(self) -> None:
        self.env.close()


def _nbytes(value) -> int:
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return value.numel() * value.element_size() if isinstance(value, torch.Tensor) else 0


def run_workers_bench(cfg: WorkersBenchConfig, progress: bool = True) -> dict:
    """Run every case; returns the result document (what --json writes)."""
    from robosim.distributed.cluster import connect

    connect(None)
    # every case of one N is alive at once: their workers share the machine's Ray CPUs
    import ray

    cfg.worker_cpus = min(cfg.worker_cpus, ray.available_resources().get("CPU", 1.0) / sum(cfg.workers))
    started = _dt.datetime.now().astimezone()
    load_before = os.getloadavg()
    records, projections = [], []
    total = sum(cfg.repeats * (1 + len(cfg.workers)) for _ in cfg.num_envs)
    bar = tqdm(total=total, desc="robosim bench --workers", unit="block", disable=not progress)
    try:
        for n in cfg.num_envs:
            bar.set_postfix_str(f"building N={n}")
            cases = [_Case(n, None, cfg)] + [_Case(n, k, cfg) for k in cfg.workers]
            try:
                for case in cases:
                    case.run_block(3, cfg.seed)                  # warm-up, not recorded
                    case.rates.clear(), case.step_ms.clear(), case.worker_ms.clear()
                for rep in range(cfg.repeats):
                    for case in (cases if rep % 2 == 0 else cases[::-1]):
                        bar.set_postfix_str(f"N={n} {case.name}")
                        case.run_block(cfg.steps, cfg.seed + rep)
                        bar.update(1)
            finally:
                for case in cases:
                    case.close()
            group = [case.record() for case in cases]
            single = group[0]["env_steps_per_s"]
            for rec in group:
                rec["vs_one_process"] = rec["env_steps_per_s"] / single
            records += group
            projections.append(_projection(group[-1]))
    finally:
        bar.close()
    return {"schema": "robosim-bench-workers/1",
            "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(cfg).items()},
            "task": TASK, "control_mode": CONTROL_MODE, "machine": _machine(),
            "started": started.isoformat(timespec="seconds"),
            "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "load_average_before": load_before, "load_average_after": os.getloadavg(),
            "cases": records, "projection_formula": FORMULA, "projections": projections}


def _projection(rec: dict) -> dict:
    """Throughput of M machines from one Ray case's per-worker rate r and overhead t_ray."""
    n, r, t_ray = rec["envs_per_worker"], rec["per_worker_env_steps_per_s"], rec["ray_overhead_ms_median"] / 1e3
    return {"from_case": rec["case"], "num_envs": rec["num_envs"], "n": n, "r": r, "t_ray_s": t_ray,
            "env_steps_per_s": {m: m * n / (n / r + t_ray) for m in MACHINES}}


def format_workers_report(doc: dict) -> str:
    m = doc["machine"]
    lines = [f"robosim bench --workers {','.join(map(str, doc['config']['workers']))} on {m['cpu']}, "
             f"{m['logical_cpus']} logical CPUs, {doc['started'][:10]}; {doc['task']} {doc['control_mode']}, "
             f"medians of {doc['config']['repeats']} alternating blocks of {doc['config']['steps']} steps", "",
             f"{'N':>5} {'case':<15}{'env-steps/s':>12}{'vs 1 proc':>10}{'step ms':>9}{'worker ms':>10}"
             f"{'Ray ms':>8}{'result bytes':>13}"]
    for r in doc["cases"]:
        extra = (f"{r['worker_step_ms_median']:>10.2f}{r['ray_overhead_ms_median']:>8.2f}{r['step_result_bytes']:>13,}"
                 if r["workers"] else f"{'-':>10}{'-':>8}{'-':>13}")
        lines.append(f"{r['num_envs']:>5} {r['case']:<15}{r['env_steps_per_s']:>12,.0f}{r['vs_one_process']:>10.0%}"
                     f"{r['step_ms_median']:>9.2f}{extra}")
    lines += ["", "worker ms: the slowest worker's own step (env, autoreset, numpy); Ray ms: driver step minus that "
                  "(submit, serialize, object store, wait, validate, concatenate)",
              f"projection for M machines, one worker of n envs each: {FORMULA}"]
    for p in doc["projections"]:
        ms = ", ".join(f"M={k}: {v:,.0f}" for k, v in p["env_steps_per_s"].items())
        lines.append(f"  from N={p['num_envs']} {p['from_case']} (n={p['n']}, r={p['r']:,.0f}/s, "
                     f"t_ray={1e3 * p['t_ray_s']:.2f} ms): {ms}")
    lines.append(f"load average {doc['load_average_before'][0]:.2f} before, {doc['load_average_after'][0]:.2f} after")
    return "\n".join(lines)
