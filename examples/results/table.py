"""The time-to-solve table of docs/learning.md, from the run logs here.

    python examples/results/table.py            # markdown table on stdout
    python examples/results/table.py --check docs/learning.md
    python examples/results/table.py --tasks    # one row per built-in task (tasks.json)

Every directory beside this file with a log.json (written by robosim.rollout.RunLog:
examples/ppo.py, examples/sac.py, sb3_reach.py) is one row. Runs whose commands differ
only in --seed and --out form a seed group; a second table gives each group of two or
more seeds the median and range of env steps and wall time to >= 90%, the lowest eval
success after that over all seeds, and the highest 1-minute load average logged during
the runs (to tell runs alone on the machine from shared ones). --check exits 1 when a
file does not contain the tables exactly as printed (the docs test runs it).

--tasks prints instead the one-row-per-task table of examples/results/tasks.json (the
best recorded recipe of each built-in task, its seeds, env steps and wall time to >= 90%,
or how far it got and what limits it); tests/test_sac_results_table.py checks it
against the run logs it names and docs/learning.md against its output.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LEVEL = 0.9
# runs logged before commit deb0570, when reward_mode="sparse" paid 1 on success and 0
# otherwise; since then it pays -1 per step and 0 on success (panda-gym's convention)
SPARSE_ONE_ZERO = {"reach_ppo_sparse", "push_ppo_sparse", "reach_sb3_ppo_sparse",
                   "reach_sb3_sac_her_defaults_sparse", "reach_sb3_sac_her_zoo_sparse"}


def learner(config: dict) -> str:
    """The learner's name from the command that ran it."""
    command = config["command"]
    if "examples/ppo.py" in command:
        if not config.get("demos"):
            return "built-in PPO"
        counts = ("" if "demo_episodes" not in config else   # logged before the counts were
                  f" ({config['demo_episodes']} scripted demos, {config['demo_env_steps']:,} env steps)")
        return "built-in PPO + demo term" + counts
    if "examples/sac.py" in command:
        return "built-in SAC+HER" if config.get("her_ratio_used") else "built-in SAC"
    name = "SB3 PPO" if config.get("algo") == "ppo" else "SB3 SAC+HER"
    if config.get("algo") == "sac-her":
        name += ", zoo hparams" if config.get("hparams") == "zoo" else ", SB3 defaults"
    return name


def reached(evals: list[dict], level: float) -> str:
    """"env steps (wall s)" of the first evaluation at >= level, or "-"."""
    hit = next((r for r in evals if r["eval_success"] >= level), None)
    return "-" if hit is None else f"{hit['env_steps']:,} ({hit['wall_s']:,.0f} s)"


# StackCube-v1 runs logged before its dense reward paid for opening the jaws over cube B
# and for holding cube A still there (before that, holding A over B paid as much as
# letting it go)
STACK_HOLD_EQUALS_RELEASE = {"stack_ppo_dense"}


def reward(name: str, config: dict) -> str:
    """The reward mode, with the sparse convention or dense version the run was logged under."""
    mode = config.get("reward_mode", "dense")
    if mode != "sparse":
        return "dense (old: holding = letting go)" if name in STACK_HOLD_EQUALS_RELEASE else mode
    return "sparse 1/0 (old)" if name in SPARSE_ONE_ZERO else "sparse -1/0"


def robot_name(config: dict) -> str:
    """The robot a run used: its --robot, else its task's default (a multi-robot task's
    slots as "slot: robot" pairs)."""
    if config.get("robot"):
        return config["robot"]
    from robosim.envs.registry import get_task
    from robosim.envs.robots import resolved_robot

    robot = resolved_robot(get_task(config.get("task", "Reach-v1")), None)
    return robot if isinstance(robot, str) else ", ".join(f"{slot}: {name}" for slot, name in robot.items())


def row(name: str, doc: dict) -> dict:
    """One table row (strings) from a log.json document."""
    config = doc["config"]
    evals = [r for r in doc["rows"] if r.get("eval_success") is not None]
    first = next((i for i, r in enumerate(evals) if r["eval_success"] >= LEVEL), None)
    last = evals[-1]
    if first is None:
        best = max(evals, key=lambda r: r["eval_success"])
        steps = (f"not reached (best {best['eval_success']:.2f} at {best['env_steps']:,})"
                 if best["eval_success"] > 0 else "not reached (never above 0.00)")
        wall = after = "-"
    else:
        steps, wall = f"{evals[first]['env_steps']:,}", f"{evals[first]['wall_s']:,.0f} s"
        after = f"{min(r['eval_success'] for r in evals[first:]):.2f}"
    machine = config.get("machine", {})
    return {
        "task": config.get("task", "Reach-v1"),
        "robot": robot_name(config),
        "learner": learner(config),
        "reward": reward(name, config),
        "envs": str(config["num_envs"]),
        "steps": steps,
        "wall": wall,
        "after": after,
        "end": f"{last['eval_success']:.2f} at {last['env_steps']:,} ({last['wall_s']:,.0f} s)",
        "steps95": reached(evals, 0.95),
        "logs": f"`examples/results/{name}`",
        "command": f"`{config['command']}`",
        "machine": f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, torch {machine.get('torch', '?')}",
    }


COLUMNS = [("task", "task"), ("robot", "robot"), ("learner", "learner"), ("reward", "reward"),
           ("envs", "envs"), ("steps", f"env steps to >= {LEVEL:.0%} eval success"),
           ("wall", f"wall time to >= {LEVEL:.0%}"), ("after", "lowest eval success after that"),
           ("steps95", "env steps (wall) to >= 95%"),
           ("end", "end of run"), ("logs", "logs"), ("command", "command")]


