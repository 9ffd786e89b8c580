"""The `robosim` command: list tasks, run the demo (and more sub-commands)."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from typing import Callable

# Sub-commands defined in other modules: (module, function adding the sub-parser).
# Each adder takes the argparse sub-parsers object and sets `func` on its parser.
EXTERNAL_COMMANDS: list[tuple[str, str]] = []
EXTERNAL_COMMANDS.append(("robosim.bench.cli", "add_bench_command"))
EXTERNAL_COMMANDS.append(("robosim.record.cli", "add_eval_command"))
EXTERNAL_COMMANDS.append(("robosim.record.cli", "add_replay_command"))
EXTERNAL_COMMANDS.append(("robosim.record.cli", "add_recover_command"))
EXTERNAL_COMMANDS.append(("robosim.demos.cli", "add_demos_command"))


class Terminated(BaseException):
    """Raised by the SIGTERM handler so `finally` blocks close output files, as on Ctrl-C."""


def _on_sigterm(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)   # a repeated TERM must not cut the cleanup short
    raise Terminated()


def cmd_list(args: argparse.Namespace) -> int:
    import robosim
    from robosim.agents import CONTROL_MODES
    from robosim.envs.base_env import REWARD_MODES
    from robosim.envs.observations import OBS_MODES

    task_ids = robosim.list_tasks()
    width = max([len("task"), *map(len, task_ids)]) + 1
    print(f"{'task':<{width}} {'max steps':>9}  default control mode")
    for task_id in task_ids:
        task = robosim.get_task(task_id)
        print(f"{task_id:<{width}} {task.max_episode_steps:>9}  {task.default_control_mode}")
    print(f"\nobs modes:     {', '.join(OBS_MODES)}")
    print(f"control modes: {', '.join(CONTROL_MODES)}")
    print(f"reward modes:  {', '.join(REWARD_MODES)}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    import robosim
    from robosim.record.cli import make_options, record_demo_video
    from robosim.record.evaluate import evaluate
    from robosim.record.files import check_output_path

    if args.video:  # checked before the run; recorded after it, so it never slows the timing
        try:
            check_output_path("--video", args.video, (".mp4",))
        except ValueError as err:
            print(f"robosim demo: error: {err}", file=sys.stderr)
            return 2
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
        record_demo_video(args.task, args.video, num_envs=min(4, args.num_envs), seed=args.seed, **options)
        print(f"video:        {args.video} (one episode of {min(4, args.num_envs)} envs, rendered after the timed run)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robosim", description="Batched robot manipulation environments on SAPIEN/PhysX."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("list", help="list registered tasks and the obs/control/reward modes",
                       description="List registered tasks (built-in and entry-point plugins) and modes.")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("demo", help="run a scripted policy on many envs and report success and speed",
                       description="Run a task's scripted solution on N parallel envs (CPU physics), "
                                   "show a progress bar, print the success rate and env-steps/s.")
    p.add_argument("--task", default="PickCube-v1", help="task id (default: PickCube-v1)")
    p.add_argument("--num-envs", type=int, default=16, help="parallel envs (default: 16)")
    p.add_argument("--episodes", type=int, default=64, help="episodes to finish (default: 64)")
    p.add_argument("--seed", type=int, default=0, help="env i is seeded with seed + i (default: 0)")
    from robosim.sim.scene import SIM_BACKENDS

    p.add_argument("--sim-backend", default="physx_cpu", choices=SIM_BACKENDS,
                   help="physics backend (default: physx_cpu; physx_gpu_emulated runs the GPU code path "
                        "on CPU PhysX, docs/gpu.md)")
    p.add_argument("--video", default="demo.mp4",
                   help="mp4 of one episode of up to 4 envs, written after the timed run (default: demo.mp4)")
    p.add_argument("--no-video", dest="video", action="store_const", const=None, help="do not write a video")
    from robosim.record.cli import add_make_options

    add_make_options(p)
    p.set_defaults(func=cmd_demo)
    for module_name, adder_name in EXTERNAL_COMMANDS:
        module = __import__(module_name, fromlist=[adder_name])
        adder: Callable = getattr(module, adder_name)
        adder(sub)
    for command in sub.choices.values():   # every sub-command can see tasks of the user's modules
        command.add_argument("--import", dest="imports", metavar="MODULE", action="append", default=[],
                             help="import MODULE before resolving task ids, so tasks it registers with "
                                  "@robosim.register_task are found (repeatable); a task id may also be "
                                  "'package.module:TaskClass'")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if "" not in sys.path and os.getcwd() not in sys.path:   # user modules in cwd, as `python -m`
            sys.path.insert(0, os.getcwd())
        if getattr(args, "imports", None):
            from robosim.envs.registry import import_modules

            import_modules(args.imports)
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError, NotImplementedError) as err:  # one clear line, no traceback
        print(f"robosim {args.command}: error: {err}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as err:   # files were closed on the way out
        name = "SIGINT" if isinstance(err, KeyboardInterrupt) else "SIGTERM"
        print(f"robosim {args.command}: interrupted by {name}; output files keep what was recorded",
              file=sys.stderr)
        return 130 if name == "SIGINT" else 143


if __name__ == "__main__":
    sys.exit(main())
