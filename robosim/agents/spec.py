"""A robot as data: which URDF, which joints form the arm and the gripper, where the tool
centre point is, the rest pose, drive gains and the control modes it supports.

`Robot` (robosim/agents/robot.py) turns any RobotSpec into a batched robot; nothing in
robosim has per-robot code. Units: m, rad; poses are [x, y, z, qw, qx, qy, qz] in the
env frame (the task workspace centre is the env origin).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from robosim.agents.controllers import CONTROL_MODES

# control modes that need a full 6-D end-effector Jacobian: an arm with fewer than six
# joints cannot follow an arbitrary orientation command
_SIX_DOF_MODES = ("pd_ee_delta_pose",)


@dataclass(frozen=True)
class GripperSpec:
    """The gripper's joints and what one action in [-1, 1] means for them.

    -1 drives every gripper joint to `closed`, +1 to `open` (joint units, rad or m);
    values between interpolate linearly. `width_closed` / `width_open` (m) are the gap
    between the jaws at those targets: `Robot.gripper_width` interpolates between them,
    except for two prismatic fingers (`width_is_joint_sum`), whose gap is exactly the
    sum of the two finger positions. `hold` is the command (in [-1, 1]) scripted
    solutions keep a grasped object still at its target with (robosim.envs.solutions.
    PickAndPlacePolicy): -1, the full squeeze, unless a robot's squeeze makes PhysX
    report joint speeds on an arm that stands still."""

    joints: tuple[str, ...]
    closed: float
    open: float
    width_closed: float = 0.0
    width_open: float = 0.08
    width_is_joint_sum: bool = False
    stiffness: float | None = None       # None: the arm's gains
    damping: float | None = None
    force_limit: float | None = None
    pad_links: tuple[str, ...] = ()      # links that get `pad_material`
    pad_material: tuple[float, float, float] = (2.0, 2.0, 0.0)   # static, dynamic friction, restitution
    hold: float = -1.0


@dataclass(frozen=True)
class JointGains:
    """PD drive gains for a group of the robot's joints (e.g. the wrist), overriding the
    arm's (`RobotSpec.stiffness`...) or the gripper's gains for those joints. Units:
    stiffness N*m/rad (N/m prismatic), damping N*m*s/rad (N*s/m), force_limit N*m (N)."""

    joints: tuple[str, ...]
    stiffness: float
    damping: float
    force_limit: float


@dataclass(frozen=True)
class ToolMount:
    """Graft the subtree below `tool_root_link` of another URDF onto `parent_link` of the
    robot's URDF with a fixed joint (e.g. a parallel gripper on an arm shipped without
    one). `xyz` (m) / `rpy` (rad): pose of the tool root in the parent link frame."""

    urdf: str | Callable[[], str]
    tool_root_link: str
    parent_link: str
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class MobileBaseSpec:
    """A planar mobile base as three joints (x prismatic, y prismatic, yaw revolute, in
    that order: ManiSkill3's root_x/root_y/root_rot), the first active joints of the
    articulation. Action (forward, turn) in [-1, 1]: the base moves up to `max_forward` m
    along its heading and turns up to `max_turn` rad per control step (PD position
    targets one control step ahead of the base's current pose). Gains in N/m, N*s/m
    (N*m/rad for the yaw joint)."""

    joints: tuple[str, str, str]
    max_forward: float = 0.05
    max_turn: float = 0.1
    stiffness: float = 1e4
    damping: float = 1e3
    force_limit: float = 1e4


@dataclass(frozen=True)
class RobotSpec:
    """Everything robosim needs to know about one fixed-base serial arm.

    `urdf` is a path or a zero-argument function returning one (evaluated when the robot
    is first used, so registering a robot never touches the disk). The articulation's
    active joints must be `arm_joints` followed by the gripper's joints (SAPIEN's URDF
    order: depth first). `rest_qpos` covers all of them, in that order."""

    name: str
    urdf: str | Callable[[], str]
    root_link: str
    arm_joints: tuple[str, ...]
    tcp_link: str
    rest_qpos: tuple[float, ...]
    gripper: GripperSpec | None = None
    tcp_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)   # tcp in tcp_link's frame, m
    base_position: tuple[float, float, float] = (0.0, 0.0, 0.0)  # env frame, m
    base_quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)  # wxyz
    stiffness: float = 1e3
    damping: float = 1e2
    force_limit: float = 100.0
    control_modes: tuple[str, ...] = CONTROL_MODES
    joint_delta: float = 0.1       # rad per control step at |action| = 1 (pd_joint_delta_pos)
    ee_max_pos: float = 0.1        # m per control step (pd_ee_delta_pos/pose)
    ee_max_rot: float = 0.1        # rad per control step (pd_ee_delta_pose)
    rest_noise: float = 0.02       # std (rad) of the arm joints' noise around rest_qpos at reset
    disable_gravity: bool = True   # PD drives hold a pose exactly, like gravity compensation
    tool: ToolMount | None = None
    joint_gains: tuple[JointGains, ...] = ()   # per-group gain overrides (no joint in two groups)
    # m, the TCP's reach from the first arm joint (e.g. a datasheet's); None: an upper bound
    # computed from the URDF chain (robosim.agents.capabilities)
    reach: float | None = None
    description: str = ""
    # a hand: the arm joints are its finger joints (a tree, no chain to a tcp), tcp_link is
    # its palm, only joint control modes; fingertip links name the tips (contacts, poses)
    fingertip_links: tuple[str, ...] = ()
    mobile_base: MobileBaseSpec | None = None   # its joints come before the arm's

    @property
    def is_hand(self) -> bool:
        return bool(self.fingertip_links)

    @property
    def base_dof(self) -> int:
        return 3 if self.mobile_base else 0

    @property
    def arm_dof(self) -> int:
        return len(self.arm_joints)

    @property
    def dof(self) -> int:
        return self.base_dof + self.arm_dof + (len(self.gripper.joints) if self.gripper else 0)

    @property
    def joint_names(self) -> tuple[str, ...]:
        base = self.mobile_base.joints if self.mobile_base else ()
        return base + self.arm_joints + (self.gripper.joints if self.gripper else ())

    def drive_gains(self) -> dict[str, tuple[float, float, float]]:
        """(stiffness, damping, force_limit) of every joint in `joint_names`: the arm's
        gains, the gripper's where it sets them, the mobile base's, then the `joint_gains`
        groups'."""
        arm = (self.stiffness, self.damping, self.force_limit)
        gains = {name: arm for name in self.arm_joints}
        if self.gripper:
            grip = tuple(a if g is None else g for g, a in zip(
                (self.gripper.stiffness, self.gripper.damping, self.gripper.force_limit), arm))
            gains.update({name: grip for name in self.gripper.joints})
        if self.mobile_base:
            base = self.mobile_base
            gains.update({name: (base.stiffness, base.damping, base.force_limit) for name in base.joints})
        for group in self.joint_gains:
            gains.update({name: (group.stiffness, group.damping, group.force_limit) for name in group.joints})
        return gains

    def validate(self) -> RobotSpec:
        """Check the spec's own consistency (not the URDF); returns self."""
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"RobotSpec.name must be a non-empty str, got {self.name!r}")
        if not self.arm_joints:
            raise ValueError(f"RobotSpec.arm_joints must name at least one joint, got {self.arm_joints!r}")
        if len(self.rest_qpos) != self.dof:
            raise ValueError(f"RobotSpec.rest_qpos of {self.name!r} must have {self.dof} entries "
                             f"({list(self.joint_names)}), got {len(self.rest_qpos)}")
        if not all(math.isfinite(v) for v in self.rest_qpos):
            raise ValueError(f"RobotSpec.rest_qpos of {self.name!r} must be finite, got {self.rest_qpos}")
        unknown = [m for m in self.control_modes if m not in CONTROL_MODES]
        if unknown or not self.control_modes:
            raise ValueError(f"RobotSpec.control_modes must be a non-empty subset of {CONTROL_MODES}, "
                             f"got {self.control_modes!r}")
        if self.arm_dof < 6 and any(m in _SIX_DOF_MODES for m in self.control_modes):
            raise ValueError(f"RobotSpec.control_modes of {self.name!r}: {_SIX_DOF_MODES} need >= 6 arm joints, "
                             f"the arm has {self.arm_dof}")
        for attr in ("stiffness", "damping", "force_limit", "joint_delta", "ee_max_pos", "ee_max_rot"):
            value = getattr(self, attr)
            if not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"RobotSpec.{attr} of {self.name!r} must be a positive number, got {value!r}")
        if self.ee_max_rot >= math.pi / math.sqrt(3):
            raise ValueError(f"RobotSpec.ee_max_rot of {self.name!r} must be < pi / sqrt(3) rad (a full action on "
                             f"all three axes turns less than half a turn), got {self.ee_max_rot!r}")
        if self.is_hand and (self.gripper is not None or any(m.startswith("pd_ee") for m in self.control_modes)):
            raise ValueError(f"RobotSpec of {self.name!r}: a hand (fingertip_links set) has no gripper and only "
                             f"joint control modes, got gripper={self.gripper!r}, control_modes={self.control_modes!r}")
        if self.mobile_base is not None and len(self.mobile_base.joints) != 3:
            raise ValueError(f"RobotSpec.mobile_base.joints of {self.name!r} must name 3 joints (x, y, yaw), "
                             f"got {self.mobile_base.joints!r}")
        hold = self.gripper.hold if self.gripper is not None else -1.0
        if not (isinstance(hold, (int, float)) and -1 <= hold <= 1):
            raise ValueError(f"RobotSpec.gripper.hold of {self.name!r} must be a number in [-1, 1] (a gripper "
                             f"command), got {hold!r}")
        self._validate_joint_gains()
        if len(self.base_position) != 3 or len(self.base_quat) != 4 or len(self.tcp_offset) != 3:
            raise ValueError(f"RobotSpec of {self.name!r}: base_position and tcp_offset need 3 values and "
                             f"base_quat 4, got {self.base_position}, {self.tcp_offset}, {self.base_quat}")
        return self

    def _validate_joint_gains(self) -> None:
        seen: set[str] = set()
        for k, group in enumerate(self.joint_gains):
            where = f"RobotSpec.joint_gains[{k}] of {self.name!r}"
            if not isinstance(group, JointGains):
                raise TypeError(f"{where} must be a JointGains, got {type(group).__name__}")
            if not group.joints:
                raise ValueError(f"{where}.joints must name at least one joint, got {group.joints!r}")
            for name in group.joints:
                if name not in self.joint_names:
                    raise ValueError(f"{where}.joints must name joints of the robot {list(self.joint_names)}, "
                                     f"got {name!r}")
                if name in seen:
                    raise ValueError(f"{where}.joints: joint {name!r} is already in an earlier group")
                seen.add(name)
            for attr in ("stiffness", "damping", "force_limit"):
                value = getattr(group, attr)
                if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value)
                                                   and value > 0):
                    raise ValueError(f"{where}.{attr} must be a finite number > 0, got {value!r}")
