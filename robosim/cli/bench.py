"""`robosim bench`: robosim's throughput against ManiSkill3 and the raw PhysX ceiling
(robosim.bench), or the Ray-sharded env against one process (--workers)."""
from __future__ import annotations

import argparse
import os

DESCRIPTION = """\
Measure env-steps/s of robosim PickCube-v1 (state obs, random actions) at several batch
sizes N for pd_ee_delta_pose and pd_joint_delta_pos, next to ManiSkill3 PickCube-v1
(same control mode and obs, physx_cpu, one env per process) and the raw PhysX ceiling
(the same Panda + cube scene built with plain SAPIEN in one PhysxCpuSystem, only the
5 substeps per control step timed) in two motions: random joint targets, and each
control mode's own motion in lockstep (the ceiling starts from robosim's states and gets
the drive targets robosim's controller set at each step, both timed step by step: the
same physics without robosim around it, under the same machine load). Also
a reset-heavy robosim row (every env resets every 10 steps). Cases alternate within each
repeat to cancel machine drift; every number is a median over repeats. Prints a table
and the ratios robosim/ManiSkill3 and robosim/ceiling, and writes all runs as JSON
(atomically: temp file, then rename).

On a 2-core machine: --dry-run takes seconds, --quick under 2 minutes, a full run
about 6 minutes. physx_cuda rows are added when a CUDA device is present."""


