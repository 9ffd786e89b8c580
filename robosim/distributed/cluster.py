"""Connecting the driver to Ray: an existing cluster (`ray_address`) or a local one.

A cluster is started with Ray's own commands (see docs/distributed.md):
    ray start --head --port=6379                 # on the head machine
    ray start --address=HEAD_IP:6379             # on every other machine
An address that does not answer fails within `timeout_s` with a ConnectionError
instead of leaving the driver waiting.
"""
from __future__ import annotations

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

    Already connected: nothing happens. ray_address None: a local Ray instance (no
    dashboard). Otherwise the head at ray_address must accept a TCP connection within
    timeout_s (s), else ConnectionError naming the address."""
    import ray

    target = check_address(ray_address)
    if ray.is_initialized():
        return False
    if target is not None:
        try:
            socket.create_connection(target, timeout=timeout_s).close()
        except OSError as err:
            raise ConnectionError(f"ray_address {ray_address!r} is unreachable: nothing accepted a connection "
                                  f"at {target[0]}:{target[1]} within {timeout_s:g} s ({err}). Start the head "
                                  f"with `ray start --head --port={target[1]}` or fix the address.") from None
    try:
        if ray_address is None:
            ray.init(include_dashboard=False, logging_level="warning", configure_logging=True)
        else:
            ray.init(address=ray_address, logging_level="warning")
    except ConnectionError as err:
        raise ConnectionError(f"ray_address {ray_address!r}: Ray could not connect ({err})") from None
    return True
