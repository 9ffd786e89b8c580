"""HDF5 trajectory files: everything needed to replay a recorded run.

Layout (format "robosim-trajectory", FORMAT_VERSION):
  /                attrs: format, format_version, robosim_version, task_id, env_spec
                   (JSON of the recording env's robosim.EnvSpec, seed = its asset build
                   seeds), num_envs, state_dim, action_dim, sim_backend, control_mode.
                   Files written before EnvSpec hold env_kwargs (robosim.make keywords)
                   instead; they still load, with default physics
  /episode_00000   one group per episode, numbered in the order they ended
      attrs        env_index (int, which env of the batch ran it), seed (int, -1 when the
                   episode was not reset with an explicit seed), complete (bool: ended by
                   terminated/truncated; False when cut short), length T
      actions      float32 (T, A)   as passed to step (the env clips them)
      states       float32 (T+1, S) env.get_state() after reset, then after every step
                   (env frame)
      rewards      float32 (T,)
      success, terminated, truncated   bool (T,)

Durability: while recording, every finished episode is written at once as its own
complete file `episode_NNNNN.h5` (same layout, one group) inside the hidden directory
`.NAME.<random>.parts/` next to the final path, atomically and fsynced
(robosim.record.files). `close()` merges the parts into NAME and deletes the directory.
Each part also carries the root attributes, so a part directory is recoverable on its
own even when its owner.json is lost. The writer claims NAME (robosim.record.files
OutputLock) from construction to close: a second writer to NAME is refused at start.
After a SIGKILL or a power loss the parts directory stays; `robosim recover DIR`
(robosim.record.recover) merges it into a file, so every finished episode survives.
h5py only ever writes to memory: bytes reach the disk through plain os.write, so a full
disk is an ordinary OSError and never leaves HDF5 in a half-flushed state.
"""
from __future__ import annotations

import atexit
import errno
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from robosim.core.atomic import write_bytes_atomic
from robosim.record.files import OutputLock, check_output_path

FORMAT = "robosim-trajectory"
FORMAT_VERSION = 1
TRAJECTORY_SUFFIXES = (".h5", ".hdf5")
PARTS_SUFFIX = ".parts"
OWNER_FILE = "owner.json"
FLOAT_FIELDS = ("states", "actions", "rewards")
BOOL_FIELDS = ("success", "terminated", "truncated")


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


def _write_root_attrs(h5, header: dict[str, Any]) -> None:
    for key, value in header.items():
        h5.attrs[key] = json.dumps(value) if isinstance(value, dict) else value


def _write_episode(h5, name: str, episode: Episode) -> None:
    group = h5.create_group(name)
    group.attrs.update(env_index=episode.env_index, seed=episode.seed, complete=episode.complete,
                       length=episode.length)
    for field in FLOAT_FIELDS:
        group.create_dataset(field, data=np.asarray(getattr(episode, field), dtype=np.float32))
    for field in BOOL_FIELDS:
        group.create_dataset(field, data=np.asarray(getattr(episode, field), dtype=bool))


def h5_bytes(build: Callable[[Any], None]) -> bytes:
    """Bytes of an HDF5 file that `build(h5)` fills, made entirely in memory."""
    import h5py

    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as h5:
        build(h5)
    return buffer.getvalue()


def _check_part(path: str, name: str) -> dict[str, Any]:
    """Root attributes of the episode part file `path` after reading and validating its
    one episode `name` (ValueError saying what is wrong when it is unreadable)."""
    try:
        part = TrajectoryFile(path, arg="episode file")
        if part.episode_names != [name]:
            raise ValueError(f"episode file must hold exactly the group {name!r}, got {part.episode_names}")
        part.episode(0)
    except ValueError:
        raise
    except Exception as err:   # h5py raises OSError, KeyError, RuntimeError... for damaged bytes
        raise ValueError(f"episode file cannot be read: {type(err).__name__}: {err}") from None
    return part.attrs


_MUST_MATCH = ("format", "format_version", "task_id", "num_envs", "state_dim", "action_dim")


def read_parts(parts_dir: str) -> tuple[list[str], list[tuple[str, str]], dict[str, Any] | None]:
    """Sort the episode files of `parts_dir` into (readable names, [(unreadable name, why)],
    root attributes of the last readable one). A readable file whose task or dimensions
    differ from that last one's counts as unreadable (it cannot join the same file)."""
    names = sorted(n for n in os.listdir(parts_dir) if n.startswith("episode_") and n.endswith(".h5"))
    good: list[tuple[str, dict]] = []
    bad: list[tuple[str, str]] = []
    for name in names:
        try:
            good.append((name, _check_part(os.path.join(parts_dir, name), name[:-3])))
        except ValueError as err:
            bad.append((name, str(err)))
    reference = good[-1][1] if good else None
    if reference is not None:
        for name, attrs in list(good):
            differ = [k for k in _MUST_MATCH if str(attrs.get(k)) != str(reference.get(k))]
            if differ:
                good.remove((name, attrs))
                bad.append((name, f"its {differ} differ from the other episodes' {[reference.get(k) for k in differ]}"))
    return [n for n, _ in good], sorted(bad), reference


