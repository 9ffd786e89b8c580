"""gymnasium's interfaces as its users call them on robosim ("Every promise true",
Clients): RecordEpisodeStatistics and a CleanRL wrapper chain in every autoreset mode,
SB3's check_env on non-goal tasks, gym.make_vec's sync/async modes, lists of actions,
render/call/get_attr/set_attr/np_random_seed as gymnasium's own vector envs give them."""
from __future__ import annotations

import dataclasses
import os
import re

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from stable_baselines3.common.env_checker import check_env

import robosim
from robosim.vector import BatchedVectorEnv, TorchToNumpy, UnbatchedEnv, make_list_vec

from .conftest import rendering_push_cube

N, HORIZON = 2, 3
DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")


@pytest.fixture(scope="module")
def push_cube():
    env = rendering_push_cube(N, HORIZON)
    yield env
    env.close()


def zeros(venv) -> np.ndarray:
    return np.zeros((venv.num_envs, *venv.single_action_space.shape), np.float32)


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_gymnasium_record_episode_statistics_on_the_vector_env_in_every_mode(push_cube, mode):
    venv = gym.wrappers.vector.RecordEpisodeStatistics(TorchToNumpy(BatchedVectorEnv(push_cube, mode)))
    venv.reset(seed=0)
    ended = 0
    for _t in range(2 * HORIZON + 2):
        _, _, terminated, truncated, info = venv.step(zeros(venv))
        done = terminated | truncated
        if done.any():
            ended += int(done.sum())
            assert np.array_equal(info["_episode"], done) and (info["episode"]["l"][done] == HORIZON).all()
            # robosim's own metrics sit beside gymnasium's, under keys gymnasium does not use
            ours = info["final_info"]["episode"] if mode == AutoresetMode.SAME_STEP else info["episode_metrics"]
            np.testing.assert_allclose(ours["r"][done], info["episode"]["r"][done], rtol=1e-6)
            assert np.array_equal(ours["l"][done], info["episode"]["l"][done])
            if mode == AutoresetMode.DISABLED:
                venv.reset(options={"reset_mask": done})
    assert ended == 2 * N and len(venv.length_queue) == 2 * N


def test_cleanrl_wrapper_chain_over_gym_make_vec(push_cube):
    """CleanRL's continuous PPO chain, on gym.make_vec's default (NEXT_STEP) vector env."""
    venv = TorchToNumpy(gym.make_vec("robosim/PushCube-v1", num_envs=N, max_episode_steps=HORIZON))
    venv = gym.wrappers.vector.RecordEpisodeStatistics(gym.wrappers.vector.ClipAction(venv))
    venv = gym.wrappers.vector.NormalizeObservation(venv)
    venv = gym.wrappers.vector.TransformObservation(venv, lambda obs: np.clip(obs, -10, 10))
    venv = gym.wrappers.vector.NormalizeReward(venv, gamma=0.99)
    venv = gym.wrappers.vector.TransformReward(venv, lambda r: np.clip(r, -10, 10))
    venv.reset(seed=1)
    lengths = []
    for _ in range(HORIZON + 1):
        obs, reward, terminated, truncated, info = venv.step(2 * np.ones((N, 7), np.float32))  # clipped
        assert np.isfinite(obs).all() and np.isfinite(reward).all()
        if "episode" in info:
            lengths += info["episode"]["l"][info["_episode"]].tolist()
    assert lengths == [HORIZON] * N
    venv.close()


@pytest.mark.parametrize("task", ["PushCube-v1", "PickCube-v1", "StackCube-v1"])
def test_sb3_check_env_takes_non_goal_tasks_for_plain_envs(task):
    single = UnbatchedEnv(robosim.make(task, num_envs=1, max_episode_steps=HORIZON))
    try:
        assert not hasattr(single.unwrapped, "compute_reward")   # what SB3 reads as "a GoalEnv"
        check_env(single)
    finally:
        single.close()


def test_goal_tasks_keep_compute_reward_for_her():
    single = UnbatchedEnv(robosim.make("Reach-v1", num_envs=1, max_episode_steps=HORIZON))
    try:
        assert isinstance(single, UnbatchedEnv) and hasattr(single.unwrapped, "compute_reward")
        check_env(single)
    finally:
        single.close()


@pytest.mark.parametrize("vectorization_mode", ["sync", "async"])
def test_gym_make_vec_sync_and_async_give_gymnasium_shapes(vectorization_mode):
    venv = gym.make_vec("robosim/PushCube-v1", num_envs=N, vectorization_mode=vectorization_mode,
                        max_episode_steps=HORIZON)
    try:
        assert isinstance(venv, (gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv))
        obs, _ = venv.reset(seed=0)
        assert obs.shape == (N, *venv.single_observation_space.shape) == (N, 38)
        assert venv.np_random_seed == (0, 1)
        for _ in range(HORIZON):
            obs, reward, terminated, truncated, _ = venv.step(zeros(venv))
        assert obs.shape == (N, 38) and reward.shape == (N,) and truncated.all()
    finally:
        venv.close()
    batched = gym.make("robosim/PushCube-v1", num_envs=N)     # gym.make itself: the batched env
    assert batched.num_envs == N and not isinstance(batched, UnbatchedEnv)
    batched.close()