def add_bench_command(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("bench", help="benchmark robosim against ManiSkill3 and the raw PhysX ceiling",
                              description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="3 repeats of short blocks: finishes in under 2 minutes")
    size.add_argument("--dry-run", action="store_true",
                      help="N in {1, 2}, one repeat of 2 steps per case: checks that every path runs "
                           "(seconds; the numbers mean nothing)")
    p.add_argument("--json", metavar="PATH", default=None,
                   help="where to write the results (default: bench_results/bench-<mode>-<time>.json; "
                        "'-' to skip)")
    p.add_argument("--num-envs", metavar="N", type=int, nargs="+", default=None,
                   help="batch sizes to measure (default: 1 16 64 256; dry run: 1 2)")
    p.add_argument("--control-modes", metavar="MODE", nargs="+", default=None,
                   choices=["pd_ee_delta_pose", "pd_joint_delta_pos", "pd_joint_pos", "pd_ee_delta_pos"],
                   help="control modes (default: pd_ee_delta_pose pd_joint_delta_pos)")
    p.add_argument("--repeats", type=int, default=None, help="timed blocks per case (default: 7; quick: 3)")
    p.add_argument("--block-seconds", type=float, default=None,
                   help="timed seconds per block, at least (default: 1.5; quick: 0.35)")
    p.add_argument("--no-maniskill", action="store_true", help="skip the ManiSkill3 peer")
    p.add_argument("--no-reset-heavy", action="store_true", help="skip the reset-heavy row")
    p.add_argument("--no-build-times", action="store_true",
                   help="skip the build / reconfigure / full-reset times at N = 1, 16, 64, 256 and the "
                        "object-pool swap times at N = 16, 64")
    p.add_argument("--isolation", action="store_true",
                   help="also time physics_isolation='separate' against 'shared', and the per-step "
                        "fault check on vs off, at N = 16, 64")
    p.add_argument("--viewer", action="store_true",
                   help="also time a browser viewer attached (robosim.view, 16 envs, 10 Hz updates) against none")
    p.add_argument("--seed", type=int, default=0, help="seed of the first block's reset (default: 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--workers", metavar="K1,K2", default=None,
                   help="instead: the Ray-sharded env on K workers against one process at N = 64, 256, Ray's "
                        "per-step overhead and a projection for M machines (robosim.bench.distributed)")
    p.set_defaults(func=cmd_bench)
    return p


def _check_json_path(path: str) -> None:
    """Missing directories of --json are created later, but never directly under the
    filesystem root (a typo such as /nonexistent/x.json must not litter /)."""
    directory = os.path.dirname(os.path.abspath(path))
    existing = directory
    while not os.path.isdir(existing):
        existing = os.path.dirname(existing)
    if existing != directory and existing == os.path.dirname(existing):
        raise SystemExit(f"robosim bench: error: --json must not need a new directory at the filesystem root, "
                         f"got {path!r} ({directory!r} does not exist)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise SystemExit(f"robosim bench: error: --json must be in a writable directory, got {path!r}")


def cmd_bench(args: argparse.Namespace) -> int:
    if args.workers:
        return cmd_bench_workers(args)
    import torch

    from robosim.bench.runner import BenchConfig, format_report, run, save_results

    cfg = BenchConfig.dry_run() if args.dry_run else BenchConfig.quick() if args.quick else BenchConfig()
    if args.json not in (None, "-"):   # checked before the run
        _check_json_path(args.json)
    if args.num_envs:
        from robosim.sim.layout import MAX_ENVS_PER_SYSTEM

        if any(not 1 <= n <= MAX_ENVS_PER_SYSTEM for n in args.num_envs):
            raise SystemExit(f"--num-envs must be ints in [1, {MAX_ENVS_PER_SYSTEM}] (physx_cpu grid), "
                             f"got {args.num_envs}")
        cfg.num_envs = tuple(args.num_envs)
    if args.control_modes:
        cfg.control_modes = tuple(args.control_modes)
    if args.repeats is not None:
        if args.repeats < 1:
            raise SystemExit(f"--repeats must be >= 1, got {args.repeats}")
        cfg.repeats = args.repeats
    if args.block_seconds is not None:
        cfg.block_seconds = max(0.0, args.block_seconds)
    cfg.maniskill = not args.no_maniskill
    cfg.reset_heavy = not args.no_reset_heavy
    cfg.seed = args.seed
    if torch.cuda.is_available():
        cfg.sim_backends = ("physx_cpu", "physx_cuda")

    doc = run(cfg, progress=not args.no_progress)
    print(format_report(doc))
    if not args.no_build_times:
        from robosim.bench.build_time import (
            format_build_times,
            format_swap_times,
            measure_build_times,
            measure_swap_times,
        )

        sizes = (1, 2) if args.dry_run else (1, 16, 64, 256)
        doc["build_times"] = measure_build_times(num_envs=sizes, repeats=1 if args.dry_run else 3,
                                                 progress=not args.no_progress)
        print(format_build_times(doc["build_times"]))
        doc["swap_times"] = measure_swap_times(num_envs=(1, 2) if args.dry_run else (16, 64),
                                               repeats=1 if args.dry_run else 5, progress=not args.no_progress)
        print(format_swap_times(doc["swap_times"]))
    if args.isolation:
        from robosim.bench.isolation import (
            format_fault_check_cost,
            format_isolation_cost,
            measure_fault_check_cost,
            measure_isolation_cost,
        )

        doc["isolation_cost"] = measure_isolation_cost(num_envs=(1, 2) if args.dry_run else (16, 64),
                                                       steps=5 if args.dry_run else 50,
                                                       repeats=1 if args.dry_run else 5,
                                                       progress=not args.no_progress)
        print(format_isolation_cost(doc["isolation_cost"]))
        doc["fault_check_cost"] = measure_fault_check_cost(num_envs=(1, 2) if args.dry_run else (16, 64),
                                                           steps=5 if args.dry_run else 50,
                                                           repeats=1 if args.dry_run else 5)
        print(format_fault_check_cost(doc["fault_check_cost"]))
    if args.viewer:
        from robosim.view.bench import format_viewer_cost, measure_viewer_cost

        doc["viewer_cost"] = measure_viewer_cost(num_envs=2 if args.dry_run else 16, steps=5 if args.dry_run else 100,
                                                 repeats=1 if args.dry_run else 5, progress=not args.no_progress)
        print(format_viewer_cost(doc["viewer_cost"]))
    save_results(doc, args.json, cfg.label)
    return 0


def cmd_bench_workers(args: argparse.Namespace) -> int:
    """`robosim bench --workers K1,K2 [--quick|--dry-run] [--num-envs N ...] [--json PATH]`."""
    from robosim.bench.distributed import WorkersBenchConfig, format_workers_report, parse_workers, run_workers_bench
    from robosim.bench.runner import save_results

    workers = parse_workers(args.workers)
    if args.json not in (None, "-"):   # checked before the run, as the main bench does
        from robosim.record.files import check_output_path

        check_output_path("--json", args.json, (".json",))
    cfg = WorkersBenchConfig(workers=workers)
    if args.quick:
        cfg.repeats, cfg.steps, cfg.label = 3, 15, "workers-quick"
    if args.dry_run:
        cfg.num_envs, cfg.repeats, cfg.steps, cfg.label = (4,), 1, 2, "workers-dry-run"
    if args.num_envs:
        cfg.num_envs = tuple(args.num_envs)
    if args.repeats is not None:
        cfg.repeats = max(1, args.repeats)
    if any(k > n for k in workers for n in cfg.num_envs):
        raise SystemExit(f"--workers must not exceed --num-envs, got workers {workers} for N {cfg.num_envs}")
    cfg.seed = args.seed
    doc = run_workers_bench(cfg, progress=not args.no_progress)
    print(format_workers_report(doc))
    save_results(doc, args.json, cfg.label)
    return 0
