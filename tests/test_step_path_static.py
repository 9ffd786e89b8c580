"""The step path makes no explicit host copy: on physx_cuda every `.item()`, `.tolist()`,
`.numpy()` or `.cpu()` there would stall the GPU once per control step.

The step path is BaseEnv.step and what it calls: the env's evaluation, observation and
reward methods, the robot's action/FK methods and the controllers, the per-step fault
monitor, and every task's per-step hooks. Within each listed class, methods reached
through `self.<name>(...)` calls are followed too. The body of an `if on_cpu:` or
`if <x>.device.type == "cpu":` branch is exempt: there `.numpy()` shares memory and
never runs on a GPU. (Implicit syncs such as `if
tensor.any():` are not visible to a static check: tests/gpu runs a step under
torch.cuda.set_sync_debug_mode("error") for those.)
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOST_COPIES = {"item", "tolist", "numpy", "cpu"}

# (file, class or None for module level, entry functions)
STEP_PATH = [
    ("robosim/envs/base_env.py", "BaseEnv", ["step", "_evaluate", "_reward"]),
    ("robosim/envs/observations.py", "ObservationBuilder", ["build"]),
    ("robosim/envs/faults.py", "FaultMonitor", ["before_control_step", "after_control_step"]),
    ("robosim/agents/robot.py", "Robot", ["apply_action", "tcp_pose", "gripper_width", "arm_speed", "is_static",
                                          "is_between_jaws"]),
]
CONTROLLER_FILE = "robosim/agents/controllers.py"
TASK_HOOKS = ["evaluate", "dense_reward", "sparse_reward", "task_observations", "achieved_goal", "desired_goal",
              "before_control_step", "after_control_step"]


def _is_cpu_guard(test: ast.AST) -> bool:
    """`on_cpu` or `<x>.device.type == "cpu"`: a branch that only runs on the CPU backend."""
    if isinstance(test, ast.Name):
        return test.id == "on_cpu"
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Attribute) and test.left.attr == "type"
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "cpu")


def host_copies(func: ast.AST) -> list[str]:
    """`name@line` of every .item()/.tolist()/.numpy()/.cpu() call inside func, except in
    the body of an `if` guarded by `_is_cpu_guard` (there .numpy() shares memory)."""
    guarded: set[int] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.If) and _is_cpu_guard(node.test):
            guarded |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    return [f"{node.func.attr}()@{node.lineno}" for node in ast.walk(func)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in HOST_COPIES
            and id(node) not in guarded]


def _methods(tree: ast.Module, cls: str | None) -> dict[str, ast.FunctionDef]:
    body = tree.body
    if cls is not None:
        found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
        if not found:
            return {}
        body = found[0].body
    return {n.name: n for n in body if isinstance(n, ast.FunctionDef)}


def reached(methods: dict[str, ast.FunctionDef], entries: list[str]) -> list[str]:
    """Entries plus every method of the same class reached through self.<name>(...) calls."""
    seen, todo = [], [e for e in entries if e in methods]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        for node in ast.walk(methods[name]):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"
                    and node.func.attr in methods):
                todo.append(node.func.attr)
    return seen


def _cases() -> list[tuple[str, str, str]]:
    cases = []
    for file, cls, entries in STEP_PATH:
        methods = _methods(ast.parse((ROOT / file).read_text()), cls)
        cases += [(file, cls, m) for m in reached(methods, entries)]
    tree = ast.parse((ROOT / CONTROLLER_FILE).read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            methods = _methods(tree, node.name)
            cases += [(CONTROLLER_FILE, node.name, m) for m in reached(methods, ["targets"])]
    for path in sorted((ROOT / "tasks").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                methods = _methods(tree, node.name)
                rel = str(path.relative_to(ROOT))
                cases += [(rel, node.name, m) for m in reached(methods, TASK_HOOKS)]
    return cases


CASES = _cases()


def test_the_step_path_was_found():
    names = {(f, c, m) for f, c, m in CASES}
    assert ("robosim/envs/base_env.py", "BaseEnv", "step") in names
    assert any(f.startswith("tasks/") and m == "evaluate" for f, _, m in names)
    assert any(f == CONTROLLER_FILE for f, _, _ in names)


def test_the_checker_flags_host_copies():
    planted = ast.parse("def f(x):\n    a = x.sum().item()\n    return x.cpu().numpy().tolist(), a\n")
    assert sorted(c.split("@")[0] for c in host_copies(planted)) == ["cpu()", "item()", "numpy()", "tolist()"]
    guarded = ast.parse("def f(x, on_cpu):\n    if x.device.type == 'cpu':\n        x = x.numpy()\n"
                        "    if on_cpu:\n        x = x.numpy()\n    else:\n        x = x.cpu()\n"
                        "    if x.device.type == 'cuda':\n        x = x.numpy()\n    return x\n")
    assert host_copies(guarded) == ["cpu()@7", "numpy()@9"]
    methods = _methods(ast.parse("class A:\n    def step(self):\n        self.g()\n    def g(self):\n"
                                 "        return 1\n    def h(self):\n        return 2\n"), "A")
    assert reached(methods, ["step"]) == ["step", "g"]


@pytest.mark.parametrize("file,cls,method", CASES, ids=[f"{f}::{c}.{m}" for f, c, m in CASES])
def test_step_path_makes_no_host_copy(file, cls, method):
    tree = ast.parse((ROOT / file).read_text())
    assert host_copies(_methods(tree, cls)[method]) == []
