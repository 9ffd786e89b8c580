"""Errors raised inside a worker, as the driver reports them.

An exception inside a worker's method reaches the driver as Ray's RayTaskError; the
driver re-raises it naming the worker, its envs and node, with the remote traceback.
ValueError and TypeError (bad input) keep their type so callers can catch them as in
one process; anything else becomes a WorkerError.

A worker process that dies reaches the driver as Ray's RayActorError, whose text says
only "the worker process has died" (Ray cannot tell a signal from the OOM killer).
`exit_reason` adds what this host can tell: each worker writes Python's faulthandler
trace of a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGILL) to
`last_words_path(pid)` on its node, and the kernel counts its OOM kills in /proc/vmstat.
"""
from __future__ import annotations

import os
import re
import tempfile

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


def last_words_path(pid: int) -> str:
    """The file where worker process `pid` leaves its fatal-signal trace, on its own node."""
    return os.path.join(tempfile.gettempdir(), f"robosim-ray-worker-{pid}.log")


def forget_last_words(pid: int) -> None:
    """Remove worker `pid`'s trace file on this host, if any."""
    try:
        os.remove(last_words_path(pid))
    except OSError:
        pass


def oom_kills() -> int | None:
    """The kernel's count of processes its OOM killer ended on this host since boot
    (/proc/vmstat oom_kill); None where the count cannot be read."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _node_ip() -> str | None:
    try:
        import ray

        return ray.util.get_node_ip_address()
    except Exception:  # noqa: BLE001  (no Ray here: nothing is local)
        return None


def exit_reason(err: Exception, oom_kills_before: int | None) -> str:
    """Why the worker process behind Ray's RayActorError `err` ended: "fatal signal
    (Segmentation fault) in <innermost frame>", "killed by the kernel's out-of-memory
    killer", "ended without a fault trace (SIGKILL or os._exit ...)", Ray's own memory
    monitor, or, for a worker on another node, where its trace file is; then Ray's exit
    type and detail. oom_kills_before: `oom_kills()` when the workers started.
    Reads (and removes) a local worker's trace file."""
    text = _ANSI.sub("", getattr(err, "error_msg", None) or str(err))
    pid, ip = re.search(r"\bpid: (\d+)", text), re.search(r"\bip: (\S+)", text)
    parts = []
    if pid is not None and (ip is None or ip.group(1) == _node_ip()):
        path = last_words_path(int(pid.group(1)))
        try:
            with open(path, errors="replace") as f:
                words = f.read()
        except OSError:
            words = ""
        forget_last_words(int(pid.group(1)))
        fatal = re.search(r"Fatal Python error: ([^\n]+)", words)
        frame = re.search(r'File "([^"]+)", line (\d+) in (\S+)', words)
        now = oom_kills()
        rose = now - oom_kills_before if now is not None and oom_kills_before is not None else 0
        if fatal is not None:
            where = f" in {frame.group(3)} ({frame.group(1)}:{frame.group(2)})" if frame else ""
            parts.append(f"fatal signal ({fatal.group(1).strip()}){where}")
        elif rose > 0:
            parts.append(f"killed by the kernel's out-of-memory killer (it ended {rose} process(es) on this host "
                         f"since the workers started: /proc/vmstat oom_kill)")
        else:
            parts.append("ended without a fault trace (SIGKILL or os._exit: kill -9, ray stop --force; not the "
                         "kernel's out-of-memory killer, which ended nothing on this host)")
    elif pid is not None:
        parts.append(f"on node {ip.group(1) if ip else '?'}: a fatal signal's trace, if any, is in "
                     f"{last_words_path(int(pid.group(1)))} there")
    if re.search(r"low on memory|OutOfMemory", text):
        parts.append("Ray's memory monitor killed it (the node ran low on memory)")
    detail = re.search(r"Worker exit type: (\S+) Worker exit detail: (.*?\.)(?: |$)", text)
    if detail is not None:
        parts.append(f"Ray: exit type {detail.group(1)}, {detail.group(2)}")
    return "; ".join(parts) or (text.strip().splitlines() or ["no reason given"])[-1]
