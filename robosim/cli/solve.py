"""`robosim solve`: a task's scripted solution on N envs, its success rate and speed,
and an mp4 of one episode rendered after the timed run. `robosim demo`, its name in
robosim 0.1.0 (too close to `robosim demos`), still runs it and warns."""
from __future__ import annotations

import argparse
import sys
import time

from robosim.cli.options import add_make_options, add_sim_backend_option, fail, make_options
from robosim.core.deprecation import REMOVED_IN


def cmd_solve(args: argparse.Namespace) -> int:
    import robosim
    from robosim.record.evaluate import evaluate
    from robosim.record.files import check_output_path

    if args.video:  # checked before the run; recorded after it, so it never slows the timing
        try:
            check_output_path("--video", args.video, (".mp4",))
        except ValueError as err:
            return fail(args.command, err)
    options = make_options(args)
    env = robosim.make(args.task, num_envs=args.num_envs, control_mode="pd_ee_delta_pose",
                       sim_backend=args.sim_backend, **options)
    try:
        scripted = env.task.solution_policy()
        steps = 0

        def policy(obs):
            nonlocal steps
            steps += env.num_envs
            return scripted()

        start = time.perf_counter()
        result = evaluate(env, policy, args.episodes, seed=args.seed, progress=True)
        elapsed = time.perf_counter() - start
    finally:
        env.close()
    successes, episodes_done = sum(result.success), result.episodes
    print(f"success rate: {successes / episodes_done:.1%} ({successes}/{episodes_done} episodes)")
    print(f"throughput:   {steps / elapsed:,.0f} env-steps/s with the scripted policy "
          f"({args.num_envs} envs, {env.sim_backend}, one process)")
    if args.video:
        record_solution_video(args.task, args.video, num_envs=min(4, args.num_envs), seed=args.seed, **options)
        print(f"video:        {args.video} (one episode of {min(4, args.num_envs)} envs, rendered after the timed run)")
    return 0


def record_solution_video(task: str, path: str, num_envs: int = 4, seed: int = 0, size=(192, 192),
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


def cmd_demo(args: argparse.Namespace) -> int:
    """The deprecated name: warn on stderr, then run `robosim solve`."""
    print(f"robosim demo: warning: `robosim demo` is now `robosim solve` (`robosim demos` handles demonstration "
          f"datasets); the old name will be removed in robosim {REMOVED_IN}", file=sys.stderr)
    return cmd_solve(args)


def add_solve_command(sub) -> None:
    """`robosim solve` and its deprecated name `robosim demo` on the sub-parsers object `sub`."""
    description = ("Run a task's scripted solution on N parallel envs (CPU physics), show a progress bar, print "
                   "the success rate and env-steps/s, then render one episode to an mp4.")
    p = sub.add_parser("solve", help="run a task's scripted solution on many envs: success rate, speed, video",
                       description=description)
    _add_solve_arguments(p)
    p.set_defaults(func=cmd_solve)
    old = sub.add_parser("demo", help=f"deprecated name of `solve` (warns; removed in robosim {REMOVED_IN})",
                         description=f"Deprecated name of `robosim solve` (removed in robosim {REMOVED_IN}). "
                                     + description)
    _add_solve_arguments(old)
    old.set_defaults(func=cmd_demo)


def _add_solve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", default="PickCube-v1", help="task id (default: PickCube-v1)")
    p.add_argument("--num-envs", type=int, default=16, help="parallel envs (default: 16)")
    p.add_argument("--episodes", type=int, default=64, help="episodes to finish (default: 64)")
    p.add_argument("--seed", type=int, default=0, help="env i is seeded with seed + i (default: 0)")
    add_sim_backend_option(p, "physics backend (default: physx_cpu; physx_gpu_emulated runs the GPU code path "
                              "on CPU PhysX, docs/gpu.md)")
    p.add_argument("--video", default="demo.mp4",
                   help="mp4 of one episode of up to 4 envs, written after the timed run (default: demo.mp4)")
    p.add_argument("--no-video", dest="video", action="store_const", const=None, help="do not write a video")
    add_make_options(p)
