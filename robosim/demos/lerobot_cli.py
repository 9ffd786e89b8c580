"""`robosim demos export` and `robosim demos import`: LeRobot v3.0 datasets both ways
(robosim.demos.lerobot). Needs the lerobot extra: pip install 'robosim[lerobot]'.

A bad argument (not a robosim trajectory, not a LeRobot v3.0 dataset, another task or
robot, an action dimension that does not match, an existing --out directory) is refused
before anything is written: `robosim demos: error: ...`, exit status 2.
"""
from __future__ import annotations

import argparse

FORMATS = ("lerobot",)


def cmd_export(args: argparse.Namespace) -> int:
    from robosim.demos.lerobot import export_lerobot

    summary = export_lerobot(args.trajectory, args.out, fps=args.fps, video=args.video, progress=True)
    videos = ", ".join(summary["videos"]) or "none"
    print(f"wrote LeRobot v3.0 dataset {summary['out_dir']}: {summary['episodes']} episodes, "
          f"{summary['frames']} frames, videos: {videos}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from robosim.demos.lerobot import import_lerobot

    summary = import_lerobot(args.dataset, args.out, task=args.task, robot=args.robot, progress=True)
    print(f"wrote {summary['out_path']}: {summary['episodes']} episodes, {summary['frames']} steps of "
          f"{summary['task_id']} (replay with `robosim replay {summary['out_path']}`)")
    return 0


def add_lerobot_commands(demos) -> None:
    """Add `export` and `import` to the `robosim demos` sub-parsers object `demos`."""
    e = demos.add_parser("export", help="write demos as a LeRobot v3.0 dataset (parquet, mp4, meta)",
                         description="Write every episode of a robosim trajectory as a LeRobot v3.0 dataset "
                                     "directory: data/ parquet frames (observation.state = joint positions, "
                                     "observation.environment_state = robosim's env state, action, next.reward, "
                                     "next.success), one mp4 per sensor camera re-rendered from the recorded "
                                     "states, meta/info.json (with a 'robosim' entry: task, env kwargs, control "
                                     "mode), meta/episodes, meta/tasks.parquet and meta/stats.json. The "
                                     "directory appears only when complete.")
    e.add_argument("trajectory", metavar="TRAJ.h5", help="demos file (robosim demos generate / RecordEpisode)")
    e.add_argument("--format", required=True, choices=FORMATS, help="dataset format (lerobot: LeRobot v3.0)")
    e.add_argument("--out", required=True, metavar="DIR", help="dataset directory to create (must not exist)")
    e.add_argument("--fps", type=int, default=None,
                   help="frame rate written to the dataset (default: the task's control frequency; one frame "
                        "per control step either way)")
    e.add_argument("--no-video", dest="video", action="store_false",
                   help="write no camera videos (state features only; much faster)")
    e.set_defaults(func=cmd_export)

    i = demos.add_parser("import", help="read a LeRobot v3.0 dataset into a robosim HDF5 trajectory",
                         description="Read a LeRobot v3.0 dataset that robosim exported (exact: states, seeds, "
                                     "env slots; `robosim replay` re-simulates it), or one written for the same "
                                     "task and robot with action and observation.environment_state in robosim's "
                                     "layout (give --task; final states come from one simulated step, seeds "
                                     "are unknown).")
    i.add_argument("dataset", metavar="DIR", help="LeRobot v3.0 dataset directory")
    i.add_argument("--out", required=True, metavar="PATH.h5", help="output trajectory (.h5)")
    i.add_argument("--task", default=None,
                   help="task id; required for a dataset robosim did not write, else must match the dataset's")
    i.add_argument("--robot", default=None,
                   help="robot name (default: the dataset's robot_type); must match the dataset's")
    i.set_defaults(func=cmd_import)
