"""Deprecated location: the scripted-solution API lives in robosim.envs.solutions.

Thin re-exports kept so task files written against `robosim_tasks.scripted` still import."""
from robosim.envs.solutions import PhasePolicy, PickAndPlacePolicy, ee_action, grasp_rotation, quat_yaw  # noqa: F401