def test_lists_of_actions_are_per_env_actions(push_cube):
    venv = BatchedVectorEnv(push_cube)
    venv.reset(seed=0)
    reference = venv.step(torch.full((N, 7), 0.1))
    venv.reset(seed=0)
    from_arrays = venv.step([np.full(7, 0.1, np.float32)] * N)
    venv.reset(seed=0)
    from_tensors = venv.step([torch.full((7,), 0.1)] * N)
    for got in (from_arrays, from_tensors):
        assert torch.equal(got[0], reference[0]) and torch.equal(got[1], reference[1])
    with pytest.raises(ValueError,
                       match=r"actions must be a list of one action per env \(num_envs=2\), got a list of 3"):
        venv.step([np.zeros(7, np.float32)] * 3)
    with pytest.raises(ValueError, match="actions must be a list of 2 actions of the single action space"):
        venv.step([np.zeros(6, np.float32)] * N)


@pytest.mark.slow   # renders frames of every env: ~30 s
def test_render_and_call_render_give_one_frame_per_env(push_cube):
    venv = TorchToNumpy(BatchedVectorEnv(push_cube))
    venv.reset(seed=0)
    frames = venv.render()
    assert isinstance(frames, tuple) and len(frames) == N and frames[0].shape == (32, 32, 3)
    called = venv.call("render")
    assert isinstance(called, tuple) and len(called) == N
    for i in range(N):
        assert np.array_equal(called[i], frames[i])


def test_get_attr_call_and_set_attr_per_env_on_the_batched_env(push_cube):
    venv = BatchedVectorEnv(push_cube)
    venv.reset(seed=0)
    states = venv.call("get_state")
    assert len(states) == N and torch.equal(torch.stack(states), push_cube.get_state())
    assert venv.get_attr("max_episode_steps") == (HORIZON,) * N
    venv.set_attr("elapsed_steps", [1, 2])        # a batched attribute takes per-env values
    assert [int(x) for x in venv.get_attr("elapsed_steps")] == [1, 2]
    with pytest.raises(ValueError, match="values must be equal for every env: `max_episode_steps` is one object"):
        venv.set_attr("max_episode_steps", [4, 5])
    venv.reset(seed=0)


def test_set_attr_call_and_get_attr_per_env_on_the_list_adapter():
    envs = [lambda: gym.make("CartPole-v1")] * 3
    ours, ref = TorchToNumpy(make_list_vec(envs)), SyncVectorEnv(envs)
    for venv in (ours, ref):
        venv.reset(seed=5)
        venv.set_attr("gravity", [9.0, 9.5, 10.0])
        assert venv.get_attr("gravity") == (9.0, 9.5, 10.0)
        venv.set_attr("gravity", 9.8)
        assert venv.call("gravity") == (9.8,) * 3
    assert ours.np_random_seed == ref.np_random_seed == (5, 6, 7)
    with pytest.raises(ValueError, match="values must be one value or a list of num_envs=3 values, got 2"):
        ours.set_attr("gravity", [1.0, 2.0])
    ours.close()
    ref.close()


def test_np_random_seed_before_a_seeded_reset_names_the_seeds_in_use(push_cube):
    # gymnasium's SyncVectorEnv reports each env's (random) seed before any seeded reset
    fresh = make_list_vec([lambda: gym.make("CartPole-v1")] * 2)
    seeds = fresh.np_random_seed
    assert len(seeds) == 2 and all(isinstance(s, int) and s >= 0 for s in seeds)
    # robosim: the per-env seeds its random streams use, which reproduce the episode
    venv = BatchedVectorEnv(robosim.make("PushCube-v1", num_envs=N, max_episode_steps=HORIZON))
    try:
        seeds = venv.np_random_seed
        assert len(seeds) == N and all(s >= 0 for s in seeds)
        unseeded, _ = venv.reset()
        reseeded, _ = venv.reset(seed=list(seeds))
        assert torch.equal(unseeded, reseeded) and venv.np_random_seed == seeds
    finally:
        venv.close()
    seeded = BatchedVectorEnv(robosim.make("PushCube-v1", num_envs=N, seed=40))
    assert seeded.np_random_seed == (40, 41)
    seeded.close()


def test_from_maniskill_doc_spells_the_capture_video_flag_as_tyro_parses_it():
    """ManiSkill3's ppo.py declares `capture_video: bool = True` and parses it with tyro."""
    tyro = pytest.importorskip("tyro")

    @dataclasses.dataclass
    class Args:
        capture_video: bool = True

    text = open(os.path.join(DOCS, "from-maniskill.md")).read()
    flags = re.findall(r"--(?:no-)?capture-video[^`]*", text)
    assert flags, "docs/from-maniskill.md names no capture-video flag"
    for flag in flags:
        assert tyro.cli(Args, args=flag.split()).capture_video is False, flag
