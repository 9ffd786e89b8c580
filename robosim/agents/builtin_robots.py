"""The robots robosim ships: data only, from the URDFs and meshes inside the mani-skill
package (nothing is downloaded). Gains, rest poses and TCP links follow ManiSkill3's
agent classes (mani_skill/agents/robots/) unless a comment says otherwise."""
from __future__ import annotations

import importlib.util
import math
import os

from robosim.agents.registry import register_robot
from robosim.agents.spec import GripperSpec, RobotSpec, ToolMount


def mani_skill_asset(*parts: str) -> str:
    """Absolute path of a file under mani_skill/assets/robots/ (ValueError when absent).
    The package is located, not imported: importing mani_skill loads its env suite
    (about 1.5 s on a quiet machine) and robosim needs only its files."""
    spec = importlib.util.find_spec("mani_skill")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("robot assets come from the mani-skill package, which is not installed "
                         "(pip install mani-skill==3.0.1)")
    path = os.path.join(list(spec.submodule_search_locations)[0], "assets", "robots", *parts)
    if not os.path.exists(path):
        raise ValueError(f"robot asset must exist in the installed mani-skill package, got missing {path}")
    return path


def _panda_urdf() -> str:
    return mani_skill_asset("panda", "panda_v2.urdf")


# Franka's parallel hand: two prismatic fingers (0 = closed, 0.04 m = open each); the
# -0.01 closed target squeezes a held object with the drive's force
_PANDA_HAND = GripperSpec(
    joints=("panda_finger_joint1", "panda_finger_joint2"), closed=-0.01, open=0.04,
    width_closed=0.0, width_open=0.08, width_is_joint_sum=True,
    pad_links=("panda_leftfinger", "panda_rightfinger"), pad_material=(2.0, 2.0, 0.0),
)

PANDA = register_robot(RobotSpec(
    name="panda",
    description="Franka Emika Panda, 7-DOF arm with its parallel hand",
    urdf=_panda_urdf,
    root_link="panda_link0",
    arm_joints=tuple(f"panda_joint{i}" for i in range(1, 8)),
    tcp_link="panda_hand_tcp",
    rest_qpos=(0.0, math.pi / 8, 0.0, -math.pi * 5 / 8, 0.0, math.pi * 3 / 4, math.pi / 4, 0.04, 0.04),
    gripper=_PANDA_HAND,
    base_position=(-0.615, 0.0, 0.0),
))

# UFactory xArm7. mani-skill ships the bare arm (xarm7.urdf, no gripper) and a version
# with a five-finger hand; robosim mounts the Franka hand above (same meshes, joints and
# pads) on the flange, so the arm can grasp. Gains as ManiSkill3's xarm7 (force 500 N).
XARM7 = register_robot(RobotSpec(
    name="xarm7",
    description="UFactory xArm7, 7-DOF arm, with the Franka parallel hand on its flange",
    urdf=lambda: mani_skill_asset("xarm7", "xarm7.urdf"),
    tool=ToolMount(urdf=_panda_urdf, tool_root_link="panda_hand", parent_link="link7"),
    root_link="link_base",
    arm_joints=tuple(f"joint{i}" for i in range(1, 8)),
    tcp_link="panda_hand_tcp",
    # tcp 17 cm above the workspace centre, pointing down (found by IK, as the Panda's)
    rest_qpos=(0.0, 0.587, 0.0, 1.612, 0.0, 1.025, 0.0, 0.04, 0.04),
    # hold: with the full squeeze on a cube held still at PickCube's goal, PhysX reports
    # wrist and finger joint speeds of 0.15-0.45 rad/s (the static check's bound is 0.2)
    # while the tcp turns < 0.01 rad/s; at -0.5 the cube stays held and the arm reads still
    gripper=GripperSpec(**{**_PANDA_HAND.__dict__, "stiffness": 1e3, "damping": 1e2, "force_limit": 100.0,
                           "hold": -0.5}),
    base_position=(-0.615, 0.0, 0.0),
    force_limit=500.0,
))

_YAW_90 = (math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4))   # the arms below reach along -y

# LeRobot's SO-100 (ManiSkill3's so100): 5-DOF arm and a one-jaw gripper (a revolute
# jaw against a fixed jaw). The tcp is a point between the jaws 2 cm in from the fixed
# jaw, near the tips. Five joints cannot follow every 6-D pose: no pd_ee_delta_pose.
SO100 = register_robot(RobotSpec(
    name="so100",
    description="LeRobot SO-100, 5-DOF arm with a single moving jaw",
    urdf=lambda: mani_skill_asset("so100", "so100.urdf"),
    root_link="Base",
    arm_joints=("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll"),
    tcp_link="Fixed_Jaw",
    tcp_offset=(-0.01, -0.092, 0.0),
    # tcp ~8 cm up, 25 cm in front of the base, jaws pointing down (found by IK, away from limits)
    rest_qpos=(0.0, -0.12, 0.173, 1.4, 0.0, 0.0),
    # jaw gap measured between the jaw tips: 6.6 mm at -1.1 rad, 83.5 mm at 0 rad
    gripper=GripperSpec(joints=("gripper",), closed=-1.1, open=0.0, width_closed=0.0066, width_open=0.0835,
                        pad_links=("Fixed_Jaw", "Moving_Jaw"), pad_material=(2.0, 2.0, 0.0)),
    base_position=(-0.25, 0.0, 0.0),
    base_quat=_YAW_90,
    control_modes=("pd_joint_pos", "pd_joint_delta_pos", "pd_ee_delta_pos"),
    joint_delta=0.05,
    ee_max_pos=0.05,
))

# Koch v1.1 follower arm (ManiSkill3's koch-v1.1): 5-DOF arm and a one-jaw gripper; its
# URDF carries a tcp link (gripper_tcp). Gripper gains as ManiSkill3's (1e2, 1).
KOCH = register_robot(RobotSpec(
    name="koch",
    description="Koch v1.1 low-cost arm, 5-DOF arm with a single moving jaw",
    urdf=lambda: mani_skill_asset("koch", "follower_arm_v1.1.urdf"),
    root_link="base_link",
    arm_joints=("joint_1", "joint_2", "joint_3", "joint_4", "joint_5"),
    tcp_link="gripper_tcp",
    # tcp ~8 cm up, 23 cm in front of the base, jaws pointing down (found by IK, away from limits)
    rest_qpos=(0.0, 1.235, 0.941, 1.75, 2.76, 1.6),
    # jaw gap measured between gripper_tcp and gripper_tcp2: 2 mm at 0 rad, 78 mm at 1.6 rad
    gripper=GripperSpec(joints=("joint_6",), closed=0.0, open=1.6, width_closed=0.002, width_open=0.078,
                        stiffness=1e2, damping=1.0, pad_links=("link_6", "gripper"), pad_material=(0.3, 0.3, 0.0)),
    base_position=(-0.25, 0.0, 0.0),
    base_quat=_YAW_90,
    control_modes=("pd_joint_pos", "pd_joint_delta_pos", "pd_ee_delta_pos"),
    joint_delta=0.05,
    ee_max_pos=0.05,
))

# hands and the mobile manipulator live in their own data modules; importing them here
# registers them with the arms above
from robosim.agents import hand_robots, mobile_robots  # noqa: E402,F401
