"""`robosim eval` and `robosim replay` sub-commands, and the demo's video.

Every argument (task, policy, output paths, sizes) is checked before any env is built;
a bad one prints `robosim <cmd>: error: ...` and exits with status 2, leaving no file.
A write that fails mid-run (full disk, I/O error, deleted directory, broken ffmpeg
pipe) prints one `robosim <cmd>: error: ...` line and exits with status 1; no broken
file appears under a final name (finished trajectory episodes stay recoverable with
`robosim recover`).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from robosim.record.files import check_output_path
from robosim.record.trajectory import TRAJECTORY_SUFFIXES, TrajectoryFile
from robosim.record.video import VIDEO_SUFFIXES


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT such as 256x256, got {text!r}") from None
    return w, h


def _camera(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"yaw\": 90}}', got {text!r} ({err})")
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"yaw\": 90}}', got {text!r}")
    return value


def _task_param(text: str) -> tuple[str, object]:
    """'key=value' -> (key, value): value parsed as JSON, else kept as the string."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE such as cube_half_size=0.025, got {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def add_make_options(p: argparse.ArgumentParser) -> None:
    """--robot and --task-param: what robosim.make(task, robot=..., **task_params) takes."""
    p.add_argument("--robot", default=None, help="robot name (default: the task's default robot)")
    p.add_argument("--task-param", dest="task_params", type=_task_param, action="append", default=[],
                   metavar="KEY=VALUE",
                   help="task parameter passed to robosim.make (repeatable); VALUE is parsed as JSON "
                        "(0.025, true, [1, 2]), else taken as a string")


def make_options(args: argparse.Namespace) -> dict:
    """robosim.make keyword arguments from --robot/--task-param; the task's check_parameters
    raises ValueError naming an unknown key (TypeError for a wrongly typed value)."""
    import robosim

    params = dict(args.task_params)
    robosim.get_task(args.task).check_parameters(params)
    return {"robot": args.robot, **params}


def _fail(command: str, err: Exception, status: int = 2) -> int:
    print(f"robosim {command}: error: {err}", file=sys.stderr)
    return status


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
        if args.workers != 1 or args.address is not None:   # envs spread over Ray workers
            if args.robot is not None or args.task_params:
                raise ValueError("--robot and --task-param are not supported with --workers/--address yet; "
                                 "run them in one process (--workers 1)")
            return _eval_on_workers(args)
        env = robosim.make(args.task, num_envs=args.num_envs, obs_mode=args.obs_mode,
                           control_mode=args.control_mode, sim_backend=args.sim_backend,
                           render_mode="rgb_array" if args.video else None, render_size=args.render_size,
                           render_camera=args.camera,
                           render_lod=args.render_lod, physics_isolation=args.physics_isolation,
                           seed=args.seed, **options)   # seeded from the first build: randomized assets reproduce
    except (ValueError, TypeError) as err:
        return _fail("eval", err)
    recorder = env
    if args.video or args.trajectory:
        try:
            recorder = RecordEpisode(env, video=args.video, trajectory=args.trajectory)
        except (ValueError, TypeError) as err:
            env.close()
            return _fail("eval", err)
    start = time.perf_counter()
    try:
        try:
            result = evaluate(recorder, factory(recorder), args.episodes, seed=args.seed, progress=True)
        finally:
            recorder.close()
    except OSError as err:
        return _fail("eval", err, status=1)
    print_eval_report(args, result, time.perf_counter() - start)
    return 0


def _eval_on_workers(args: argparse.Namespace) -> int:
    """`robosim eval ... --workers K [--address ADDR]` once cmd_eval has checked the task,
    policy and output paths; same env kwargs as one process."""
    from robosim.distributed.eval import evaluate_on_workers

    start = time.perf_counter()
    try:
        result = evaluate_on_workers(
            args.task, args.policy, args.episodes, args.num_envs, args.workers, seed=args.seed, video=args.video,
            trajectory=args.trajectory, ray_address=args.address, progress=True, obs_mode=args.obs_mode,
            control_mode=args.control_mode, sim_backend=args.sim_backend,
            render_mode="rgb_array" if args.video else None, render_size=args.render_size,
            render_camera=args.camera, render_lod=args.render_lod,
            physics_isolation=args.physics_isolation, build_seed=args.seed)
    except ConnectionError as err:
        return _fail("eval", err)
    print_eval_report(args, result, time.perf_counter() - start, f" over {args.workers} Ray workers")
    return 0


def print_eval_report(args: argparse.Namespace, result, elapsed: float, where: str = "") -> None:
    """The lines `robosim eval` prints after a run (one process or Ray workers: `where`)."""
    print(f"{args.task}, policy {args.policy}, {result.episodes} episodes on {args.num_envs} envs{where} "
          f"(seed {args.seed}), {elapsed:.1f} s")
    print(result.summary())
    for label, path in (("video", args.video), ("trajectory", args.trajectory)):
        if path:
            print(f"{label}: {path}")


