"""Batched FK/IK against PhysX's own link poses and the controllers' behaviour."""
from __future__ import annotations

import pytest
import torch

from robosim.agents import Robot, get_robot_spec
from robosim.agents.kinematics import matrix_to_quat, quat_to_matrix
from robosim.sim import SimScene

N = 4


@pytest.fixture(scope="module")
def scene():
    sim = SimScene(N, 100)
    sim.add_ground()
    robot = Robot(get_robot_spec("panda"), "pd_ee_delta_pose")
    robot.load(sim)
    yield sim, robot
    sim.close()


def rest_qpos(n):
    return Robot(get_robot_spec("panda"), "pd_joint_pos").spec and torch.tensor(get_robot_spec("panda").rest_qpos).expand(n, 9).clone()


def _random_qpos(n, generator):
    q = rest_qpos(n)
    q[:, :7] += (torch.rand(n, 7, generator=generator) - 0.5) * 0.8
    return q


def test_fk_matches_physx_link_pose(scene):
    sim, robot = scene
    q = _random_qpos(N, torch.Generator().manual_seed(0))
    robot.reset(q, torch.arange(N))
    sim.step()  # PhysX updates link poses during a step; gravity is off, drives hold q
    q = robot.view.qpos()
    ours = robot.tcp_pose(q)
    physx = robot.view.link_pose("panda_hand_tcp")
    torch.testing.assert_close(ours[:, :3], physx[:, :3], atol=2e-4, rtol=0)
    rot_ours, rot_physx = quat_to_matrix(ours[:, 3:]), quat_to_matrix(physx[:, 3:])
    torch.testing.assert_close(rot_ours, rot_physx, atol=1e-3, rtol=0)


def test_quaternion_round_trip():
    q = torch.randn(500, 4, dtype=torch.float64)
    q = q / q.norm(dim=1, keepdim=True)
    q = torch.where(q[:, :1] < 0, -q, q)
    torch.testing.assert_close(matrix_to_quat(quat_to_matrix(q)), q, atol=1e-12, rtol=0)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_ee_delta_pose_moves_the_tcp_along_the_commanded_axis(scene, axis):
    sim, robot = scene
    robot.reset(rest_qpos(N), torch.arange(N))
    start = robot.tcp_pose(robot.view.qpos())
    action = torch.zeros(N, 7)
    action[:, axis] = 0.5  # 5 cm per control step
    for _ in range(4):
        robot.apply_action(action)
        for _ in range(5):
            sim.step()
    moved = robot.tcp_pose(robot.view.qpos())[:, :3] - start[:, :3]
    assert (moved[:, axis] > 0.05).all(), moved  # PD lag: about 1.8 cm per 5 cm command
    others = [a for a in range(3) if a != axis]
    assert (moved[:, others].abs() < 0.3 * moved[:, axis:axis + 1]).all(), moved
    rot_change = (quat_to_matrix(robot.tcp_pose(robot.view.qpos())[:, 3:]) - quat_to_matrix(start[:, 3:])).abs().max()
    assert rot_change < 0.1


def test_gripper_closes_and_opens(scene):
    sim, robot = scene
    robot.reset(rest_qpos(N), torch.arange(N))
    for command, check in ((-1.0, lambda w: w < 0.005), (1.0, lambda w: w > 0.075)):
        action = torch.zeros(N, 7)
        action[:, -1] = command
        for _ in range(6):
            robot.apply_action(action)
            for _ in range(5):
                sim.step()
        assert check(robot.gripper_width(robot.view.qpos())).all()
