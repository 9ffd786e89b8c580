"""Dexterous hands robosim ships: data only, from the URDFs and meshes inside the
mani-skill package. Gains, joint names and fingertip links follow ManiSkill3's agent
classes (mani_skill/agents/robots/allegro_hand, dclaw). A hand has no gripper and no
arm chain: all its joints are finger joints (the `arm_joints`, in SAPIEN's active-joint
order), its tcp is the palm, and it takes joint-position and joint-delta actions."""
from __future__ import annotations

import math

from robosim.agents.builtin_robots import mani_skill_asset
from robosim.agents.registry import register_robot
from robosim.agents.spec import RobotSpec

HAND_MODES = ("pd_joint_pos", "pd_joint_delta_pos")
_HALF = math.sqrt(0.5)

# Wonik Allegro right hand, 16 joints (4 fingers x 4), palm facing up (+z): ManiSkill3's
# palm_up keyframe turns the hand -90 deg about y. Tips in ManiSkill3's order: thumb,
# index, middle, ring.
ALLEGRO = register_robot(RobotSpec(
    name="allegro",
    description="Wonik Allegro right hand, 16 joints, palm up",
    urdf=lambda: mani_skill_asset("allegro", "allegro_hand_right_glb.urdf"),
    root_link="base_link",
    arm_joints=tuple(f"joint_{i}.0" for j in range(4) for i in range(j, 16, 4)),
    tcp_link="palm",
    rest_qpos=(0.0,) * 16,
    base_position=(0.0, 0.0, 0.2),
    base_quat=(_HALF, 0.0, -_HALF, 0.0),
    stiffness=4e2, damping=1e1, force_limit=5e1,
    control_modes=HAND_MODES,
    joint_delta=0.1,
    rest_noise=0.0,
    fingertip_links=("link_15.0_tip", "link_3.0_tip", "link_7.0_tip", "link_11.0_tip"),
))

# ROBEL D'Claw: three 3-joint fingers hanging from a base plate (ManiSkill3's rest
# keyframe turns it 180 deg about y, fingers pointing down).
DCLAW = register_robot(RobotSpec(
    name="dclaw",
    description="ROBEL D'Claw, three 3-joint fingers pointing down",
    urdf=lambda: mani_skill_asset("dclaw", "dclaw_gripper_glb.urdf"),
    root_link="base",
    arm_joints=tuple(f"joint_f{f}_{k}" for k in range(3) for f in (1, 2, 3)),
    tcp_link="base_link",
    rest_qpos=(0.0,) * 9,
    base_position=(0.0, 0.0, 0.25),
    base_quat=(0.0, 0.0, 1.0, 0.0),
    stiffness=1e2, damping=1e1, force_limit=2e1,
    control_modes=HAND_MODES,
    joint_delta=0.1,
    rest_noise=0.0,
    fingertip_links=("link_f1_3", "link_f2_3", "link_f3_3"),   # the distal links: their heads have no collision shape
))
