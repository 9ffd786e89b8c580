"""Schedule the benchmark cases, alternate them, summarize, print and save the results.

Order: the envs of one batch size N are built together (robosim per control mode,
robosim reset-heavy, the PhysX ceiling with random and held targets) next to the two
ManiSkill3 envs, which stay alive for the whole run. Each repeat times one block of
every case; odd repeats run the list backwards, so slow drift of the shared machine
(other processes, thermal state) lands on every case alike. Rates are medians over
the repeats; ratios to ManiSkill use the ManiSkill blocks timed alongside that N.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import resource
import socket
import subprocess
from dataclasses import dataclass

import torch
from tqdm import tqdm

from robosim.bench.cases import Case, median
from robosim.core.atomic import write_bytes_atomic
from robosim.rollout.run_log import cpu_model

CONTROL_MODES = ("pd_ee_delta_pose", "pd_joint_delta_pos")
CEILING_MODE = "pd_joint_delta_pos"   # the ceiling's random motion is this mode's motion
HEADLINE_N = 64


@dataclass
class BenchConfig:
    num_envs: tuple[int, ...] = (1, 16, 64, 256)
    control_modes: tuple[str, ...] = CONTROL_MODES
    repeats: int = 7
    block_seconds: float = 1.5        # timed seconds per block (at least)
    min_steps: int = 10               # control steps per block (at least)
    maniskill: bool = True
    reset_heavy: bool = True
    sim_backends: tuple[str, ...] = ("physx_cpu",)   # "physx_cuda": also the CUDA rows below
    cuda_num_envs: tuple[int, ...] = (1024, 4096, 16384)
    cuda_block_steps: int = 50        # control steps per timed CUDA block
    seed: int = 0
    label: str = "full"

    @classmethod
    def quick(cls) -> BenchConfig:
        return cls(repeats=3, block_seconds=0.35, min_steps=5, label="quick")

    @classmethod
    def dry_run(cls) -> BenchConfig:
        return cls(num_envs=(1, 2), repeats=1, block_seconds=0.0, min_steps=2, label="dry-run")


def _cases_for(n: int, cfg: BenchConfig) -> list[Case]:
    cases = []
    for backend in cfg.sim_backends:
        if backend != "physx_cpu":      # CUDA cases run in their own processes (run_cuda)
            continue
        steps = [Case("robosim", mode, n, "step", backend) for mode in cfg.control_modes]
        cases += steps
        if cfg.reset_heavy:
            cases.append(Case("robosim", CEILING_MODE, n, "reset_heavy", backend))
        # robosim's own motion in bare PhysX, stepped in lockstep with robosim's env
        cases += [Case("ceiling", step.control_mode, n, "replay", replays=step) for step in steps]
    cases += [Case("ceiling", CEILING_MODE, n, "random"), Case("ceiling", "hold", n, "hold")]
    return cases


def run(cfg: BenchConfig, progress: bool = True) -> dict:
    """Run every case and return the result document (also what `--json` writes)."""
    load_before = os.getloadavg()
    started = _dt.datetime.now().astimezone()
    ms_envs: dict[str, Case] = {}
    if cfg.maniskill:
        for mode in cfg.control_modes:
            ms_envs[mode] = Case("maniskill", mode, 1)
            ms_envs[mode].setup()
            ms_envs[mode].run_block(0.0, 3, cfg.seed)       # warm-up, not recorded
            ms_envs[mode].rates.clear()

    groups = []
    blocks_per_group = lambda cases: cfg.repeats * (len(cases) + len(ms_envs))  # noqa: E731
    total = sum(blocks_per_group(_cases_for(n, cfg)) for n in cfg.num_envs)
    bar = tqdm(total=total, desc="robosim bench", unit="block", disable=not progress)
    try:
        for n in cfg.num_envs:
            cases = _cases_for(n, cfg)
            bar.set_postfix_str(f"building N={n}")
            for case in cases:
                case.setup()
                case.run_block(0.0, 3, cfg.seed)             # warm-up, not recorded
                case.rates.clear()
                case.paired.clear()
            paired = {mode: [] for mode in ms_envs}
            order = cases + list(ms_envs.values())
            for rep in range(cfg.repeats):
                for case in (order if rep % 2 == 0 else order[::-1]):
                    bar.set_postfix_str(f"N={n} {case.system} {case.control_mode} {case.variant}")
                    result = case.run_block(cfg.block_seconds, cfg.min_steps, cfg.seed + rep)
                    if case.system == "maniskill":
                        paired[case.control_mode].append(result.rate)
                    bar.update(1)
            peak_mb = _peak_rss_mb()     # before closing: this N's envs are all alive
            for case in cases:
                case.close()
            groups.append((n, cases, paired, peak_mb))
    finally:
        bar.close()
        for case in ms_envs.values():
            case.close()
    doc = _document(cfg, groups, ms_envs, started, load_before)
    if "physx_cuda" in cfg.sim_backends:
        doc["cuda"] = run_cuda(cfg)
        doc["physx_cuda"] = ("measured" if any(r["env_steps_per_s"] for r in doc["cuda"]["cases"])
                             else "not measured: " + "; ".join(sorted(set(doc["cuda"]["errors"].values()))))
    return doc


# -- physx_cuda rows -----------------------------------------------------------------------
def run_cuda_case(system: str, num_envs: int, control_mode: str, repeats: int, block_steps: int, seed: int,
                  timeout: float = 900.0) -> dict:
    """One CUDA case in a fresh Python process (GPU PhysX cannot start in a process where
    PhysX already runs on the CPU). Returns cases.cuda_case's result, or {"error": why}."""
    import sys

    spec = json.dumps({"system": system, "num_envs": num_envs, "control_mode": control_mode,
                       "repeats": repeats, "block_steps": block_steps, "seed": seed})
    code = "from robosim.bench.cases import cuda_worker_main; cuda_worker_main()"
    try:
        out = subprocess.run([sys.executable, "-c", code, spec], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        tail = [line for line in (out.stderr or out.stdout).strip().splitlines() if line.strip()]
        return {"error": tail[-1][:300] if tail else f"exit code {out.returncode}"}
    return json.loads(lines[-1][len("RESULT "):])


def run_cuda(cfg: BenchConfig) -> dict:
    """robosim and ManiSkill3 PickCube-v1 on physx_cuda at cfg.cuda_num_envs, each case
    in its own process, the two systems alternating per N and control mode."""
    cases, errors = [], {}
    for n in cfg.cuda_num_envs:
        for mode in cfg.control_modes:
            systems = ("robosim", "maniskill") if cfg.maniskill else ("robosim",)
            for system in systems:
                result = run_cuda_case(system, n, mode, cfg.repeats, cfg.cuda_block_steps, cfg.seed)
                if "error" in result:
                    errors[f"{system}/{mode}/N={n}"] = result["error"]
                rates = result.get("rates", [])
                cases.append({"system": system, "control_mode": mode, "num_envs": n, "sim_backend": "physx_cuda",
                              "env_steps_per_s": median(rates) if rates else None, "runs": rates,
                              "build_seconds": result.get("build_seconds"),
                              "gpu_peak_mb": result.get("gpu_peak_mb"), "error": result.get("error")})
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"device": device, "block_steps": cfg.cuda_block_steps, "cases": cases, "errors": errors,
            "timing": "device synchronized before each clock read; median of blocks after one warm-up block"}


