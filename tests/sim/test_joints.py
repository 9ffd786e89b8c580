"""Code-built and URDF joints: every Joint field is read back from PhysX, joint friction
acts as Coulomb friction (a sliding link decelerates at a constant rate that grows with
the friction), drives pull toward their target, and bad joint fields raise ValueError."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from robosim.sim import SimScene
from robosim.sim.objects import ArticulationModel, Box, Joint, Link

FRICTIONS = (0.0, 0.05, 0.2)
G = 9.81


def slider(friction: float) -> ArticulationModel:
    """A 10 cm cube sliding along a horizontal rail (x) under gravity."""
    joint = Joint("prismatic", pose_in_parent=(0, 0, 0.3), axis=(1, 0, 0), friction=friction)
    return ArticulationModel([Link("rail", [Box((0.5, 0.02, 0.02))]),
                              Link("slider", [Box(0.05)], parent="rail", joint=joint)], pose=(0, 0, 0.2))


def knob() -> ArticulationModel:
    joint = Joint("revolute", pose_in_parent=(0, 0, 0.3), axis=(0, 0, 1), limits=(-1.0, 2.0), damping=0.5,
                  friction=0.3, armature=0.01, stiffness=3.0, target=0.4, force_limit=5.0)
    return ArticulationModel([Link("base", [Box(0.05)]),
                              Link("knob", [Box((0.05, 0.01, 0.01))], parent="base", joint=joint)], pose=(0, 0, 0.1))


@pytest.fixture(scope="module")
def scene():
    sim = SimScene(len(FRICTIONS), 100)
    sliders = sim.add_articulation("slider", lambda i: slider(FRICTIONS[i]))
    knobs = sim.add_articulation("knob", knob())
    sim.finalize()
    yield sim, sliders, knobs
    sim.close()


def test_every_joint_field_reads_back_from_physx(scene):
    sim, sliders, knobs = scene
    for i, friction in enumerate(FRICTIONS):
        # SAPIEN 3.0.3's builder alone leaves PhysX's default 0.05 here
        assert sliders.joints[i][0].friction == pytest.approx(friction)
    for joints in knobs.joints:
        j = joints[0]
        assert (j.friction, j.stiffness, j.damping, j.force_limit) == pytest.approx((0.3, 3.0, 0.5, 5.0))
        assert j.armature == pytest.approx([0.01])
        assert np.asarray(j.limit).ravel().tolist() == pytest.approx([-1.0, 2.0])
        assert float(np.asarray(j.drive_target).ravel()[0]) == pytest.approx(0.4)
    # the view's drive targets (and so its state) start at the built targets
    assert knobs.drive_targets()[:, 0].tolist() == pytest.approx([0.4] * len(FRICTIONS))


def test_friction_decelerates_a_sliding_link_at_a_constant_rate(scene):
    """Coulomb friction: the slider's speed falls linearly, by friction * g per second
    (PhysX scales joint friction by the joint's constraint force, here the cube's weight)
    on top of the friction-0 slider's decay (PhysX's link damping, 0.05/s: under 0.06
    m/s^2 at 1 m/s). Tolerance 10% of friction * g (measured 6.6% over); the ratio of
    the two frictions' decelerations is 4 within 5% (measured 4.0)."""
    sim, sliders, _ = scene
    n = len(FRICTIONS)
    sliders.set_qpos(torch.zeros(n, 1))
    sliders.set_qvel(torch.ones(n, 1))
    speeds = []
    for _ in range(30):
        sim.step()
        speeds.append(sliders.qvel()[:, 0].numpy().copy())
    speeds = np.array(speeds)                      # (steps, envs)
    decel = -np.diff(speeds, axis=0) * 100.0       # m/s^2 at 100 Hz
    assert np.abs(decel[:, 0]).max() < 0.06        # friction 0: only link damping
    net = decel[:, 1:] - decel[:, :1]
    for k, friction in enumerate(FRICTIONS[1:]):
        assert net[:, k].std() < 0.02 * net[:, k].mean()         # constant: Coulomb, not viscous
        assert net[:, k].mean() == pytest.approx(friction * G, rel=0.1)
    assert net[:, 1].mean() / net[:, 0].mean() == pytest.approx(4.0, rel=0.05)


def test_drive_pulls_the_knob_to_its_target(scene):
    sim, _, knobs = scene
    n = len(FRICTIONS)
    knobs.set_qpos(torch.full((n, 1), 1.5))
    knobs.set_qvel(torch.zeros(n, 1))
    for _ in range(300):
        sim.step()
    # the spring (3 N*m/rad) beats the friction, and stops within friction's dead band of the target
    assert (knobs.qpos()[:, 0] - 0.4).abs().max() < 0.3
    assert (knobs.qpos()[:, 0] < 1.0).all()


def test_urdf_joint_friction_is_applied(tmp_path):
    urdf = tmp_path / "slider.urdf"
    urdf.write_text("""<robot name="s">
  <link name="a"><collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision>
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/><dynamics damping="0.5" friction="0.25"/></joint>
</robot>""")
    sim = SimScene(1, 100)
    view = sim.load_urdf("s", urdf)
    sim.finalize()
    joint = view.joints[0][0]
    assert (joint.friction, joint.damping) == pytest.approx((0.25, 0.5))
    sim.close()


@pytest.mark.parametrize("field, value, message", [
    ("friction", -0.1, "Joint.friction"),
    ("armature", math.nan, "Joint.armature"),
    ("stiffness", -1.0, "Joint.stiffness"),
    ("force_limit", 0.0, "Joint.force_limit"),
    ("target", math.inf, "Joint.target"),
    ("target", 3.0, "Joint.target must lie within limits"),
    ("limits", (1.0, 0.0), "Joint.limits"),
])
def test_bad_joint_fields_raise_named_errors(field, value, message):
    kwargs = dict(type="revolute", limits=(-1.0, 1.0), stiffness=1.0)
    kwargs[field] = value
    with pytest.raises(ValueError, match=message):
        Joint(**kwargs)
