"""TurnKnob-v1 (robosim_tasks.turn_knob, made by its "module:Class" id): per-env sizes
drawn at build, the knob's spring, friction and target as built, the success band and
rewards its docstring states, state round trips, partial resets and the scripted
solution's success rate."""
from __future__ import annotations

import dataclasses

import pytest
import torch

import robosim
from robosim.agents import get_robot_spec
from robosim.envs.task import check_robot_for_task
from robosim.record.evaluate import evaluate
from robosim_tasks.turn_knob import FRICTION, SPRING, TOLERANCE, TurnKnobTask

TASK = "robosim_tasks.turn_knob:TurnKnobTask"
N = 3


@pytest.fixture(scope="module")
def env():
    env = robosim.make(TASK, num_envs=N, seed=7)
    yield env
    env.close()


def test_sizes_are_drawn_per_env_at_build(env):
    task = env.task
    assert len(set(task.lever.tolist())) == N and len(set(task.height.tolist())) == N
    assert ((task.lever >= 0.07) & (task.lever <= 0.10)).all()
    assert ((task.height >= 0.05) & (task.height <= 0.08)).all()
    other = robosim.make(TASK, num_envs=1, seed=7)     # env 0's build depends only on its seed
    try:
        assert other.task.lever[0].item() == task.lever[0].item()
    finally:
        other.close()


def test_a_robot_that_cannot_reach_the_knob_is_refused():
    # so100's base 0.6 m behind the workspace centre instead of 0.25 m: the knob is out of reach
    far = dataclasses.replace(get_robot_spec("so100"), name="so100_far", base_position=(-0.6, 0.0, 0.0))
    with pytest.raises(ValueError, match="robot 'so100_far' cannot run TurnKnobTask: the task needs a reach of"):
        check_robot_for_task(TurnKnobTask, far)
    assert check_robot_for_task(TurnKnobTask, "so100").robot == "so100"   # where it stands, it reaches


def test_knob_joint_as_documented(env):
    for joints in env.task.knob.joints:
        j = joints[0]
        assert (j.friction, j.stiffness) == pytest.approx((FRICTION, SPRING))
        assert float(j.drive_target[0]) == 0.0


def test_episode_start_obs_and_spring_return(env):
    obs, info = env.reset(seed=0)
    task = env.task
    assert torch.isfinite(obs).all() and not info["success"].any()
    assert task.angle().abs().max() < 1e-6
    assert ((task.target >= 0.4) & (task.target <= 0.8)).all()
    extra = task.task_observations(task.evaluate())
    assert {k: tuple(v.shape) for k, v in extra.items()} == {
        "knob_pose": (N, 7), "knob_qpos": (N, 1), "target_angle": (N, 1), "lever_tip_pos": (N, 3),
        "tcp_to_lever_tip_pos": (N, 3)}
    # released at 1 rad with the robot holding still above, the spring turns the knob back
    task.knob.set_qpos(torch.ones(N, 1))
    for _ in range(20):                                  # 1 s
        env.step(torch.zeros(N, *env.single_action_space.shape))
    assert (task.angle() < 0.3).all()


def test_success_band_and_dense_reward(env):
    env.reset(seed=1)
    task = env.task
    q = task.target.unsqueeze(1) + torch.tensor([[0.0], [TOLERANCE * 0.9], [TOLERANCE * 1.5]])
    task.knob.set_qpos(q)
    info = task.evaluate()
    assert info["success"].tolist() == [True, True, False]
    dense = task.dense_reward(info)
    assert dense[:2].tolist() == [0.0, 0.0] and -3.0 <= dense[2].item() < 0.0
    assert task.sparse_reward(info).tolist() == [0.0, 0.0, -1.0]


def test_state_round_trip_and_partial_reset(env):
    env.reset(seed=3)
    policy = env.task.solution_policy()
    for _ in range(12):
        env.step(policy())
    saved = env.get_state()
    env.reset(seed=[40], options={"env_idx": torch.tensor([1])})
    after = env.get_state()
    assert torch.equal(after[[0, 2]], saved[[0, 2]]) and not torch.equal(after[1], saved[1])
    env.reset(seed=99)
    env.set_state(saved)
    assert torch.equal(env.get_state(), saved)


def test_rewards_under_the_scripted_policy():
    """Dense in [-3, 0], exactly 0 only on success steps; sparse = 0 on success, -1 otherwise."""
    env = robosim.make(TASK, num_envs=2, seed=5)
    try:
        env.reset(seed=5)
        policy = env.task.solution_policy()
        succeeded = torch.zeros(2, dtype=torch.bool)
        for _ in range(30):
            _, reward, _, _, info = env.step(policy())
            assert (reward >= -3).all() and (reward <= 0).all()
            assert torch.equal(reward == 0, info["success"])
            succeeded |= info["success"].cpu()
        assert succeeded.all()
    finally:
        env.close()


@pytest.mark.parametrize("robot, control_mode", [("panda", "pd_ee_delta_pose"), ("xarm7", "pd_ee_delta_pose"),
                                                 ("so100", "pd_ee_delta_pos")])
def test_scripted_solution_succeeds_on_64_seeded_episodes(robot, control_mode):
    env = robosim.make(TASK, num_envs=16, robot=robot, control_mode=control_mode, seed=0)
    try:
        policy = env.task.solution_policy()
        result = evaluate(env, lambda obs: policy(), 64, seed=0)
    finally:
        env.close()
    assert result.episodes == 64
    assert result.success_rate >= 0.9, f"{robot}: scripted success {result.success_rate:.0%} < 90%"
