"""robosim trajectories to LeRobot v3.0 datasets and back (robosim.demos.lerobot_format).

Export: every episode of a robosim HDF5 trajectory becomes a LeRobot episode of T frames
(frame t: the state before action t). Features:
  observation.state               float32 (dof,)  robot joint positions (names: joint names)
  observation.environment_state   float32 (S,)    robosim's env state (env.get_state())
  action                          float32 (A,)    the recorded action (the env's control mode)
  next.reward, next.success, next.terminated, next.truncated   after action t
  observation.images.<camera>     video (H, W, 3) the task's sensor cameras, re-rendered from
                                  the recorded states (set_state, no physics step)
A multi-robot env (robosim.envs.robots) also gets each robot's own columns, named by
slot: observation.state.<slot> (its joint positions) and action.<slot> (its part of the
flat action); observation.state and action are then all robots' in slot order, and
robot_type reads "left=panda,right=panda".
fps is the task's control frequency (one frame per control step). info.json carries a
"robosim" entry (task id, env kwargs, control mode, sizes, version); each row of the
episodes table carries robosim/seed, robosim/env_index, robosim/complete and
robosim/final_state (the state after the last action), so import rebuilds the trajectory
exactly, and `robosim replay` re-simulates it as recorded.

Import: a dataset robosim wrote, or one written for the same task and robot (it must have
action and observation.environment_state in robosim's layout; the task is then given
with task=, every episode is re-simulated from its first state and checked against the
recorded states, a diverging one refused or, with diverging="skip", left out and named;
its seeds are unknown, -1). The whole dataset is checked
(robosim.demos.lerobot_checks) before anything is written. Both writes are atomic: the
dataset is built in a hidden directory beside `out_dir` and renamed when complete; the
HDF5 file goes through robosim.record's TrajectoryWriter.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import numpy as np

from robosim.core.atomic import replace_dir_into_place
from robosim.core.version import __version__
from robosim.demos import lerobot_checks as checks
from robosim.demos import lerobot_format as fmt
from robosim.demos.source import read_demos
from robosim.envs import get_task, list_tasks, make, make_env
from robosim.record.files import OutputLock
from robosim.record.trajectory import TRAJECTORY_SUFFIXES, Episode, TrajectoryFile, TrajectoryWriter

IMAGE_PREFIX = "observation.images."
# LeRobot column -> (robosim Episode field, dtype)
DIVERGING = ("refuse", "skip")   # import_lerobot's choices for an episode its re-simulation cannot follow
NEXT_FIELDS = {"next.reward": ("rewards", "float32"), "next.success": ("success", "bool"),
               "next.terminated": ("terminated", "bool"), "next.truncated": ("truncated", "bool")}


def _check_out_dir(out_dir: Any) -> str:
    if not isinstance(out_dir, (str, os.PathLike)) or not os.fspath(out_dir):
        raise TypeError(f"out_dir must be a directory path (str), got {out_dir!r}")
    out_dir = os.path.abspath(os.fspath(out_dir))
    parent = os.path.dirname(out_dir)
    if os.path.exists(out_dir):
        raise ValueError(f"out_dir must not exist yet (the dataset is written as a new directory), got {out_dir!r}")
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"out_dir must be in an existing writable directory, got {out_dir!r}")
    return out_dir


def task_description(task_id: str) -> str:
    """The LeRobot task string of a robosim task: its natural-language instruction
    (Task.instruction), or the task id for a task that has none."""
    return get_task(task_id).instruction or task_id


def export_lerobot(trajectory_path: str, out_dir: str, *, fps: int | None = None, video: bool = True,
                   progress: bool = True) -> dict:
    """Write the trajectory at `trajectory_path` as a LeRobot v3.0 dataset in `out_dir` (a
    new directory). fps: the frame rate written to info.json (default: the task's control
    frequency; frames stay one per control step). video: re-render the task's sensor
    cameras into mp4s. Returns {"episodes", "frames", "videos": [keys], "out_dir"}."""
    fmt.require_pyarrow()
    traj, episodes = read_demos(trajectory_path, arg="trajectory")   # the whole file checked first
    if fps is not None and (isinstance(fps, bool) or not isinstance(fps, int) or fps < 1):
        raise ValueError(f"fps must be a positive int or None, got {fps!r}")
    out_dir = _check_out_dir(out_dir)
    if not episodes or any(e.length == 0 for e in episodes):
        raise ValueError(f"trajectory must hold episodes of at least one step, got lengths "
                         f"{[e.length for e in episodes]} in {trajectory_path!r}")
    env = make_env(traj.spec, num_envs=traj.num_envs, obs_mode="rgb" if video else "none", device=None)
    lock = OutputLock(out_dir, "out_dir")
    tmp = writer = None
    try:
        if env.state_dim != traj.state_dim:
            raise ValueError(f"trajectory state_dim must match {traj.task_id}'s {env.state_dim}, got {traj.state_dim}")
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(out_dir)}.", suffix=".partial",
                               dir=os.path.dirname(out_dir))
        fps = fps or env.task.control_freq
        writer = _DatasetWriter(tmp, env, traj, fps, video)
        from tqdm import tqdm

        for k, episode in enumerate(tqdm(episodes, desc="export", unit="ep", disable=not progress)):
            writer.add(k, episode)
        summary = writer.finish()
        replace_dir_into_place(tmp, out_dir)
        tmp = None
    finally:
        if writer is not None:
            writer.close()   # ffmpeg stops even when an error cut the export short
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        lock.release()
        env.close()
    return {**summary, "out_dir": out_dir}


class _DatasetWriter:
    """Builds one dataset directory: frames re-derived from the recorded states, episode
    rows, videos, then meta/ on finish()."""

    def __init__(self, root: str, env, traj: TrajectoryFile, fps: int, video: bool):
        self.root, self.env, self.traj, self.fps = root, env, traj, fps
        self.cameras = sorted(env.cameras.sensors.capture(("rgb",))) if video else []
        self.streams: dict[str, fmt.Mp4Stream] = {}
        self.frames: list[dict[str, np.ndarray]] = []
        self.rows: list[dict[str, Any]] = []
        self.image_stats: dict[str, list] = {c: [] for c in self.cameras}
        self.total = 0
        # per robot: (qpos columns, action columns, joint names); one robot: the whole rows
        self.robots: dict[str, tuple[slice, slice, list[str]]] = {}
        q = a = 0
        for name, robot in env.robots.items():
            dim = int(robot.action_low.numel())
            self.robots[name] = (slice(q, q + robot.dof), slice(a, a + dim), list(robot.view.joint_names))
            q, a = q + robot.dof, a + dim
        self.multi = len(self.robots) > 1

    def _render(self, slot: int, states: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Robots' qpos (T, sum of dofs; slots in order) and camera frames {camera: (T, H, W, 3)}
        of `states` (T, S) in env `slot`."""
        import torch

        idx = torch.tensor([slot])
        qpos, images = [], {c: [] for c in self.cameras}
        for state in states:
            self.env.set_state(torch.from_numpy(state[None]), env_idx=idx)
            qpos.append(np.concatenate([r.view.qpos()[slot].cpu().numpy() for r in self.env.robots.values()]))
            if self.cameras:
                shots = self.env.cameras.sensors.capture(("rgb",))
                for c in self.cameras:
                    images[c].append(shots[c]["rgb"][slot].cpu().numpy())
        return np.stack(qpos).astype(np.float32), {c: np.stack(v) for c, v in images.items()}

    def add(self, k: int, e: Episode) -> None:
        import torch

        seeded = {"seed": [e.seed]} if e.seed >= 0 else {}   # the seeded reset rebuilds the episode's assets
        self.env.reset(**seeded, options={"env_idx": torch.tensor([e.env_index])})
        qpos, images = self._render(e.env_index, e.states[:-1])
        t = e.length
        cols = {"observation.state": qpos, "observation.environment_state": e.states[:-1], "action": e.actions,
                **{name: getattr(e, field) for name, (field, _) in NEXT_FIELDS.items()},
                "timestamp": np.arange(t, dtype=np.float32) / self.fps, "frame_index": np.arange(t),
                "episode_index": np.full(t, k), "index": self.total + np.arange(t), "task_index": np.zeros(t, int)}
        if self.multi:   # each robot's own columns too, named by slot: observation.state.left, action.left, ...
            for name, (qs, acts, _) in self.robots.items():
                cols[f"observation.state.{name}"], cols[f"action.{name}"] = qpos[:, qs], e.actions[:, acts]
        row = {"episode_index": k, "tasks": [task_description(self.traj.task_id)], "length": t,
               "data/chunk_index": 0, "data/file_index": 0,
               "dataset_from_index": self.total, "dataset_to_index": self.total + t}
        for c, frames in images.items():
            if c not in self.streams:
                self.streams[c] = fmt.Mp4Stream(os.path.join(self.root, fmt.VIDEO_PATH.format(
                    video_key=IMAGE_PREFIX + c, chunk_index=0, file_index=0)), *frames.shape[1:3], self.fps)
            start = self.streams[c].frames / self.fps
            for frame in frames:
                self.streams[c].add(frame)
            key = IMAGE_PREFIX + c
            row.update({f"videos/{key}/chunk_index": 0, f"videos/{key}/file_index": 0,
                        f"videos/{key}/from_timestamp": start, f"videos/{key}/to_timestamp": start + t / self.fps})
            stats = fmt.image_stats(frames)
            row.update({f"stats/{key}/{s}": v for s, v in stats.items()})
            self.image_stats[c].append(frames[:: max(1, t // 10)])   # about 10 frames per episode for stats.json
        for name, values in cols.items():
            row.update({f"stats/{name}/{s}": v for s, v in fmt.feature_stats(values.reshape(t, -1)).items()})
        row.update({"meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0, "robosim/seed": e.seed,
                    "robosim/env_index": e.env_index, "robosim/complete": e.complete,
                    "robosim/final_state": e.states[-1].tolist()})
        self.frames.append(cols)
        self.rows.append(row)
        self.total += t

    def features(self) -> dict[str, dict]:
        env, first = self.env, self.frames[0]
        # each robot's part named by its own control mode (a multi-robot env may mix them)
        modes = [r.control_mode for r in env.robots.values() for _ in range(int(r.action_low.numel()))]
        actions = [f"{mode}_{i}" for i, mode in enumerate(modes)]
        joints = [f"{name}.{j}" if self.multi else j for name, (_, _, js) in self.robots.items() for j in js]
        names = {"observation.state": joints,
                 "observation.environment_state": [f"state_{i}" for i in range(self.traj.state_dim)],
                 "action": actions}
        if self.multi:
            for name, (_, acts, js) in self.robots.items():
                names[f"observation.state.{name}"], names[f"action.{name}"] = js, actions[acts]
        out = {name: {"dtype": "float32", "shape": [first[name].shape[1]], "names": names[name]} for name in names}
        out.update({name: {"dtype": dtype, "shape": [1], "names": None} for name, (_, dtype) in NEXT_FIELDS.items()})
        for c in self.streams:
            h, w = self.image_stats[c][0].shape[1:3]
            out[IMAGE_PREFIX + c] = {"dtype": "video", "shape": [h, w, 3], "names": ["height", "width", "channels"],
                                     "info": fmt.video_info(h, w, self.fps)}
        return {**out, **fmt.DEFAULT_FEATURES}

    def close(self) -> None:
        """Finish the mp4 streams (idempotent)."""
        for stream in self.streams.values():
            stream.close()

    def finish(self) -> dict:
        self.close()
        features = self.features()
        data = {name: np.concatenate([f[name] for f in self.frames]) for name in self.frames[0]}
        dtypes = {name: features[name]["dtype"] for name in data}
        fmt.write_parquet(os.path.join(self.root, fmt.DATA_PATH.format(chunk_index=0, file_index=0)),
                          {name: fmt.arrow_column(v, dtypes[name]) for name, v in data.items()})
        fmt.write_parquet(os.path.join(self.root, fmt.EPISODES_PATH.format(chunk_index=0, file_index=0)),
                          {key: [row[key] for row in self.rows] for key in self.rows[0]})
        fmt.write_tasks(os.path.join(self.root, fmt.TASKS_PATH), [task_description(self.traj.task_id)])
        stats = {name: fmt.feature_stats(v.reshape(len(v), -1)) for name, v in data.items()}
        stats.update({IMAGE_PREFIX + c: fmt.image_stats(np.concatenate(v)) for c, v in self.image_stats.items()})
        fmt.write_json(os.path.join(self.root, fmt.STATS_PATH), stats)
        n = len(self.rows)
        robot_type = ",".join(f"{slot}={r.spec.name}" for slot, r in self.env.robots.items()) if self.multi else \
            self.env.robot.spec.name
        info = {"codebase_version": fmt.CODEBASE_VERSION, "robot_type": robot_type,
                "total_episodes": n, "total_frames": self.total, "total_tasks": 1, "chunks_size": 1000,
                "data_files_size_in_mb": 100, "video_files_size_in_mb": 200, "fps": self.fps,
                "splits": {"train": f"0:{n}"}, "data_path": fmt.DATA_PATH,
                "video_path": fmt.VIDEO_PATH if self.streams else None, "features": features,
                "robosim": {"robosim_version": __version__, "task_id": self.traj.task_id,
                            "env_spec": self.traj.spec.to_dict(), "num_envs": self.traj.num_envs,
                            "state_dim": self.traj.state_dim, "action_dim": self.traj.action_dim,
                            "sim_backend": self.traj.attrs.get("sim_backend", "physx_cpu"),
                            "control_mode": self.env.control_mode}}
        fmt.write_json(os.path.join(self.root, fmt.INFO_PATH), info)
        return {"episodes": n, "frames": self.total, "videos": [IMAGE_PREFIX + c for c in self.streams]}


def _header(data: fmt.DatasetFiles, task: str | None, robot: str | None, where: str) -> tuple[dict, Any]:
    """(trajectory header, env to re-simulate in or None) of a dataset: from its robosim
    entry, else from an env of task/robot with separate physics (exact re-simulation).
    ValueError when task or robot contradicts the dataset."""
    header = checks.robosim_header(data, where)
    if header is not None:
        spec = header.get("env_spec", header.get("env_kwargs"))
        if task is not None and task != header["task_id"]:
            raise ValueError(f"task must be the dataset's task {header['task_id']!r} (it was recorded on it), "
                             f"got {task!r} for {where}")
        recorded_robot = spec.get("robot") or data.info.get("robot_type")
        if robot is not None and robot != recorded_robot:
            raise ValueError(f"robot must be the dataset's robot {recorded_robot!r}, got {robot!r} for {where}")
        return header, None
    if task is None:
        raise ValueError(f"task must be given for a dataset robosim did not write (no 'robosim' entry in its "
                         f"{fmt.INFO_PATH}), got None for {where}")
    if task not in list_tasks():
        raise ValueError(f"task must be one of {list_tasks()}, got {task!r}")
    robot_type = data.info.get("robot_type")
    if robot is not None and robot_type not in (None, robot):
        raise ValueError(f"robot must be the dataset's robot_type {robot_type!r}, got {robot!r} for {where}")
    env = make(task, num_envs=1, robot=robot or robot_type, physics_isolation="separate")
    return env.header(), env


def import_lerobot(dataset_dir: str, out_path: str, *, task: str | None = None, robot: str | None = None,
                   tolerance: float = 1e-4, diverging: str = "refuse", progress: bool = True) -> dict:
    """Read the LeRobot v3.0 dataset in `dataset_dir` into a robosim trajectory at
    `out_path` (.h5). task/robot: required for a dataset robosim did not write (its
    robot_type must match); for one it wrote they must match its own.

    The whole dataset is checked before anything is written (robosim.demos.lerobot_checks).
    A dataset robosim did not write is re-simulated episode by episode (separate physics,
    from the first recorded state, with the recorded actions); an episode whose recorded
    states differ from the re-simulated ones by more than `tolerance` (float32 state units:
    m, rad, m/s, rad/s) anywhere diverges, named with its first diverging step:
    diverging="refuse" refuses the whole import, diverging="skip" leaves that episode out
    (listed in "skipped"; an import whose every episode diverges is refused). The file
    then holds the re-simulated states (so `robosim replay` reproduces them exactly) and
    the recorded next.* columns, or the re-simulated ones where the dataset has none.
    Returns {"episodes", "frames", "task_id", "out_path", "resimulated" (bool),
    "max_deviation" (largest |recorded - re-simulated| state value over the episodes kept,
    0.0 when not re-simulated), "skipped" (one message per episode left out)}."""
    from robosim.record.files import check_output_path

    out_path = check_output_path("out_path", out_path, TRAJECTORY_SUFFIXES)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < np.inf:
        raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    if diverging not in DIVERGING:
        raise ValueError(f"diverging must be one of {list(DIVERGING)}, got {diverging!r}")
    where = f"dataset_dir {os.fspath(dataset_dir)!r}"
    data = fmt.read_dataset(dataset_dir, arg="dataset_dir")
    checks.check_info(data, where)
    header, env = _header(data, task, robot, where)
    try:
        episodes, deviation, skipped = _read_episodes(data, header, env, tolerance, diverging == "skip", where,
                                                      progress)
    finally:
        if env is not None:
            env.close()
    writer = TrajectoryWriter(out_path, header, arg="out_path")
    try:
        for episode in episodes:
            writer.add_episode(episode)
    except BaseException:
        writer.discard()
        raise
    writer.close()
    return {"episodes": len(episodes), "frames": sum(e.length for e in episodes), "task_id": header["task_id"],
            "out_path": out_path, "resimulated": env is not None, "max_deviation": deviation, "skipped": skipped}


def _read_episodes(data: fmt.DatasetFiles, header: dict, env, tolerance: float, skip: bool, where: str,
                   progress: bool) -> tuple[list[Episode], float, list[str]]:
    """Every episode of a checked dataset, re-simulated in `env` when it is not None;
    (episodes, max |recorded - re-simulated| state value, one message per diverging
    episode left out). A diverging episode raises ValueError unless `skip`."""
    from tqdm import tqdm

    s, a = header["state_dim"], header["action_dim"]
    checks.check_feature(data, "action", a, f"{header['task_id']}'s action dimension in control mode "
                         f"{header['control_mode']}", where)
    checks.check_feature(data, "observation.environment_state", s, f"{header['task_id']}'s env state dimension",
                         where)
    frames = checks.episode_frames(data, header if env is None else None, where)
    states = checks.frame_column(data, "observation.environment_state", s, where).astype(np.float32)
    actions = checks.frame_column(data, "action", a, where).astype(np.float32)
    if "next.terminated" not in data.columns and "next.done" in data.columns:   # LeRobot's usual done flag
        data.columns["next.terminated"] = data.columns["next.done"]
    missing = [name for name in NEXT_FIELDS if name not in data.columns]
    if env is None and missing:   # nothing to re-simulate them from
        raise ValueError(f"{where} data files {[f for f, _, _ in data.frame_files]} must have the columns "
                         f"{list(NEXT_FIELDS)} (robosim's export writes them), missing {missing}")
    nexts = {name: checks.frame_column(data, name, None, where) for name in NEXT_FIELDS if name not in missing}
    episodes, deviation, skipped = [], 0.0, []
    for ep in tqdm(frames, desc="import", unit="ep", disable=not progress):
        lo, hi = ep.start, ep.end
        fields = {field: nexts[name][lo:hi].astype(np.float32 if dtype == "float32" else bool)
                  for name, (field, dtype) in NEXT_FIELDS.items() if name in nexts}
        if env is None:
            row = ep.row
            episodes.append(Episode(env_index=int(row["robosim/env_index"]), seed=int(row["robosim/seed"]),
                                    states=np.concatenate([states[lo:hi], np.float32([row["robosim/final_state"]])]),
                                    actions=actions[lo:hi], complete=bool(row["robosim/complete"]), **fields))
            continue
        sim = checks.resimulate(env, states[lo], actions[lo:hi])
        hit = checks.divergence(states[lo:hi], sim["states"], tolerance)
        if hit is not None:
            step, index, error = hit
            message = (f"{where} {data.frame_file(lo + step)} episode {ep.index} field "
                       f"'observation.environment_state' must match its re-simulation in {header['task_id']} "
                       f"(separate physics, from the first state, with the recorded actions) within tolerance "
                       f"{tolerance:g}: first differs at step {step}, state index {index}, by {error:.3g}")
            if not skip:
                raise ValueError(message)
            skipped.append(message)
            continue
        deviation = max(deviation, float(np.abs(states[lo:hi] - sim["states"][:-1]).max()))
        fields = {field: fields.get(field, sim[field]) for field, _ in NEXT_FIELDS.values()}
        episodes.append(Episode(env_index=0, seed=-1, states=sim["states"], actions=actions[lo:hi], complete=True,
                                **fields))
    if not episodes:
        raise ValueError(f"{where}: every episode diverges from its re-simulation, nothing to import; the first: "
                         f"{skipped[0]}")
    return episodes, deviation, skipped