def cmd_replay(args: argparse.Namespace) -> int:
    from robosim.record.replay import replay

    try:
        if args.robot is not None or args.task_params:
            given = ([f"--robot {args.robot}"] if args.robot is not None else []) + \
                [f"--task-param {k}={v!r}" for k, v in args.task_params]
            raise ValueError(f"replay rebuilds the env exactly as recorded, from the trajectory's header "
                             f"(task id, robot, task parameters): --robot and --task-param are refused, "
                             f"got {' '.join(given)}")
        TrajectoryFile(args.trajectory, arg="TRAJ")
        if args.video is not None:
            check_output_path("--video", args.video, VIDEO_SUFFIXES)
        report = replay(args.trajectory, video=args.video, render_size=args.render_size, progress=True,
                        mode=args.mode)
    except (ValueError, TypeError) as err:
        return _fail("replay", err)
    except OSError as err:
        return _fail("replay", err, status=1)
    print(report.summary())
    if args.video:
        print(f"video: {args.video}")
    return 1 if (args.strict and not report.exact) else 0


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
    p.add_argument("--seed", type=int, default=0, help="first episode seed (default: 0)")
    p.add_argument("--video", help="write an mp4 of every step, envs tiled, to this path")
    p.add_argument("--trajectory", help="write an HDF5 trajectory (replayable with robosim replay)")
    p.add_argument("--obs-mode", default="state", help="obs mode passed to the policy (default: state)")
    p.add_argument("--control-mode", default=None, help="control mode (default: the task's)")
    from robosim.sim.scene import SIM_BACKENDS

    p.add_argument("--sim-backend", default="physx_cpu", choices=SIM_BACKENDS,
                   help="physics backend (default: physx_cpu)")
    p.add_argument("--render-size", type=_size, default=(256, 256), help="video tile size WxH (default 256x256)")
    p.add_argument("--render-lod", default="auto", help="auto | full | low (default: auto)")
    p.add_argument("--camera", type=_camera, default=None, metavar="JSON",
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


def add_replay_command(sub) -> None:
    p = sub.add_parser("replay", help="replay an HDF5 trajectory, re-render it, report divergence",
                       description="--mode actions: reset each recorded episode as recorded, re-apply its "
                                   "actions, compare every replayed state with the recorded one (first "
                                   "diverging step, max abs error). --mode states: write the recorded "
                                   "states back (exact by construction), e.g. to re-render a video.")
    p.add_argument("trajectory", metavar="TRAJ.h5", help="trajectory file written by robosim eval/RecordEpisode")
    p.add_argument("--video", help="write the re-rendered episodes to this mp4")
    p.add_argument("--render-size", type=_size, default=(256, 256), help="video tile size WxH (default 256x256)")
    p.add_argument("--mode", default="actions", choices=["actions", "states"],
                   help="actions: re-simulate and report divergence; states: re-render recorded states "
                        "(default: actions)")
    p.add_argument("--strict", action="store_true", help="exit with status 1 if any state differs")
    add_make_options(p)   # refused: the header says how the env was built (parsed so the message is clear)
    p.set_defaults(func=cmd_replay)


def cmd_recover(args: argparse.Namespace) -> int:
    from robosim.record.recover import recover

    try:
        report = recover(args.directory, force=args.force)
    except (ValueError, TypeError) as err:
        return _fail("recover", err)
    except OSError as err:
        return _fail("recover", err, status=1)
    print(report.summary())
    return 1 if report.errors else 0


def add_recover_command(sub) -> None:
    p = sub.add_parser("recover", help="save the recordings a killed run left behind in a directory",
                       description="Merge each leftover trajectory parts directory (.NAME.<random>.parts) "
                                   "into NAME (or NAME-recovered-K.h5) and rename each playable leftover "
                                   "partial mp4; leftovers of a still-running process are skipped. A lost or "
                                   "damaged owner.json is worked around (episode files carry their own header); "
                                   "a damaged episode file is reported and kept, the others recovered. Exit "
                                   "status 1 when writing a recovered file failed.")
    p.add_argument("directory", help="directory the killed run wrote to")
    p.add_argument("--force", action="store_true", help="also take leftovers whose process still runs")
    p.set_defaults(func=cmd_recover)


def record_demo_video(task: str, path: str, num_envs: int = 4, seed: int = 0, size=(192, 192),
                      **make_kwargs) -> str:
    """One episode of the task's scripted policy on num_envs envs, tiled into `path` (mp4);
    make_kwargs (robot, task parameters) go to robosim.make."""
    import robosim
    from robosim.record.evaluate import evaluate
    from robosim.record.policies import scripted
    from robosim.record.wrapper import RecordEpisode

    env = robosim.make(task, num_envs=num_envs, render_mode="rgb_array", render_size=size, **make_kwargs)
    with RecordEpisode(env, video=path) as recorder:
        evaluate(recorder, scripted(recorder), num_envs, seed=seed)
    return path
