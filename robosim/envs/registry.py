"""Task registry: built-in and third-party tasks, found through the `robosim.tasks`
entry point group or registered in-process with `register_task`."""
from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import torch

from robosim.core.registry import Registry
from robosim.envs.task import Task

if TYPE_CHECKING:
    from robosim.envs.spec import EnvSpec

ENTRY_POINT_GROUP = "robosim.tasks"

VISIBILITY_HINT = (
    "A task defined in your own module becomes visible by importing that module first "
    "(`robosim eval --import mymodule ...`, or `import mymodule` in Python), by naming its "
    "class as 'package.module:TaskClass', or through the `robosim.tasks` entry point group "
    "of an installed package (docs/writing-tasks.md)")


def _check_task(task_id: str, cls: Any) -> type[Task]:
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise ValueError(f"task_id {task_id!r} must name a robosim.Task subclass, got {cls!r}")
    return cls


def _load_builtin_tasks(registry: Registry) -> None:
    if not registry.entry_points:   # running from a source tree that was never pip-installed
        importlib.import_module("robosim_tasks")   # its modules register themselves


TASKS: Registry[type[Task]] = Registry("task", "task_id", ENTRY_POINT_GROUP, _check_task, _load_builtin_tasks,
                                       import_paths=True, hint=VISIBILITY_HINT)


def register_task(task_id: str) -> Callable[[type[Task]], type[Task]]:
    """Class decorator: make `task_id` available to robosim.make and gym.make("robosim/<id>")."""

    def decorate(cls: type[Task]) -> type[Task]:
        if not (isinstance(cls, type) and issubclass(cls, Task)):
            raise TypeError(f"register_task({task_id!r}) expects a Task subclass, got {cls!r}")
        TASKS.add(task_id, cls)
        _register_gym_id(task_id)
        return cls

    return decorate


def _register_gym_id(task_id: str) -> None:
    gym_id = f"robosim/{task_id}"
    if gym_id not in gym.registry:
        # The env is batched and truncates itself: no TimeLimit, no scalar passive
        # checker, no OrderEnforcing wrapper (it hides num_envs and friends).
        gym.register(gym_id, entry_point="robosim.vector.make:make_gym_env", kwargs={"task_id": task_id},
                     disable_env_checker=True, order_enforce=False,
                     vector_entry_point="robosim.vector.make:make_vec")  # a name, not an import


def list_tasks() -> list[str]:
    """Sorted ids of every known task."""
    return TASKS.names()


def get_task(task_id: str) -> type[Task]:
    """The Task class of a registered id, or of 'package.module:TaskClass' (TypeError
    for a non-str, ValueError listing the known ids for an unknown one)."""
    return TASKS.get(task_id)


def import_modules(names: list[str] | None, search_cwd: bool = False) -> None:
    """Import each named module (its @register_task classes register themselves);
    search_cwd: also find packages in the current directory, as `python -m` does."""
    if search_cwd and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in names or []:
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise ValueError(f"--import must name an importable module, got {name!r} ({err})") from None


def make(task_id: str | type[Task] | EnvSpec, **kwargs: Any):
    """Build a BaseEnv: `task_id` is a registered id, 'package.module:TaskClass', a Task
    subclass, or a whole EnvSpec (then no keywords). kwargs are EnvSpec's fields
    (num_envs, obs_mode, ...) plus the task's own parameters (Task.parameters); every
    one is validated (robosim.envs.spec) before anything is built.

    device: where step and reset hand their tensors over. None: where the physics state
    lives (env.device). "cuda" with a CPU backend: CUDA tensors from CPU physics
    (robosim.envs.device_transfer.DeviceOutputs)."""
    from robosim.envs.base_env import BaseEnv
    from robosim.envs.spec import EnvSpec

    if isinstance(task_id, EnvSpec):
        if kwargs:
            raise ValueError(f"make(spec) takes no keyword arguments (use spec.replace(...)), got {sorted(kwargs)}")
        spec = task_id
    else:
        spec = EnvSpec.from_kwargs(task_id, **kwargs)
    if spec.device is None:
        return BaseEnv(spec)
    from robosim.envs.device_transfer import DeviceOutputs

    device = torch.device(spec.device)      # checked by EnvSpec, before anything is built
    env = BaseEnv(spec)
    if device.type == env.device.type and device.index in (None, env.device.index):
        return env
    return DeviceOutputs(env, device)


def register_gym_ids() -> None:
    """Register "robosim/<id>" in gymnasium for every known task (without importing it)."""
    for task_id in list_tasks():
        _register_gym_id(task_id)
