"""Real clients on robosim, unmodified: Stable-Baselines3 (PPO logging, SAC + HER through
both adapters, check_env), gymnasium (make_vec, vector RecordVideo, DictInfoToList,
np_random_seed, call/get_attr/set_attr) and ManiSkill3-style metric reading."""
from __future__ import annotations

import glob

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from stable_baselines3 import PPO, SAC, HerReplayBuffer
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

import robosim
from robosim.vector import BatchedVectorEnv, TorchToNumpy, UnbatchedEnv
from robosim.vector.sb3 import SB3VecEnv

N, HORIZON = 3, 5
DISTANCE_THRESHOLD = 0.05   # Reach-v1's success distance (m)


@pytest.fixture(scope="module")
def same_step():
    venv = TorchToNumpy(robosim.make_vec("Reach-v1", num_envs=N, autoreset_mode=AutoresetMode.SAME_STEP,
                                         max_episode_steps=HORIZON))
    yield venv
    venv.close()


def test_sb3_vec_env_gives_the_ending_steps_info(same_step):
    env = SB3VecEnv(same_step)
    env.seed(0)                # seeded: which goals lie within reach of the start is not left to chance
    obs = env.reset()
    distance = np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"], axis=1)
    assert (distance > 2 * DISTANCE_THRESHOLD).all(), distance   # zero actions cannot succeed early
    for _step in range(1, HORIZON + 1):
        _, _, dones, infos = env.step(np.zeros((N, 4), dtype=np.float32))
    assert dones.all()
    for info in infos:  # the ending step's values, as DummyVecEnv gives them, not the reset's
        assert info["elapsed_steps"] == HORIZON
        assert "is_success" in info and info["is_success"] == info["success"]
        assert info["terminal_observation"]["observation"].shape == (25,)
        assert info["TimeLimit.truncated"] is True
        assert info["episode"]["l"] == HORIZON and info["episode"]["r"] < 0


def test_sb3_ppo_logs_success_and_episodes(same_step):
    model = PPO("MultiInputPolicy", SB3VecEnv(same_step), n_steps=2 * HORIZON, batch_size=N * HORIZON,
                n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=2 * N * HORIZON)
    assert len(model.ep_success_buffer) >= 2 * N  # read from infos[i]["is_success"] at the ending step
    lengths = [int(ep["l"]) for ep in model.ep_info_buffer]
    assert len(lengths) >= 2 * N and all(1 <= n <= HORIZON for n in lengths)
    for n, success in zip(lengths, model.ep_success_buffer):
        assert success or n == HORIZON  # Reach ends early only on success


