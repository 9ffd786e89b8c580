"""The vector contract on a real robosim env (PickCube-v1, 4 envs, 4-step episodes):
what rows hold in each autoreset mode, partial resets, devices, and bad input."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

import robosim
from robosim.vector import BatchedVectorEnv, make_vec

N, MAX_STEPS = 4, 4


@pytest.fixture(scope="module")
def base_env():
    env = robosim.make("PickCube-v1", num_envs=N, max_episode_steps=MAX_STEPS)
    yield env
    env.close()


def zeros_action(venv):
    return torch.zeros(N, venv.single_action_space.shape[0])


def test_make_vec_sets_the_autoreset_mode_and_spaces():
    venv = make_vec("Reach-v1", num_envs=2, autoreset_mode="SameStep")  # the enum's value works too
    assert venv.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert isinstance(venv, gym.vector.VectorEnv) and venv.num_envs == 2
    assert venv.observation_space == gym.vector.utils.batch_space(venv.single_observation_space, 2)
    obs, info = venv.reset(seed=0)
    assert obs["observation"].shape == (2, *venv.single_observation_space["observation"].shape)
    assert obs["observation"].device == venv.device
    venv.close()
    venv.close()  # idempotent
    with pytest.raises(ValueError, match=r"autoreset_mode must be a gymnasium.vector.AutoresetMode or one of "
                                         r"\['NextStep', 'SameStep', 'Disabled'\], got 'same_step'"):
        make_vec("Reach-v1", num_envs=2, autoreset_mode="same_step")


def test_next_step_resets_ended_envs_on_the_following_step_and_ignores_their_action(base_env):
    venv = BatchedVectorEnv(base_env, AutoresetMode.NEXT_STEP)
    venv.reset(seed=1)
    for _t in range(MAX_STEPS):
        obs, reward, terminated, truncated, info = venv.step(zeros_action(venv))
    assert truncated.all() and (info["elapsed_steps"] == MAX_STEPS).all()
    ended_obs = obs.clone()
    action = zeros_action(venv)
    action[:] = float("nan")  # ignored for envs that reset on this step, so never checked
    obs, reward, terminated, truncated, info = venv.step(action)
    assert (info["elapsed_steps"] == 0).all()
    assert (reward == 0).all() and not terminated.any() and not truncated.any()
    assert not torch.equal(obs, ended_obs)
    # same episodes as an explicit reset with the same seeds: the reset rows are reset obs
    fresh = robosim.make("PickCube-v1", num_envs=N, max_episode_steps=MAX_STEPS)
    fresh_obs, _ = fresh.reset(seed=1)
    fresh_obs, _ = fresh.reset()  # second episode of every env
    fresh.close()
    torch.testing.assert_close(obs, fresh_obs, rtol=0, atol=1e-5)
    obs, reward, *_ = venv.step(zeros_action(venv))
    assert reward.ne(0).all()  # a normal step again


def test_same_step_reports_the_ended_step_in_final_obs_and_final_info(base_env):
    venv = BatchedVectorEnv(base_env, AutoresetMode.SAME_STEP)
    venv.reset(seed=2)
    for _t in range(MAX_STEPS - 1):
        obs, reward, terminated, truncated, info = venv.step(zeros_action(venv))
        assert "final_obs" not in info and "final_info" not in info
    obs, reward, terminated, truncated, info = venv.step(zeros_action(venv))
    assert truncated.all()
    assert info["_final_obs"].all() and info["_final_info"].all()
    assert info["final_obs"].shape == obs.shape and not torch.equal(info["final_obs"], obs)
    assert (info["final_info"]["elapsed_steps"] == MAX_STEPS).all()
    assert info["final_info"]["_elapsed_steps"].all() and info["final_info"]["_success"].all()
    assert (info["elapsed_steps"] == 0).all()  # the returned rows already belong to the new episodes


def test_disabled_mode_needs_an_explicit_masked_reset(base_env):
    venv = BatchedVectorEnv(base_env, AutoresetMode.DISABLED)
    venv.reset(seed=3)
    venv.step(zeros_action(venv))
    venv.reset(options={"env_idx": [1]})  # env_idx works as well as reset_mask: env 1 runs one step behind
    for _t in range(MAX_STEPS - 1):
        obs, reward, terminated, truncated, info = venv.step(zeros_action(venv))
    assert truncated.tolist() == [True, False, True, True]
    with pytest.raises(ValueError, match=r"envs \[0, 2, 3\] ended .* reset them with reset\(options="):
        venv.step(zeros_action(venv))
    before = base_env.get_state().clone()
    mask = np.array([True, False, True, True])
    obs2, info = venv.reset(options={"reset_mask": mask})
    after = base_env.get_state()
    assert torch.equal(after[1], before[1])  # partial reset leaves env 1 bit-for-bit untouched
    assert torch.equal(obs2[1], obs[1])
    assert (info["elapsed_steps"] == torch.tensor([0, MAX_STEPS - 1, 0, 0])).all()
    obs, reward, terminated, truncated, info = venv.step(zeros_action(venv))
    assert truncated.tolist() == [False, True, False, False]


@pytest.mark.parametrize("options, error, match", [
    ({"reset_mask": np.array([True, False])}, ValueError,
     r"options\['reset_mask'\] must have shape \(4,\), got \(2,\)"),
    ({"reset_mask": np.array([1, 0, 0, 1])}, ValueError,
     r"options\['reset_mask'\] must have dtype bool, got torch.int64"),
    ({"reset_mask": np.zeros(4, dtype=bool)}, ValueError,
     r"options\['reset_mask'\] must contain at least one True value, got \[False, False, False, False\]"),
    ({"reset_mask": [True, False, True, True]}, TypeError,
     r"options\['reset_mask'\] must be a bool tensor/array of shape \(4,\), got list"),
    ({"reset_mask": np.ones(4, dtype=bool), "env_idx": [0]}, ValueError, r"either 'reset_mask' or 'env_idx', got both"),
    ({"env_idx": [4]}, ValueError, r"options\['env_idx'\] entries must be in \[0, 3\], got \[4\]"),
    ({"env_idx": []}, ValueError, r"options\['env_idx'\] must name at least one env"),
])
def test_bad_reset_masks_raise_and_leave_the_env_usable(base_env, options, error, match):
    venv = BatchedVectorEnv(base_env, AutoresetMode.DISABLED)
    venv.reset(seed=0)
    state = base_env.get_state().clone()
    with pytest.raises(error, match=match):
        venv.reset(options=options)
    assert torch.equal(base_env.get_state(), state)  # nothing was touched
    venv.step(zeros_action(venv))


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_reset_mask_is_refused_where_it_does_not_apply(base_env, mode):
    venv = BatchedVectorEnv(base_env, mode)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=rf"options\['reset_mask'\] applies only in AutoresetMode.DISABLED .* "
                                         rf"got it with autoreset_mode={mode}"):
        venv.reset(options={"reset_mask": np.ones(N, dtype=bool)})


def test_wrong_actions_and_seeds_raise_without_broadcasting(base_env):
    venv = BatchedVectorEnv(base_env, AutoresetMode.SAME_STEP)
    venv.reset(seed=0)
    a = venv.single_action_space.shape[0]
    with pytest.raises(ValueError, match=rf"actions must have shape \(4, {a}\) \(num_envs=4\), got \(3, {a}\)"):
        venv.step(torch.zeros(3, a))
    with pytest.raises(ValueError, match=rf"actions must have shape \(4, {a}\) \(num_envs=4\), got \({a},\)"):
        venv.step(torch.zeros(a))  # one env's action is not broadcast
    with pytest.raises(TypeError, match=r"actions must be a torch.Tensor, numpy array or list of 4 per-env .* got int"):
        venv.step(0)
    with pytest.raises(ValueError,
                       match=r"actions must be a list of one action per env \(num_envs=4\), got a list of 3"):
        venv.step([[0.0] * a] * 3)  # a list is N per-env actions (gymnasium's SyncVectorEnv takes lists)
    with pytest.raises(ValueError, match=r"action must be finite"):
        venv.step(torch.full((N, a), float("nan")))
    with pytest.raises(ValueError, match=r"seed list must have one entry per env \(4\), got 2"):
        BatchedVectorEnv(base_env, AutoresetMode.DISABLED).reset(seed=[1, 2], options={"env_idx": [0, 1]})
    with pytest.raises(TypeError, match=r"env must follow the batched env contract robosim.envs.protocol."
                                        r"BatchedEnvCore \(missing `num_envs`, `device`, .*\), got int"):
        BatchedVectorEnv(3)
    venv.step(torch.zeros(N, a))  # still usable


def test_seed_lists_follow_gymnasium_one_entry_per_env(base_env):
    venv = BatchedVectorEnv(base_env, AutoresetMode.DISABLED)
    obs_int, _ = venv.reset(seed=40)
    obs_list, _ = venv.reset(seed=[40, 41, 42, 43])
    assert torch.equal(obs_int, obs_list)
    venv.reset(seed=0)
    obs_part, _ = venv.reset(seed=[0, 0, 42, 0], options={"reset_mask": np.array([False, False, True, False])})
    assert torch.equal(obs_part[2], obs_int[2])  # env 2 got seeds[2]


def test_reset_does_not_mutate_the_callers_options(base_env):
    venv = BatchedVectorEnv(base_env, AutoresetMode.DISABLED)
    venv.reset(seed=0)
    options = {"reset_mask": np.array([True, False, False, False])}
    venv.reset(options=options)
    assert "reset_mask" in options  # wrappers above (e.g. RecordEpisodeStatistics) read it after us