def format_cuda_report(cuda: dict) -> str:
    """Table of the physx_cuda rows: env-steps/s per N, ratio robosim / ManiSkill3."""
    lines = [f"physx_cuda on {cuda['device']}: env-steps/s (median of blocks of {cuda['block_steps']} steps)"]
    by = {(c["system"], c["control_mode"], c["num_envs"]): c for c in cuda["cases"]}
    for (system, mode, n), c in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        rate = c["env_steps_per_s"]
        text = f"{rate:>12,.0f}" if rate else f"{'-':>12}  ({c['error']})"
        ratio = ""
        ms = by.get(("maniskill", mode, n), {}).get("env_steps_per_s")
        if system == "robosim" and rate and ms:
            ratio = f"   = {rate / ms:.2f}x ManiSkill3"
        lines.append(f"  {system:<10} {mode:<20} N={n:<6}{text}{ratio}")
    return "\n".join(lines)


# -- summary ---------------------------------------------------------------------------
def _case_record(case: Case) -> dict:
    rates = case.rates
    med = median(rates)
    return {
        "system": case.system, "control_mode": case.control_mode, "variant": case.variant,
        "sim_backend": case.sim_backend, "num_envs": case.num_envs,
        "env_steps_per_s": med,
        "us_per_env_step": 1e6 / med if med > 0 else None,
        "runs": rates,
        "spread": (max(rates) - min(rates)) / med if len(rates) > 1 and med > 0 else None,
        "rss_delta_mb": round(case.rss_delta_mb, 1), "build_seconds": round(case.build_seconds, 2),
    }