@pytest.mark.slow   # an SB3 SAC+HER run: ~23 s
def test_sb3_sac_her_through_the_batched_adapter(same_step):
    model = SAC("MultiInputPolicy", SB3VecEnv(same_step), replay_buffer_class=HerReplayBuffer,
                learning_starts=2 * N * HORIZON, batch_size=16, seed=0, device="cpu",
                replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"})
    model.learn(total_timesteps=4 * N * HORIZON)  # HER calls compute_reward via env_method
    assert model.replay_buffer.size() > 0


@pytest.mark.slow   # an SB3 SAC+HER run: ~32 s
def test_sb3_sac_her_through_monitor_and_check_env():
    single = UnbatchedEnv(robosim.make("Reach-v1", num_envs=1, max_episode_steps=HORIZON))
    check_env(single)  # runs SB3's goal-env checks: compute_reward is found on the env
    vec = DummyVecEnv([lambda: Monitor(single)])
    model = SAC("MultiInputPolicy", vec, replay_buffer_class=HerReplayBuffer, learning_starts=2 * HORIZON,
                batch_size=8, seed=0, device="cpu")
    model.learn(total_timesteps=4 * HORIZON)
    obs = vec.reset()
    reward = vec.env_method("compute_reward", obs["achieved_goal"], obs["desired_goal"], [{}], indices=[0])[0]
    distance = np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"], axis=-1)
    assert reward == pytest.approx(np.where(distance < 0.05, 0.0, -np.tanh(5 * distance)), abs=1e-6)
    vec.close()


def test_gymnasium_make_vec_returns_the_batched_vector_env():
    venv = gym.make_vec("robosim/Reach-v1", num_envs=2, max_episode_steps=HORIZON)
    try:
        assert isinstance(venv, BatchedVectorEnv)
        obs, _ = venv.reset(seed=0)
        assert obs["observation"].shape == (2, 25)
        assert venv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    finally:
        venv.close()


@pytest.mark.slow   # records a video: ~32 s
def test_gymnasium_vector_record_video_over_the_numpy_adapter(tmp_path):
    venv = TorchToNumpy(robosim.make_vec("Reach-v1", num_envs=2, max_episode_steps=HORIZON,
                                         render_mode="rgb_array", render_size=(64, 64)))
    venv = gym.wrappers.vector.RecordVideo(venv, str(tmp_path), episode_trigger=lambda ep: True)
    venv.reset(seed=0)
    for _ in range(HORIZON + 1):
        venv.step(np.zeros((2, 4), dtype=np.float32))
    venv.close()
    videos = glob.glob(str(tmp_path / "*.mp4"))
    assert videos, "RecordVideo wrote no video"


def test_dict_info_to_list_and_key_masks(same_step):
    venv = gym.wrappers.vector.DictInfoToList(same_step)
    _, infos = venv.reset(seed=0)
    assert len(infos) == N and infos[0]["reconfigure"] in (False, np.False_)
    for _ in range(HORIZON):
        _, _, _, _, infos = venv.step(np.zeros((N, 4), dtype=np.float32))
    assert all(info["final_info"]["elapsed_steps"] == HORIZON for info in infos)
    _, _, _, _, info = same_step.step(np.zeros((N, 4), dtype=np.float32))
    for key in ("success", "is_success", "elapsed_steps"):
        assert info[f"_{key}"].dtype == np.bool_ and info[f"_{key}"].all()


def test_np_random_seed_and_call_get_attr_set_attr(same_step):
    same_step.reset(seed=7)
    assert same_step.np_random_seed == (7, 8, 9)
    assert same_step.get_attr("max_episode_steps") == (HORIZON,) * N
    states = same_step.call("get_state")   # env i's row of the batched state, as gymnasium's call
    assert len(states) == N and np.array_equal(np.stack(states), same_step.unwrapped.env.get_state().numpy())
    same_step.set_attr("max_episode_steps", [HORIZON + 1] * N)
    assert same_step.get_attr("max_episode_steps") == (HORIZON + 1,) * N
    with pytest.raises(ValueError, match="values must be equal for every env: `max_episode_steps` is one object"):
        same_step.set_attr("max_episode_steps", [1, 2, 3])
    same_step.set_attr("max_episode_steps", HORIZON)


def test_maniskill_style_metrics_and_ignore_terminations():
    venv = robosim.make_vec("Reach-v1", num_envs=2, autoreset_mode=AutoresetMode.SAME_STEP, ignore_terminations=True,
                            max_episode_steps=HORIZON, reconfiguration_freq=None)
    try:
        obs, _ = venv.reset(seed=0)
        for _step in range(HORIZON):
            goal_dir = obs["desired_goal"] - obs["achieved_goal"]
            obs, _, terminated, truncated, info = venv.step(torch.cat([goal_dir * 20, torch.ones(2, 1)], 1))
            assert not terminated.any()
        assert truncated.all() and info["_final_info"].all()
        episode = info["final_info"]["episode"]
        assert episode["episode_len"].tolist() == [HORIZON, HORIZON]
        for key in ("return", "reward", "success_once", "success_at_end", "fail_once", "r", "l"):
            assert episode[key].shape == (2,)
    finally:
        venv.close()
