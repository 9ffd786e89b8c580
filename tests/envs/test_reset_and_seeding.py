"""Partial resets and the seeding contract (docs/design.md, Public contract)."""
from __future__ import annotations

import pytest
import torch

import robosim


@pytest.fixture(scope="module")
def env4():
    env = robosim.make("StackCube-v1", num_envs=4)
    yield env
    env.close()


@pytest.fixture(scope="module")
def env1():
    env = robosim.make("StackCube-v1", num_envs=1)
    yield env
    env.close()


def test_env_i_of_a_batch_starts_like_a_single_env_seeded_with_seed_plus_i(env4, env1):
    obs4, _ = env4.reset(seed=10)
    state4 = env4.get_state()
    for i in range(4):
        obs1, _ = env1.reset(seed=10 + i)
        assert torch.equal(obs4[i], obs1[0]), i
        assert torch.equal(state4[i], env1.get_state()[0]), i


def test_sixteen_env_batch_matches_single_envs():
    env16 = robosim.make("PickCube-v1", num_envs=16)
    env1 = robosim.make("PickCube-v1", num_envs=1)
    try:
        obs16, _ = env16.reset(seed=100)
        for i in (0, 7, 15):
            obs1, _ = env1.reset(seed=100 + i)
            assert torch.equal(obs16[i], obs1[0]), i
        # the k-th unseeded episode depends only on (seed_i, k), not on who else resets
        env16.reset(options={"env_idx": torch.tensor([7, 3])})
        obs1, _ = env1.reset(seed=107)
        obs1, _ = env1.reset()
        assert torch.equal(env16.get_state()[7], env1.get_state()[0])
    finally:
        env16.close()
        env1.close()


def test_same_seed_same_rollout(env4):
    def rollout():
        env4.reset(seed=42)
        generator = torch.Generator().manual_seed(0)
        for _ in range(5):
            obs, reward, *_ = env4.step(torch.rand(4, 7, generator=generator) * 2 - 1)
        return obs, reward

    obs_a, reward_a = rollout()
    obs_b, reward_b = rollout()
    assert torch.equal(obs_a, obs_b) and torch.equal(reward_a, reward_b)


def test_list_seeds_give_each_env_its_own_seed(env4, env1):
    obs4, _ = env4.reset(seed=[5, 9, 1, 3])
    obs1, _ = env1.reset(seed=1)
    assert torch.equal(obs4[2], obs1[0])


def test_partial_reset_leaves_other_envs_bit_for_bit_untouched(env4):
    env4.reset(seed=0)
    generator = torch.Generator().manual_seed(0)
    for _ in range(3):
        env4.step(torch.rand(4, 7, generator=generator) * 2 - 1)
    before_state = env4.get_state()
    before_steps = env4.elapsed_steps.clone()
    obs, info = env4.reset(options={"env_idx": torch.tensor([1, 3])})
    after_state = env4.get_state()
    for i in (0, 2):
        assert torch.equal(after_state[i], before_state[i])
        assert int(info["elapsed_steps"][i]) == int(before_steps[i]) == 3
    for i in (1, 3):
        assert int(info["elapsed_steps"][i]) == 0
        assert not torch.equal(after_state[i], before_state[i])


def test_reset_without_seed_continues_the_streams(env4):
    first, _ = env4.reset(seed=7)
    second, _ = env4.reset()
    again, _ = env4.reset(seed=7)
    assert not torch.equal(first, second)
    assert torch.equal(first, again)


def test_reconfigure_rebuilds_and_keeps_contract(env1):
    obs, info = env1.reset(seed=3, options={"reconfigure": True})
    assert info["reconfigure"].dtype == torch.bool and info["reconfigure"].shape == (env1.num_envs,)
    assert info["reconfigure"].all()
    obs_again, info = env1.reset(seed=3)
    assert not info["reconfigure"].any() and torch.equal(obs, obs_again)


def test_reconfiguration_freq_rebuilds_every_kth_full_reset():
    env = robosim.make("Reach-v1", num_envs=2, reconfiguration_freq=2)
    try:
        flags = [bool(env.reset(seed=s)[1]["reconfigure"].all()) for s in range(5)]
        assert flags == [False, False, True, False, True]
        # partial resets never rebuild and do not count
        assert not env.reset(options={"env_idx": [1]})[1]["reconfigure"].any()
        obs, *_ = env.step(torch.zeros(2, 4))
        assert torch.isfinite(obs["observation"]).all()
    finally:
        env.close()
