"""robosim: batched, physics-backed robot manipulation environments on SAPIEN/PhysX.

    import robosim
    env = robosim.make("PickCube-v1", num_envs=16)
    obs, info = env.reset(seed=0)
"""
from robosim.agents import list_robots, register_robot
from robosim.envs import Task, get_task, list_tasks, make, register_task
from robosim.envs.registry import register_gym_ids
from robosim.vector import make_vec

__version__ = "0.1.0"
__all__ = ["Task", "get_task", "list_robots", "list_tasks", "make", "make_vec", "register_robot", "register_task",
           "__version__"]

register_gym_ids()
