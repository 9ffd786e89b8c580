"""The demos file that convert and render read, and the env that re-creates its run."""
from __future__ import annotations

from typing import Any

from robosim.envs import list_tasks, make_env
from robosim.record.trajectory import Episode, TrajectoryFile


def read_demos(path: str, arg: str = "TRAJ") -> tuple[TrajectoryFile, list[Episode]]:
    """The trajectory at `path` and all its episodes, validated (ValueError naming `arg`
    for a file that is not a robosim trajectory of a registered task)."""
    traj = TrajectoryFile(path, arg=arg)
    if traj.task_id not in list_tasks():
        raise ValueError(f"{arg} must be recorded on a registered task, one of {list_tasks()}, "
                         f"got {traj.task_id!r} in {path!r}")
    return traj, [traj.episode(k) for k in range(len(traj))]


def make_recording_env(traj: TrajectoryFile, arg: str = "TRAJ", **overrides: Any):
    """The recording's env (task, robot, task parameters, randomization, asset build
    seeds; as many envs as recorded, so each episode runs in its recorded slot with its
    assets) with `overrides` of robosim.make's arguments. ValueError when the task's
    state no longer has the recorded size."""
    env = make_env(traj.spec, **{"num_envs": traj.num_envs, "obs_mode": "none", "device": None, **overrides})
    if env.state_dim != traj.state_dim:
        env.close()
        raise ValueError(f"{arg} state_dim must match {traj.task_id}'s state_dim {env.state_dim}, got "
                         f"{traj.state_dim} in {traj.path!r}")
    return env
