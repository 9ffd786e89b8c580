"""RotateValve-v1, RotateCubeInHand-v1 and FetchPickCube-v1: each resets, steps and
evaluates on 2 envs with rewards <= 0, partial resets touch only the envs named, replay
is exact in separate isolation, fingertip contacts read through the contact queries, and
the scripted solutions of FetchPickCube and RotateValve succeed."""
from __future__ import annotations

import pytest
import torch

import robosim

VALVE = "robosim_tasks.rotate_valve:RotateValveTask"
CUBE = "robosim_tasks.rotate_cube_in_hand:RotateCubeInHandTask"
FETCH = "robosim_tasks.fetch_pick_cube:FetchPickCubeTask"


@pytest.mark.parametrize("task", [VALVE, CUBE, FETCH])
def test_reset_step_evaluate_on_two_envs(task):
    env = robosim.make(task, num_envs=2, seed=3)
    try:
        obs, info = env.reset(seed=3)
        assert torch.isfinite(obs).all() and not info["success"].any()
        for _ in range(3):
            action = torch.as_tensor(env.action_space.sample())
            obs, reward, terminated, truncated, info = env.step(action)
            assert (reward <= 0).all() and torch.isfinite(obs).all()
        state = env.get_state()
        env.reset(options={"env_idx": torch.tensor([1])})
        after = env.get_state()
        assert torch.equal(after[0], state[0]) and not torch.equal(after[1], state[1])
    finally:
        env.close()


@pytest.mark.parametrize("task", [VALVE, CUBE, FETCH])
def test_replay_is_exact_in_separate_isolation(task):
    def run():
        env = robosim.make(task, num_envs=2, seed=5, physics_isolation="separate")
        try:
            env.reset(seed=5)
            gen = torch.Generator().manual_seed(0)
            low, high = torch.as_tensor(env.action_space.low), torch.as_tensor(env.action_space.high)
            for _ in range(5):
                env.step(low + (high - low) * torch.rand(low.shape, generator=gen))
            return env.get_state()
        finally:
            env.close()

    assert torch.equal(run(), run())


def test_valve_fingertip_contacts_read_through_the_contact_queries():
    env = robosim.make(VALVE, num_envs=2, seed=0)
    try:
        env.reset(seed=0)
        action = torch.zeros(2, 9)
        action[:, 0:3] = 1.0          # swing every finger sideways into a spoke
        for _ in range(5):            # mid-swing: a finger presses on a spoke
            env.step(action)
        robot, valve = env.robot, (env.task.valve, "valve")
        forces = robot.fingertip_forces(valve)
        assert forces.shape == (2, 3, 3)
        assert forces.norm(dim=2).max() > 0.1      # at least one tip presses on the valve
        for k, tip in enumerate(robot.spec.fingertip_links):
            other = env.sim.contacts.pair_force(valve, (robot.view, tip))
            assert torch.allclose(forces[:, k], -other, atol=1e-5)
    finally:
        env.close()


def test_fetch_pick_cube_scripted_solution_succeeds():
    env = robosim.make(FETCH, num_envs=4, seed=0)
    try:
        env.reset(seed=0)
        policy = env.task.solution_policy()
        start = env.robot.base_pose()[:, 0].clone()
        done = torch.zeros(4, dtype=torch.bool)
        for _ in range(env.task.max_episode_steps):
            _, _, _, _, info = env.step(policy(None))
            done |= info["success"]
            if done.all():
                break
        assert done.all()
        assert (env.robot.base_pose()[:, 0] - start > 0.4).all()   # it had to drive there
    finally:
        env.close()


def test_rotate_valve_scripted_ratchet_turns_every_valve_past_its_target():
    env = robosim.make(VALVE, num_envs=4, seed=11)
    try:
        env.reset(seed=11)
        policy = env.task.solution_policy()
        done = torch.zeros(4, dtype=torch.bool)
        for _ in range(env.task.max_episode_steps):
            _, _, _, _, info = env.step(policy(None))
            done |= info["success"]
        assert done.all()
    finally:
        env.close()


def test_rotate_valve_scripted_solution_is_refused_for_another_hand():
    env = robosim.make(VALVE, num_envs=1, robot="allegro")
    try:
        with pytest.raises(NotImplementedError, match="dclaw"):
            env.task.solution_policy()
    finally:
        env.close()
