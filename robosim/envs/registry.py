"""Task registry: built-in and third-party tasks, found through the `robosim.tasks`
entry point group or registered in-process with `register_task`."""
from __future__ import annotations

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
        gym.register(gym_id, entry_point="robosim.envs.registry:make", kwargs={"task_id": task_id},
                     disable_env_checker=True, order_enforce=False,
                     vector_entry_point="robosim.vector.make:make_vec")  # a name, not an import


def list_tasks() -> list[str]:
    """Sorted ids of every known task."""
    _discover()
    return sorted(set(_TASKS) | set(_ENTRY_POINTS))


def get_task(task_id: str) -> type[Task]:
    if task_id not in _TASKS:
        _discover()
        if task_id in _ENTRY_POINTS:
            _TASKS[task_id] = _ENTRY_POINTS[task_id].load()
    if task_id not in _TASKS:
        raise ValueError(f"task_id must be one of {list_tasks()}, got {task_id!r}")
    return _TASKS[task_id]


def make(task_id: str, **kwargs):
    """Build a BaseEnv for `task_id`; kwargs as BaseEnv.__init__ (num_envs, obs_mode, ...)."""
    from robosim.envs.base_env import BaseEnv

    return BaseEnv(get_task(task_id), **kwargs)


def register_gym_ids() -> None:
    """Register "robosim/<id>" in gymnasium for every known task (without importing it)."""
    for task_id in list_tasks():
        _register_gym_id(task_id)
