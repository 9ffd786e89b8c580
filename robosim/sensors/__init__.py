"""Cameras as sensors, the human-view render camera, render level of detail."""
from robosim.sensors.camera import CameraConfig, HumanCamera, HumanViewConfig, eye_target_pose, look_at_pose
from robosim.sensors.lod import apply_render_lod, is_software_renderer, resolve_lod
from robosim.sensors.rig import CameraRig, RigSpec
from robosim.sensors.sensor_cameras import SegmentationIds, SensorCameras

__all__ = ["CameraConfig", "CameraRig", "HumanCamera", "HumanViewConfig", "RigSpec", "SegmentationIds",
           "SensorCameras", "apply_render_lod", "eye_target_pose", "is_software_renderer", "look_at_pose",
           "resolve_lod"]
