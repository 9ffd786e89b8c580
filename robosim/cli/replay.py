"""`robosim replay`: re-simulate (or re-render) a recorded HDF5 trajectory and report
how far the replayed states diverge from the recorded ones.

A bad argument prints `robosim replay: error: ...` and exits with status 2, leaving no
file; a write that fails mid-run exits with status 1; --strict makes any divergence
exit with status 1.
"""
from __future__ import annotations

import argparse

from robosim.cli.options import add_make_options, add_render_size_option, fail
from robosim.record.files import check_output_path
from robosim.record.trajectory import TrajectoryFile
from robosim.record.video import VIDEO_SUFFIXES


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
        return fail("replay", err)
    except OSError as err:
        return fail("replay", err, status=1)
    print(report.summary())
    if args.video:
        print(f"video: {args.video}")
    return 1 if (args.strict and not report.exact) else 0


def add_replay_command(sub) -> None:
    p = sub.add_parser("replay", help="replay an HDF5 trajectory, re-render it, report divergence",
                       description="--mode actions: reset each recorded episode as recorded, re-apply its "
                                   "actions, compare every replayed state with the recorded one (first "
                                   "diverging step, max abs error). --mode states: write the recorded "
                                   "states back (exact by construction), e.g. to re-render a video.")
    p.add_argument("trajectory", metavar="TRAJ.h5", help="trajectory file written by robosim eval/RecordEpisode")
    p.add_argument("--video", help="write the re-rendered episodes to this mp4")
    add_render_size_option(p)
    p.add_argument("--mode", default="actions", choices=["actions", "states"],
                   help="actions: re-simulate and report divergence; states: re-render recorded states "
                        "(default: actions)")
    p.add_argument("--strict", action="store_true", help="exit with status 1 if any state differs")
    add_make_options(p)   # refused: the header says how the env was built (parsed so the message is clear)
    p.set_defaults(func=cmd_replay)
