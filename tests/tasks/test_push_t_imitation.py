"""What made PushT-v1 imitable (docs/imitation.md, "PushT: the push lane in the
observation"): the observation carries the scripted pusher's lane, so the thresholds
where the pusher leaves a lane are thresholds on observed numbers. These tests follow a
scripted episode and check the lane terms against the block, the goal and the tcp, and
against what the pusher does with them."""
from __future__ import annotations

import math

import pytest
import torch

import robosim
from robosim_tasks.push_t import TURN_RADIUS, PushTPolicy

PUSH, DOWN = 2, 1   # PushTPolicy's phase numbers


@pytest.fixture(scope="module")
def scripted_steps():
    """Every step of two scripted episodes (seeds 5, 6): (obs extra, phase, tee pose, goal, tcp pose)."""
    env = robosim.make("PushT-v1", num_envs=2, obs_mode="state_dict")
    try:
        obs, _ = env.reset(seed=[5, 6])
        policy = env.task.solution_policy()
        steps, done = [], torch.zeros(2, dtype=torch.bool)
        for _ in range(env.task.max_episode_steps):
            action, phase = policy.act()
            live = ~done
            steps.append(({k: v[live] for k, v in obs["extra"].items()}, phase[live], env.task.tee.pose()[live],
                          env.task.goal[live], env.task.robot.tcp_pose()[live]))
            obs, _, terminated, truncated, _ = env.step(action)
            done |= terminated | truncated
            if done.all():
                break
        return steps
    finally:
        env.close()


def test_the_lane_terms_are_read_from_the_block_the_goal_and_the_tcp(scripted_steps):
    translating = 0
    for extra, _, tee, goal, tcp in scripted_steps:
        d = extra["push_direction"]
        assert torch.allclose(d.norm(dim=1), torch.ones(len(d)), atol=1e-5)
        to_goal = goal[:, :2] - tee[:, :2]
        far = to_goal.norm(dim=1) > TURN_RADIUS   # translating pushes: straight at the goal
        assert torch.allclose(d[far], to_goal[far] / to_goal[far].norm(dim=1, keepdim=True), atol=1e-5)
        translating += int(far.sum())
        start = tcp[:, :2] + extra["tcp_to_lane_start"]
        # the lane starts behind the block, on the far side from the goal
        assert (((tee[:, :2] - start) * d).sum(dim=1)[far] > 0.03).all()
        lateral, along, _ = extra["tcp_in_lane"].unbind(1)
        offset = tcp[:, :2] - start
        assert torch.allclose(lateral, d[:, 0] * offset[:, 1] - d[:, 1] * offset[:, 0], atol=1e-5)
        assert torch.allclose(along, (offset * d).sum(dim=1), atol=1e-5)
    assert translating > 20


def test_the_pusher_pushes_inside_the_lane_with_its_jaws_across_it(scripted_steps):
    phases = torch.cat([phase for _, phase, *_ in scripted_steps])
    extra = {k: torch.cat([s[0][k] for s in scripted_steps]) for k in scripted_steps[0][0]}
    push, down = phases == PUSH, phases == DOWN
    assert push.sum() > 20 and down.sum() > 3
    lateral, along, ahead = extra["tcp_in_lane"].unbind(1)
    lane = PushTPolicy.lane
    assert (lateral[push].abs() < 2 * lane).all() and (along[push] > -lane).all() and (ahead[push] < lane).all()
    assert (extra["tcp_to_lane_start"][down].norm(dim=1) < lane).all()   # goes down over the lane's start
    # the wrist has turned the closed jaws across the push before it pushes: cos(2 * yaw) near 1
    assert (extra["jaws_yaw_to_push"][push][:, 1] > math.cos(2 * 0.2)).float().mean() > 0.9

