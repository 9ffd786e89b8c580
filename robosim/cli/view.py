"""`robosim view`: watch a task run, or play a recorded trajectory, in a browser (viser).

`robosim view TASK` steps N envs with a policy (the scripted solution by default, `zero`,
or module:callable as `robosim eval --policy` takes it; `--teleop`: a gizmo on the TCP,
key buttons in the page, and with `--teleop keys` the keys typed into this terminal)
and serves them at http://HOST:PORT with pause/step/reset/time-scale controls;
`--record FILE.h5` writes every finished episode as a demonstration.
`robosim view --trajectory FILE` plays a recorded file from its states; a LeRobot dataset
directory is first imported as `robosim demos import` reads it (`robosim view TASK
--trajectory DIR` names the task of a dataset robosim did not write).

Every argument is checked before anything is built or served; a bad one prints
`robosim view: error: ...` and exits with status 2. Ctrl-C stops the server; a
recording keeps its finished episodes (exit status 130, as every command).
"""
from __future__ import annotations

import argparse
import os
import tempfile

from robosim.cli.options import add_control_mode_option, add_make_options, fail, make_options

ZERO = "zero"


def cmd_view(args: argparse.Namespace) -> int:
    try:
        dataset = args.trajectory is not None and os.path.isdir(args.trajectory)
        if not dataset and (args.task is None) == (args.trajectory is None):
            raise ValueError(f"give a TASK or --trajectory FILE (one of them; a TASK with --trajectory only for a "
                             f"LeRobot dataset directory), got task {args.task!r} and --trajectory {args.trajectory!r}")
        if args.trajectory is not None:
            return view_trajectory(args)
        return view_task(args)
    except (ValueError, TypeError) as err:
        return fail("view", err)


def view_trajectory(args: argparse.Namespace) -> int:
    if args.record is not None or args.teleop:
        raise ValueError("--record and --teleop drive a live task; --trajectory plays a file")
    if not os.path.isdir(args.trajectory):
        return _play(args.trajectory, args)
    # a LeRobot dataset: imported as `robosim demos import` does (re-simulated when robosim
    # did not write it) into a temporary trajectory, played, and removed
    from robosim.demos.lerobot import import_lerobot

    with tempfile.TemporaryDirectory(prefix="robosim-view-") as tmp:
        path = os.path.join(tmp, "dataset.h5")
        import_lerobot(args.trajectory, path, task=args.task)
        return _play(path, args, shown=args.trajectory)


def _play(path: str, args: argparse.Namespace, shown: str | None = None) -> int:
    from robosim.view.playback import Playback

    playback = Playback(path, port=args.port, host=args.host)
    print(f"robosim view: {shown or path} ({len(playback.file)} episodes) at {playback.viewer.url}", flush=True)
    try:
        playback.play(max_frames=args.max_steps)
    finally:
        playback.close()
    return 0


def _policy_factory(args: argparse.Namespace):
    from robosim.record.evaluate import load_policy_factory
    from robosim.view.live import zero_policy

    if args.teleop:
        return None
    return zero_policy if args.policy == ZERO else load_policy_factory(args.policy)


