"""Atomic output files: written under a temporary name beside the target, renamed at the end.

A reader never sees a half-written file under the final name. If the process raises
mid-run, `close()` (called by the owner's `finally`, context manager or, failing that,
the interpreter-exit finalizer) still finishes the file with what was written so far.
"""
from __future__ import annotations

import os
import tempfile
import weakref
from typing import Callable


def check_output_path(arg: str, path: str, suffixes: tuple[str, ...]) -> str:
    """Validate an output path before any work: a str/PathLike ending in one of
    `suffixes`, whose directory exists and is writable. Returns the absolute path."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{arg} must be a file path (str), got {type(path).__name__}")
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


class AtomicFile:
    """Owns `tmp_path` (created now, next to `final_path`) until `commit()` renames it.

    `finish` is called once with no argument right before the rename (close writers
    there). `discard()` deletes the temporary file instead."""

    def __init__(self, final_path: str, finish: Callable[[], None]):
        self.final_path = final_path
        directory, name = os.path.split(final_path)
        stem, ext = os.path.splitext(name)
        fd, self.tmp_path = tempfile.mkstemp(prefix=f".{stem}.", suffix=f".partial{ext}", dir=directory)
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
        finally:
            if os.path.exists(tmp_path):
                os.replace(tmp_path, final_path)

    def commit(self) -> None:
        """Finish the file and move it to the final name (idempotent)."""
        if not self.done:
            self.done = True
            self._finalizer()

    def discard(self) -> None:
        if not self.done:
            self.done = True
            self._finalizer.detach()
            try:
                self._finish()
            finally:
                if os.path.exists(self.tmp_path):
                    os.unlink(self.tmp_path)
