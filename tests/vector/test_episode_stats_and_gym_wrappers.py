"""EpisodeStatistics on a real robosim env in every autoreset mode, cross-checked with
gymnasium's own RecordEpisodeStatistics stacked on the same stream; and gymnasium's
vector wrappers running on robosim's vector env in the modes they declare support for."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

import robosim
from robosim.vector import BatchedVectorEnv, EpisodeStatistics, TorchToNumpy

N, MAX_STEPS = 4, 26


@pytest.fixture(scope="module")
def pick_cube():
    env = robosim.make("PickCube-v1", num_envs=N, max_episode_steps=MAX_STEPS)
    yield env
    env.close()


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_episode_statistics_agree_with_gymnasium_record_episode_statistics(pick_cube, mode):
    ours = EpisodeStatistics(BatchedVectorEnv(pick_cube, mode))
    venv = gym.wrappers.vector.RecordEpisodeStatistics(TorchToNumpy(ours), stats_key="gym_episode")
    policy = pick_cube.task.solution_policy()  # scripted grasp: successes at different steps
    noise = torch.Generator().manual_seed(0)
    idle = torch.zeros(N, dtype=torch.bool)
    idle[-1] = True  # the last env holds still, so its episodes end at the time limit, unsolved
    venv.reset(seed=11)
    finished = successes = 0
    for _t in range(110):
        action = policy() + 0.05 * torch.randn(N, venv.single_action_space.shape[0], generator=noise)
        action[idle] = 0.0
        obs, reward, terminated, truncated, info = venv.step(action.numpy())
        done = terminated | truncated
        assert ("episode" in info) == bool(done.any())
        if done.any():
            mask = info["_episode"]
            assert np.array_equal(mask, done) and np.array_equal(mask, info["_gym_episode"])
            stats, gym_stats = info["episode"], info["gym_episode"]
            np.testing.assert_allclose(stats["r"][mask], gym_stats["r"][mask], rtol=1e-6)
            assert np.array_equal(stats["l"][mask], gym_stats["l"][mask])
            # PickCube ends only on success or at the time limit
            assert np.array_equal(stats["success_at_end"][mask], terminated[mask])
            assert np.all(stats["success_once"][mask] >= stats["success_at_end"][mask])
            finished += mask.sum()
            successes += stats["success_at_end"][mask].sum()
        if mode == AutoresetMode.DISABLED and done.any():
            venv.reset(options={"reset_mask": done})
    assert successes >= 3 and finished - successes >= 2, (finished, successes)
    assert len(ours.return_queue) == len(ours.length_queue) == len(ours.success_queue) == finished
    assert list(ours.length_queue) == list(venv.length_queue)


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_gymnasium_normalize_reward_runs_in_every_mode(pick_cube, mode):
    venv = gym.wrappers.vector.NormalizeReward(TorchToNumpy(BatchedVectorEnv(pick_cube, mode)), gamma=0.9)
    venv.reset(seed=0)
    a = venv.single_action_space.shape[0]
    for _ in range(MAX_STEPS + 3):
        obs, reward, terminated, truncated, info = venv.step(np.zeros((N, a), np.float32))
        assert reward.shape == (N,) and np.isfinite(reward).all()
        if mode == AutoresetMode.DISABLED and (terminated | truncated).any():
            venv.reset(options={"reset_mask": terminated | truncated})


def test_gymnasium_normalize_observation_runs_in_next_step_mode_and_refuses_others(pick_cube):
    venv = gym.wrappers.vector.NormalizeObservation(TorchToNumpy(BatchedVectorEnv(pick_cube, "NextStep")))
    obs, _ = venv.reset(seed=0)
    a = venv.single_action_space.shape[0]
    for _ in range(5):
        obs, *_ = venv.step(np.zeros((N, a), np.float32))
    assert obs.shape == (N, *venv.single_observation_space.shape) and np.isfinite(obs).all()
    # gymnasium reads metadata["autoreset_mode"] and refuses modes it does not support
    with pytest.raises(ValueError, match="NEXT_STEP"):
        gym.wrappers.vector.NormalizeObservation(TorchToNumpy(BatchedVectorEnv(pick_cube, "SameStep")))


def test_gymnasium_flatten_observation_on_a_goal_conditioned_robosim_env():
    vec = robosim.make_vec("Reach-v1", num_envs=2, autoreset_mode=AutoresetMode.DISABLED)
    venv = gym.wrappers.vector.FlattenObservation(TorchToNumpy(vec))
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (2, gym.spaces.flatdim(vec.single_observation_space))
    obs, reward, terminated, truncated, info = venv.step(np.zeros((2, 4), np.float32))
    assert obs.shape == (2, gym.spaces.flatdim(vec.single_observation_space)) and reward.dtype == np.float32
    # observation wrappers support NEXT_STEP and DISABLED only, and read the mode from metadata
    same_step = BatchedVectorEnv(vec.unwrapped_env, AutoresetMode.SAME_STEP)
    with pytest.raises(ValueError, match="Expected autoreset_mode to be NEXT_STEP or DISABLED"):
        gym.wrappers.vector.FlattenObservation(TorchToNumpy(same_step))
    venv.close()
