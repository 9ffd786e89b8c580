"""The viewer tests' read of a live viewer's scene graph."""
from __future__ import annotations


def nodes(viewer) -> set[str]:
    """Names of the viewer's scene-graph nodes now (viser's server-side registry)."""
    return set(viewer.server.scene._handle_from_node_name)
