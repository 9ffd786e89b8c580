"""Cameras and rendering."""
from robosim.sensors.camera import HumanCamera, look_at_pose

__all__ = ["HumanCamera", "look_at_pose"]
