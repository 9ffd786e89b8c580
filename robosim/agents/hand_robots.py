"""Dexterous hands robosim ships: data only, from the URDFs and meshes inside the
mani-skill package. Gains, joint names and fingertip links follow ManiSkill3's agent
classes (mani_skill/agents/robots/allegro_hand, dclaw). A hand has no gripper and no
arm chain: all its joints are finger joints (the `arm_joints`, in SAPIEN's active-joint
order), its tcp is the palm, and it takes joint-position and joint-delta actions.

Passive (mimic) joints: a hand whose URDF couples a joint to another
(`<mimic joint= multiplier= offset=>`) is a `MimicHandSpec`. Only its driven joints
(`arm_joints`) are in the action space; the passive joints come after them in qpos
(SAPIEN's order puts every finger's distal joint after all the proximal ones).
SAPIEN's URDF loader turns each mimic tag into a fixed tendon (stiffness 1e5) that pulls
q_passive - multiplier * q_driver to offset: the coupling is a physics constraint, so
the passive joint follows its driver when a contact stops the finger too. Passive
joints get no position drive (stiffness 0, damping only); their drive targets are
written as multiplier * driver target + offset (clamped to the joint's limits) and a
reset places them by the same relation (robosim.agents.robot_kinds).
tests/agents/test_second_hand.py measures how closely they follow."""
from __future__ import annotations

import math
from dataclasses import dataclass

from robosim.agents.builtin_robots import mani_skill_asset
from robosim.agents.registry import register_robot
from robosim.agents.spec import RobotSpec


@dataclass(frozen=True)
class MimicJoint:
    """`joint` follows `driver`: q_joint = multiplier * q_driver + offset (rad), as the
    URDF's mimic tag states it."""

    joint: str
    driver: str
    multiplier: float
    offset: float


@dataclass(frozen=True)
class MimicHandSpec(RobotSpec):
    """A hand with passive joints (`mimic_joints`, after the driven `arm_joints` in the
    articulation's active-joint order; `rest_qpos` covers both). `passive_damping`
    (N*m*s/rad) is the passive joints' only drive gain."""

    mimic_joints: tuple[MimicJoint, ...] = ()
    passive_damping: float = 0.01

    @property
    def dof(self) -> int:
        return super().dof + len(self.mimic_joints)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return super().joint_names + tuple(m.joint for m in self.mimic_joints)

    def drive_gains(self) -> dict[str, tuple[float, float, float]]:
        """The driven joints' gains, and (0, passive_damping, force_limit) per passive joint."""
        gains = super().drive_gains()
        gains.update({m.joint: (0.0, self.passive_damping, self.force_limit) for m in self.mimic_joints})
        return gains

    def validate(self) -> MimicHandSpec:
        """RobotSpec's checks, plus: a hand, every driver an arm joint, no passive joint driven."""
        if not self.is_hand or not self.mimic_joints:
            raise ValueError(f"MimicHandSpec {self.name!r} must be a hand (fingertip_links) with mimic_joints, got "
                             f"fingertip_links={self.fingertip_links!r}, mimic_joints={self.mimic_joints!r}")
        for m in self.mimic_joints:
            if m.driver not in self.arm_joints or m.joint in self.arm_joints:
                raise ValueError(f"MimicHandSpec.mimic_joints of {self.name!r}: each must follow one of the driven "
                                 f"arm_joints {list(self.arm_joints)} and not be one, got {m!r}")
        super().validate()
        return self

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

# PSYONIC Ability hand (right), 6 driven joints: the thumb's two and each finger's
# proximal joint; each finger's distal joint follows its proximal one (URDF mimic:
# q2 = 1.05851325 q1 + 0.72349796). The distal joint meets its 2.6586 rad limit when
# q1 = 1.828 rad, so a finger bends no further than that although q1's limit is 2.094
# rad (the tendon then holds q1 there). In the root frame the fingers point +z and the
# palm faces +x; the mount turns it -90 deg about y as allegro's: palm up, fingers
# towards -x. Stiffness as ManiSkill3's floating_ability_hand (1e3); damping 3e1 and force
# limit 6 N*m (the URDF's effort) instead of its 1e2 and 50, measured with random joint
# targets (60 control steps, 2 seeds, both modes, 16 envs): with damping 1e2 a full delta
# action moves a finger 0.04 of its 0.1 rad per control step (3e1: 0.08); with 1e1 one
# env of 16 blew up; with force limit 50, 3 of 32 went NaN within 40 steps; 3e1 and 6:
# none. Fingers: the distal links (the tip links have no collision shape), thumb first.
_ABILITY_FINGERS = ("index", "middle", "ring", "pinky")
_ABILITY_BEND = 0.6
_ABILITY_MIMIC = tuple(MimicJoint(f"{f}_q2", f"{f}_q1", 1.05851325, 0.72349796) for f in _ABILITY_FINGERS)
ABILITY = register_robot(MimicHandSpec(
    name="ability",
    description="PSYONIC Ability right hand, 6 driven joints (4 passive), palm up",
    urdf=lambda: mani_skill_asset("ability_hand", "ability_hand_right_glb.urdf"),
    root_link="base_link",
    arm_joints=("thumb_q1",) + tuple(f"{f}_q1" for f in _ABILITY_FINGERS) + ("thumb_q2",),
    mimic_joints=_ABILITY_MIMIC,
    tcp_link="base",
    tcp_offset=(0.0, 0.025, 0.056),   # the palm's face, 5.6 cm up from the wrist (link frame)
    # fingers bent 0.6 rad: a straight hand's palm slopes down to the finger roots and a
    # cube dropped on it slides off (measured on RotateCubeInHand-v1; bent, it stays)
    rest_qpos=(0.0,) + (_ABILITY_BEND,) * 4 + (0.0,) + tuple(m.multiplier * _ABILITY_BEND + m.offset
                                                         for m in _ABILITY_MIMIC),
    base_position=(0.0, 0.0, 0.2),
    base_quat=(_HALF, 0.0, -_HALF, 0.0),
    stiffness=1e3, damping=3e1, force_limit=6.0,
    control_modes=HAND_MODES,
    joint_delta=0.1,
    rest_noise=0.0,
    fingertip_links=("thumb_L2",) + tuple(f"{f}_L2" for f in _ABILITY_FINGERS),
))
