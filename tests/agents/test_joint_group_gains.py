"""Per-joint-group drive gains of a RobotSpec: the shipped robots keep their arm and
gripper gains, `joint_gains` groups override them joint by joint (read back from PhysX),
and bad groups raise a named ValueError."""
from __future__ import annotations

import dataclasses

import pytest

from robosim.agents import JointGains, Robot, get_robot_spec
from robosim.sim import SimScene


def physx_gains(spec) -> dict[str, tuple[float, float, float]]:
    sim = SimScene(1, 100)
    try:
        robot = Robot(spec, "pd_joint_pos")
        robot.load(sim)
        return {j.name: (j.stiffness, j.damping, j.force_limit) for j in robot.view.joints[0]}
    finally:
        sim.close()


def test_shipped_robots_keep_arm_and_gripper_gains():
    for name in ("panda", "koch"):
        spec = get_robot_spec(name)
        gains = physx_gains(spec)
        for joint in spec.arm_joints:
            assert gains[joint] == pytest.approx((spec.stiffness, spec.damping, spec.force_limit))
        g = spec.gripper
        for joint in g.joints:
            expected = tuple(a if v is None else v for v, a in zip((g.stiffness, g.damping, g.force_limit),
                                                                   (spec.stiffness, spec.damping, spec.force_limit)))
            assert gains[joint] == pytest.approx(expected)


def test_joint_groups_override_gains_joint_by_joint():
    panda = get_robot_spec("panda")
    wrist = JointGains(("panda_joint5", "panda_joint6", "panda_joint7"), stiffness=300.0, damping=30.0,
                       force_limit=12.0)
    fingers = JointGains(("panda_finger_joint1", "panda_finger_joint2"), stiffness=50.0, damping=5.0, force_limit=20.0)
    spec = dataclasses.replace(panda, joint_gains=(wrist, fingers))
    gains = physx_gains(spec)
    for joint, expected in spec.drive_gains().items():
        assert gains[joint] == pytest.approx(expected)
    for joint in wrist.joints:
        assert gains[joint] == pytest.approx((300.0, 30.0, 12.0))
    for joint in fingers.joints:
        assert gains[joint] == pytest.approx((50.0, 5.0, 20.0))
    for joint in ("panda_joint1", "panda_joint4"):
        assert gains[joint] == pytest.approx((panda.stiffness, panda.damping, panda.force_limit))


@pytest.mark.parametrize("groups, message", [
    ((JointGains(("elbow",), 1.0, 1.0, 1.0),), r"joint_gains\[0\].*\.joints must name joints of the robot"),
    ((JointGains(("panda_joint1",), 1.0, 1.0, 1.0), JointGains(("panda_joint1",), 1.0, 1.0, 1.0)),
     r"joint_gains\[1\].*already in an earlier group"),
    ((JointGains(("panda_joint1",), -1.0, 1.0, 1.0),), r"joint_gains\[0\].*\.stiffness must be a finite number > 0"),
    ((JointGains((), 1.0, 1.0, 1.0),), r"joint_gains\[0\].*\.joints must name at least one joint"),
])
def test_bad_joint_groups_raise_named_errors(groups, message):
    spec = dataclasses.replace(get_robot_spec("panda"), joint_gains=groups)
    with pytest.raises(ValueError, match=message):
        spec.validate()
