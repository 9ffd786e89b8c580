"""robosim: batched, physics-backed robot manipulation environments on SAPIEN/PhysX.

    import robosim
    env = robosim.make("PickCube-v1", num_envs=16)
    obs, info = env.reset(seed=0)
"""
from robosim.agents import list_robots, register_robot
from robosim.core.version import __version__
from robosim.envs import EnvSpec, Task, get_task, list_tasks, make, register_task
from robosim.envs.registry import register_gym_ids
from robosim.vector import make_vec as _make_vec_one_process


def make_vec(task_id: str, num_envs: int = 1, autoreset_mode="NextStep", workers: int = 1,
             ray_address: str | None = None, **env_kwargs):
    """robosim.vector.make_vec in this process, or with workers=K / ray_address a
    robosim.distributed.RayVecEnv over K Ray actors (needs the `scale` extra)."""
    if workers == 1 and not isinstance(workers, bool) and ray_address is None:
        return _make_vec_one_process(task_id, num_envs, autoreset_mode, **env_kwargs)
    from robosim.distributed import make_vec as make_ray_vec  # lazy: vector never sees distributed

    return make_ray_vec(task_id, num_envs, workers, autoreset_mode, ray_address, **env_kwargs)

__all__ = ["EnvSpec", "Task", "get_task", "list_robots", "list_tasks", "make", "make_vec", "register_robot",
           "register_task", "__version__"]

register_gym_ids()
