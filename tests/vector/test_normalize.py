"""NormalizeVecEnv against a float64 reference computed here from the raw stream of an
identical, un-normalized env run in lockstep (same seeds, same actions; the chasing
env is deterministic given its seeds)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

import robosim
from robosim.vector import BatchedVectorEnv, NormalizeVecEnv, RunningMeanStd

N, EPS, GAMMA, CLIP_OBS, CLIP_REW = 6, 1e-8, 0.9, 3.0, 2.0


def make_pair(chasing, mode):
    def env():
        return BatchedVectorEnv(chasing.ChasingVecEnv(num_envs=N, max_step=7, init_distance=0.8), mode)
    return NormalizeVecEnv(env(), clip_obs=CLIP_OBS, clip_rew=CLIP_REW, gamma=GAMMA, eps=EPS), env()


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_obs_and_reward_normalization_match_a_float64_reference(chasing, mode):
    norm, raw = make_pair(chasing, mode)
    obs_n, _ = norm.reset(seed=5)
    obs, _ = raw.reset(seed=5)
    obs_samples = [obs.double().numpy()]          # every row a reset/step returned as new
    returns = np.zeros(N)
    return_samples: list[np.ndarray] = []
    fresh = np.zeros(N, dtype=bool)                # NEXT_STEP: rows reset by this step
    rng = np.random.default_rng(0)
    ends = 0

    def expected_obs(x):
        data = np.concatenate(obs_samples)
        z = (x.double().numpy() - data.mean(0)) / np.sqrt(data.var(0) + EPS)
        return np.clip(z, -CLIP_OBS, CLIP_OBS)

    np.testing.assert_allclose(obs_n.numpy(), expected_obs(obs), atol=1e-5)
    for t in range(60):
        action = torch.as_tensor(rng.uniform(-1, 1, (N, 2)), dtype=torch.float32)
        obs_n, rew_n, term_n, trunc_n, info_n = norm.step(action)
        obs, rew, term, trunc, info = raw.step(action)
        assert torch.equal(term_n, term) and torch.equal(trunc_n, trunc)
        obs_samples.append(obs.double().numpy())
        moved = ~fresh if mode == AutoresetMode.NEXT_STEP else np.ones(N, dtype=bool)
        returns[moved] = GAMMA * returns[moved] + rew.double().numpy()[moved]
        return_samples.append(returns[moved].copy())
        all_returns = np.concatenate(return_samples)
        expected_rew = np.clip(rew.double().numpy() / np.sqrt(all_returns.var() + EPS), -CLIP_REW, CLIP_REW)
        np.testing.assert_allclose(obs_n.numpy(), expected_obs(obs), atol=1e-5, err_msg=f"obs step {t}")
        np.testing.assert_allclose(rew_n.numpy(), expected_rew, atol=1e-5, err_msg=f"reward step {t}")
        done = (term | trunc).numpy()
        if "final_obs" in info:  # SAME_STEP: the ended step is normalized too (no update)
            np.testing.assert_allclose(info_n["final_obs"].numpy(), expected_obs(info["final_obs"]), atol=1e-5)
        returns[done] = 0.0
        fresh = done
        ends += done.sum()
        if mode == AutoresetMode.DISABLED and done.any():
            obs_n, _ = norm.reset(options={"reset_mask": done})
            obs, _ = raw.reset(options={"reset_mask": done})
            obs_samples.append(obs[torch.from_numpy(done)].double().numpy())
            np.testing.assert_allclose(obs_n.numpy(), expected_obs(obs), atol=1e-5)
    assert ends > 20
    assert np.abs(obs_n.numpy()).max() <= CLIP_OBS


def test_running_mean_std_equals_batch_statistics():
    rms, rng = RunningMeanStd((3,)), np.random.default_rng(1)
    chunks = [rng.normal(5.0, 3.0, (n, 3)) for n in (1, 7, 0, 30, 2)]
    for chunk in chunks:
        rms.update(torch.from_numpy(chunk))
    data = np.concatenate(chunks)
    np.testing.assert_allclose(rms.mean.numpy(), data.mean(0), rtol=1e-12)
    np.testing.assert_allclose(rms.var.numpy(), data.var(0), rtol=1e-12)
    assert rms.count == 40


def test_training_flag_freezes_and_statistics_save_and_load(chasing, tmp_path):
    norm, _ = make_pair(chasing, AutoresetMode.SAME_STEP)
    norm.reset(seed=0)
    for _ in range(10):
        norm.step(torch.ones(N, 2))
    frozen = norm.state_dict()
    norm.training = False
    for _ in range(5):
        obs_n, *_ = norm.step(torch.ones(N, 2))
    after = norm.state_dict()
    assert torch.equal(after["obs_rms"]["obs"]["mean"], frozen["obs_rms"]["obs"]["mean"])
    assert after["obs_rms"]["obs"]["count"] == frozen["obs_rms"]["obs"]["count"]
    assert torch.equal(after["ret_rms"]["var"], frozen["ret_rms"]["var"])
    path = tmp_path / "norm.pt"
    norm.save(path)
    loaded, _ = make_pair(chasing, AutoresetMode.SAME_STEP)
    loaded.load(path)
    raw = norm.raw_obs
    assert torch.equal(loaded.normalize_obs(raw), norm.normalize_obs(raw))
    assert torch.equal(loaded.normalize_reward(torch.ones(N)), norm.normalize_reward(torch.ones(N)))
    with pytest.raises(ValueError, match=r"state must be a dict from NormalizeVecEnv.state_dict\(\)"):
        loaded.load_state_dict({"mean": 1})


def test_dict_observations_are_normalized_per_key():
    venv = NormalizeVecEnv(robosim.make_vec("Reach-v1", num_envs=3, autoreset_mode="SameStep"), norm_rew=False)
    obs, _ = venv.reset(seed=0)
    raw = venv.raw_obs
    assert set(venv.obs_rms) == {"observation", "achieved_goal", "desired_goal"}
    for key in raw:
        data = raw[key].double()
        expected = (data - data.mean(0)) / torch.sqrt(data.var(0, unbiased=False) + 1e-8)
        torch.testing.assert_close(obs[key].double(), expected.clamp(-10, 10), rtol=0, atol=1e-5)
    venv.close()


@pytest.mark.parametrize("kwargs, match", [
    ({"gamma": 1.5}, r"gamma must be a number in \[0, 1\], got 1.5"),
    ({"clip_obs": 0}, r"clip_obs must be a positive number, got 0"),
    ({"clip_rew": -1.0}, r"clip_rew must be a positive number, got -1.0"),
    ({"eps": "small"}, r"eps must be a positive number, got 'small'"),
])
def test_bad_settings_raise(chasing, kwargs, match):
    with pytest.raises(ValueError, match=match):
        NormalizeVecEnv(BatchedVectorEnv(chasing.ChasingVecEnv(num_envs=2)), **kwargs)
