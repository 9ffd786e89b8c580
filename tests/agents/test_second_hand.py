"""The Ability hand: a hand with passive (mimic) joints. Only its 6 driven joints are in
the action space; the 4 distal finger joints follow their proximal ones by the URDF's
multiplier/offset (a fixed tendon), also when a finger presses on a block; its fingertip
links report contact through the scene's contact queries; RotateCubeInHand-v1 and
RotateValve-v1 take it and a task needing a gripper refuses it."""
from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import pytest
import torch

import robosim
from robosim.agents import Robot, get_robot_spec
from robosim.agents.capabilities import robot_capabilities
from robosim.agents.hand_robots import MimicJoint
from robosim.sim import Box, RigidObject, SimScene

N = 4   # tests/agents/conftest.py builds every robot_scene with 4 envs
CUBE = "RotateCubeInHand-v1"
# rad, |q_passive - (multiplier * q_driver + offset)|; measured on CPU PhysX: below 1e-4
# after the moves below, 0.006 and 0.014 for the two fingers pressing the fixed block
# (220 and 330 N of contact): the tendon is a stiff spring, not a rigid link
FOLLOW_TOL = 1e-4
PRESSED_TOL = 0.06


def _urdf_mimic():
    """{passive joint: (driver, multiplier, offset)} read from the URDF itself."""
    spec = get_robot_spec("ability")
    root = ET.parse(spec.urdf()).getroot()
    return {j.get("name"): (m.get("joint"), float(m.get("multiplier")), float(m.get("offset")))
            for j in root.findall("joint") for m in j.findall("mimic")}


def _follow_error(robot):
    """(N,) largest |q_passive - (multiplier * q_driver + offset)| over the passive joints,
    with the URDF's numbers and the articulation's joint order."""
    names = robot.view.joint_names
    q = robot.qpos
    errors = [q[:, names.index(j)] - (m * q[:, names.index(d)] + o) for j, (d, m, o) in _urdf_mimic().items()]
    return torch.stack(errors, 1).abs().max(1).values


def _steps(sim, robot, action, k):
    for _ in range(k):
        robot.apply_action(action)
        for _ in range(5):
            sim.step()


def test_only_driven_joints_are_actions_and_the_passive_ones_come_after(robot_scene):
    _, robot = robot_scene("ability", "pd_joint_delta_pos")
    spec = robot.spec
    assert set(_urdf_mimic()) == {m.joint for m in spec.mimic_joints}
    assert robot.dof == 10 and tuple(robot.action_low.shape) == (6,)
    assert robot.view.joint_names[:6] == list(spec.arm_joints)
    assert robot.view.joint_names[6:] == [m.joint for m in spec.mimic_joints]
    caps = robot_capabilities(spec)
    assert caps.fingers == 5 and caps.gripper_width is None


def test_joint_position_action_reaches_targets_and_passive_joints_follow(robot_scene):
    sim, robot = robot_scene("ability", "pd_joint_pos")
    robot.reset(robot.rest_qpos(N), torch.arange(N))
    limits = robot.view.qlimits()[:6]
    target = limits[:, 0] + (limits[:, 1] - limits[:, 0]) * torch.tensor([0.5, 0.1, 0.4, 0.6, 0.8, 0.3])
    _steps(sim, robot, target.expand(N, 6).clone(), 20)
    assert (robot.qpos[:, :6] - target).abs().max() < 0.02
    assert _follow_error(robot).max() < FOLLOW_TOL
    # the distal joints really moved with their drivers (from rest 1.36 rad to 0.95..2.50)
    assert (robot.qpos[:, 6:] - robot.rest_qpos(N)[:, 6:]).abs().min() > 0.2


def test_delta_action_moves_each_driven_joint_its_way(robot_scene):
    sim, robot = robot_scene("ability", "pd_joint_delta_pos")
    robot.reset(robot.rest_qpos(N), torch.arange(N))
    q0 = robot.qpos
    action = torch.zeros(N, 6)
    action[0::2, 1] = 1.0    # even envs: the index finger bends
    action[1::2, 1] = -1.0   # odd envs: it straightens
    _steps(sim, robot, action, 3)
    dq = robot.qpos - q0
    assert (dq[0::2, 1] > 0.2).all() and (dq[1::2, 1] < -0.2).all()
    assert dq[:, [0, 2, 3, 4, 5]].abs().max() < 0.02                  # the other driven joints hold
    assert (dq[0::2, 6] > 0.2).all() and (dq[1::2, 6] < -0.2).all()   # index_q2 went along
    assert _follow_error(robot).max() < FOLLOW_TOL


