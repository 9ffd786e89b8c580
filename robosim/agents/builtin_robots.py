"""The robots robosim ships: data only, from the URDFs and meshes inside the mani-skill
package (nothing is downloaded). Gains, rest poses and TCP links follow ManiSkill3's
agent classes (mani_skill/agents/robots/) unless a comment says otherwise."""
from __future__ import annotations

import math
import os

from robosim.agents.registry import register_robot
from robosim.agents.spec import GripperSpec, RobotSpec, ToolMount


def mani_skill_asset(*parts: str) -> str:
    """Absolute path of a file under mani_skill/assets/robots/ (ValueError when absent)."""
    import mani_skill

    path = os.path.join(os.path.dirname(mani_skill.__file__), "assets", "robots", *parts)
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
