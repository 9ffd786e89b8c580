"""Connecting the driver to Ray: an existing cluster (`ray_address`) or a local one.

A cluster is started with Ray's own commands (see docs/distributed.md):
    ray start --head --port=6379                 # on the head machine
    ray start --address=HEAD_IP:6379             # on every other machine
An address that does not answer fails within `timeout_s` with a ConnectionError
instead of leaving the driver waiting.
"""
from __future__ import annotations

import os
import socket


def check_address(ray_address: str | None) -> tuple[str, int] | None:
    """Validate `ray_address`: None, "auto", "host:port" or "ray://host:port".
    Returns (host, port) for the last two, None otherwise."""
    if ray_address is None or ray_address == "auto":
        return None
    if not isinstance(ray_address, str):
        raise TypeError(f"ray_address must be a str such as 'HEAD_IP:6379', 'ray://HEAD_IP:10001' or 'auto', "
                        f"got {type(ray_address).__name__}")
    hostport = ray_address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"ray_address must look like 'HEAD_IP:6379', 'ray://HEAD_IP:10001' or 'auto', "
                         f"got {ray_address!r}")
    return host, int(port)


def connect(ray_address: str | None = None, timeout_s: float = 10.0) -> bool:
    """Make sure this process is a Ray driver. Returns True if this call started Ray.

    An address is always checked; if this process is already connected nothing else
    happens (the existing connection is used). ray_address None: a local Ray instance (no
    dashboard). Otherwise the head at ray_address must accept a TCP connection within
    timeout_s (s), else ConnectionError naming the address."""
    import ray

    target = check_address(ray_address)
    if target is not None:
        try:
            socket.create_connection(target, timeout=timeout_s).close()
        except OSError as err:
            raise ConnectionError(f"ray_address {ray_address!r} is unreachable: nothing accepted a connection "
                                  f"at {target[0]}:{target[1]} within {timeout_s:g} s ({err}). Start the head "
                                  f"with `ray start --head --port={target[1]}` or fix the address.") from None
    if ray.is_initialized():
        current = ray.get_runtime_context().gcs_address
        if target is not None and not ray_address.startswith("ray://") and not _same_address(current, target):
            raise ValueError(f"ray_address must be the cluster this process is connected to ({current!r}), "
                             f"got {ray_address!r}; call ray.shutdown() first to switch clusters")
        return False
    try:
        if ray_address is None:
            # Ray lowers its workers' priority (nice 15) by default; here they are the
            # simulation itself, so they run at the driver's priority
            os.environ.setdefault("RAY_worker_niceness", "0")
            ray.init(include_dashboard=False, logging_level="warning", configure_logging=True)
        else:
            _init_within(ray_address, timeout_s)
    except ConnectionError as err:
        raise ConnectionError(f"ray_address {ray_address!r}: Ray could not connect within about "
                              f"{timeout_s:g} s ({err})") from None
    return True


def _same_address(current: str, target: tuple[str, int]) -> bool:
    host, _, port = current.rpartition(":")
    try:
        same_host = socket.gethostbyname(host) == socket.gethostbyname(target[0])
    except OSError:
        same_host = host == target[0]
    return same_host and port == str(target[1])


def check_capacity(workers: int, worker_cpus: float, wait_s: float = 10.0) -> None:
    """The cluster must have workers * worker_cpus CPUs free, else the actors would wait
    for a place (for ever, on a fixed cluster). CPUs of actors killed a moment ago come
    back with a delay, so this waits up to wait_s (s) before the ValueError naming the
    numbers."""
    import time

    import ray

    need, deadline = workers * worker_cpus, time.monotonic() + wait_s
    while True:
        free, total = ray.available_resources().get("CPU", 0.0), ray.cluster_resources().get("CPU", 0.0)
        if need <= free + 1e-9:
            return
        if need > total + 1e-9 or time.monotonic() > deadline:
            raise ValueError(f"workers * worker_cpus must fit the Ray cluster's free CPUs ({free:g} of {total:g}), "
                             f"got {workers} * {worker_cpus:g} = {need:g} (lower worker_cpus: fractions are fine; "
                             f"Ray CPUs only decide where workers go)")
        time.sleep(0.2)


def _init_within(ray_address: str, timeout_s: float) -> None:
    """ray.init(address=...), its GCS connection retries bounded to about timeout_s
    (Ray tries once a second, RAY_gcs_server_port_wait_time_s times; default ~20)."""
    import os

    import ray

    key = "RAY_gcs_server_port_wait_time_s"
    user_value = os.environ.get(key)
    if user_value is None:
        os.environ[key] = str(max(1, round(timeout_s)))
    try:
        ray.init(address=ray_address, logging_level="warning")
    finally:
        if user_value is None:
            os.environ.pop(key, None)
