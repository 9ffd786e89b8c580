"""The mobile manipulator robosim ships: Fetch, data only, from the URDF and meshes
inside the mani-skill package. As in ManiSkill3, the base is three planar joints
(root_x, root_y, root_rot: x m, y m, yaw rad) driven by a base velocity controller next
to the arm's. Unlike ManiSkill3, the torso and head joints are fixed (torso at
`FETCH_TORSO` m, head level) in a copy of the URDF written once into the robosim cache
dir, so the active joints are exactly base, arm, gripper; the wheels lose their
collision shapes (the base glides on its joints, gravity off, so wheels touching the
ground would only add friction)."""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from robosim.agents.builtin_robots import mani_skill_asset
from robosim.agents.model import _absolute_meshes, cached_urdf
from robosim.agents.registry import register_robot
from robosim.agents.spec import GripperSpec, MobileBaseSpec, RobotSpec

FETCH_TORSO = 0.2   # m, the fixed torso lift (its joint's range is [0, 0.386])
_FIXED = {"torso_lift_joint": FETCH_TORSO, "head_pan_joint": 0.0, "head_tilt_joint": 0.0}


def fetch_urdf() -> str:
    """Path of Fetch's URDF with torso and head fixed and no wheel collisions (cached)."""
    source = mani_skill_asset("fetch", "fetch.urdf")
    root = ET.parse(source).getroot()
    _absolute_meshes(root, os.path.dirname(source))
    for joint in root.findall("joint"):
        name = joint.get("name")
        if name in _FIXED:
            joint.set("type", "fixed")
            if name == "torso_lift_joint":
                origin = joint.find("origin")
                x, y, z = (float(v) for v in origin.get("xyz").split())
                origin.set("xyz", f"{x!r} {y!r} {z + _FIXED[name]!r}")
    for link in root.findall("link"):
        if link.get("name") in ("l_wheel_link", "r_wheel_link"):
            for collision in link.findall("collision"):
                link.remove(collision)
    return cached_urdf(root, "fetch-fixed-torso")


# Fetch: 7-DOF arm, two prismatic fingers (each 0 to 0.05 m; -0.01 squeezes a held
# object, as ManiSkill3's), on a base with planar joints. The tcp is gripper_link (as
# ManiSkill3's ee link) moved forward to between the finger pads.
FETCH = register_robot(RobotSpec(
    name="fetch",
    description="Fetch mobile manipulator: planar base (x, y, yaw), 7-DOF arm, parallel gripper",
    urdf=fetch_urdf,
    root_link="base_link",
    arm_joints=("shoulder_pan_joint", "shoulder_lift_joint", "upperarm_roll_joint", "elbow_flex_joint",
                "forearm_roll_joint", "wrist_flex_joint", "wrist_roll_joint"),
    tcp_link="gripper_link",
    tcp_offset=(0.0, 0.0, 0.0),
    rest_qpos=(0.0, 0.0, 0.0, -0.370, -1.032, 0.695, 0.955, -0.1, 2.077, 0.0, 0.05, 0.05),
    gripper=GripperSpec(joints=("r_gripper_finger_joint", "l_gripper_finger_joint"), closed=-0.01, open=0.05,
                        width_closed=0.0, width_open=0.1, width_is_joint_sum=True,
                        pad_links=("l_gripper_finger_link", "r_gripper_finger_link"), pad_material=(2.0, 2.0, 0.0)),
    mobile_base=MobileBaseSpec(joints=("root_x_axis_joint", "root_y_axis_joint", "root_z_rotation_joint")),
    base_position=(-0.8, 0.0, 0.0),   # behind the workspace centre, as the arms stand; tasks may move it
))
