"""examples/chasing_vec_env.py: ElegantRL's chasing task as a vectorized torch env on
robosim's vector API."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

from robosim.vector import BatchedVectorEnv, EpisodeStatistics, NormalizeVecEnv, TorchToNumpy


def test_env_info_follows_elegantrl(chasing):
    env = chasing.ChasingVecEnv(dim=3, num_envs=5)
    assert (env.env_name, env.state_dim, env.action_dim, env.max_step, env.if_discrete, env.target_return) == \
        ("ChasingVecEnv", 12, 3, 1024, False, 6.3)
    obs, info = env.reset(seed=0)
    assert obs.shape == (5, 12) and obs.dtype == torch.float32
    obs, reward, terminated, truncated, info = env.step(torch.zeros(5, 3))
    assert reward.shape == terminated.shape == truncated.shape == (5,)
    assert set(info) == {"success", "fail", "elapsed_steps", "distance"}


def test_seeding_contract_env_i_of_a_batch_is_a_one_env_batch_seeded_s_plus_i(chasing):
    batch = chasing.ChasingVecEnv(num_envs=6)
    obs, _ = batch.reset(seed=100)
    singles = [chasing.ChasingVecEnv(num_envs=1) for _ in range(6)]
    single_obs = [env.reset(seed=100 + i)[0] for i, env in enumerate(singles)]
    action = torch.linspace(-1, 1, 12).reshape(6, 2)
    for _ in range(30):  # the robot's random moves follow the same per-env streams
        obs, *_ = batch.step(action)
        single_obs = [env.step(action[i:i + 1])[0] for i, env in enumerate(singles)]
    assert torch.equal(obs, torch.cat(single_obs))
    # which other envs reset at the same time does not matter either
    batch.reset(options={"env_idx": torch.tensor([1, 4])})
    second, _ = singles[4].reset()
    assert torch.equal(batch._obs()[4], second[0])


def test_partial_reset_is_vectorized_and_leaves_others_untouched(chasing):
    env = chasing.ChasingVecEnv(num_envs=8)
    env.reset(seed=1)
    for _ in range(3):
        obs, *_ = env.step(torch.ones(8, 2))
    new, info = env.reset(options={"env_idx": torch.tensor([0, 5])})
    keep = torch.tensor([1, 2, 3, 4, 6, 7])
    assert torch.equal(new[keep], obs[keep])
    assert info["elapsed_steps"].tolist() == [0, 3, 3, 3, 3, 0, 3, 3]


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_runs_4096_envs_for_1000_steps_through_the_vector_api(chasing, mode):
    result = chasing.benchmark(num_envs=4096, steps=1000, autoreset_mode=mode.value)
    # the pursuit policy catches the robot in ~500 steps and beats ElegantRL's target return
    assert result["episodes"] > 4096
    assert result["mean_return"] > 6.3
    assert result["env_steps_per_s"] > 0


def test_plugs_into_robosim_and_gymnasium_wrappers(chasing):
    env = chasing.ChasingVecEnv(num_envs=16, max_step=8, init_distance=1.0)
    venv = TorchToNumpy(NormalizeVecEnv(EpisodeStatistics(BatchedVectorEnv(env, AutoresetMode.SAME_STEP))))
    venv = gym.wrappers.vector.RecordEpisodeStatistics(venv, stats_key="gym_episode")
    obs, _ = venv.reset(seed=0)
    ended = 0
    for _ in range(40):
        obs, reward, terminated, truncated, info = venv.step(np.zeros((16, 2), np.float32))
        assert isinstance(obs, np.ndarray) and obs.shape == (16, 8)
        if "episode" in info:
            mask = info["_episode"]
            ended += mask.sum()
            assert np.array_equal(mask, info["_gym_episode"])
            assert np.array_equal(info["episode"]["l"][mask], info["gym_episode"]["l"][mask])
    assert ended > 16


def test_bad_actions_raise(chasing):
    env = chasing.ChasingVecEnv(num_envs=4)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must have shape \(4, 2\), got \(2,\)"):
        env.step(torch.zeros(2))
    with pytest.raises(ValueError, match=r"seed must be .*, got -1"):
        env.reset(seed=-1)
