"""The step path makes no explicit host copy: on physx_cuda every `.item()`, `.tolist()`,
`.numpy()` or `.cpu()` there would stall the GPU once per control step.

The step path is BaseEnv.step and what it calls: the env's evaluation, observation and
reward methods, the robot's action/FK methods, the controllers and the chain's torch
evaluation, the per-step fault monitor, and every task's per-step hooks. Within each
listed class, methods reached through `self.<name>(...)` calls are followed too.

The robot's math runs in the step-math body chosen once per device at load time
(robosim.agents.step_math): TorchBody on a GPU, whose methods are on the step path
here, and NumpyBody, which `step_math` hands out only under a CPU guard (checked
below), so its `.numpy()` (shared memory) is exempt. The robot, its controllers and its
chain hold no numpy-or-torch branch of their own. (Implicit syncs such as `if
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
STEP_MATH_FILE = "robosim/agents/step_math.py"
STEP_PATH += [
    ("robosim/agents/kinematics.py", "SerialChain", ["values_torch", "jacobian_of"]),
    (STEP_MATH_FILE, "StepMath", ["tcp_pose"]),
    (STEP_MATH_FILE, "TorchBody", ["array", "tensor", "keep", "same_bits", "float64", "float32", "cat", "clamp",
                                   "damped_least_squares", "chain_values", "drive_targets"]),
]
CPU_ONLY_BODY = "NumpyBody"   # exempt: step_math returns it only on the CPU (test below)
CONTROLLER_FILE = "robosim/agents/controllers.py"
# the robot's step math, which must hold no numpy-or-torch branch (the body decides)
BODY_USERS = ["robosim/agents/robot.py", CONTROLLER_FILE, "robosim/agents/kinematics.py"]
TASK_HOOKS = ["evaluate", "dense_reward", "sparse_reward", "task_observations", "achieved_goal", "desired_goal",
              "before_control_step", "after_control_step"]


def _is_cpu_guard(test: ast.AST) -> bool:
    """`<x>.type == "cpu"`: a branch that only runs on the CPU backend."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Attribute) and test.left.attr == "type"
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "cpu")


def host_copies(func: ast.AST) -> list[str]:
    """`name@line` of every .item()/.tolist()/.numpy()/.cpu() call inside func."""
    return [f"{node.func.attr}()@{node.lineno}" for node in ast.walk(func)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in HOST_COPIES]


def kind_branches(func: ast.AST) -> list[str]:
    """`what@line` of every numpy-or-torch decision inside func: a `<x>.type == "cpu"`
    comparison or an isinstance(..., np.ndarray) test."""
    found = []
    for node in ast.walk(func):
        if isinstance(node, ast.Compare) and _is_cpu_guard(node):
            found.append(f"device.type@{node.lineno}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
                and "ndarray" in ast.unparse(node.args[1])):
            found.append(f"isinstance@{node.lineno}")
    return found


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
    branchy = ast.parse("def f(x):\n    if x.device.type == 'cpu':\n        x = x.numpy()\n"
                        "    if isinstance(x, np.ndarray):\n        x = 1\n    if x.device.type == 'cuda':\n"
                        "        x = 2\n    return x\n")
    assert host_copies(branchy) == ["numpy()@3"]     # a CPU guard exempts nothing any more
    assert kind_branches(branchy) == ["device.type@2", "isinstance@4"]
    methods = _methods(ast.parse("class A:\n    def step(self):\n        self.g()\n    def g(self):\n"
                                 "        return 1\n    def h(self):\n        return 2\n"), "A")
    assert reached(methods, ["step"]) == ["step", "g"]


@pytest.mark.parametrize("file,cls,method", CASES, ids=[f"{f}::{c}.{m}" for f, c, m in CASES])
def test_step_path_makes_no_host_copy(file, cls, method):
    tree = ast.parse((ROOT / file).read_text())
    assert host_copies(_methods(tree, cls)[method]) == []


def test_the_numpy_body_is_chosen_only_on_the_cpu():
    """Every place step_math hands out a NumpyBody is inside a CPU guard."""
    tree = ast.parse((ROOT / STEP_MATH_FILE).read_text())
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "step_math")
    guarded: set[int] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.If) and _is_cpu_guard(node.test):
            guarded |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    numpy_returns = [n for n in ast.walk(func) if isinstance(n, ast.Return) and "NUMPY" in ast.unparse(n)]
    assert numpy_returns and all(id(n) in guarded for n in numpy_returns)
    assert CPU_ONLY_BODY not in {c for _, c, _ in CASES}


@pytest.mark.parametrize("file", BODY_USERS)
def test_the_robot_s_step_math_leaves_numpy_or_torch_to_the_body(file):
    tree = ast.parse((ROOT / file).read_text())
    methods = [f"{cls.name}.{m.name}: {b}" for cls in tree.body if isinstance(cls, ast.ClassDef)
               for m in cls.body if isinstance(m, ast.FunctionDef) for b in kind_branches(m)]
    assert methods == []
