"""The built-in tasks with robots other than the Panda: the scripted solutions succeed
on >= 80% of 64 seeded episodes (counted as the demo counts them, with
robosim.record.evaluate: 16 envs, episode seeds 0..63, success = ever succeeded)."""
from __future__ import annotations

import pytest

import robosim
import robosim.agents
from robosim.record.evaluate import evaluate

# the fixed-base arms (hands and mobile bases: tests/agents/test_hands_and_mobile.py)
ARMS = [n for n in robosim.list_robots() if not robosim.agents.get_robot_spec(n).is_hand
        and robosim.agents.get_robot_spec(n).mobile_base is None]

EPISODES = 64


def _scripted_success(task_id: str, robot: str) -> float:
    env = robosim.make(task_id, num_envs=16, robot=robot)
    try:
        policy = env.task.solution_policy()
        return evaluate(env, lambda obs: policy(env), episodes=EPISODES, seed=0).success_rate
    finally:
        env.close()


@pytest.mark.slow   # scripted episodes with the xarm7: ~9 s each
@pytest.mark.parametrize("task_id", ["PickCube-v1", "PushCube-v1"])
def test_cube_tasks_with_xarm7(task_id):
    rate = _scripted_success(task_id, "xarm7")
    assert rate >= 0.8, f"{task_id} with xarm7: scripted success {rate:.0%} < 80%"


@pytest.mark.parametrize("robot", ARMS)
def test_reach_with_every_shipped_robot(robot):
    rate = _scripted_success("Reach-v1", robot)
    assert rate >= 0.8, f"Reach-v1 with {robot}: scripted success {rate:.0%} < 80%"
