"""Batched envs, the Task plugin base class and the task registry."""
from robosim.envs.registry import get_task, list_tasks, make, register_task
from robosim.envs.task import Task

__all__ = ["Task", "get_task", "list_tasks", "make", "register_task"]
