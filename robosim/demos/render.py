"""Camera observations for state-only demos, rendered from the recorded states.

`render_demos(path, out, obs_mode)` builds the recording's env (same task, robot,
task parameters, randomization and asset build seeds, one env per recorded slot) with
the task's sensor cameras, writes every recorded state back with set_state (no physics
step: the states are the recorded ones) and captures the cameras. `out` gets the
input file unchanged (root attributes, every episode's datasets and attributes) plus,
in each episode group, an `obs` group with one row per recorded state (T+1 rows):

  obs/sensor_data/<camera>/rgb            uint8   (T+1, H, W, 3)   rgb, rgbd
  obs/sensor_data/<camera>/depth          float32 (T+1, H, W, 1)   depth, rgbd (m, 0 = nothing)
  obs/sensor_data/<camera>/segmentation   int16   (T+1, H, W, 1)   segmentation
  obs/sensor_param/<camera>/intrinsic_cv  float32 (T+1, 3, 3)      image modes
  obs/sensor_param/<camera>/extrinsic_cv  float32 (T+1, 3, 4)      env frame -> OpenCV camera
  obs/sensor_param/<camera>/cam2env_gl    float32 (T+1, 4, 4)
  obs/pointcloud/xyzw                     float32 (T+1, P, 4)      pointcloud (env frame, m)
  obs/pointcloud/rgb                      uint8   (T+1, P, 3)
  obs/pointcloud/segmentation             int16   (T+1, P, 1)

(robosim.sensors.sensor_cameras defines these arrays.) The root gets `obs_mode` and
`sensor_configs` (JSON); an input that already has obs groups gets new ones. The file is
written under a temporary name and renamed when complete (robosim.record.files.AtomicFile);
`out` may be `path` itself. Killed before the rename, it leaves that temporary file,
which `robosim recover` removes (or renames into place when it is complete).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from robosim.core.tree import leaf_items
from robosim.demos.source import make_recording_env, read_demos
from robosim.envs.observations import IMAGE_OBS_KINDS
from robosim.record.files import AtomicFile, check_output_path
from robosim.record.trajectory import TRAJECTORY_SUFFIXES

RENDER_OBS_MODES = (*IMAGE_OBS_KINDS, "pointcloud")


@dataclass
class RenderReport:
    path: str
    obs_mode: str
    episodes: int
    frames: int
    seconds: float

    def summary(self) -> str:
        return (f"rendered {self.obs_mode} for {self.episodes} episodes ({self.frames} frames) in "
                f"{self.seconds:.1f} s -> {self.path}")


def render_demos(path: str, out: str, obs_mode: str, sensor_configs: dict | None = None,
                 progress: bool = False) -> RenderReport:
    """Add `obs_mode` camera observations to every episode of `path`, writing `out`
    (module docstring). sensor_configs: overrides of the task's cameras, as
    robosim.make's (e.g. {"width": 64, "height": 64}). Checks the mode, the whole file
    (robosim.demos.source.read_demos), sensor_configs and the output path (ValueError
    naming the argument) before any env is built or anything written. A failed write
    (full disk) is an OSError naming `out`; nothing appears under it."""
    import h5py
    from tqdm import tqdm

    if obs_mode not in RENDER_OBS_MODES:
        raise ValueError(f"obs_mode must be one of {list(RENDER_OBS_MODES)}, got {obs_mode!r}")
    traj, episodes = read_demos(path)
    try:
        traj.spec.replace(obs_mode=obs_mode, sensor_configs=sensor_configs)   # checks the cameras
    except (TypeError, ValueError) as err:
        raise ValueError(f"sensor_configs (--sensor-size) must give the task valid cameras, got "
                         f"{sensor_configs!r}: {err}") from None
    out = check_output_path("out", out, TRAJECTORY_SUFFIXES)
    start = time.perf_counter()
    env = make_recording_env(traj, obs_mode=obs_mode, sensor_configs=sensor_configs)
    h5 = None

    def finish() -> None:
        if h5 is not None:
            h5.close()

    try:
        atomic = AtomicFile(out, finish, arg="out")
        try:
            with _write_errors(out, path):
                h5 = h5py.File(atomic.tmp_path, "w")
                _copy_input(path, h5, traj.episode_names, obs_mode, sensor_configs)
            with tqdm(total=len(episodes), desc="render", unit="ep", disable=not progress) as bar:
                for slot_episodes in _rounds(episodes, env.num_envs):
                    obs = _capture_round(env, obs_mode, [episodes[k].states for k in slot_episodes.values()],
                                         list(slot_episodes))
                    with _write_errors(out, path):
                        for (_slot, k), tree in zip(slot_episodes.items(), obs):
                            _write_tree(h5[traj.episode_names[k]].create_group("obs"), tree)
                    bar.update(len(slot_episodes))
        except BaseException:
            with _h5py_close_failures():   # closing a file that could not be written fails again
                atomic.discard()
            raise
        with _write_errors(out, path):
            atomic.commit()
    finally:
        env.close()
    return RenderReport(out, obs_mode, len(episodes), sum(e.length + 1 for e in episodes),
                        time.perf_counter() - start)


def _copy_input(path: str, h5, names: list[str], obs_mode: str, sensor_configs: dict | None) -> None:
    """The input's root attributes and episodes into `h5`, less any obs group it already has."""
    import h5py

    with h5py.File(path, "r") as src:
        for key, value in src.attrs.items():
            h5.attrs[key] = value
        h5.attrs["obs_mode"] = obs_mode
        h5.attrs["sensor_configs"] = json.dumps(sensor_configs)
        for name in names:
            group = h5.create_group(name)
            for key, value in src[name].attrs.items():
                group.attrs[key] = value
            for member in src[name]:
                if member != "obs":   # a rendered input gets new obs
                    src.copy(src[name][member], group, name=member)


