"""Hands (allegro, dclaw) and the mobile base (fetch): they build from mani-skill's
assets, their controllers move the joints the way the action says, fingertip contact
forces read through the scene's contact queries, and what they cannot do is refused."""
from __future__ import annotations

import pytest
import torch

from robosim.agents import Robot, get_robot_spec
from robosim.agents.spec import RobotSpec

N = 4   # tests/agents/conftest.py builds every robot_scene with 4 envs


def _steps(sim, robot, action, k):
    for _ in range(k):
        robot.apply_action(action)
        for _ in range(5):
            sim.step()


@pytest.mark.parametrize("name, joints, tips", [("allegro", 16, 4), ("dclaw", 9, 3)])
def test_hands_build_with_their_joints_and_fingertips(robot_scene, name, joints, tips):
    sim, robot = robot_scene(name, "pd_joint_delta_pos")
    assert robot.dof == joints and robot.spec.gripper is None
    assert tuple(robot.action_low.shape) == (joints,)
    robot.reset(robot.rest_qpos(N), torch.arange(N))
    _steps(sim, robot, torch.zeros(N, joints), 1)
    poses = robot.fingertip_poses()
    assert poses.shape == (N, tips, 7)
    # every tip is a separate link: no two tips at one place
    assert torch.cdist(poses[0, :, :3], poses[0, :, :3]).add(torch.eye(tips)).min() > 0.01


def test_hand_delta_action_moves_each_joint_its_way(robot_scene):
    sim, robot = robot_scene("dclaw", "pd_joint_delta_pos")
    robot.reset(robot.rest_qpos(N), torch.arange(N))
    action = torch.zeros(N, 9)
    action[0::2, 3:6] = 1.0   # even envs: the middle joints of the three fingers bend one way
    action[1::2, 3:6] = -1.0  # odd envs: the other
    _steps(sim, robot, action, 3)
    q = robot.qpos
    assert (q[0::2, 3:6] > 0.08).all() and (q[1::2, 3:6] < -0.08).all()
    assert q[:, :3].abs().max() < 0.05 and q[:, 6:].abs().max() < 0.05   # the others hold


def test_hand_joint_position_action_reaches_the_target(robot_scene):
    sim, robot = robot_scene("allegro", "pd_joint_pos")
    robot.reset(robot.rest_qpos(N), torch.arange(N))
    target = robot.view.qlimits()[:, 0] * 0.5 + robot.view.qlimits()[:, 1] * 0.5
    _steps(sim, robot, target.expand(N, 16).clone(), 20)
    assert (robot.qpos - target).abs().max() < 0.05


def test_hands_refuse_end_effector_modes_and_grippers():
    with pytest.raises(ValueError, match="is a hand"):
        Robot(get_robot_spec("allegro"), "pd_ee_delta_pos")
    spec = get_robot_spec("dclaw")
    bad = RobotSpec(**{**spec.__dict__, "control_modes": ("pd_joint_pos", "pd_ee_delta_pos")})
    with pytest.raises(ValueError, match="only joint control modes"):
        bad.validate()


def test_fetch_base_drives_forward_turns_and_arm_holds(robot_scene):
    sim, robot = robot_scene("fetch", "pd_ee_delta_pos")
    assert robot.dof == 12 and tuple(robot.action_low.shape) == (2 + 3 + 1,)
    robot.reset(robot.rest_qpos(N), torch.arange(N))
    tcp0, base0 = robot.tcp_pose()[:, :3], robot.base_pose()
    assert torch.allclose(base0[:, :2], torch.tensor(robot.spec.base_position[:2]))   # where it was built
    action = torch.zeros(N, 6)
    action[:, 0] = 1.0       # both drive forward
    action[1, 1] = 1.0       # env 1 also turns counter-clockwise
    _steps(sim, robot, action, 10)
    base = robot.base_pose() - base0
    assert base[0, 0] > 0.1 and base[0, 1].abs() < 0.01 and base[0, 2].abs() < 0.02
    assert base[1, 2] > 0.2
    # the tcp rides along with the base: the arm's joints held their place
    assert robot.tcp_pose()[0, 0] - tcp0[0, 0] == pytest.approx(float(base[0, 0]), abs=0.02)


def test_fetch_tcp_pose_is_the_gripper_link_pose_after_driving(robot_scene):
    sim, robot = robot_scene("fetch", "pd_ee_delta_pos")
    link = robot.view.link_pose("gripper_link")      # SAPIEN's pose, not robosim's FK
    tcp = robot.tcp_pose()
    assert (tcp[:, :3] - link[:, :3]).abs().max() < 1e-4
    assert torch.minimum((tcp[:, 3:] - link[:, 3:]).abs().max(1).values,
                         (tcp[:, 3:] + link[:, 3:]).abs().max(1).values).max() < 1e-4


def test_fetch_ee_action_moves_the_tcp_along_env_axes_when_turned(robot_scene):
    sim, robot = robot_scene("fetch", "pd_ee_delta_pos")
    turn = torch.zeros(N, 6)
    turn[:, 1] = 1.0
    _steps(sim, robot, turn, 8)                      # yaw the base away from 0
    assert robot.base_pose()[:, 2].abs().min() > 0.3
    tcp0 = robot.tcp_pose()[:, :3]
    move = torch.zeros(N, 6)
    move[:, 3] = 0.3          # +y in the env frame
    _steps(sim, robot, move, 4)
    delta = robot.tcp_pose()[:, :3] - tcp0
    assert (delta[:, 1] > 0.04).all() and (delta[:, 0].abs() < 0.02).all()


def test_base_pose_and_fingertips_are_refused_where_absent(robot_scene):
    _, panda = robot_scene("panda", "pd_joint_delta_pos")
    with pytest.raises(ValueError, match="mobile_base"):
        panda.base_pose()
    with pytest.raises(ValueError, match="fingertip_links"):
        panda.fingertip_forces(panda.view)


def test_fixed_base_arms_keep_the_class_step_path(robot_scene):
    """Only hands and mobile bases get per-robot apply_action / tcp_pose: an arm's step
    runs the class's methods, with no kind test added."""
    _, panda = robot_scene("panda", "pd_ee_delta_pose")
    assert "apply_action" not in vars(panda) and "tcp_pose" not in vars(panda)
    _, fetch = robot_scene("fetch", "pd_ee_delta_pos")
    assert "apply_action" in vars(fetch) and "tcp_pose" in vars(fetch)