def _document(cfg, groups, ms_envs, started, load_before) -> dict:
    rows, ratios, peaks = [], [], {}
    for n, cases, paired, peak_mb in groups:
        peaks[n] = peak_mb
        rows += [_case_record(c) for c in cases]
        by = {(c.system, c.control_mode, c.variant, c.sim_backend): median(c.rates) for c in cases}
        ceiling = by.get(("ceiling", CEILING_MODE, "random", "physx_cpu"))
        for backend in [b for b in cfg.sim_backends if b == "physx_cpu"]:   # CUDA: doc["cuda"]
            for mode in cfg.control_modes:
                rate = by[("robosim", mode, "step", backend)]
                replay = next((c for c in cases
                               if (c.system, c.control_mode, c.variant) == ("ceiling", mode, "replay")), None)
                own_motion = median(replay.paired) if replay is not None and replay.paired else None
                ms = median(paired.get(mode, []))
                ratios.append({
                    "num_envs": n, "control_mode": mode, "sim_backend": backend,
                    "robosim_env_steps_per_s": rate,
                    "maniskill_env_steps_per_s": ms if ms == ms else None,
                    "vs_maniskill": rate / ms if ms == ms and ms > 0 else None,
                    "ceiling_env_steps_per_s": ceiling,
                    "vs_ceiling": rate / ceiling if ceiling else None,
                    "lockstep_ceiling_env_steps_per_s": median(replay.rates) if replay is not None else None,
                    "vs_lockstep_ceiling": own_motion,
                    "vs_lockstep_ceiling_runs": replay.paired if replay is not None else None,
                })
    rows += [_case_record(c) for c in ms_envs.values()]
    spreads = [r["spread"] for r in rows if r["spread"] is not None]
    return {
        "schema": "robosim-bench/1",
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(cfg).items()},
        "machine": _machine(),
        "started": started.isoformat(timespec="seconds"),
        "finished": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "noise": {"median_spread": median(spreads) if spreads else None,
                  "max_spread": max(spreads) if spreads else None,
                  "note": "spread = (max - min) / median of a case's blocks"},
        "peak_rss_mb": _peak_rss_mb(),
        "peak_rss_mb_by_num_envs": peaks,
        "memory_note": ("peak_rss_mb_by_num_envs: process peak RSS once every env of that N (all robosim "
                        "cases, the ceilings, the ManiSkill3 envs) was built and run; it only grows with "
                        "N. rss_delta_mb per case is RSS growth during its build and undercounts when "
                        "memory freed by an earlier N is reused."),
        "physx_cuda": ("measured" if "physx_cuda" in cfg.sim_backends
                       else "not measured (no CUDA device)" if not torch.cuda.is_available()
                       else "not requested"),
        "cases": rows,
        "ratios": ratios,
    }


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)   # Linux: KiB


def _machine() -> dict:
    import sapien

    versions = {"python": platform.python_version(), "torch": torch.__version__, "sapien": sapien.__version__}
    try:
        import mani_skill

        versions["mani_skill"] = mani_skill.__version__
    except Exception:  # noqa: BLE001  (ManiSkill is optional for the report itself)
        pass
    return {"host": socket.gethostname(), "cpu": cpu_model(), "logical_cpus": os.cpu_count(),
            "platform": platform.platform(), "versions": versions, "git_commit": _git_commit()}


def _git_commit() -> str | None:
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True,
                             timeout=5)
        return out.stdout.strip() or None
    except Exception:  # noqa: BLE001
        return None


def save_results(doc: dict, path: str | None, label: str) -> None:
    """Write `doc` to `path` (None: bench_results/bench-<label>-<time>.json; "-": nowhere)
    atomically and say where."""
    if path is None:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = os.path.join("bench_results", f"bench-{label}-{stamp}.json")
    if path != "-":
        write_json_atomic(doc, path)
        print(f"results: {path}")


def write_json_atomic(doc: dict, path: str) -> None:
    """Write `doc` as indented JSON to `path` through the one atomic-write helper
    (robosim.core.atomic): a reader never sees a half-written file, even if the run is
    killed while writing. Creates missing directories."""
    write_bytes_atomic(path, json.dumps(doc, indent=2).encode(), make_dirs=True)


