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
