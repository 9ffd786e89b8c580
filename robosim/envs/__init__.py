"""Batched envs, the Task plugin base class and the task registry."""
from robosim.envs.registry import get_task, list_tasks, make, register_task
from robosim.envs.single_env import SingleEnv
from robosim.envs.task import Task

__all__ = ["SingleEnv", "Task", "get_task", "list_tasks", "make", "register_task"]
