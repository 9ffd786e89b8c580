"""WorkerPool: one Ray actor per shard, restarted by Ray when its process dies.

Actors are created with `max_restarts` (Ray re-runs the constructor in a new process)
and `max_task_retries=0` (a call in flight when the process died fails instead of
being replayed: the driver decides how to recover). Workers are spread over the
cluster's nodes (Ray's "SPREAD" scheduling) unless `actor_options` says otherwise.
"""
from __future__ import annotations

import socket
import time
from typing import Any

from robosim.distributed import errors
from robosim.distributed.errors import WorkerLostError, WorkerNotBuiltError, remote_error
from robosim.distributed.sharding import Shard


class WorkerPool:
    """Actors of `worker_cls` (a robosim.distributed.worker class), one per shard.

    worker_args[k]: constructor arguments of worker k; num_cpus: Ray CPUs reserved per
    worker (fractions allowed); restart_timeout_s: how long to wait for Ray to bring a
    dead worker back (s)."""

    def __init__(self, worker_cls: type, shards: list[Shard], worker_args: list[tuple], num_cpus: float = 1.0,
                 max_restarts: int = 3, restart_timeout_s: float = 120.0, actor_options: dict | None = None):
        import ray

        self.shards = shards
        self.max_restarts = max_restarts
        self.restart_timeout_s = restart_timeout_s
        options = {"num_cpus": num_cpus, "max_restarts": max_restarts, "max_task_retries": 0,
                   "scheduling_strategy": "SPREAD", **(actor_options or {})}
        remote_cls = ray.remote(worker_cls)
        self.actors = [remote_cls.options(**options).remote(*args) for args in worker_args]
        self.identities: list[dict[str, Any]] = [{} for _ in shards]
        self.restarts = [0] * len(shards)
        self.exit_reasons: dict[int, str] = {}   # worker -> why its process last died (errors.exit_reason)
        self._oom_kills = errors.oom_kills()

    def where(self, k: int) -> str:
        """"worker k (envs a-b) on host (pid p)" for messages."""
        ident = self.identities[k]
        place = f" on {ident['host']} (pid {ident['pid']})" if ident else ""
        return f"{self.shards[k]}{place}"

    def submit(self, method: str, args: dict[int, tuple]) -> dict[int, Any]:
        """Call `method` on the workers in `args` (worker id -> positional args); returns refs."""
        return {k: getattr(self.actors[k], method).remote(*a) for k, a in args.items()}

    def gather(self, refs: dict[int, Any]) -> tuple[dict[int, Any], list[int]]:
        """Wait for every ref. Returns (results by worker, workers whose process died).
        A call that reached a restarted, not yet rebuilt worker counts as died.
        An exception raised inside a worker is re-raised here (robosim.distributed.errors),
        after every call has finished, so no call is left in flight."""
        import ray
        from ray.exceptions import RayActorError, RayTaskError

        results, lost, error = {}, [], None
        for k, ref in refs.items():
            try:
                results[k] = ray.get(ref)
            except RayTaskError as err:
                if isinstance(err.cause, WorkerNotBuiltError):
                    lost.append(k)  # the call reached a restarted process before the driver noticed
                else:
                    error = error or remote_error(self.where(k), k, err)
            except RayActorError as err:
                lost.append(k)
                self.exit_reasons[k] = errors.exit_reason(err, self._oom_kills)
        if error is not None:
            raise error
        return results, lost

    def call(self, method: str, args: dict[int, tuple]) -> dict[int, Any]:
        """submit + gather for calls where a dead worker is an error (build, render)."""
        results, lost = self.gather(self.submit(method, args))
        if lost:
            reason = self.exit_reasons.get(lost[0], "reason unknown")
            raise WorkerLostError(f"{self.where(lost[0])} died during {method}(): {reason}")
        return results

    def wait_restarted(self, k: int) -> None:
        """Block until Ray has restarted worker k's process (its constructor ran again)."""
        import ray
        from ray.exceptions import ActorDiedError, ActorUnavailableError, GetTimeoutError

        deadline = time.monotonic() + self.restart_timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerLostError(f"{self.where(k)} died and was not restarted within "
                                      f"{self.restart_timeout_s:g} s")
            try:
                identity = ray.get(self.actors[k].identity.remote(), timeout=remaining)
                old = self.identities[k]
                if identity == old:
                    raise WorkerLostError(f"{self.where(k)} lost its env without a restart (closed?)")
                if old.get("host") == socket.gethostname():   # the dead process's trace file, if still there
                    errors.forget_last_words(old["pid"])
                self.identities[k] = identity
                break
            except ActorUnavailableError:
                time.sleep(0.2)
            except GetTimeoutError:
                continue
            except ActorDiedError as err:
                reason = self.exit_reasons.get(k) or errors.exit_reason(err, self._oom_kills)
                raise WorkerLostError(f"{self.where(k)} died and Ray will not restart it "
                                      f"(max_restarts={self.max_restarts}, used {self.restarts[k]}): "
                                      f"{reason}") from None
        self.restarts[k] += 1

    def close(self) -> None:
        """Kill every actor (no restart); idempotent."""
        import ray

        for actor in self.actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001  (already gone, or Ray shut down first)
                pass
        for ident in self.identities:   # the killed workers' (empty) trace files on this host
            if ident.get("host") == socket.gethostname():
                errors.forget_last_words(ident["pid"])
        self.actors = []
