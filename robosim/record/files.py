"""Atomic output files: written under a temporary name beside the target, renamed at the end.

A reader never sees a half-written or broken file under the final name:
- `AtomicFile` owns a temporary `.STEM.pid<PID>-<random>.partial.EXT` file that a writer (ffmpeg,
  h5py) fills; `commit()` finishes the writer and renames it. If finishing fails (full
  disk, broken pipe, deleted directory) the temporary file is deleted and the error is
  raised: nothing appears under the final name.
- `write_bytes_atomic` writes a complete byte string, fsyncs it and renames it.
If the process raises mid-run, `close()` (called by the owner's `finally`, context
manager or, failing that, the interpreter-exit finalizer) still finishes the file with
what was written so far.
"""
from __future__ import annotations

import os
import tempfile
import weakref
from typing import Callable


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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_bytes_atomic(path: str, data: bytes) -> None:
    """Write `data` to `path` atomically and durably (temp file, fsync, rename, fsync dir).

    On any OSError (ENOSPC, EIO, missing directory) the temp file is removed, `path` is
    left as it was and the error is raised."""
    directory, name = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_dir(directory)


class AtomicFile:
    """Owns `tmp_path` (created now, next to `final_path`) until `commit()` renames it.

    `finish` is called once with no argument right before the rename (close writers
    there). `discard()` deletes the temporary file instead."""

    def __init__(self, final_path: str, finish: Callable[[], None]):
        self.final_path = final_path
        directory, name = os.path.split(final_path)
        stem, ext = os.path.splitext(name)
        # the owner's pid in the name lets `robosim recover` leave a live writer's file alone
        fd, self.tmp_path = tempfile.mkstemp(prefix=f".{stem}.pid{os.getpid()}-", suffix=f".partial{ext}",
                                             dir=directory)
        os.close(fd)
        os.chmod(self.tmp_path, 0o666 & ~_umask())   # mkstemp makes 0600; give a normal file's mode
        self._finish = finish
        self.done = False
        # interpreter exit or garbage collection without close(): still finish the file
        self._finalizer = weakref.finalize(self, AtomicFile._finalize, finish, self.tmp_path, final_path)

    @staticmethod
    def _finalize(finish, tmp_path, final_path) -> None:
        try:
            finish()
            if not os.path.exists(tmp_path):
                raise FileNotFoundError(f"cannot write {final_path!r}: its temporary file {tmp_path!r} "
                                        f"disappeared (was the directory deleted?)")
            os.replace(tmp_path, final_path)
        except BaseException:
            _unlink_quietly(tmp_path)   # a file that failed to finish never gets the final name
            raise

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
                _unlink_quietly(self.tmp_path)
