"""The time-to-solve table of docs/learning.md, from the run logs here.

    python examples/results/table.py            # markdown table on stdout
    python examples/results/table.py --check docs/learning.md

Every directory beside this file with a log.json (written by robosim.rollout.RunLog:
examples/ppo.py, examples/sac.py, sb3_reach.py) is one row. --check exits 1 when a file
does not contain the table exactly as printed (the docs test runs it).
"""
from __future__ import annotations

import argparse
import json
import os
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
        return "built-in PPO"
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


def reward(name: str, config: dict) -> str:
    """The reward mode, with the sparse convention the run was logged under."""
    mode = config.get("reward_mode", "dense")
    if mode != "sparse":
        return mode
    return "sparse 1/0 (old)" if name in SPARSE_ONE_ZERO else "sparse -1/0"


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
        "robot": config.get("robot") or "panda",
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


def table(results_dir: str = HERE) -> str:
    """Markdown table, one row per run directory, ordered by task, robot, learner."""
    rows = []
    for name in sorted(os.listdir(results_dir)):
        path = os.path.join(results_dir, name, "log.json")
        if os.path.isfile(path):
            with open(path) as f:
                rows.append(row(name, json.load(f)))
    order = {"Reach-v1": 0, "PushCube-v1": 1, "PickCube-v1": 2, "StackCube-v1": 3}
    rows.sort(key=lambda r: (order.get(r["task"], 9), r["robot"] != "panda", r["robot"],
                             not r["learner"].startswith("built-in"), r["learner"], r["reward"]))
    lines = ["| " + " | ".join(title for _, title in COLUMNS) + " |",
             "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(r[key] for key, _ in COLUMNS) + " |" for r in rows]
    machines = sorted({r["machine"] for r in rows})
    lines += ["", f"Ran on: {'; '.join(machines)}."]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", nargs="*", metavar="FILE", help="files that must contain the table verbatim")
    args = p.parse_args(argv)
    text = table()
    if args.check is None:
        print(text)
        return 0
    stale = [path for path in args.check if text not in open(path).read()]
    for path in stale:
        print(f"{path} does not contain the current table; paste the output of "
              f"`python examples/results/table.py` into it", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
