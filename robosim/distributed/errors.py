"""Errors raised inside a worker, as the driver reports them.

An exception inside a worker's method reaches the driver as Ray's RayTaskError; the
driver re-raises it naming the worker, its envs and node, with the remote traceback.
ValueError and TypeError (bad input) keep their type so callers can catch them as in
one process; anything else becomes a WorkerError.
"""
from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class WorkerError(RuntimeError):
    """An error inside worker `worker_id`; `remote_traceback` is the worker's traceback."""

    def __init__(self, message: str, worker_id: int, remote_traceback: str):
        super().__init__(message)
        self.worker_id = worker_id
        self.remote_traceback = remote_traceback


class WorkerNotBuiltError(RuntimeError):
    """Raised inside a worker whose env was never built: Ray restarted its process
    (its constructor ran again) and the driver has not rebuilt it yet."""


class WorkerLostError(RuntimeError):
    """A worker process died and Ray could not bring it back (restarts used up, node gone)."""


def remote_error(where: str, worker_id: int, err: Exception) -> Exception:
    """The exception to raise on the driver for a RayTaskError `err` from worker
    `worker_id`, described by `where` (e.g. "worker 1 (envs 2-3) on node 7f3a"):
    ValueError/TypeError keep their base type (bad input), anything else is a WorkerError."""
    cause = getattr(err, "cause", None)
    remote_tb = _ANSI.sub("", getattr(err, "traceback_str", "") or str(err)).strip()
    summary = f"{type(cause).__name__}: {cause}" if cause is not None else str(err).splitlines()[-1]
    message = f"{where} raised {summary}\n--- remote traceback ---\n{remote_tb}"
    for kind in (ValueError, TypeError):
        if isinstance(cause, kind):
            out = kind(message)
            out.worker_id, out.remote_traceback = worker_id, remote_tb  # type: ignore[attr-defined]
            return out
    return WorkerError(message, worker_id, remote_tb)
