"""Every published task has a run log and a curve, and every logged command is one the
learner scripts still accept (so anyone can rerun it). That docs/learning.md holds the
table examples/results/table.py prints is tests/test_docs.py's check."""
from __future__ import annotations

import glob
import importlib.util
import json
import os
import shlex

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
RESULTS = os.path.join(ROOT, "examples", "results")


def test_results_cover_the_published_tasks_with_curves():
    runs = {}
    for path in glob.glob(os.path.join(RESULTS, "*", "log.json")):
        with open(path) as f:
            runs[os.path.basename(os.path.dirname(path))] = json.load(f)["config"]
        assert os.path.isfile(os.path.join(os.path.dirname(path), "curve.png")), path
    tasks = {(c.get("task", "Reach-v1"), c.get("robot") or "panda") for c in runs.values()}
    for wanted in [("Reach-v1", "panda"), ("PushCube-v1", "panda"), ("PickCube-v1", "panda"),
                   ("StackCube-v1", "panda"), ("Reach-v1", "xarm7"), ("PushCube-v1", "xarm7")]:
        assert wanted in tasks, f"no run log for {wanted}; have {sorted(tasks)}"


def test_logged_commands_parse_with_the_current_scripts():
    for path in glob.glob(os.path.join(RESULTS, "*", "log.json")):
        with open(path) as f:
            command = shlex.split(json.load(f)["config"]["command"])
        assert command[0] == "python" and os.path.isfile(os.path.join(ROOT, command[1])), command
        spec = importlib.util.spec_from_file_location("learner_script", os.path.join(ROOT, command[1]))
        script = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(script)
        script.parse_args(command[2:])   # argparse exits (SystemExit) on a flag it no longer knows