@contextlib.contextmanager
def _h5py_close_failures() -> Iterator[list[BaseException]]:
    """Collects, instead of printing, the write failures h5py hits when it closes an
    object that has gone out of scope: its Cython `__dealloc__` cannot raise, so it prints
    the traceback (through sys.excepthook) and reports it as unraisable (through
    sys.unraisablehook); a full disk fails there as often as in a call. The list holds
    them; any other error reaches the previous hooks."""
    failures: list[BaseException] = []
    previous_unraisable, previous_except = sys.unraisablehook, sys.excepthook

    def write_failed(error: BaseException | None) -> bool:
        return isinstance(error, RuntimeError) and "write failed" in str(error)

    def unraisable_hook(unraisable) -> None:
        if write_failed(unraisable.exc_value):
            failures.append(unraisable.exc_value)
        else:
            previous_unraisable(unraisable)

    def except_hook(kind, value, traceback) -> None:
        if not write_failed(value):
            previous_except(kind, value, traceback)

    sys.unraisablehook, sys.excepthook = unraisable_hook, except_hook
    try:
        yield failures
    finally:
        sys.unraisablehook, sys.excepthook = previous_unraisable, previous_except


@contextlib.contextmanager
def _write_errors(out: str, path: str) -> Iterator[None]:
    """h5py's write failures (an OSError, or a RuntimeError from a copy or from closing an
    object: full disk, a deleted directory) as one OSError naming `out`, not the
    temporary file."""
    try:
        with _h5py_close_failures() as failures:
            yield
        if failures:
            raise failures[0]
    except (OSError, RuntimeError) as err:
        text = " ".join(str(err).split())
        found = re.search(r"errno = (\d+)", text)   # h5py's message carries the system's errno
        code = getattr(err, "errno", None) or (int(found[1]) if found else None)
        why = os.strerror(code) if code else text
        raise OSError(code, f"cannot write {out!r}: {why}; nothing was written under that name, {path!r} is "
                            f"unchanged") from err


def _rounds(episodes, n: int) -> list[dict[int, int]]:
    """Episode numbers grouped so that each group holds at most one episode per recorded
    env slot: [{slot: episode}] (a slot's assets are the ones its episodes were recorded with)."""
    per_slot = [[k for k, e in enumerate(episodes) if e.env_index == i] for i in range(n)]
    rounds = []
    while any(per_slot):
        rounds.append({i: ks.pop(0) for i, ks in enumerate(per_slot) if ks})
    return rounds


def _capture_round(env, obs_mode: str, states: list[np.ndarray], slots: list[int]) -> list[dict]:
    """Per slot, {key path: (T+1, ...) array} of its episode's camera obs: state t of
    every episode is written back, then all cameras are captured."""
    sensors = env.cameras.sensors
    longest = max(len(s) for s in states)
    frames: list[dict[str, list[np.ndarray]]] = [{} for _ in slots]
    for t in range(longest):
        live = [j for j, s in enumerate(states) if t < len(s)]
        env.set_state(torch.from_numpy(np.stack([states[j][t] for j in live])),
                      env_idx=torch.tensor([slots[j] for j in live]))
        if obs_mode == "pointcloud":
            tree = {"pointcloud": sensors.pointcloud()}
        else:
            tree = {"sensor_data": sensors.capture(IMAGE_OBS_KINDS[obs_mode]), "sensor_param": sensors.params()}
        flat = dict(leaf_items(tree))
        for j in live:
            for key, value in flat.items():
                frames[j].setdefault(key, []).append(value[slots[j]].cpu().numpy())
    return [{key: np.stack(rows) for key, rows in f.items()} for f in frames]


def _write_tree(group, arrays: dict[str, np.ndarray]) -> None:
    for key, value in arrays.items():
        group.create_dataset(key, data=value)