def merge_parts(parts_dir: str, final_path: str,
                header: dict[str, Any] | None = None) -> tuple[int, list[tuple[str, str]]]:
    """Write every readable episode file of `parts_dir` (in order) into one trajectory at
    `final_path` (atomically), then delete them. Root attributes: `header`, else the
    readable episode files' own. Returns (episodes written, [(unreadable file, why)]).
    Unreadable files are never deleted: `parts_dir` stays while it holds one, and is
    removed otherwise. With no readable episode and no header nothing is written."""
    import h5py

    names, bad, reference = read_parts(parts_dir)
    if header is None and reference is None:
        if not bad:
            shutil.rmtree(parts_dir)
        return 0, bad

    def build(h5) -> None:
        if header is not None:
            _write_root_attrs(h5, header)
        else:
            for key, value in reference.items():
                h5.attrs[key] = value
        for k, name in enumerate(names):
            with h5py.File(os.path.join(parts_dir, name), "r") as part:
                part.copy(part[name[:-3]], h5, name=f"episode_{k:05d}")

    write_bytes_atomic(final_path, h5_bytes(build))
    if bad:
        for name in names:
            os.unlink(os.path.join(parts_dir, name))
    else:
        shutil.rmtree(parts_dir)
    return len(names), bad


class TrajectoryWriter:
    """Append episodes to a trajectory at `path` (see the module docstring).

    header: root attributes (task_id, env_kwargs, num_envs, state_dim, ...)."""

    def __init__(self, path: str, header: dict[str, Any], arg: str = "trajectory"):
        import h5py  # noqa: F401  (registers h5py's exit handler before ours)

        self.path = check_output_path(arg, path, TRAJECTORY_SUFFIXES)
        directory, name = os.path.split(self.path)
        self.header = {"format": FORMAT, "format_version": FORMAT_VERSION, **header}
        # episodes still running: written with complete=False if the file closes first
        self.pending: Callable[[], list[Episode]] = list
        self.episodes_written = 0
        self.closed = False
        self._lock = OutputLock(self.path, arg)   # a second writer to this path is refused (ValueError)
        try:
            self.parts_dir = tempfile.mkdtemp(prefix=f".{name}.", suffix=PARTS_SUFFIX, dir=directory)
        except BaseException:
            self._lock.release()
            raise
        try:
            owner = {"pid": os.getpid(), "final_path": self.path, "header": self.header}
            write_bytes_atomic(os.path.join(self.parts_dir, OWNER_FILE), json.dumps(owner).encode())
        except BaseException:
            shutil.rmtree(self.parts_dir, ignore_errors=True)
            self._lock.release()
            raise
        # interpreter exit without close() (an uncaught exception): close() still runs, so
        # the running episodes are kept too. atexit, not weakref.finalize: handlers run
        # last-registered first, so this one runs before h5py's own exit handler (imported
        # above) shuts the HDF5 library down; a finalize hook would run after it and crash.
        atexit.register(self.close)

    def add_episode(self, episode: Episode) -> None:
        """Write one episode durably (its own fsynced part file) before returning."""
        if self.closed:
            raise ValueError(f"trajectory {self.path!r} is closed; episodes can no longer be added")
        name = f"episode_{self.episodes_written:05d}"
        data = h5_bytes(lambda h5: (_write_root_attrs(h5, self.header), _write_episode(h5, name, episode)))
        try:
            write_bytes_atomic(os.path.join(self.parts_dir, name + ".h5"), data)
        except OSError as err:
            raise self._write_error(err) from err
        self.episodes_written += 1

    def _write_error(self, err: OSError) -> OSError:
        """The error to raise when a write fails: names the file and where the finished
        episodes are kept."""
        return OSError(err.errno, f"cannot write trajectory {self.path!r}: {err.strerror or err}; its "
                                  f"{self.episodes_written} finished episodes are kept in {self.parts_dir!r} "
                                  f"(`robosim recover {os.path.dirname(self.path)}` once the problem is fixed)")

    def close(self) -> None:
        """Add the running episodes (complete=False), merge everything into `path` and
        remove the parts directory (idempotent). On an OSError the parts directory is
        kept (its episodes stay recoverable) and the error names it."""
        if self.closed:
            return
        try:
            for episode in self.pending():
                if episode.length > 0:
                    self.add_episode(episode)
        finally:
            self.closed = True
            self.pending = list
            atexit.unregister(self.close)
        try:
            written, bad = merge_parts(self.parts_dir, self.path, self.header)
        except OSError as err:
            raise self._write_error(err) from err
        finally:
            self._lock.release()
        if bad:   # its own files damaged on disk (not seen in practice): say so, keep them
            raise OSError(errno.EIO, f"trajectory {self.path!r} holds {written} episodes; {len(bad)} damaged "
                                     f"episode files are kept in {self.parts_dir!r}: {bad[0][0]}: {bad[0][1]}")

    def discard(self) -> None:
        """Delete everything written; nothing appears under `path`."""
        if self._stop():
            shutil.rmtree(self.parts_dir, ignore_errors=True)

    def abandon(self) -> None:
        """Stop without a final file: the finished episodes stay in the parts directory,
        which `robosim recover` merges (idempotent)."""
        self._stop()

    def _stop(self) -> bool:
        """Close without merging; False when already closed."""
        if self.closed:
            return False
        self.closed = True
        atexit.unregister(self.close)
        self._lock.release()
        return True


