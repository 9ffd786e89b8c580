"""The public API (docs/api.md): the names it lists import and match each package's
`__all__`; every name that moved since robosim 0.1.0 still imports from its old path,
as the object at its new home, with a DeprecationWarning naming both paths; a task
registered under a built-in task's id warns naming both classes."""
from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import robosim

API_DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"

# What a user's task files of 2026-11-23 imported (git show 3b10817:tasks/common.py,
# b52e46b^:tasks/scripted.py, 3b10817:robosim/agents/kinematics.py) and where each
# object lives now.
MOVED = [
    ("robosim_tasks.scripted", "PhasePolicy", "robosim.envs.solutions"),
    ("robosim_tasks.scripted", "PickAndPlacePolicy", "robosim.envs.solutions"),
    ("robosim_tasks.scripted", "ee_action", "robosim.envs.solutions"),
    ("robosim_tasks.scripted", "grasp_rotation", "robosim.envs.solutions"),
    ("robosim_tasks.scripted", "quat_yaw", "robosim.core.rotations"),
    ("robosim_tasks.common", "quat_yaw", "robosim.core.rotations"),
    ("robosim_tasks.common", "yaw_quat", "robosim.core.rotations"),
    ("robosim.envs.solutions", "yaw_quat", "robosim.core.rotations"),
    *(("robosim.agents.kinematics", name, "robosim.core.rotations") for name in (
        "rpy_to_matrix", "axis_angle_matrix", "matmul3", "matvec3", "matrix_to_quat", "quat_to_matrix",
        "rotation_log")),
]


@pytest.mark.parametrize("old_module, name, new_module", MOVED)
def test_moved_name_imports_from_its_old_path_with_a_warning(old_module, name, new_module):
    namespace: dict = {}
    message = rf"^{re.escape(old_module)}\.{name} moved to {re.escape(new_module)}\.{name}; .* robosim 0\.3\.0"
    with pytest.warns(DeprecationWarning, match=message) as record:
        exec(f"from {old_module} import {name}", namespace)   # the user's own line
    assert namespace[name] is getattr(importlib.import_module(new_module), name)
    assert record[0].filename == "<string>"   # attributed to the importing line, not to robosim


def test_old_modules_import_without_warning_and_refuse_unknown_names():
    # A fresh interpreter: in this one the modules may already be imported.
    code = ("import robosim_tasks.scripted, robosim_tasks.common, robosim.agents.kinematics\n"
            "from robosim.agents.kinematics import SerialChain\n"
            "from robosim_tasks.common import place_on_ground\n")
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    scripted = importlib.import_module("robosim_tasks.scripted")
    with pytest.raises(AttributeError, match="'robosim_tasks.scripted' has no attribute 'PhasePolicies'"):
        scripted.PhasePolicies   # noqa: B018


def documented() -> dict[str, list[str]]:
    """{module: names} from docs/api.md's '- `module`...: `name`, `name`' lines."""
    found = {}
    for line in API_DOC.read_text(encoding="utf-8").splitlines():
        match = re.match(r"- `([\w.]+)`[^:]*: (`.*`)$", line)
        if match:
            found[match.group(1)] = re.findall(r"`(\w+)`", match.group(2))
    return found


def test_the_documented_names_are_the_exported_ones():
    modules = documented()
    assert {"robosim", "robosim.envs", "robosim.vector", "robosim.envs.solutions", "robosim.core.rotations"} <= set(
        modules), "docs/api.md's module lines moved"
    for module_name, names in modules.items():
        module = importlib.import_module(module_name)
        missing = [n for n in names if not hasattr(module, n)]
        assert not missing, f"docs/api.md lists {missing} in {module_name}, which has no such attribute"
        exported = getattr(module, "__all__", None)
        if exported is not None:
            extra, unlisted = sorted(set(names) - set(exported)), sorted(set(exported) - set(names))
            assert not extra and not unlisted, (f"docs/api.md must list exactly {module_name}.__all__: documented "
                                                f"but not exported {extra}, exported but not documented {unlisted}")


@pytest.fixture
def restore_pick_cube():
    """Put PickCube-v1 back as the registry had it (the entry point's class)."""
    from robosim.envs.registry import TASKS

    before = TASKS.entries.get("PickCube-v1")
    yield
    if before is None:
        TASKS.entries.pop("PickCube-v1", None)
    else:
        TASKS.entries["PickCube-v1"] = before


def test_a_user_task_shadowing_a_builtin_id_warns_naming_both(restore_pick_cube):
    builtin = robosim.get_task("PickCube-v1")

    class MyPickCube(robosim.Task):
        """The user's own task under a built-in id."""

    with pytest.warns(UserWarning) as record:
        robosim.register_task("PickCube-v1")(MyPickCube)
    text = str(record[0].message)
    assert "'PickCube-v1'" in text
    assert f"{__name__}:test_a_user_task_shadowing_a_builtin_id_warns_naming_both.<locals>.MyPickCube" in text
    assert "robosim_tasks.pick_cube:PickCubeTask" in text and builtin.__qualname__ == "PickCubeTask"
    assert record[0].filename == __file__   # the registering line
    assert robosim.get_task("PickCube-v1") is MyPickCube   # the user's registration wins in this process


def test_registering_the_builtin_class_again_or_a_new_id_does_not_warn(restore_pick_cube):
    builtin = robosim.get_task("PickCube-v1")

    class MyTask(robosim.Task):
        """A task under an id of its own."""

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        robosim.register_task("PickCube-v1")(builtin)
        robosim.register_task("PublicApiTestOwn-v1")(MyTask)
    import gymnasium as gym

    from robosim.envs.registry import TASKS

    TASKS.entries.pop("PublicApiTestOwn-v1")
    gym.registry.pop("robosim/PublicApiTestOwn-v1")


def test_call_forms_of_0_1_0_still_work_and_warn():
    """0.1.0's scripted-policy code passed the env: PhasePolicy(env), ee_action(env, ...),
    is_grasped(robot, qpos, ...). Each still answers as the new form does, with a warning."""
    from robosim.envs import solutions

    env = robosim.make("PickCube-v1", num_envs=2)
    try:
        env.reset(seed=0)
        policy_class = type(env.task.solution_policy())
        with pytest.warns(DeprecationWarning, match=r"\(env\) is deprecated: call .*\(env\.task\)"):
            old = policy_class(env)
        assert old.task is env.task
        assert torch.equal(old(), policy_class(env.task)())
        target = env.task.robot.tcp_pose()[:, :3] + 0.05
        gripper = torch.ones(2)
        with pytest.warns(DeprecationWarning, match=r"ee_action\(env, \.\.\.\) is deprecated"):
            action = solutions.ee_action(env, target, None, gripper)
        assert torch.equal(action, solutions.ee_action(env.task.robot, target, None, gripper))
        cube = env.task.cube.pose()[:, :3]
        with pytest.warns(DeprecationWarning, match="is_between_jaws"):
            grasped = solutions.is_grasped(env.task.robot, env.task.robot.qpos, cube, 0.02)
        assert torch.equal(grasped, env.task.robot.is_between_jaws(cube, 0.02))
        with pytest.raises(TypeError, match="task must be a robosim.envs.task.Task, got int"):
            policy_class(3)
    finally:
        env.close()
