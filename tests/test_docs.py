"""The task-writing guide's first example runs as printed and behaves as it says."""
from __future__ import annotations

import os
import re

import torch

GUIDE = os.path.join(os.path.dirname(__file__), "..", "docs", "writing-tasks.md")


def test_writing_tasks_first_example_runs():
    text = open(GUIDE, encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks and "register_task(\"LiftCube-v1\")" in blocks[0], "the guide's first example moved"
    namespace: dict = {}
    exec(compile(blocks[0], "writing-tasks.md", "exec"), namespace)
    env = namespace["env"]
    try:
        cube = env.task.cube.pose()
        assert cube.shape == (8, 7) and (cube[:, :2].abs() <= 0.1 + 1e-6).all()
        reward = namespace["reward"]
        assert reward.shape == (8,) and (reward <= 0).all()
        assert env.single_observation_space.shape[0] == namespace["obs"].shape[1]
        assert torch.equal(namespace["info"]["success"], torch.zeros(8, dtype=torch.bool))
    finally:
        env.close()


def test_randomized_task_example_runs_under_60_lines():
    import subprocess
    import sys

    path = os.path.join(os.path.dirname(__file__), "..", "examples", "randomized_task.py")
    assert sum(1 for _ in open(path, encoding="utf-8")) < 60
    result = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    match = re.search(r"events: \[(.*)\]; env 0 pushed at steps \[(.*)\]", result.stdout)
    assert match, result.stdout
    assert "'grip'" not in match.group(1) and "'push'" in match.group(1)   # the user removed one event
    steps = [int(s) for s in match.group(2).split(",")]
    assert all(20 <= b - a <= 40 for a, b in zip([0] + steps, steps))      # 1-2 s at 20 Hz


def test_writing_tasks_event_example_runs():
    text = open(GUIDE, encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    example = [b for b in blocks if "randomization={" in b]
    assert len(example) == 1
    namespace: dict = {"robosim": __import__("robosim")}
    exec(compile(example[0], "writing-tasks.md", "exec"), namespace)
    env = namespace["env"]
    try:
        assert set(env.randomization.spec) == {"cube_mass", "cube_paint", "gains", "lights", "shove"}
        env.reset(seed=0)
        masses = [b.mass for b in env.task.cube.bodies]
        assert len(set(masses)) == 16 and 0.02 <= min(masses) and max(masses) <= 0.3
        for _ in range(100):
            env.step(None)
        shoves = [e["env"] for e in env.randomization.log if e["event"] == "shove"]
        assert shoves and set(shoves) <= {0, 1, 2, 3}
    finally:
        env.close()
