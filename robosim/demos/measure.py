"""Measure the demo factory over every registered task: the tables of docs/imitation.md.

    python -m robosim.demos.measure yield --num 50 --json yield.json
    python -m robosim.demos.measure convert --num 50 --json convert.json
    python -m robosim.demos.measure timing --task PickCube-v1 --num 1000 --runs 3
    python -m robosim.demos.measure failures --task PushCube-v1 --robot xarm7 --num 100

yield: for each task, its default robot and every other registered robot whose
capabilities meet the task's `requires` (robosim.envs.task.robots_for_task; --robot
picks some), `generate_demos` of --num demos; prints kept, tried and yield, then a
tasks x robots markdown table. convert: --num demos per task (default robot),
converted to each other control mode and from pd_joint_pos back to pd_ee_delta_pose;
prints success % and median final pose/state errors. timing: wall time of
`generate_demos` for --num demos, median of --runs runs. failures: --num scripted
episodes of one task and robot (seeds 0, 1, ...); for each failed one, how it ended,
the scripted policy's phase then and the tcp's distance from the robot base. Files go to a temporary
directory that is deleted afterwards.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile

import numpy as np

from robosim.agents import CONTROL_MODES, get_robot_spec
from robosim.core.atomic import write_bytes_atomic
from robosim.demos.convert import convert_demos
from robosim.demos.generate import generate_demos
from robosim.envs import get_task, list_tasks, make
from robosim.envs.task import robots_for_task


def robots_of(task: str) -> list[str]:
    """The task's default robot first, then the other registered robots that have what
    the task needs."""
    cls = get_task(task)
    if getattr(cls, "robot_slots", None):   # several robots: their defaults, as one row
        return [cls.default_robot]
    return [cls.default_robot] + [r for r in robots_for_task(cls) if r != cls.default_robot]


def measure_yield(num: int, num_envs: int, tasks: list[str], tmp: str, robots: list[str] | None = None) -> list[dict]:
    rows = []
    for task in tasks:
        for robot in [r for r in robots_of(task) if robots is None or r in robots]:
            modes = get_robot_spec(robot).control_modes
            mode = get_task(task).default_control_mode
            mode = mode if mode in modes else "pd_ee_delta_pos"   # e.g. 5-DOF arms: no orientation control
            try:
                report = generate_demos(task, num, os.path.join(tmp, "y.h5"), robot=robot, control_mode=mode,
                                        num_envs=num_envs)
            except (ValueError, NotImplementedError) as err:   # a robot the task cannot build with
                rows.append(dict(task=task, robot=robot, control_mode=mode, error=str(err)))
            else:
                rows.append(dict(task=task, robot=robot, control_mode=mode, kept=report.kept, tried=report.tried,
                                 successes=report.successes, cap_hit=report.cap_hit, seconds=report.seconds))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def yield_table(rows: list[dict]) -> str:
    """Markdown table of measure_yield's rows: tasks down, robots across, each cell
    "successes/tried (control mode)"; "-" for a pair not measured (the robot lacks what
    the task needs, or was not asked for)."""
    robots = sorted({r["robot"] for r in rows})
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    cell = {}
    for r in rows:
        short = r["control_mode"].replace("pd_ee_delta_", "")
        cell[r["task"], r["robot"]] = (f"error ({short})" if "error" in r else
                                       f"{r['successes']}/{r['tried']} ({short})")
    lines = ["| task | " + " | ".join(robots) + " |", "|---" * (len(robots) + 1) + "|"]
    lines += [f"| {t} | " + " | ".join(cell.get((t, rb), "-") for rb in robots) + " |" for t in tasks]
    return "\n".join(lines)


def measure_convert(num: int, num_envs: int, tasks: list[str], tmp: str) -> list[dict]:
    rows = []
    for task in tasks:
        src = os.path.join(tmp, "src.h5")
        generate_demos(task, num, src, num_envs=num_envs)
        source_mode = get_task(task).default_control_mode
        plan = [(src, m) for m in CONTROL_MODES if m != source_mode] + [(os.path.join(tmp, "pd_joint_pos.h5"),
                                                                         source_mode)]
        for path, mode in plan:
            report = convert_demos(path, os.path.join(tmp, f"{mode}.h5"), mode)
            rows.append(dict(task=task, source=report.from_mode, target=mode, episodes=len(report.success),
                             success=sum(report.success), median_pose_error=float(np.median(report.final_pose_error)),
                             median_state_error=float(np.median(report.final_error)), seconds=report.seconds))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def measure_timing(task: str, num: int, num_envs: int, runs: int, tmp: str) -> list[dict]:
    rows = []
    for run in range(runs):
        report = generate_demos(task, num, os.path.join(tmp, f"t{run}.h5"), num_envs=num_envs, progress=True)
        rows.append(dict(task=task, num=num, num_envs=num_envs, seconds=report.seconds, tried=report.tried))
        print(json.dumps(rows[-1]), flush=True)
    print(f"median of {runs}: {statistics.median(r['seconds'] for r in rows):.1f} s", flush=True)
    return rows


def measure_failures(task: str, robot: str | None, num: int, num_envs: int) -> list[dict]:
    import torch

    spec = get_robot_spec(robot or get_task(task).default_robot)
    mode = get_task(task).default_control_mode
    mode = mode if mode in spec.control_modes else "pd_ee_delta_pos"
    env = make(task, num_envs=num_envs, robot=spec.name, control_mode=mode, obs_mode="none",
                       physics_isolation="separate", seed=0)
    policy = env.task.solution_policy()
    seeds = list(range(num_envs))
    env.reset(seed=seeds)
    rows, ended, next_seed = [], 0, num_envs
    while ended < num:
        _, _, terminated, truncated, info = env.step(policy())
        done = (terminated | truncated).nonzero().flatten().tolist()
        if not done:
            continue
        tcp = env.robot.tcp_pose()[:, :3].cpu()
        for i in done[:num - ended]:
            if not bool(info["success"][i]):
                rows.append(dict(task=task, robot=spec.name, seed=seeds[i], fail=bool(info["fail"][i]),
                                 phase=int(policy.phase[i]), tcp=[round(v, 3) for v in tcp[i].tolist()],
                                 tcp_from_base=round(float((tcp[i] - env.robot.base_position).norm()), 3)))
                print(json.dumps(rows[-1]), flush=True)
        ended += len(done)
        for i in done:
            seeds[i], next_seed = next_seed, next_seed + 1
        env.reset(seed=[seeds[i] for i in done], options={"env_idx": torch.tensor(done)})
    env.close()
    print(f"{task} {spec.name}: {len(rows)} of {num} episodes failed", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m robosim.demos.measure", description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["yield", "convert", "timing", "failures"])
    p.add_argument("--num", type=int, default=50, help="demos per task (default: 50)")
    p.add_argument("--num-envs", type=int, default=4, help="parallel envs (default: 4)")
    p.add_argument("--task", action="append", default=None, help="task id (repeatable; default: every task)")
    p.add_argument("--robot", action="append", default=None,
                   help="yield: only these robots (repeatable); failures: the robot (default: the task's)")
    p.add_argument("--runs", type=int, default=3, help="timing runs (default: 3)")
    p.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = p.parse_args(argv)
    tasks = args.task or list_tasks()
    with tempfile.TemporaryDirectory() as tmp:
        if args.what == "yield":
            rows = measure_yield(args.num, args.num_envs, tasks, tmp, args.robot)
            print(yield_table(rows), flush=True)
        elif args.what == "convert":
            rows = measure_convert(args.num, args.num_envs, tasks, tmp)
        elif args.what == "failures":
            rows = measure_failures(tasks[0], (args.robot or [None])[0], args.num, args.num_envs)
        else:
            rows = measure_timing(tasks[0], args.num, args.num_envs, args.runs, tmp)
    if args.json:
        write_bytes_atomic(args.json, json.dumps(rows, indent=1).encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