def view_task(args: argparse.Namespace) -> int:
    import robosim
    from robosim.record.files import check_output_path
    from robosim.view.live import Controls, run_live
    from robosim.view.viewer import Viewer

    options = make_options(args)
    factory = _policy_factory(args)
    if not 0 <= args.time_scale <= 4:
        raise ValueError(f"--time-scale must be in [0, 4] (0: as fast as possible), got {args.time_scale}")
    if args.num_envs is None:
        args.num_envs = 1 if args.teleop else 4
    if args.num_envs < 1 or (args.teleop and args.num_envs != 1):
        raise ValueError(f"--num-envs must be >= 1 (1 with --teleop), got {args.num_envs}")
    if args.record is not None:
        check_output_path("--record", args.record, (".h5",))
    control_mode = args.control_mode
    if args.teleop:
        from robosim.view.teleop import TELEOP_CONTROL_MODE

        if control_mode not in (None, TELEOP_CONTROL_MODE):
            raise ValueError(f"--teleop drives --control-mode {TELEOP_CONTROL_MODE}, got {control_mode!r}")
        control_mode = TELEOP_CONTROL_MODE
    env = robosim.make(args.task, num_envs=args.num_envs, seed=args.seed, render_mode="rgb_array",
                       control_mode=control_mode, physics_isolation=args.physics_isolation, **options)
    recorder = None
    try:
        viewer = Viewer(env, port=args.port, host=args.host, hz=args.hz)
        try:
            controls = Controls(viewer, title=args.task, time_scale=args.time_scale)
            driven = env
            if args.record is not None:
                from robosim.demos.recorder import DemoRecorder

                driven = recorder = DemoRecorder(env, args.record, keep=lambda episode: True)
            keys = None
            if args.teleop:
                from robosim.view.keys import KeyButtons, TerminalKeys
                from robosim.view.teleop import Teleop

                teleop = Teleop(viewer)
                KeyButtons(teleop)
                policy = teleop.policy
                if args.teleop == "keys":
                    keys = TerminalKeys(teleop)
                    policy = keys.policy
                    print("robosim view: keys w/s +x/-x, a/d +y/-y, q/e +z/-z, space gripper", flush=True)
            else:
                policy = factory(driven)
            print(f"robosim view: {args.task} on {args.num_envs} envs at {viewer.url} (Ctrl-C stops)", flush=True)
            try:
                run_live(driven, viewer, policy, controls, seed=args.seed, max_steps=args.max_steps)
            finally:
                if keys is not None:
                    keys.close()   # the terminal gets its mode back
        finally:
            viewer.close()
    finally:
        if recorder is not None:
            recorder.close(close_env=False)   # the finished episodes are written, also on Ctrl-C
        env.close()
    if recorder is not None:
        print(f"robosim view: {recorder.trajectory.episodes_written} episodes in {args.record}")
    return 0


def add_view_command(sub) -> None:
    p = sub.add_parser("view", help="watch a task, drive it by hand, or play a trajectory in a browser",
                       description="Serve a live 3-D view of a task's envs (or of a recorded trajectory) "
                                   "over HTTP with viser; open the printed address in a browser.")
    p.add_argument("task", nargs="?", default=None, help="task id, e.g. PickCube-v1 (or use --trajectory)")
    p.add_argument("--trajectory", default=None, metavar="FILE.h5|DIR",
                   help="play this trajectory or demos file from its states (no physics re-run), or a LeRobot "
                        "dataset directory (imported first, as `robosim demos import` does; give TASK for one "
                        "robosim did not write)")
    p.add_argument("--policy", default="robosim.record.policies:scripted",
                   help=f"module:callable as robosim eval takes it, or '{ZERO}' for zero actions "
                        f"(default: the task's scripted solution)")
    p.add_argument("--teleop", nargs="?", const="gizmo", default=None, choices=["gizmo", "keys"],
                   help="drive env 0's TCP (pd_ee_delta_pose) with a gizmo and key buttons in the browser; "
                        "'--teleop keys' also reads w/s a/d q/e (x/y/z) and space (gripper) from this terminal")
    p.add_argument("--record", default=None, metavar="FILE.h5",
                   help="write every finished episode as a demonstration (robosim demos convert/export, replay)")
    p.add_argument("-n", "--num-envs", type=int, default=None, help="parallel envs (default: 4; 1 with --teleop)")
    p.add_argument("--seed", type=int, default=0, help="first episode seed (default: 0)")
    add_control_mode_option(p)
    p.add_argument("--physics-isolation", default="shared", choices=["shared", "separate"],
                   help="shared: one PhysX system; separate: one per env, replayable exactly (default: shared)")
    p.add_argument("--port", type=int, default=8080, help="HTTP port (default: 8080)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to serve on (default: 127.0.0.1, this machine only; 0.0.0.0 exposes it)")
    p.add_argument("--hz", type=float, default=10.0, help="viewer updates per second at most (default: 10)")
    p.add_argument("--time-scale", type=float, default=1.0,
                   help="initial speed: 1 real time, 0 as fast as possible (default: 1; a slider in the page)")
    p.add_argument("--max-steps", type=int, default=None,
                   help="stop after this many control steps (or trajectory frames) (default: run until Ctrl-C)")
    add_make_options(p)
    p.set_defaults(func=cmd_view)