def seed_key(command: str) -> tuple[str, int | None]:
    """(the command without its --seed and --out values, the seed)."""
    words, kept, seed = shlex.split(command), [], None
    skip = False
    for k, word in enumerate(words):
        if skip:
            skip = False
        elif word in ("--seed", "--out"):
            skip = True
            if word == "--seed":
                seed = int(words[k + 1])
        else:
            kept.append(word)
    return " ".join(kept), seed


def span(values: list, fmt) -> str:
    """'median [min, max]' of `values` formatted by `fmt`, or '-' when there are none."""
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}, {fmt(max(values))}]" if values else "-"


def seed_rows(runs: dict[str, dict]) -> list[dict]:
    """One row per seed group of >= 2 runs (see the module docstring)."""
    groups: dict[str, list[tuple[int, str, dict]]] = {}
    for name, doc in runs.items():
        key, seed = seed_key(doc["config"]["command"])
        if seed is not None:
            groups.setdefault(key, []).append((seed, name, doc))
    out = []
    for key, members in groups.items():
        if len(members) < 2:
            continue
        members.sort()
        steps, walls, after, loads = [], [], [], []
        for _, _, doc in members:
            evals = [r for r in doc["rows"] if r.get("eval_success") is not None]
            first = next((i for i, r in enumerate(evals) if r["eval_success"] >= LEVEL), None)
            if first is not None:
                steps.append(evals[first]["env_steps"])
                walls.append(evals[first]["wall_s"])
                after.append(min(r["eval_success"] for r in evals[first:]))
            loads += [r["load_1min"] for r in evals if r.get("load_1min") is not None]
        base = row(members[0][1], members[0][2])
        out.append({
            "task": base["task"], "robot": base["robot"], "learner": base["learner"], "reward": base["reward"],
            "seeds": ", ".join(str(s) for s, _, _ in members),
            "reached": f"{len(steps)} of {len(members)}",
            "steps": span(steps, lambda v: f"{v:,.0f}"),
            "wall": span(walls, lambda v: f"{v:,.0f} s"),
            "after": f"{min(after):.2f}" if after else "-",
            "load": f"{max(loads):.2f}" if loads else "not logged",
            "logs": ", ".join(f"`examples/results/{n}`" for _, n, _ in members),
            "command": f"`{key} --seed S --out DIR`",
        })
    return out


SEED_COLUMNS = [("task", "task"), ("robot", "robot"), ("learner", "learner"), ("reward", "reward"),
                ("seeds", "seeds"), ("reached", f"seeds reaching >= {LEVEL:.0%}"),
                ("steps", "env steps to >= 90%: median [min, max]"), ("wall", "wall time to >= 90%: median [min, max]"),
                ("after", "lowest eval success after that, any seed"), ("load", "highest 1-min load average logged"),
                ("logs", "logs"), ("command", "command")]


def _markdown(rows: list[dict], columns: list[tuple[str, str]]) -> list[str]:
    lines = ["| " + " | ".join(title for _, title in columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    return lines + ["| " + " | ".join(r[key] for key, _ in columns) + " |" for r in rows]


def table(results_dir: str = HERE) -> str:
    """Markdown tables: one row per run directory ordered by task, robot, learner; then
    one row per seed group."""
    runs = {}
    for name in sorted(os.listdir(results_dir)):
        path = os.path.join(results_dir, name, "log.json")
        if os.path.isfile(path):
            with open(path) as f:
                runs[name] = json.load(f)
    rows = [row(name, doc) for name, doc in runs.items()]
    order = {"Reach-v1": 0, "PushCube-v1": 1, "PickCube-v1": 2, "StackCube-v1": 3}
    rows.sort(key=lambda r: (order.get(r["task"], 9), r["robot"] != "panda", r["robot"],
                             not r["learner"].startswith("built-in"), r["learner"], r["reward"]))
    lines = _markdown(rows, COLUMNS)
    machines = sorted({r["machine"] for r in rows})
    lines += ["", f"Ran on: {'; '.join(machines)}."]
    groups = seed_rows(runs)
    if groups:
        groups.sort(key=lambda r: (order.get(r["task"], 9), r["robot"], r["learner"], r["reward"]))
        lines += ["", "Seed groups:", ""] + _markdown(groups, SEED_COLUMNS)
    return "\n".join(lines)


TASK_COLUMNS = [("task", "task"), ("recipe", "recipe"), ("seeds", "seeds"), ("reached", "seeds reaching >= 90%"),
                ("to_level", "env steps and wall time to >= 90%"), ("otherwise", "how far otherwise"),
                ("limit", "what limits it"), ("source", "source")]


def tasks_table(path: str = os.path.join(HERE, "tasks.json")) -> str:
    """The markdown table of tasks.json's rows, in file order."""
    with open(path) as f:
        rows = json.load(f)["rows"]
    return "\n".join(_markdown(rows, TASK_COLUMNS))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", nargs="*", metavar="FILE", help="files that must contain the table verbatim")
    p.add_argument("--tasks", action="store_true", help="the one-row-per-task table of tasks.json instead")
    args = p.parse_args(argv)
    text = tasks_table() if args.tasks else table()
    if args.check is None:
        print(text)
        return 0
    stale = [path for path in args.check if text not in open(path).read()]
    for path in stale:
        print(f"{path} does not contain the current table; paste the output of "
              f"`python examples/results/table.py{' --tasks' if args.tasks else ''}` into it", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
