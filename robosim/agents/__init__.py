"""Robots and their batched controllers."""
from robosim.agents.controllers import CONTROL_MODES
from robosim.agents.panda import Panda, rest_qpos

__all__ = ["CONTROL_MODES", "Panda", "rest_qpos"]