def format_report(doc: dict) -> str:
    cfg = doc["config"]
    ns = cfg["num_envs"]
    lines = [f"robosim bench ({cfg['label']}) on {doc['machine']['cpu']}, "
             f"{doc['machine']['logical_cpus']} logical CPUs, "
             f"{doc['started'][:10]}; medians of {cfg['repeats']} alternating blocks"]
    if cfg["label"] == "dry-run":
        lines.append("DRY RUN: a few steps per case to check that everything runs; the numbers mean nothing.")
    head = f"{'env-steps/s':<44}" + "".join(f"{'N=' + str(n):>10}" for n in ns)
    lines += ["", head, "-" * len(head)]

    def row_for(system, mode, variant, backend="physx_cpu"):
        return {r["num_envs"]: r for r in doc["cases"]
                if (r["system"], r["control_mode"], r["variant"], r["sim_backend"]) == (system, mode, variant, backend)}

    labels = []
    for backend in [b for b in cfg["sim_backends"] if b == "physx_cpu"]:
        suffix = "" if backend == "physx_cpu" else f" [{backend}]"
        for mode in cfg["control_modes"]:
            labels.append((f"robosim {mode}{suffix}", ("robosim", mode, "step", backend)))
        if cfg["reset_heavy"]:
            labels.append((f"robosim {CEILING_MODE} reset-heavy{suffix}",
                           ("robosim", CEILING_MODE, "reset_heavy", backend)))
    labels += [(f"PhysX ceiling ({mode}, lockstep)", ("ceiling", mode, "replay", "physx_cpu"))
               for mode in cfg["control_modes"]]
    labels += [("PhysX ceiling (random joint targets)", ("ceiling", CEILING_MODE, "random", "physx_cpu")),
               ("PhysX ceiling (targets held, bodies asleep)", ("ceiling", "hold", "hold", "physx_cpu"))]
    for label, key in labels:
        row = row_for(*key)
        lines.append(f"{label:<44}" + "".join(_fmt(row.get(n, {}).get("env_steps_per_s")) for n in ns))
        if key[0] == "robosim":
            lines.append(f"{'  us per env-step':<44}"
                         + "".join(_fmt(row.get(n, {}).get("us_per_env_step")) for n in ns))
    peaks = {int(k): v for k, v in doc["peak_rss_mb_by_num_envs"].items()}
    lines.append(f"{'process peak RSS with these envs built (MB)':<44}" + "".join(_fmt(peaks.get(n)) for n in ns))
    for mode in cfg["control_modes"]:
        row = row_for("maniskill", mode, "step")
        if row:
            lines.append(f"{'ManiSkill3 ' + mode + ' (1 env/process)':<44}{_fmt(row[1]['env_steps_per_s'])}")

    lines.append("")
    for r in doc["ratios"]:
        if r["num_envs"] != HEADLINE_N and HEADLINE_N in ns:
            continue
        backend = "" if r["sim_backend"] == "physx_cpu" else f" [{r['sim_backend']}]"
        vs_ms = f"{r['vs_maniskill']:.1f}x ManiSkill3" if r["vs_maniskill"] else "ManiSkill3 not run"
        vs_c = f"{r['vs_ceiling']:.0%} of the PhysX ceiling" if r["vs_ceiling"] else ""
        if r.get("vs_lockstep_ceiling"):
            vs_c += f"; {r['vs_lockstep_ceiling']:.0%} of bare PhysX running its own motion in lockstep"
        lines.append(f"N={r['num_envs']} {r['control_mode']}{backend}: robosim = {vs_ms}, {vs_c}")
    noise = doc["noise"]
    if noise["median_spread"] is not None:
        lines.append(f"noise: block-to-block spread median {noise['median_spread']:.0%}, "
                     f"max {noise['max_spread']:.0%}; load average {doc['load_average_before'][0]:.2f} before, "
                     f"{doc['load_average_after'][0]:.2f} after")
    lines.append(f"peak RSS {doc['peak_rss_mb']:.0f} MB; physx_cuda: {doc['physx_cuda']}")
    if "cuda" in doc:
        lines += ["", format_cuda_report(doc["cuda"])]
    return "\n".join(lines)


def _fmt(value) -> str:
    if value is None or value != value:
        return f"{'-':>10}"
    return f"{value:>10,.0f}" if value >= 100 else f"{value:>10.1f}"
