"""Real consumers: Stable-Baselines3 PPO on robosim's vector env through the numpy
adapter, and gymnasium's env checker on a num_envs=1 robosim env behind UnbatchedEnv."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from stable_baselines3 import PPO

import robosim
from robosim.vector import TorchToNumpy, UnbatchedEnv
from robosim.vector.sb3 import SB3VecEnv

N, MAX_STEPS = 4, 10


@pytest.fixture(scope="module")
def sb3_env():
    env = SB3VecEnv(TorchToNumpy(robosim.make_vec("PickCube-v1", num_envs=N, max_episode_steps=MAX_STEPS,
                                                  autoreset_mode=AutoresetMode.SAME_STEP)))
    yield env
    env.close()


def test_sb3_vec_env_resets_in_the_step_and_reports_terminal_observations(sb3_env):
    sb3_env.seed(3)
    obs = sb3_env.reset()
    assert obs.shape == (N, *sb3_env.observation_space.shape) and obs.dtype == np.float32
    for _t in range(MAX_STEPS):
        obs, rewards, dones, infos = sb3_env.step(np.zeros((N, *sb3_env.action_space.shape), np.float32))
        assert rewards.shape == (N,) and rewards.dtype == np.float32 and len(infos) == N
    assert dones.all()  # every env hit the time limit on this step
    for i in range(N):
        assert infos[i]["TimeLimit.truncated"] is True
        assert infos[i]["terminal_observation"].shape == sb3_env.observation_space.shape
        assert not np.array_equal(infos[i]["terminal_observation"], obs[i])  # obs already restarted
        assert infos[i]["elapsed_steps"] == MAX_STEPS  # the ending step's info, as DummyVecEnv gives it


def test_ppo_learns_briefly_on_a_robosim_vector_env(sb3_env):
    model = PPO("MlpPolicy", sb3_env, n_steps=16, batch_size=32, n_epochs=2, seed=0, device="cpu", verbose=0)
    model.learn(total_timesteps=2 * 16 * N)
    assert model.num_timesteps == 2 * 16 * N
    action, _ = model.predict(sb3_env.reset(), deterministic=True)
    assert action.shape == (N, *sb3_env.action_space.shape)
    assert np.isfinite(action).all()


def test_sb3_adapter_needs_same_step_mode():
    venv = TorchToNumpy(robosim.make_vec("Reach-v1", num_envs=1, autoreset_mode=AutoresetMode.NEXT_STEP))
    with pytest.raises(ValueError, match=r"venv must use autoreset_mode=AutoresetMode.SAME_STEP .* "
                                         r"got AutoresetMode.NEXT_STEP"):
        SB3VecEnv(venv)
    venv.close()


def test_unbatched_env_passes_gymnasium_env_checker():
    env = UnbatchedEnv(robosim.make("Reach-v1", num_envs=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checker warns about unbounded Box obs, by design here
        check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(info["success"], bool)
    env.close()
    with pytest.raises(ValueError, match=r"env must be a batched env with num_envs=1, got num_envs=2"):
        UnbatchedEnv(robosim.make("Reach-v1", num_envs=2))
