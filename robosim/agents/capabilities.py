"""What a robot can do (Capabilities) and what a task needs (Requirements).

A robot's capabilities come from its RobotSpec: arm DOF (len(arm_joints)), whether it
can follow an orientation command (pd_ee_delta_pose among its control modes), its
gripper's jaw-width range (GripperSpec.width_closed / width_open, m) and whether both
of its jaws move (a parallel gripper: two or more gripper joints), a mobile base
(`RobotSpec.mobile_base`), fingers (one per `RobotSpec.fingertip_links` entry) and its
reach: `RobotSpec.reach` where the spec declares one, otherwise computed from the URDF
chain: the largest distance of the TCP from the first movable joint (the reach centre)
within the joint limits (`limited_reach`). A chain with prismatic joints (a mobile
base) uses the sum of the distances between consecutive joint origins after that joint
plus the prismatic travel, an upper bound. A task's Requirements
hold for every robot whose capabilities meet them; `Requirements.missing` says which
ones do not, as "needs X, has Y" sentences. Units: m; positions in the env frame.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from robosim.core import rotations

if TYPE_CHECKING:
    from robosim.agents.spec import RobotSpec

Box3 = tuple[tuple[float, float, float], tuple[float, float, float]]


@dataclass(frozen=True)
class Capabilities:
    """What one robot has. `gripper_width`: (closed, open) jaw gap in m, None without a
    gripper; `parallel_gripper`: both jaws move, closing on the TCP (not one jaw against
    a fixed one); `reach`: m from the reach centre, which is `reach_origin` in the robot's
    root link frame (`reach_centre` places it in the env frame for a base pose);
    `base_position` / `base_quat`: the spec's own base pose; `arm_dof` is 0 for a hand
    (its joints move fingers, not a TCP)."""

    robot: str
    arm_dof: int
    orientation_control: bool
    gripper_width: tuple[float, float] | None
    parallel_gripper: bool
    reach: float
    reach_origin: tuple[float, float, float]
    base_position: tuple[float, float, float]
    base_quat: tuple[float, float, float, float]
    mobile_base: bool = False
    fingers: int = 0

    def reach_centre(self, base_position: tuple[float, float, float] | None = None,
                     base_quat: tuple[float, float, float, float] | None = None) -> tuple[float, float, float]:
        """The reach centre (env frame, m) with the base at `base_position` / `base_quat`
        (wxyz; None: the spec's own)."""
        position = torch.tensor(self.base_position if base_position is None else base_position, dtype=torch.float64)
        quat = torch.tensor([self.base_quat if base_quat is None else base_quat], dtype=torch.float64)
        centre = position + rotations.quat_to_matrix(quat)[0] @ torch.tensor(self.reach_origin, dtype=torch.float64)
        return tuple(centre.tolist())   # type: ignore[return-value]


@dataclass(frozen=True)
class Requirements:
    """What a task needs from a robot (defaults: nothing).

    `min_arm_dof`: arm joints; `gripper`: a gripper, opening to at least
    `min_gripper_opening` m, with both jaws moving if `parallel_gripper`; `workspace`:
    ((x, y, z) low, high) box in the env frame (m) that the TCP must be able to reach
    everywhere (the task's objects, goals and the scripted solution's way points) from
    where the base starts, unless the task needs `mobile_base` (the base then drives
    there); `min_fingers`."""

    min_arm_dof: int = 1
    gripper: bool = False
    min_gripper_opening: float = 0.0
    parallel_gripper: bool = False
    workspace: Box3 | None = None
    mobile_base: bool = False
    min_fingers: int = 0

    def __post_init__(self) -> None:
        if self.workspace is not None:
            low, high = self.workspace
            if len(low) != 3 or len(high) != 3 or any(lo > hi for lo, hi in zip(low, high)):
                raise ValueError(f"Requirements.workspace must be ((x, y, z) low, (x, y, z) high) with low <= high, "
                                 f"got {self.workspace!r}")
        if (self.min_gripper_opening > 0 or self.parallel_gripper) and not self.gripper:
            raise ValueError(f"Requirements.min_gripper_opening and parallel_gripper need gripper=True, got "
                             f"gripper={self.gripper!r}, min_gripper_opening={self.min_gripper_opening!r}, "
                             f"parallel_gripper={self.parallel_gripper!r}")

    def missing(self, caps: Capabilities, base_position: tuple[float, float, float] | None = None,
                base_quat: tuple[float, float, float, float] | None = None) -> list[str]:
        """One "needs ..., has ..." sentence per requirement `caps` does not meet, with
        the robot's base at `base_position` / `base_quat` (None: the spec's own)."""
        out = []
        if caps.arm_dof < self.min_arm_dof:
            out.append(f"needs an arm with >= {self.min_arm_dof} joints, has {caps.arm_dof}")
        if self.gripper and caps.gripper_width is None:
            out.append("needs a gripper, has none")
        else:
            if self.gripper and caps.gripper_width[1] < self.min_gripper_opening:
                out.append(f"needs a gripper opening to >= {self.min_gripper_opening:.3f} m, "
                           f"has one opening to {caps.gripper_width[1]:.3f} m")
            if self.parallel_gripper and not caps.parallel_gripper:
                out.append("needs a parallel gripper (both jaws move, closing on the TCP), has one moving jaw "
                           "against a fixed one")
        if self.mobile_base and not caps.mobile_base:
            out.append("needs a mobile base, has a fixed one")
        if caps.fingers < self.min_fingers:
            out.append(f"needs a hand with >= {self.min_fingers} fingers, has {caps.fingers}")
        if self.workspace is not None and not (self.mobile_base and caps.mobile_base):   # the base drives there
            centre = caps.reach_centre(base_position, base_quat)
            far = farthest_distance(self.workspace, centre)
            if far > caps.reach:
                out.append(f"needs a reach of {far:.3f} m (to the farthest point of the workspace "
                           f"{self.workspace}), has {caps.reach:.3f} m from {_round(centre)}")
        return out


def farthest_distance(box: Box3, point: tuple[float, float, float]) -> float:
    """Largest distance (m) from `point` to a point of the axis-aligned `box` (a corner)."""
    low, high = box
    return math.sqrt(sum(max(abs(lo - p), abs(hi - p)) ** 2 for lo, hi, p in zip(low, high, point)))


def _round(v: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(round(x, 3) for x in v)


def _chain_reach(urdf_path: str, root_link: str, tip_link: str, tip_offset: tuple[float, float, float],
                 base_joints: tuple[str, ...] = ()) -> tuple[tuple[float, float, float], float]:
    """(first movable joint's origin in the root link frame, upper bound of the TCP's
    distance from it): the chain's joint offsets after that joint and the travel of its
    prismatic joints, summed. A mobile base's joints (`base_joints`) add no travel: the
    reach is the arm's, from where the base stands."""
    by_child = {j.find("child").get("link"): j for j in ET.parse(urdf_path).getroot().findall("joint")}
    chain, link = [], tip_link
    while link != root_link:
        if link not in by_child:
            raise ValueError(f"link {tip_link!r} must be below {root_link!r} in {urdf_path}")
        chain.append(by_child[link])
        link = chain[-1].find("parent").get("link")
    pose, centre, reach = torch.eye(4, dtype=torch.float64), None, math.hypot(*tip_offset)
    for joint in reversed(chain):
        origin = joint.find("origin")
        xyz = [float(v) for v in ((origin.get("xyz") if origin is not None else None) or "0 0 0").split()]
        if centre is not None:
            reach += math.hypot(*xyz)
            if joint.get("type") == "prismatic" and joint.get("name") not in base_joints:   # its travel
                limit = joint.find("limit")
                reach += max((abs(float(limit.get(k, 0.0))) for k in ("lower", "upper")), default=0.0) \
                    if limit is not None else 0.0
            continue
        rpy = [float(v) for v in ((origin.get("rpy") if origin is not None else None) or "0 0 0").split()]
        step = torch.eye(4, dtype=torch.float64)
        step[:3, :3] = rotations.rpy_to_matrix(*rpy)
        step[:3, 3] = torch.tensor(xyz, dtype=torch.float64)
        pose = pose @ step
        if joint.get("type") != "fixed":
            centre = tuple(pose[:3, 3].tolist())
    if centre is None:   # nothing moves the tcp (a hand's palm): it reaches only where it is
        centre = tuple(pose[:3, 3].tolist())
    return centre, reach   # type: ignore[return-value]


def _joint_limits(urdf_path: str, names: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 (lower, upper) of the named joints (rad); a continuous joint: [-pi, pi]."""
    joints = {j.get("name"): j for j in ET.parse(urdf_path).getroot().findall("joint")}
    bounds = []
    for name in names:
        limit = joints[name].find("limit")
        if joints[name].get("type") == "continuous" or limit is None or limit.get("lower") is None:
            bounds.append((-math.pi, math.pi))
        else:
            bounds.append((float(limit.get("lower")), float(limit.get("upper"))))
    lower, upper = torch.tensor(bounds, dtype=torch.float64).unbind(1)
    return lower, upper


def limited_reach(urdf_path: str, root_link: str, tip_link: str, tip_offset: tuple[float, float, float],
                  centre: tuple[float, float, float], samples: int = 2048, refine: int = 8,
                  steps: int = 100) -> float | None:
    """Largest distance (m) of the TCP from `centre` (root link frame) within the joint
    limits: `samples` seeded uniform draws in the limits' box, the `refine` farthest
    improved by projected gradient ascent on the chain's Jacobian. None for a chain
    SerialChain cannot evaluate (prismatic joints) or without movable joints."""
    from robosim.agents.kinematics import SerialChain

    try:
        chain = SerialChain(urdf_path, root_link, tip_link, tip_offset)
    except ValueError:
        return None
    if chain.dof == 0:
        return None
    lower, upper = _joint_limits(urdf_path, chain.joint_names)
    c = torch.tensor(centre, dtype=torch.float64)
    q = lower + (upper - lower) * torch.rand(samples, chain.dof, dtype=torch.float64,
                                             generator=torch.Generator().manual_seed(0))
    distance = (chain.forward(q)[0] - c).norm(dim=1)
    q = q[distance.topk(min(refine, samples)).indices]
    best = float(distance.max())
    step = 0.05   # rad along the normalized gradient, halved where a step does not help
    step_rows = torch.full((len(q),), step, dtype=torch.float64)
    jac, pos, _ = chain.jacobian(q)
    current = (pos - c).norm(dim=1)
    for _ in range(steps):
        before = current
        grad = (jac[:, :3].transpose(1, 2) @ (pos - c).unsqueeze(2)).squeeze(2)
        trial = torch.clamp(q + step_rows.unsqueeze(1) * grad / grad.norm(dim=1, keepdim=True).clamp_min(1e-12),
                            lower, upper)
        trial_jac, trial_pos, _ = chain.jacobian(trial)
        farther = (trial_pos - c).norm(dim=1) > current
        q = torch.where(farther.unsqueeze(1), trial, q)
        jac = torch.where(farther.view(-1, 1, 1), trial_jac, jac)
        pos = torch.where(farther.unsqueeze(1), trial_pos, pos)
        current = (pos - c).norm(dim=1)
        step_rows = torch.where(farther, step_rows, step_rows / 2)
        if float((current - before).max()) < 1e-5:   # converged to 0.01 mm
            break
    return max(best, float(current.max()))


_CACHE: dict[RobotSpec, Capabilities] = {}


def robot_capabilities(spec: RobotSpec) -> Capabilities:
    """The capabilities of `spec` (derived once per spec and process; reading the URDF
    chain for the reach unless the spec declares it). ValueError for a URDF that does
    not exist or parse (as building the robot would)."""
    caps = _CACHE.get(spec)
    if caps is not None:
        return caps
    from robosim.agents.model import RobotModel  # model imports SAPIEN: only when asked

    # mobile_base and fingertip_links are optional fields of newer specs
    mobile = getattr(spec, "mobile_base", None) is not None
    fingers = len(getattr(spec, "fingertip_links", ()))
    urdf_path = RobotModel.for_spec(spec).urdf_path
    base_joints = tuple(spec.mobile_base.joints) if mobile else ()
    centre, reach = _chain_reach(urdf_path, spec.root_link, spec.tcp_link, spec.tcp_offset, base_joints)
    if spec.reach is None and reach > 0:
        reach = limited_reach(urdf_path, spec.root_link, spec.tcp_link, spec.tcp_offset, centre) or reach
    if spec.reach is not None:
        if not (isinstance(spec.reach, (int, float)) and spec.reach > 0):
            raise ValueError(f"RobotSpec.reach of {spec.name!r} must be a number > 0 (m) or None, got {spec.reach!r}")
        reach = float(spec.reach)
    grip = spec.gripper
    caps = _CACHE[spec] = Capabilities(
        robot=spec.name, arm_dof=0 if fingers else spec.arm_dof,   # a hand's joints move its fingers
        orientation_control="pd_ee_delta_pose" in spec.control_modes,
        gripper_width=None if grip is None else (grip.width_closed, grip.width_open),
        parallel_gripper=grip is not None and len(grip.joints) >= 2,
        reach=reach, reach_origin=centre, base_position=tuple(spec.base_position),   # type: ignore[arg-type]
        base_quat=tuple(spec.base_quat),   # type: ignore[arg-type]
        mobile_base=mobile, fingers=fingers)
    return caps
