"""Batched envs, the Task plugin base class, the task registry, the parts one build
produces (EnvParts) and the env surface tools type against (BatchedEnv)."""
from robosim.envs.context import TaskContext
from robosim.envs.parts import EnvParts
from robosim.envs.protocol import BatchedEnv, BatchedEnvCore
from robosim.envs.registry import get_task, list_tasks, make, register_task
from robosim.envs.robots import RobotSlot
from robosim.envs.spec import EnvSpec, make_env
from robosim.envs.task import Task, check_robot_for_task

__all__ = ["BatchedEnv", "BatchedEnvCore", "EnvParts", "EnvSpec", "RobotSlot", "Task", "TaskContext",
           "check_robot_for_task", "get_task", "list_tasks", "make", "make_env", "register_task"]
