"""`robosim list`: the registered tasks and the obs / control / reward modes."""
from __future__ import annotations

import argparse


def cmd_list(args: argparse.Namespace) -> int:
    import robosim
    from robosim.agents import CONTROL_MODES
    from robosim.envs.observations import OBS_MODES
    from robosim.envs.spec import REWARD_MODES

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


def add_list_command(sub) -> None:
    p = sub.add_parser("list", help="list registered tasks and the obs/control/reward modes",
                       description="List registered tasks (built-in and entry-point plugins) and modes.")
    p.set_defaults(func=cmd_list)
