"""Scale-out over Ray (a layer above robosim.vector; nothing below imports it).

    venv = robosim.make_vec("PickCube-v1", num_envs=64, workers=4)          # local Ray
    venv = robosim.make_vec("PickCube-v1", num_envs=256, workers=8,
                            ray_address="HEAD_IP:6379")                     # a cluster

RayVecEnv            gymnasium VectorEnv over K Ray actors (3 autoreset modes,
                     step_async/step_wait, worker restart); see vec_env.py
evaluate_on_workers  `robosim eval --workers K`: episodes spread over workers,
                     results/video/trajectory gathered on the driver (eval.py)
Needs the `scale` extra: pip install robosim[scale]  (ray).
"""
from __future__ import annotations

from typing import Any

from gymnasium.vector import AutoresetMode

from robosim.distributed.errors import WorkerError, WorkerLostError


def make_vec(task_id: str, num_envs: int = 1, workers: int = 1,
             autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, ray_address: str | None = None,
             **kwargs: Any):
    """A RayVecEnv of num_envs envs over `workers` Ray actors (see RayVecEnv)."""
    from robosim.distributed.vec_env import RayVecEnv

    return RayVecEnv(task_id, num_envs, workers, autoreset_mode=autoreset_mode, ray_address=ray_address, **kwargs)


def __getattr__(name: str):
    if name == "RayVecEnv":
        from robosim.distributed.vec_env import RayVecEnv

        return RayVecEnv
    if name == "evaluate_on_workers":
        from robosim.distributed.eval import evaluate_on_workers

        return evaluate_on_workers
    raise AttributeError(f"module 'robosim.distributed' has no attribute {name!r}")


__all__ = ["RayVecEnv", "WorkerError", "WorkerLostError", "evaluate_on_workers", "make_vec"]
