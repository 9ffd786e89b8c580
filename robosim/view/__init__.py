"""robosim.view: watch and drive a (headless) run from a browser, served by viser.

`attach(env)` serves a live view of a batched env for a user's own loop
(docs/viewer.md); `robosim view` (robosim/cli/view.py) runs a task or plays a recorded
trajectory in it. This package sits at the top with the cli: it may import every layer.
"""
from robosim.view.viewer import Viewer, attach

__all__ = ["Viewer", "attach"]
