"""The docs' examples run as printed and behave as they say, the tables moved out of the
README are the ones the code prints, and every relative link resolves."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import pytest
import torch

ROOT = os.path.join(os.path.dirname(__file__), "..")
GUIDE = os.path.join(ROOT, "docs", "writing-tasks.md")


def python_blocks(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)


def test_writing_tasks_first_example_runs():
    blocks = python_blocks(GUIDE)
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


@pytest.mark.slow   # runs the example script: ~12 s
def test_randomized_task_example_removes_an_event_and_pushes_on_its_timer():
    path = os.path.join(ROOT, "examples", "randomized_task.py")
    result = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    match = re.search(r"events: \[(.*)\]; env 0 pushed at steps \[(.*)\]", result.stdout)
    assert match, result.stdout
    assert "'grip'" not in match.group(1) and "'push'" in match.group(1)   # the user removed one event
    steps = [int(s) for s in match.group(2).split(",")]
    assert all(20 <= b - a <= 40 for a, b in zip([0] + steps, steps))      # 1-2 s at 20 Hz


def test_writing_tasks_event_example_runs():
    example = [b for b in python_blocks(GUIDE) if "randomization={" in b]
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


def test_writing_tasks_term_example_runs():
    example = [b for b in python_blocks(GUIDE) if "register_term" in b]
    assert len(example) == 1
    namespace: dict = {}
    exec(compile(example[0], "writing-tasks.md", "exec"), namespace)
    env = namespace["env"]
    try:
        bias = namespace["obs"]["agent"]["qpos"] - env.robot.view.qpos()
        assert bias.shape == (4, env.robot.view.qpos().shape[1])
        assert (bias != 0).all() and bias.abs().max() < 0.1           # normal(0, 0.01) draws
    finally:
        env.close()


def test_using_guide_walkthrough_runs():
    usage = [b for b in python_blocks(os.path.join(ROOT, "docs", "using.md")) if b.startswith("import robosim, torch")]
    assert len(usage) == 1, "docs/using.md's walk-through moved or changed its first line"
    namespace: dict = {}
    exec(compile(usage[0], "using.md", "exec"), namespace)
    assert namespace["state"].shape[0] == 16 and namespace["state"].dtype == torch.float32
    assert namespace["reward"].shape == (16,)


def test_learning_doc_holds_the_table_printed_from_the_run_logs():
    printed = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "results", "table.py")],
                             capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr
    table = printed.stdout.strip()
    assert table.startswith("| task |") and table.count("\n|") >= 3
    with open(os.path.join(ROOT, "docs", "learning.md"), encoding="utf-8") as f:
        assert table in f.read(), "paste the output of `python examples/results/table.py` into docs/learning.md"


def anchors(path: str) -> set[str]:
    """GitHub's heading anchors of a markdown file (code blocks skipped)."""
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}


def test_every_relative_link_in_readme_and_docs_resolves():
    pages = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    broken = []
    for page in pages:
        with open(page, encoding="utf-8") as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue                                  # https:, mailto:
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(resolved):
                broken.append(f"{os.path.relpath(page, ROOT)}: {target} (no such file)")
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                broken.append(f"{os.path.relpath(page, ROOT)}: {target} (no such heading)")
    assert not broken, broken
