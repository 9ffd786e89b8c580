"""`robosim eval`: a policy's success rate over N episodes, in one process or with the
envs spread over Ray workers (--workers/--address).

Every argument (task, policy, output paths, sizes) is checked before any env is built;
a bad one prints `robosim eval: error: ...` and exits with status 2, leaving no file.
A write that fails mid-run (full disk, I/O error, deleted directory, broken ffmpeg
pipe) prints one `robosim eval: error: ...` line and exits with status 1; no broken
file appears under a final name (finished trajectory episodes stay recoverable with
`robosim recover`).

Held-out seeds: a checkpoint trained on demonstrations (examples/bc.py,
diffusion_policy.py, sac.py save `demo_seeds` in its metadata) is evaluated by default
on seeds none of its demos used: the first seed after the demos' largest when seeds
from 0 would overlap them. An explicit --seed whose episodes overlap the demos' seeds
is run, with a warning on stderr saying how many of them the demos used.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time

from robosim.cli.options import (
    add_control_mode_option,
    add_make_options,
    add_render_size_option,
    add_sim_backend_option,
    fail,
    make_options,
    parse_camera,
)
from robosim.record.files import check_output_path
from robosim.record.trajectory import TRAJECTORY_SUFFIXES
from robosim.record.video import VIDEO_SUFFIXES


def env_kwargs(args: argparse.Namespace) -> dict:
    """robosim.make keyword arguments of an eval env from the parsed options (both the
    one-process and the Ray-worker run), without --robot/--task-param."""
    return dict(obs_mode=args.obs_mode, control_mode=args.control_mode, sim_backend=args.sim_backend,
                render_mode="rgb_array" if args.video else None, render_size=args.render_size,
                render_camera=args.camera, render_lod=args.render_lod, physics_isolation=args.physics_isolation)


def cmd_eval(args: argparse.Namespace) -> int:
    import robosim
    from robosim.record.evaluate import evaluate, load_policy_factory
    from robosim.record.wrapper import RecordEpisode
    from robosim.sensors.camera import HumanViewConfig

    try:
        options = make_options(args)
        if args.video is not None:
            check_output_path("--video", args.video, VIDEO_SUFFIXES)
        if args.trajectory is not None:
            check_output_path("--trajectory", args.trajectory, TRAJECTORY_SUFFIXES)
        if args.episodes < 1 or args.num_envs < 1:
            raise ValueError(f"--episodes and --num-envs must be >= 1, got {args.episodes} and {args.num_envs}")
        HumanViewConfig.from_user(args.camera, args.render_size)
        factory = load_policy_factory(args.policy)
        args.seed = eval_seed(args, demo_seeds(args.policy))
        if args.workers != 1 or args.address is not None:   # envs spread over Ray workers
            if args.robot is not None or args.task_params:
                raise ValueError("--robot and --task-param are not supported with --workers/--address yet; "
                                 "run them in one process (--workers 1)")
            return eval_on_workers(args)
        env = robosim.make(args.task, num_envs=args.num_envs, seed=args.seed, **env_kwargs(args),
                           **options)   # seeded from the first build: randomized assets reproduce
    except (ValueError, TypeError) as err:
        return fail("eval", err)
    recorder = env
    if args.video or args.trajectory:
        try:
            recorder = RecordEpisode(env, video=args.video, trajectory=args.trajectory)
        except (ValueError, TypeError) as err:
            env.close()
            return fail("eval", err)
    start = time.perf_counter()
    try:
        try:
            result = evaluate(recorder, factory(recorder), args.episodes, seed=args.seed, progress=True)
        finally:
            recorder.close()
    except OSError as err:
        return fail("eval", err, status=1)
    print(eval_report(args, result, time.perf_counter() - start))
    return 0


def demo_seeds(policy: str) -> list[int]:
    """The seeds of the demonstrations a checkpoint was trained on (`demo_seeds` in its
    metadata's `extra`), for a `--policy MODULE:from_env_var` reading the checkpoint named
    by ROBOSIM_POLICY: a robosim.rollout.checkpoint file or a torch.save dict (examples/
    diffusion_policy.py). [] otherwise, or when the file cannot be read (loading the
    policy then reports why)."""
    from robosim.rollout.checkpoint import ENV_VAR

    path = os.environ.get(ENV_VAR)
    if not policy.endswith(":from_env_var") or not path or not os.path.isfile(path):
        return []
    import torch

    with open(path, "rb") as f:
        data = f.read()
    files = {"robosim.json": ""}
    try:
        torch.export.load(io.BytesIO(data), extra_files=files)
        extra = json.loads(files["robosim.json"] or "{}").get("extra", {})
    except Exception:   # not an export archive: a torch.save checkpoint, or not a checkpoint at all
        try:
            extra = torch.load(io.BytesIO(data), weights_only=True).get("extra", {})
        except Exception:
            return []
    try:
        return [int(s) for s in extra.get("demo_seeds", [])]
    except (AttributeError, TypeError, ValueError):
        return []


def eval_seed(args: argparse.Namespace, demos: list[int]) -> int:
    """The first episode seed: --seed, or by default 0, moved past the demos' seeds when
    the run's seeds [seed, seed + episodes + num_envs) would overlap them; warns on stderr
    when an explicit --seed overlaps."""
    span = args.episodes + args.num_envs   # evaluate draws at most these seeds from the first
    used = set(demos)
    if args.seed is None:
        seed = 0 if not used & set(range(span)) else max(used) + 1
        if seed:
            print(f"robosim eval: seeds from {seed} (the checkpoint's {len(used)} demos used seeds "
                  f"{min(used)}..{max(used)})", file=sys.stderr)
        return seed
    overlap = used & set(range(args.seed, args.seed + span))
    if overlap:
        print(f"robosim eval: warning: {len(overlap)} of the seeds {args.seed}..{args.seed + span - 1} this run may "
              f"use are seeds of the checkpoint's demos (its success there is not held-out; omit --seed to "
              f"evaluate on unseen seeds)", file=sys.stderr)
    return args.seed


def eval_on_workers(args: argparse.Namespace) -> int:
    """`robosim eval ... --workers K [--address ADDR]` once cmd_eval has checked the task,
    policy and output paths; same env kwargs as one process."""
    from robosim.distributed.eval import evaluate_on_workers

    start = time.perf_counter()
    try:
        result = evaluate_on_workers(args.task, args.policy, args.episodes, args.num_envs, args.workers,
                                     seed=args.seed, video=args.video, trajectory=args.trajectory,
                                     ray_address=args.address, progress=True, build_seed=args.seed,
                                     **env_kwargs(args))
    except ConnectionError as err:
        return fail("eval", err)
    print(eval_report(args, result, time.perf_counter() - start, f" over {args.workers} Ray workers"))
    return 0


def eval_report(args: argparse.Namespace, result, elapsed: float, where: str = "") -> str:
    """The lines `robosim eval` prints after a run of `elapsed` seconds; `result` is
    robosim.record.evaluate.EvalResult, `where` says where the envs ran ("" for this process)."""
    lines = [f"{args.task}, policy {args.policy}, {result.episodes} episodes on {args.num_envs} envs{where} "
             f"(seed {args.seed}), {elapsed:.1f} s", result.summary()]
    lines += [f"{label}: {path}" for label, path in (("video", args.video), ("trajectory", args.trajectory)) if path]
    return "\n".join(lines)


def add_eval_command(sub) -> None:
    p = sub.add_parser("eval", help="evaluate a policy: success rate with a confidence interval, video",
                       description="Run a policy for N episodes on K parallel envs; print the success "
                                   "rate (95%% Wilson interval), mean return and episode length; "
                                   "optionally write an mp4 of all envs and an HDF5 trajectory.")
    p.add_argument("task", help="task id, e.g. PickCube-v1")
    p.add_argument("--policy", default="robosim.record.policies:scripted",
                   help="module:callable; callable(env) returns policy(obs) -> action (N, A) "
                        "(default: robosim.record.policies:scripted)")
    p.add_argument("--episodes", type=int, default=16, help="episodes to evaluate (default: 16)")
    p.add_argument("--num-envs", type=int, default=4, help="parallel envs (default: 4)")
    p.add_argument("--seed", type=int, default=None,
                   help="first episode seed (default: 0, or past the seeds of the demos a checkpoint was "
                        "trained on; an explicit seed overlapping them warns)")
    p.add_argument("--video", help="write an mp4 of every step, envs tiled, to this path")
    p.add_argument("--trajectory", help="write an HDF5 trajectory (replayable with robosim replay)")
    p.add_argument("--obs-mode", default="state", help="obs mode passed to the policy (default: state)")
    add_control_mode_option(p)
    add_sim_backend_option(p, "physics backend (default: physx_cpu)")
    add_render_size_option(p)
    p.add_argument("--render-lod", default="auto", help="auto | full | low (default: auto)")
    p.add_argument("--camera", type=parse_camera, default=None, metavar="JSON",
                   help="video camera, overriding the task's default view key by key, as JSON: "
                        "'{\"yaw\": 90, \"pitch\": -25, \"distance\": 1.2, \"target_position\": [0, 0, 0.1]}' "
                        "(orbit angles in degrees, m, env frame)")
    p.add_argument("--physics-isolation", default="shared", choices=["shared", "separate"],
                   help="shared: all envs in one PhysX system (fast); separate: one system per env, "
                        "each env bit-exact and replayable (default: shared)")
    add_make_options(p)
    p.add_argument("--workers", type=int, default=1,
                   help="spread the envs over K Ray worker processes (default: 1, this process)")
    p.add_argument("--address", default=None,
                   help="Ray cluster for the workers, e.g. HEAD_IP:6379 (default: a local Ray instance)")
    p.set_defaults(func=cmd_eval)
