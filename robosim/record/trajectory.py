"""HDF5 trajectory files: everything needed to replay a recorded run exactly.

Layout (format "robosim-trajectory", FORMAT_VERSION):
  /                attrs: format, format_version, robosim_version, task_id, env_kwargs
                   (JSON of the robosim.make kwargs), num_envs, state_dim, action_dim,
                   sim_backend, control_mode
  /episode_00000   one group per episode, numbered in the order they ended
      attrs        env_index (int, which env of the batch ran it), seed (int, -1 when the
                   episode was not reset with an explicit seed), complete (bool: ended by
                   terminated/truncated; False when cut short), length T
      actions      float32 (T, A)   as passed to step (the env clips them)
      states       float32 (T+1, S) env.get_state() after reset, then after every step
                   (env frame)
      rewards      float32 (T,)
      success, terminated, truncated   bool (T,)
Written atomically (robosim.record.files): finished episodes are flushed as they end;
closing (also on an exception) adds the unfinished ones with complete=False.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from robosim.record.files import AtomicFile, check_output_path

FORMAT = "robosim-trajectory"
FORMAT_VERSION = 1
TRAJECTORY_SUFFIXES = (".h5", ".hdf5")


@dataclass
class Episode:
    """One recorded episode (numpy arrays, shapes as in the module docstring)."""

    env_index: int
    seed: int
    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    success: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    complete: bool

    @property
    def length(self) -> int:
        return len(self.actions)


class TrajectoryWriter:
    """Append episodes to an HDF5 file at `path` (see the module docstring)."""

    def __init__(self, path: str, header: dict[str, Any], arg: str = "trajectory"):
        import h5py

        self.path = check_output_path(arg, path, TRAJECTORY_SUFFIXES)
        self._h5 = None
        # episodes still running: written with complete=False if the file closes first
        self.pending: Callable[[], list[Episode]] = list
        self._file = AtomicFile(self.path, self._close_h5)
        self._h5 = h5py.File(self._file.tmp_path, "w")
        attrs = {"format": FORMAT, "format_version": FORMAT_VERSION, **header}
        for key, value in attrs.items():
            self._h5.attrs[key] = json.dumps(value) if isinstance(value, dict) else value
        self.episodes_written = 0

    def add_episode(self, episode: Episode) -> None:
        """Write one episode and flush it to disk."""
        if self._h5 is None:
            raise ValueError(f"trajectory {self.path!r} is closed; episodes can no longer be added")
        group = self._h5.create_group(f"episode_{self.episodes_written:05d}")
        group.attrs.update(env_index=episode.env_index, seed=episode.seed, complete=episode.complete,
                           length=episode.length)
        for name in ("states", "actions", "rewards"):
            group.create_dataset(name, data=np.asarray(getattr(episode, name), dtype=np.float32))
        for name in ("success", "terminated", "truncated"):
            group.create_dataset(name, data=np.asarray(getattr(episode, name), dtype=bool))
        self.episodes_written += 1
        self._h5.flush()

    def _close_h5(self) -> None:
        if self._h5 is None:
            return
        try:
            for episode in self.pending():
                if episode.length > 0:
                    self.add_episode(episode)
        finally:
            self.pending = list
            self._h5.close()
            self._h5 = None

    def close(self) -> None:
        self._file.commit()

    def discard(self) -> None:
        self._file.discard()


class TrajectoryFile:
    """Read a trajectory file, validating its format before any simulation runs.

    task_id: when given, the file must have been recorded on this task."""

    def __init__(self, path: str, task_id: str | None = None, arg: str = "trajectory"):
        import os

        import h5py

        if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
            raise ValueError(f"{arg} must be an existing HDF5 file, got {path!r}")
        try:
            with h5py.File(path, "r") as f:
                self.attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
                self.episode_names = sorted(k for k in f.keys() if k.startswith("episode_"))
        except OSError as err:
            raise ValueError(f"{arg} must be an HDF5 file written by robosim, got {path!r} ({err})") from None
        self.path = path
        if self.attrs.get("format") != FORMAT:
            raise ValueError(f"{arg} must be a {FORMAT!r} file, got format {self.attrs.get('format')!r} in {path!r}")
        version = int(self.attrs.get("format_version", -1))
        if version != FORMAT_VERSION:
            raise ValueError(f"{arg} must have format_version {FORMAT_VERSION}, got {version} in {path!r}")
        if task_id is not None and self.attrs["task_id"] != task_id:
            raise ValueError(f"{arg} must be recorded on task {task_id!r}, got {self.attrs['task_id']!r} in {path!r}")
        self.task_id = str(self.attrs["task_id"])
        self.env_kwargs: dict = json.loads(self.attrs["env_kwargs"])
        self.state_dim = int(self.attrs["state_dim"])
        self.action_dim = int(self.attrs["action_dim"])

    def __len__(self) -> int:
        return len(self.episode_names)

    def episode(self, k: int) -> Episode:
        import h5py

        with h5py.File(self.path, "r") as f:
            g = f[self.episode_names[k]]
            return Episode(
                env_index=int(g.attrs["env_index"]), seed=int(g.attrs["seed"]), complete=bool(g.attrs["complete"]),
                **{name: g[name][()] for name in ("states", "actions", "rewards", "success", "terminated",
                                                  "truncated")},
            )
