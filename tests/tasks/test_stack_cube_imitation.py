"""What made StackCube-v1 imitable (docs/imitation.md, "StackCube: a carry that arrives
from above ..."): its observation reads cube A's yaw relative to the gripper folded by
the cube's quarter-turn symmetry, and its scripted solution brings A onto B from above."""
from __future__ import annotations

import math

import torch

import robosim
from robosim.core.rotations import yaw_quat
from robosim_tasks.common import yaw_to_tcp
from robosim_tasks.stack_cube import CUBE_HALF


def _pose(yaw: torch.Tensor) -> torch.Tensor:
    return torch.cat([torch.zeros(len(yaw), 3), yaw_quat(yaw)], 1)


def test_yaw_to_tcp_is_the_folded_relative_yaw():
    cube, tcp = torch.tensor([0.3, -2.0, 1.0, 3.0]), torch.tensor([0.0, 0.5, -1.2, 3.0])
    turn = 4 * (cube - tcp)
    expected = torch.stack([torch.sin(turn), torch.cos(turn)], 1)
    assert torch.allclose(yaw_to_tcp(_pose(cube), _pose(tcp)), expected, atol=1e-5)
    # a quarter turn of the cube, or of both, reads the same
    assert torch.allclose(yaw_to_tcp(_pose(cube + math.pi / 2), _pose(tcp)), expected, atol=1e-5)
    assert torch.allclose(yaw_to_tcp(_pose(cube + 1.0), _pose(tcp + 1.0)), expected, atol=1e-5)
    # an eighth of a turn apart is the fold: the two ways to turn are as long
    assert torch.allclose(yaw_to_tcp(_pose(torch.tensor([math.pi / 4])), _pose(torch.zeros(1))),
                          torch.tensor([[0.0, -1.0]]), atol=1e-5)


def test_stack_cube_observation_holds_the_feature_and_the_carry_clears_b():
    env = robosim.make("StackCube-v1", num_envs=16, obs_mode="state_dict")
    try:
        obs, _ = env.reset(seed=list(range(16)))
        task = env.task
        reading = obs["extra"]["cube_a_yaw_to_tcp"]
        assert torch.allclose(reading, yaw_to_tcp(task.cube_a.pose(), task.robot.tcp_pose()), atol=1e-6)
        policy = task.solution_policy()
        done = torch.zeros(16, dtype=torch.bool)
        lowest_beside_b = torch.full((16,), float("inf"))
        for _ in range(task.max_episode_steps):
            obs, _, terminated, truncated, info = env.step(policy(obs))
            offset = task.cube_a.pose()[:, :3] - task.cube_b.pose()[:, :3]
            # A within a cube's width of B in xy would overlap B unless it is above it
            beside = ~done & (offset[:, :2].norm(dim=1) < 2 * CUBE_HALF + 0.005)
            lowest_beside_b = torch.where(beside, torch.minimum(lowest_beside_b, offset[:, 2]), lowest_beside_b)
            done |= terminated | truncated
        assert done.all() and info is not None
        # A comes over B with its bottom at least at B's top (2 mm of settling allowed)
        assert (lowest_beside_b >= 2 * CUBE_HALF - 0.002).all(), lowest_beside_b
    finally:
        env.close()
