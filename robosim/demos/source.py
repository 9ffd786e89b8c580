"""The demos file that convert and render read, and the env that re-creates its run.

`read_demos` reads and checks the WHOLE file before a caller builds an env or writes
anything: a damaged HDF5 (random bytes over its metadata or its data) is a ValueError
naming the file, the episode and the field, never an h5py traceback halfway through a
conversion."""
from __future__ import annotations

from typing import Any

import numpy as np

from robosim.envs import list_tasks, make_env
from robosim.record.trajectory import BOOL_FIELDS, FLOAT_FIELDS, Episode, TrajectoryFile

# No recorded state, action or reward reaches this (m, rad, m/s, rad/s, reward units):
# a larger value is damaged bytes (random float32 bits are mostly beyond it), not data.
MAX_ABS_VALUE = 1e6


def read_demos(path: str, arg: str = "TRAJ") -> tuple[TrajectoryFile, list[Episode]]:
    """The trajectory at `path` and all its episodes, read and checked: ValueError naming
    `arg`, the file and, where it is one episode's fault, the episode and field, for a
    file that is not a robosim trajectory of a registered task, holds no episode, or
    cannot be read (damaged bytes, values that are not finite or beyond MAX_ABS_VALUE,
    bool fields other than 0/1, an env_index outside [0, num_envs))."""
    try:
        traj = TrajectoryFile(path, arg=arg)
    except ValueError:
        raise
    except Exception as err:   # h5py raises KeyError, RuntimeError... for damaged metadata
        raise ValueError(f"{arg} {path!r} cannot be read (damaged HDF5): {_one_line(err)}") from None
    if traj.task_id not in list_tasks():
        raise ValueError(f"{arg} must be recorded on a registered task, one of {list_tasks()}, "
                         f"got {traj.task_id!r} in {path!r}")
    if len(traj) == 0:
        raise ValueError(f"{arg} must hold at least one episode, got 0 episodes in {path!r}")
    return traj, [_read_episode(traj, k, arg) for k in range(len(traj))]


def _read_episode(traj: TrajectoryFile, k: int, arg: str) -> Episode:
    name = traj.episode_names[k]
    where = f"{arg} {traj.path!r} episode {name!r}"
    try:
        episode = traj.episode(k)
    except ValueError:
        raise
    except Exception as err:   # damaged bytes: find the field that cannot be read
        raise ValueError(f"{where} field {_unreadable_field(traj.path, name)!r} cannot be read (damaged HDF5): "
                         f"{_one_line(err)}") from None
    if not 0 <= episode.env_index < traj.num_envs:
        raise ValueError(f"{where} attribute 'env_index' must be in [0, {traj.num_envs}), got {episode.env_index}")
    for field in FLOAT_FIELDS:
        values = getattr(episode, field)
        if field == "actions":   # NaN actions are recorded "no control" steps (step(None))
            values = values[~np.isnan(values).all(axis=1)]
        bad = ~np.isfinite(values) | (np.abs(values) > MAX_ABS_VALUE)
        if bad.any():
            first = np.argwhere(bad)[0].tolist()
            raise ValueError(f"{where} field {field!r} must hold finite values within +-{MAX_ABS_VALUE:g} "
                             f"(damaged file?), got {float(values[tuple(first)])!r} at index {first}")
    for field in BOOL_FIELDS:
        raw = getattr(episode, field).view(np.uint8)
        if (raw > 1).any():
            raise ValueError(f"{where} field {field!r} must hold booleans (0 or 1), got byte "
                             f"{int(raw[raw > 1][0])} (damaged file?)")
    return episode


def _unreadable_field(path: str, name: str) -> str:
    """The first dataset or attribute of episode group `name` that h5py cannot read."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            group = f[name]
            for key in ("env_index", "seed", "complete"):
                try:
                    group.attrs[key]
                except Exception:
                    return key
            for field in FLOAT_FIELDS + BOOL_FIELDS:
                try:
                    group[field][()]
                except Exception:
                    return field
    except Exception:
        return "(the group itself)"
    return "(the group itself)"


def _one_line(err: BaseException) -> str:
    """str(err) on one line (h5py's messages hold newlines)."""
    return " ".join(str(err).split())


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
