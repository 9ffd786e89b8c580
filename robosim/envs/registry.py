"""Task registry: built-in and third-party tasks, found through the `robosim.tasks`
entry point group or registered in-process with `register_task`."""
from __future__ import annotations

import importlib
import os
import sys
from importlib.metadata import entry_points
from typing import Callable

import gymnasium as gym

from robosim.envs.task import Task

ENTRY_POINT_GROUP = "robosim.tasks"
_TASKS: dict[str, type[Task]] = {}
_ENTRY_POINTS: dict[str, object] = {}


def _discover() -> None:
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        _ENTRY_POINTS.setdefault(ep.name, ep)
    if not _ENTRY_POINTS:  # running from a source tree that was never pip-installed
        import robosim_tasks  # noqa: F401  (its modules register themselves)


def register_task(task_id: str) -> Callable[[type[Task]], type[Task]]:
    """Class decorator: make `task_id` available to robosim.make and gym.make("robosim/<id>")."""

    def decorate(cls: type[Task]) -> type[Task]:
        if not (isinstance(cls, type) and issubclass(cls, Task)):
            raise TypeError(f"register_task({task_id!r}) expects a Task subclass, got {cls!r}")
        _TASKS[task_id] = cls
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
    _discover()
    return sorted(set(_TASKS) | set(_ENTRY_POINTS))


VISIBILITY_HINT = (
    "A task defined in your own module becomes visible by importing that module first "
    "(`robosim eval --import mymodule ...`, or `import mymodule` in Python), by naming its "
    "class as 'package.module:TaskClass', or through the `robosim.tasks` entry point group "
    "of an installed package (docs/writing-tasks.md)")


def _task_from_path(task_id: str) -> type[Task]:
    """'package.module:TaskClass' -> the class, registered under that id."""
    module_name, _, class_name = task_id.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"task_id {task_id!r} names module {module_name!r}, which cannot be imported ({err})") from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise ValueError(f"task_id {task_id!r} must name a robosim.Task subclass in {module_name}, "
                         f"got {type(cls).__name__ if cls is not None else 'nothing'} for {class_name!r}")
    _TASKS[task_id] = cls
    return cls


def get_task(task_id: str) -> type[Task]:
    """The Task class of a registered id, or of 'package.module:TaskClass'."""
    if not isinstance(task_id, str):
        raise TypeError(f"task_id must be a str, got {type(task_id).__name__}")
    if task_id not in _TASKS:
        _discover()
        if task_id in _ENTRY_POINTS:
            _TASKS[task_id] = _ENTRY_POINTS[task_id].load()
        elif ":" in task_id:
            return _task_from_path(task_id)
    if task_id not in _TASKS:
        raise ValueError(f"task_id must be one of {list_tasks()}, got {task_id!r}. {VISIBILITY_HINT}")
    return _TASKS[task_id]


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


def make(task_id: "str | type[Task]", **kwargs):
    """Build a BaseEnv for `task_id` (a registered id, 'package.module:TaskClass', or a Task
    subclass itself); kwargs as BaseEnv.__init__ (num_envs, obs_mode, ...) plus the task's
    own parameters (Task.parameters).

    device: where step and reset hand their tensors over. None: where the physics state
    lives (env.device). "cuda" with a CPU backend: CUDA tensors from CPU physics
    (robosim.envs.device_transfer.DeviceOutputs)."""
    from robosim.envs.base_env import BaseEnv

    device = kwargs.pop("device", None)
    task = task_id if isinstance(task_id, type) and issubclass(task_id, Task) else get_task(task_id)
    if device is None:
        return BaseEnv(task, **kwargs)
    from robosim.envs.device_transfer import DeviceOutputs, check_output_device

    device = check_output_device(device)      # refused before anything is built
    env = BaseEnv(task, **kwargs)
    if device.type == env.device.type and device.index in (None, env.device.index):
        return env
    return DeviceOutputs(env, device)


def register_gym_ids() -> None:
    """Register "robosim/<id>" in gymnasium for every known task (without importing it)."""
    for task_id in list_tasks():
        _register_gym_id(task_id)
