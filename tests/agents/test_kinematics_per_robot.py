"""For every shipped robot: FK agrees with PhysX, and the end-effector controller moves
the tool centre point by the commanded delta."""
from __future__ import annotations

import pytest
import torch

import robosim
import robosim.agents
from robosim.agents import Robot, get_robot_spec
from robosim.core.rotations import matrix_to_quat, quat_to_matrix, rotation_log

# the fixed-base arms (hands and mobile bases: tests/agents/test_hands_and_mobile.py)
ARMS = [n for n in robosim.list_robots() if not robosim.agents.get_robot_spec(n).is_hand
        and robosim.agents.get_robot_spec(n).mobile_base is None]

N = 4   # envs per scene (tests/agents/conftest.py)

ROBOTS = ARMS


def test_the_four_shipped_robots_are_registered():
    assert {"panda", "xarm7", "so100", "koch"} <= set(ROBOTS)


def random_arm_qpos(robot: Robot, n: int, seed: int) -> torch.Tensor:
    """(n, dof) configurations: arm joints uniform within their limits (capped at +-3 rad),
    gripper joints at rest."""
    gen = torch.Generator().manual_seed(seed)
    limits = robot.view.qlimits()[:robot.arm_dof]
    low, high = limits[:, 0].clamp(min=-3.0), limits[:, 1].clamp(max=3.0)
    q = robot.rest_qpos(n)
    q[:, :robot.arm_dof] = low + (high - low) * torch.rand(n, robot.arm_dof, generator=gen)
    return q


def _physx_tcp(robot) -> torch.Tensor:
    """PhysX's pose of the tcp link, moved by the spec's fixed tcp offset (float64 (N, 7))."""
    link = robot.view.link_pose(robot.spec.tcp_link).double()
    rot = quat_to_matrix(link[:, 3:])
    offset = torch.tensor(robot.spec.tcp_offset, dtype=torch.float64)
    return torch.cat([link[:, :3] + rot @ offset, link[:, 3:]], dim=1)


@pytest.mark.parametrize("name", ROBOTS)
@pytest.mark.parametrize("seed", [0, 1])
def test_fk_matches_physx_on_random_configurations(robot_scene, name, seed):
    sim, robot = robot_scene(name, "pd_joint_pos")
    robot.reset(random_arm_qpos(robot, N, seed), torch.arange(N))
    sim.step()  # PhysX updates link poses in a step; gravity is off and the drives hold q
    ours = robot.tcp_pose(robot.view.qpos()).double()
    physx = _physx_tcp(robot)
    assert (ours[:, :3] - physx[:, :3]).norm(dim=1).max() < 1e-4
    angle = rotation_log(quat_to_matrix(ours[:, 3:]) @ quat_to_matrix(physx[:, 3:]).transpose(-1, -2)).norm(dim=1)
    assert angle.max() < 1e-3


@pytest.mark.parametrize("name", ROBOTS)
def test_tcp_pose_follows_the_physics_without_an_explicit_qpos(robot_scene, name):
    sim, robot = robot_scene(name, "pd_joint_pos")
    robot.reset(random_arm_qpos(robot, N, 2), torch.arange(N))
    before = robot.tcp_pose()
    robot.reset(random_arm_qpos(robot, N, 3), torch.arange(N))
    after = robot.tcp_pose()    # a write invalidates the cached FK
    assert not torch.equal(before, after)
    torch.testing.assert_close(after, robot.tcp_pose(robot.view.qpos()), atol=0, rtol=0)
    kept = robot.tcp_pose(copy=False)   # the kept result itself: no copy, the same bits
    assert robot.tcp_pose(copy=False) is kept and torch.equal(kept, after)
    fresh = robot.tcp_pose()
    fresh += 1.0                        # a default call hands out a copy: the kept one is untouched
    assert torch.equal(robot.tcp_pose(copy=False), after)


@pytest.mark.parametrize("name", [r for r in ROBOTS if "pd_ee_delta_pos" in get_robot_spec(r).control_modes])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_one_ee_delta_pos_step_moves_the_tcp_by_the_commanded_delta(robot_scene, name, axis):
    """One action commands delta = 0.2 * ee_max_pos along one env axis (1-2 cm). The
    controller takes one damped-least-squares IK step, so after the PD drives settle
    (50 substeps, gravity off) the tcp has moved by the delta up to (a) the damping,
    which shortens the step by lambda^2 / (sigma^2 + lambda^2) (lambda = 0.05; the
    arms' positional singular values near rest are > 0.15, so < 10%), and (b) the
    linearization error of one step, second order in the delta (< 1 mm at 2 cm).
    Tolerance: 15% of the delta plus 1 mm."""
    sim, robot = robot_scene(name, "pd_ee_delta_pos")
    q = robot.rest_qpos(N)
    q[:, :robot.arm_dof] += 0.05 * torch.randn(N, robot.arm_dof, generator=torch.Generator().manual_seed(axis))
    robot.reset(q, torch.arange(N))
    start = robot.tcp_pose()
    action = torch.zeros(N, robot.action_low.shape[0])
    action[:, axis] = 0.2
    robot.apply_action(action)
    for _ in range(50):
        sim.step()
    delta = torch.zeros(N, 3)
    delta[:, axis] = 0.2 * robot.spec.ee_max_pos
    moved = robot.tcp_pose()[:, :3] - start[:, :3]
    error = (moved - delta).norm(dim=1)
    assert (error < 0.15 * delta.norm(dim=1) + 1e-3).all(), (moved, delta)


def test_quaternion_round_trip():
    q = torch.randn(500, 4, dtype=torch.float64)
    q = q / q.norm(dim=1, keepdim=True)
    q = torch.where(q[:, :1] < 0, -q, q)
    torch.testing.assert_close(matrix_to_quat(quat_to_matrix(q)), q, atol=1e-12, rtol=0)
