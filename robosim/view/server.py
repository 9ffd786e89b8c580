"""Starting the viser server on exactly the port asked for.

viser moves to the next free port when the one asked for is taken; a viewer whose
address silently changes is a viewer nobody finds, so robosim refuses instead."""
from __future__ import annotations

import logging

import viser


def check_port(port: int, host: str) -> None:
    """TypeError/ValueError naming `port` or `host` for a value that is not a TCP port or a host name."""
    if isinstance(port, bool) or not isinstance(port, int):
        raise TypeError(f"port must be an int in [1, 65535], got {type(port).__name__} {port!r}")
    if not 1 <= port <= 65535:
        raise ValueError(f"port must be an int in [1, 65535], got {port}")
    if not isinstance(host, str) or not host:
        raise TypeError(f"host must be a non-empty str such as '127.0.0.1', got {host!r}")


def start_server(port: int, host: str) -> viser.ViserServer:
    """A running viser server bound to host:port; ValueError naming the port when it is in use."""
    check_port(port, host)
    logging.getLogger("websockets").setLevel(logging.CRITICAL)   # a closing browser tab is not an error
    server = viser.ViserServer(host=host, port=port, verbose=False)
    if server.get_port() != port:
        server.stop()
        raise ValueError(f"port {port} on {host} is in use (another viewer or program holds it); "
                         f"pass a free port, e.g. --port {port + 1}")
    return server
