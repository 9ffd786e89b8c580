"""`robosim demos` sub-commands: generate, convert, render, and export / import of
LeRobot v3.0 datasets (robosim.demos.lerobot; needs the lerobot extra:
pip install 'robosim[lerobot]').

Every argument, and the whole input file of convert, render and export, is checked
before any env is built or any file written: a bad one prints one line
`robosim demos SUBCOMMAND: error: ...` and exits with status 2. A write that fails
(a full disk, a read-only directory) prints the same line and exits with status 1;
nothing appears under the output name (generate and convert keep their finished
episodes for `robosim recover`). A generation that hits its --max-tries cap, or a
conversion in which an episode fails, exits with status 1. export / import refuse
before anything is written: not a robosim trajectory, not a LeRobot v3.0 dataset,
another task or robot, an action dimension that does not match, an existing --out
directory, and for import any content check of robosim.demos.lerobot_checks (a column
of the wrong width, NaN, episode indices past the data, a re-simulation that diverges).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from robosim.cli.options import add_control_mode_option, add_make_options, fail, make_options, parse_size

CAMERA_CHOICES = ("rgb", "rgbd", "pointcloud", "depth", "segmentation")
FORMATS = ("lerobot",)


def _sensor_configs(size) -> dict | None:
    return None if size is None else {"width": size[0], "height": size[1]}


def cmd_generate(args: argparse.Namespace) -> int:
    from robosim.demos.generate import check_task, generate_demos

    check_task("TASK", args.task)   # an unknown id is refused naming TASK, with the hint about --import
    make = _make(args)
    report = generate_demos(args.task, args.num, args.out, control_mode=args.control_mode, obs_mode=args.obs_mode,
                            num_envs=args.num_envs, seed=args.seed, max_tries=args.max_tries,
                            sensor_configs=_sensor_configs(args.sensor_size), action_noise=args.action_noise,
                            progress=True, **make)
    print(report.summary())
    return 1 if report.cap_hit else 0


def _make(args: argparse.Namespace) -> dict:
    """robot and task_params of generate_demos from --robot/--task-param."""
    options = make_options(args)
    return {"robot": options.pop("robot"), "task_params": options}


def cmd_convert(args: argparse.Namespace) -> int:
    from robosim.demos.convert import convert_demos

    report = convert_demos(args.trajectory, args.out, args.to_control_mode, progress=True)
    print(report.summary())
    return 0 if report.all_succeeded else 1


def cmd_render(args: argparse.Namespace) -> int:
    from robosim.demos.render import render_demos

    report = render_demos(args.trajectory, args.out, args.obs_mode, sensor_configs=_sensor_configs(args.sensor_size),
                          progress=True)
    print(report.summary())
    return 0


def add_demos_command(sub) -> None:
    """`robosim demos {generate, convert, render, export, import}` on the sub-parsers object `sub`."""
    p = sub.add_parser("demos", help="generate, convert and render demonstrations for imitation learning",
                       description="Demonstrations for imitation learning (docs/imitation.md): generate "
                                   "successful scripted episodes, re-express their actions in another "
                                   "control mode, add camera observations from the recorded states.")
    demos = p.add_subparsers(dest="demos_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    g = demos.add_parser("generate", help="N successful scripted demos of a task in one HDF5 file",
                         description="Run the task's scripted solution on --num-envs envs with separate physics "
                                     "per env (exact replay), keep trying until N episodes succeed, keep only "
                                     "those, and report the yield (successful / tried episodes). Exit status 1 "
                                     "when --max-tries episodes were tried first. Interrupted, it leaves no file "
                                     "under --out; `robosim recover DIR` saves the finished episodes.")
    g.add_argument("task", help="task id, e.g. PickCube-v1")
    g.add_argument("-n", "--num", type=int, required=True, help="successful episodes to keep")
    g.add_argument("--out", required=True, help="output trajectory (.h5)")
    add_control_mode_option(g, "pd_ee_delta_pose or pd_ee_delta_pos, the modes scripted solutions act in "
                               "(default: the task's; use `robosim demos convert` for joint modes)")
    g.add_argument("--obs-mode", default="state",
                   help="state (default; the states are recorded, observations are derived from them) or a "
                        "camera mode (rgb, rgbd, pointcloud...): rendered from the recorded states after the run")
    g.add_argument("--sensor-size", type=parse_size, default=None, metavar="WxH",
                   help="sensor camera resolution for camera obs modes (default: the task's cameras)")
    g.add_argument("--num-envs", type=int, default=4, help="parallel envs (default: 4)")
    g.add_argument("--seed", type=int, default=0, help="env i starts with seed + i, later episodes take the next "
                                                       "unused seeds (default: 0)")
    g.add_argument("--max-tries", type=int, default=None,
                   help="cap on episodes tried before giving up (default: 3 * N + num-envs)")
    g.add_argument("--action-noise", type=float, default=0.0, metavar="SIGMA",
                   help="DART: add Gaussian noise of std SIGMA (action units) to every executed action, "
                        "seeded by each episode's seed; the clean scripted action is recorded (default: 0)")
    add_make_options(g)
    g.set_defaults(func=cmd_generate)

    c = demos.add_parser("convert", help="re-express demos' actions in another control mode",
                         description="Re-run every episode from its initial state in --to-control-mode, choosing "
                                     "each step's action from the current simulator state so the robot follows "
                                     "the recorded drive targets (closed loop); write the converted episodes "
                                     "that succeed and report per-episode success and final state error. Exit "
                                     "status 1 when any converted episode fails.")
    c.add_argument("trajectory", metavar="TRAJ.h5", help="demos file (robosim demos generate / RecordEpisode)")
    c.add_argument("--to-control-mode", required=True,
                   help="pd_joint_pos, pd_joint_delta_pos, pd_ee_delta_pos or pd_ee_delta_pose")
    c.add_argument("--out", required=True, help="output trajectory (.h5)")
    c.set_defaults(func=cmd_convert)

    r = demos.add_parser("render", help="add camera observations to state-only demos",
                         description="Write every recorded state back (no physics step) and capture the task's "
                                     "sensor cameras; --out gets the demos plus an obs group per episode "
                                     "(layout: docs/imitation.md). --out may equal the input (replaced atomically).")
    r.add_argument("trajectory", metavar="TRAJ.h5", help="demos file to render")
    r.add_argument("--obs-mode", required=True, choices=CAMERA_CHOICES, help="camera observations to add")
    r.add_argument("--out", required=True, help="output trajectory (.h5)")
    r.add_argument("--sensor-size", type=parse_size, default=None, metavar="WxH",
                   help="sensor camera resolution (default: the task's cameras)")
    r.set_defaults(func=cmd_render)

    add_lerobot_commands(demos)
    for name, parser in demos.choices.items():
        parser.set_defaults(func=_one_line_errors(name, parser.get_default("func")))


def _one_line_errors(name: str, func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """`func` with its refusals and failed writes turned into one `robosim demos NAME:
    error: ...` line: status 2 for bad input, 1 for an OSError (full disk...)."""
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except (ValueError, TypeError, FileNotFoundError, NotImplementedError) as err:
            return fail(f"demos {name}", ValueError(" ".join(str(err).split())))
        except OSError as err:   # h5py's messages span lines
            return fail(f"demos {name}", OSError(" ".join(str(err).split())), status=1)
    return run


def cmd_export(args: argparse.Namespace) -> int:
    from robosim.demos.lerobot import export_lerobot

    summary = export_lerobot(args.trajectory, args.out, fps=args.fps, video=args.video, progress=True)
    videos = ", ".join(summary["videos"]) or "none"
    print(f"wrote LeRobot v3.0 dataset {summary['out_dir']}: {summary['episodes']} episodes, "
          f"{summary['frames']} frames, videos: {videos}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from robosim.demos.lerobot import import_lerobot

    summary = import_lerobot(args.dataset, args.out, task=args.task, robot=args.robot, tolerance=args.tolerance,
                             diverging="skip" if args.skip_diverging else "refuse", progress=True)
    for message in summary["skipped"]:
        print(f"skipped: {message}", file=sys.stderr)
    checked = (f", re-simulated: recorded states within {summary['max_deviation']:.3g} of the re-simulation"
               if summary["resimulated"] else "")
    print(f"wrote {summary['out_path']}: {summary['episodes']} episodes, {summary['frames']} steps of "
          f"{summary['task_id']}{checked} (replay with `robosim replay {summary['out_path']}`)")
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
                                     "layout (give --task; every episode is re-simulated from its first state "
                                     "with its actions and refused when its recorded states differ by more than "
                                     "--tolerance; seeds are unknown). The whole dataset is checked before "
                                     "anything is written.")
    i.add_argument("dataset", metavar="DIR", help="LeRobot v3.0 dataset directory")
    i.add_argument("--out", required=True, metavar="PATH.h5", help="output trajectory (.h5)")
    i.add_argument("--task", default=None,
                   help="task id; required for a dataset robosim did not write, else must match the dataset's")
    i.add_argument("--robot", default=None,
                   help="robot name (default: the dataset's robot_type); must match the dataset's")
    i.add_argument("--tolerance", type=float, default=1e-4,
                   help="largest |recorded - re-simulated| state value accepted for a dataset robosim did not "
                        "write (state units: m, rad, m/s, rad/s; default: 1e-4)")
    i.add_argument("--skip-diverging", action="store_true",
                   help="leave out (and name) each episode whose re-simulation differs by more than --tolerance "
                        "instead of refusing the whole import")
    i.set_defaults(func=cmd_import)
