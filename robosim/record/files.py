"""Atomic output files: written under a temporary name beside the target, renamed at the end.

A reader never sees a half-written or broken file under the final name:
- `AtomicFile` owns a temporary `.STEM.pid<PID>-<random>.partial.EXT` file that a writer (ffmpeg,
  h5py) fills; `commit()` finishes the writer and renames it. If finishing fails (full
  disk, broken pipe, deleted directory) the temporary file is deleted and the error is
  raised: nothing appears under the final name.
- A complete byte string: `robosim.core.atomic.write_bytes_atomic` (the one atomic write).
- `OutputLock` claims a final path for one writer (`.NAME.lock` beside it, flock'ed):
  a second writer to the same path, in this or another process, is refused at start
  with a ValueError naming the path and the process that holds it, instead of both
  reporting success while the later rename silently replaces the earlier recording.
  The kernel drops the claim when its process dies, so a SIGKILLed writer never blocks
  the path; its stale lock file is reused (and `robosim recover` removes it).
If the process raises mid-run, `close()` (called by the owner's `finally`, context
manager or, failing that, the interpreter-exit finalizer) still finishes the file with
what was written so far.
"""
from __future__ import annotations

import errno
import fcntl
import os
import weakref
from collections.abc import Callable

from robosim.core.atomic import current_umask, make_temp_beside, replace_into_place, unlink_quietly


def check_output_path(arg: str, path: str, suffixes: tuple[str, ...]) -> str:
    """Validate an output path before any work: a non-empty str/PathLike ending in one of
    `suffixes`, whose directory exists and is writable. Returns the absolute path."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{arg} must be a file path (str), got {type(path).__name__}")
    if os.fspath(path) == "":
        raise ValueError(f"{arg} must be a file path ending with {' or '.join(suffixes)}, got ''")
    path = os.path.abspath(os.fspath(path))
    if not path.lower().endswith(suffixes):
        raise ValueError(f"{arg} must end with {' or '.join(suffixes)}, got {path!r}")
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        raise ValueError(f"{arg} must be in an existing directory, got {path!r} ({directory!r} does not exist)")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ValueError(f"{arg} must be in a writable directory, got {path!r} ({directory!r} is not writable)")
    if os.path.isdir(path):
        raise ValueError(f"{arg} must be a file path, got the directory {path!r}")
    return path


LOCK_SUFFIX = ".lock"


def lock_path_of(path: str) -> str:
    """The lock file that claims the output `path`: `.NAME.lock` in the same directory."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}{LOCK_SUFFIX}")


class OutputLock:
    """An exclusive claim on the output `path`, held until `release()` (or process death).

    Raises ValueError naming `arg`, the path and the holder's pid when another writer
    (another process, or another writer of this one) holds it."""

    def __init__(self, path: str, arg: str = "path"):
        self.path = path
        self.lock_path = lock_path_of(path)
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666 & ~current_umask())
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                holder = _read_pid(fd)
                os.close(fd)
                if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                who = "this process" if holder == os.getpid() else f"process {holder}" if holder else "another process"
                raise ValueError(f"{arg} must be a path no other writer is recording to, got {path!r} ({who} "
                                 f"is recording to it, lock {self.lock_path!r}); choose another path or wait "
                                 f"until that recording is finished") from None
            # the previous holder unlinks the file before releasing it: if ours is no longer
            # the file under that name we locked a dead inode; try again with a fresh one
            try:
                st = os.stat(self.lock_path)
                same = (st.st_dev, st.st_ino) == (os.fstat(fd).st_dev, os.fstat(fd).st_ino)
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass   # the pid is only for messages; the flock is the claim
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give the path up (idempotent): unlink the lock file, then drop the flock."""
        if self._fd is not None:
            unlink_quietly(self.lock_path)
            os.close(self._fd)
            self._fd = None


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def remove_stale_lock(lock_path: str) -> bool:
    """Delete `lock_path` if no live writer holds it (its writer was killed). True if removed."""
    directory, name = os.path.split(lock_path)
    if not (name.startswith(".") and name.endswith(LOCK_SUFFIX)):
        raise ValueError(f"lock_path must name a '.NAME{LOCK_SUFFIX}' file, got {lock_path!r}")
    try:
        lock = OutputLock(os.path.join(directory, name[1:-len(LOCK_SUFFIX)]), arg="lock_path")
    except ValueError:
        return False
    lock.release()
    return True


class AtomicFile:
    """Owns `tmp_path` (created now, next to `final_path`) until `commit()` renames it.

    Claims `final_path` (OutputLock, ValueError naming `arg` if another writer holds it)
    until commit or discard. `finish` is called once with no argument right before the
    rename (close writers there). `discard()` deletes the temporary file instead."""

    def __init__(self, final_path: str, finish: Callable[[], None], arg: str = "path"):
        self.final_path = final_path
        stem, ext = os.path.splitext(os.path.basename(final_path))
        self._lock = OutputLock(final_path, arg)
        try:
            # the owner's pid in the name lets `robosim recover` leave a live writer's file alone
            self.tmp_path = make_temp_beside(final_path, f".{stem}.pid{os.getpid()}-", f".partial{ext}")
        except BaseException:
            self._lock.release()
            raise
        self._finish = finish
        self.done = False
        # interpreter exit or garbage collection without close(): still finish the file
        self._finalizer = weakref.finalize(self, AtomicFile._finalize, finish, self.tmp_path, final_path,
                                           self._lock)

    @staticmethod
    def _finalize(finish, tmp_path, final_path, lock: OutputLock) -> None:
        try:
            try:
                finish()
            except BaseException:
                unlink_quietly(tmp_path)   # a file that failed to finish never gets the final name
                raise
            replace_into_place(tmp_path, final_path)
        finally:
            lock.release()

    def commit(self) -> None:
        """Finish the file and move it to the final name (idempotent). Raises the
        writer's error (and leaves no file) if finishing failed."""
        if not self.done:
            self.done = True
            self._finalizer()

    def discard(self) -> None:
        if not self.done:
            self.done = True
            self._finalizer.detach()
            try:
                self._finish()
            except Exception:
                pass   # the file is deleted anyway; the caller is already handling an error
            finally:
                unlink_quietly(self.tmp_path)
                self._lock.release()
