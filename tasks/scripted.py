"""Deprecated: robosim 0.1.0's `robosim_tasks.scripted`. Its scripted-solution helpers
moved to robosim.envs.solutions and quat_yaw to robosim.core.rotations; each old name
still imports, with a DeprecationWarning, until robosim 0.3.0 (docs/api.md)."""
from robosim.core.deprecation import moved_names

__getattr__ = moved_names(__name__, {
    "PhasePolicy": "robosim.envs.solutions:PhasePolicy",
    "PickAndPlacePolicy": "robosim.envs.solutions:PickAndPlacePolicy",
    "ee_action": "robosim.envs.solutions:ee_action",
    "grasp_rotation": "robosim.envs.solutions:grasp_rotation",
    "quat_yaw": "robosim.core.rotations:quat_yaw",
})