def _read_episode(group, name: str, path: str, state_dim: int, action_dim: int) -> Episode:
    """Validate and read one episode group (ValueError naming the missing/bad field)."""
    for key in ("env_index", "seed", "complete"):
        if key not in group.attrs:
            raise ValueError(f"trajectory {name} must have attribute {key!r}, got none in {path!r}")
    missing = [f for f in FLOAT_FIELDS + BOOL_FIELDS if f not in group]
    if missing:
        raise ValueError(f"trajectory {name} must have datasets {list(FLOAT_FIELDS + BOOL_FIELDS)}, "
                         f"missing {missing} in {path!r}")
    data = {f: group[f][()] for f in FLOAT_FIELDS + BOOL_FIELDS}
    t = len(data["actions"])
    expected = {"states": (t + 1, state_dim), "actions": (t, action_dim), "rewards": (t,),
                **{f: (t,) for f in BOOL_FIELDS}}
    for field, shape in expected.items():
        if data[field].shape != shape:
            raise ValueError(f"trajectory {name}/{field} must have shape {shape}, got {data[field].shape} in {path!r}")
    return Episode(env_index=int(group.attrs["env_index"]), seed=int(group.attrs["seed"]),
                   complete=bool(group.attrs["complete"]), **data)


class TrajectoryFile:
    """Read a trajectory file, validating its format before any simulation runs.

    task_id: when given, the file must have been recorded on this task."""

    REQUIRED_ATTRS = ("task_id", "num_envs", "state_dim", "action_dim")

    def __init__(self, path: str, task_id: str | None = None, arg: str = "trajectory"):
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
        missing = [k for k in self.REQUIRED_ATTRS if k not in self.attrs]
        if "env_spec" not in self.attrs and "env_kwargs" not in self.attrs:
            missing.append("env_spec")
        if missing:
            raise ValueError(f"{arg} must have root attributes {[*self.REQUIRED_ATTRS, 'env_spec']}, missing "
                             f"{missing} in {path!r}")
        if task_id is not None and self.attrs["task_id"] != task_id:
            raise ValueError(f"{arg} must be recorded on task {task_id!r}, got {self.attrs['task_id']!r} in {path!r}")
        self.task_id = str(self.attrs["task_id"])
        key = "env_spec" if "env_spec" in self.attrs else "env_kwargs"
        try:
            self._stored_spec: dict = json.loads(self.attrs[key])
            self.num_envs = int(self.attrs["num_envs"])
            self.state_dim = int(self.attrs["state_dim"])
            self.action_dim = int(self.attrs["action_dim"])
        except (TypeError, ValueError) as err:
            raise ValueError(f"{arg} has malformed root attributes in {path!r}: {err}") from None
        if not isinstance(self._stored_spec, dict) or self.num_envs < 1 or self.state_dim < 1 or self.action_dim < 1:
            raise ValueError(f"{arg} must have {key} a JSON object and num_envs, state_dim, action_dim >= 1, "
                             f"got {self._stored_spec!r}, {self.num_envs}, {self.state_dim}, {self.action_dim} "
                             f"in {path!r}")
        self.arg = arg

    @property
    def spec(self):
        """The recording env's robosim.EnvSpec (ValueError naming the file when the task
        is not registered or a stored field is unknown or invalid). A file from before
        EnvSpec gives the spec of its stored make() keywords."""
        from robosim.envs.spec import EnvSpec

        where = f"{self.arg} {self.path!r}"
        try:
            if "env_spec" in self.attrs:
                return EnvSpec.from_dict({**self._stored_spec, "task_id": self.task_id}, arg=f"{where} env_spec")
            kwargs = {k: v for k, v in self._stored_spec.items() if k not in ("task_id", "num_envs")}
            return EnvSpec.from_kwargs(self.task_id, num_envs=self.num_envs, **kwargs)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where} does not describe an env this robosim can build: {err}") from None

    def __len__(self) -> int:
        return len(self.episode_names)

    def episode(self, k: int) -> Episode:
        import h5py

        with h5py.File(self.path, "r") as f:
            name = self.episode_names[k]
            return _read_episode(f[name], name, self.path, self.state_dim, self.action_dim)