def test_random_joint_targets_stay_finite_and_within_limits():
    """The draw that blew one env up with damping 10 (seed 0, pd_joint_pos, 16 envs, at
    control step 18): with the spec's gains every joint stays within its limits."""
    sim = SimScene(16, 100)
    try:
        robot = Robot(get_robot_spec("ability"), "pd_joint_pos")
        robot.load(sim)
        robot.reset(robot.rest_qpos(16), torch.arange(16))
        limits = robot.view.qlimits()
        gen = torch.Generator().manual_seed(0)
        for _ in range(25):
            robot.apply_action(limits[:6, 0] + (limits[:6, 1] - limits[:6, 0]) * torch.rand(16, 6, generator=gen))
            for _ in range(5):
                sim.step()
            q = robot.qpos
            assert torch.isfinite(q).all()
            assert ((q > limits[:, 0] - 0.05) & (q < limits[:, 1] + 0.05)).all()
    finally:
        sim.close()


def test_reset_places_passive_joints_by_their_drivers(robot_scene):
    _, robot = robot_scene("ability", "pd_joint_pos")
    qpos = robot.rest_qpos(N)
    qpos[:, 1:5] = 0.3
    qpos[:, 6:] = 0.0          # inconsistent on purpose: reset replaces them
    robot.reset(qpos, torch.arange(N))
    assert torch.allclose(robot.qpos[:, 6:], torch.full((N, 4), 1.05851325 * 0.3 + 0.72349796), atol=1e-6)


def test_fingers_pressing_a_block_report_contact_per_fingertip_and_passive_joints_follow():
    """A fixed block above the index and middle fingers (not the ring and pinky): curling
    all four, the two under it press it and stop short, the other two curl freely."""
    sim = SimScene(2, 100)
    try:
        block = sim.add_object("block", RigidObject([Box((0.05, 0.02, 0.02))], body="kinematic",
                                                    pose=(-0.15, 0.02, 0.27, 1.0, 0.0, 0.0, 0.0)))
        robot = Robot(get_robot_spec("ability"), "pd_joint_pos")
        robot.load(sim)
        robot.reset(robot.rest_qpos(2), torch.arange(2))
        rest = robot.rest_qpos(2)[:, :6]
        _steps(sim, robot, rest, 2)
        assert (robot.fingertip_forces(block) == 0).all()    # at rest nothing touches it
        curl = rest.clone()
        curl[:, 1:5] = 1.2
        _steps(sim, robot, curl, 6)
        forces = robot.fingertip_forces(block).norm(dim=2)   # (2, 5): thumb, index, middle, ring, pinky
        assert (forces[:, 1:3] > 1.0).all()                  # index and middle press the block
        assert (forces[:, [0, 3, 4]] == 0).all()
        q = robot.qpos
        assert (q[:, 1:3] < 1.0).all()                       # stopped by the block
        assert (q[:, 3:5] - 1.2).abs().max() < 0.01          # ring and pinky reached the target
        assert _follow_error(robot).max() < PRESSED_TOL      # the distal joints follow under load too
    finally:
        sim.close()


def test_seeded_reset_is_exact_and_the_task_runs():
    env = robosim.make(CUBE, num_envs=2, robot="ability", seed=4)
    try:
        obs, _ = env.reset(seed=4)
        for _ in range(3):
            env.step(torch.ones(2, 6))
        state = env.get_state()
        obs2, _ = env.reset(seed=4)
        assert torch.equal(obs, obs2)
        assert not torch.equal(state, env.get_state())   # the steps had moved it
        again = env.get_state()
        env.reset(seed=4)
        assert torch.equal(again, env.get_state())
    finally:
        env.close()


def test_tasks_accept_or_refuse_it_by_capability():
    env = robosim.make("RotateValve-v1", num_envs=1, robot="ability")   # needs >= 3 fingers: has 5
    env.close()
    with pytest.raises(ValueError, match="needs a gripper, has none"):
        robosim.make("PickCube-v1", num_envs=1, robot="ability")
    four = dataclasses.replace(get_robot_spec("ability"), name="ability3",
                               fingertip_links=("thumb_L2", "index_L2", "middle_L2"))
    robosim.agents.register_robot(four)
    with pytest.raises(ValueError, match="needs a hand with >= 4 fingers, has 3"):
        robosim.make(CUBE, num_envs=1, robot="ability3")


def test_mimic_spec_refuses_a_passive_joint_without_a_driven_driver():
    spec = get_robot_spec("ability")
    bad = dataclasses.replace(spec, mimic_joints=(MimicJoint("index_q2", "index_q2", 1.0, 0.0),))
    with pytest.raises(ValueError, match="mimic_joints"):
        bad.validate()
