"""List adapters over ordinary gymnasium envs: MASA's list API (reset_done), and the
batched view checked step for step against gymnasium's own SyncVectorEnv in all
three autoreset modes. Same env classes, same seeds, same actions: results are equal
bit for bit (both sides run the very same CartPole code in the same order)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from robosim.vector import ListVecEnv, SingleVecEnv, TorchToNumpy, make_list_vec

N = 4


class ToyGoalEnv(gym.Env):
    """A panda-gym shaped env: dict obs (observation / achieved_goal / desired_goal), a
    point moved by the action, success within 0.2 of the goal, random info entries that
    differ between reset and step. Small and exact, for checking info plumbing."""

    def __init__(self, max_steps: int = 9):
        box = gym.spaces.Box(-5.0, 5.0, (2,), np.float64)
        self.observation_space = gym.spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.max_steps = max_steps

    def _obs(self):
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.goal = self.np_random.uniform(-1, 1, 2), self.np_random.uniform(-1, 1, 2)
        self.t = 0
        return self._obs(), {"start_distance": float(np.linalg.norm(self.pos - self.goal))}

    def step(self, action):
        self.pos = np.clip(self.pos + 0.3 * np.asarray(action, dtype=np.float64), -5, 5)
        self.t += 1
        distance = float(np.linalg.norm(self.pos - self.goal))
        success = distance < 0.2
        info = {"success": success, "distance": distance, "noise": self.np_random.normal(size=3)}
        return self._obs(), -distance, success, self.t >= self.max_steps, info


def cartpole():
    return gym.make("CartPole-v1", max_episode_steps=40)


def assert_tree_equal(a, b, where=""):
    if isinstance(a, dict):
        assert set(a) == set(b), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            assert_tree_equal(a[k], b[k], f"{where}/{k}")
    else:
        assert np.array_equal(np.asarray(a), np.asarray(b)), f"{where}: {a} != {b}"


def assert_info_equal(ref: dict, ours: dict, where="info"):
    """Every key gymnasium reports is there with the same mask and equal values where
    the mask is set (gymnasium leaves zeros in the other rows; so may we)."""
    for key, value in ref.items():
        if key.startswith("_"):
            continue
        assert key in ours, f"{where}: missing {key!r} (have {sorted(ours)})"
        mask = ref[f"_{key}"]
        assert np.array_equal(mask, ours[f"_{key}"]), f"{where}: mask _{key} {mask} != {ours[f'_{key}']}"
        if key == "final_obs":
            for i in np.flatnonzero(mask):
                assert_tree_equal(value[i], ours[key][i], f"{where}/final_obs[{i}]")
        elif isinstance(value, dict):
            assert_info_equal(value, ours[key], f"{where}/{key}")
        else:
            for i in np.flatnonzero(mask):
                assert np.array_equal(value[i], ours[key][i]), f"{where}/{key}[{i}]: {value[i]} != {ours[key][i]}"


def run_side_by_side(make_env, mode, steps, policy):
    ref = SyncVectorEnv([make_env for _ in range(N)], autoreset_mode=mode)
    ours = TorchToNumpy(make_list_vec([make_env for _ in range(N)], autoreset_mode=mode))
    assert ours.metadata["autoreset_mode"] == mode
    obs_ref, info_ref = ref.reset(seed=123)
    obs, info = ours.reset(seed=123)
    assert_tree_equal(obs_ref, obs, "reset obs")
    assert_info_equal(info_ref, info, "reset info")
    rng = np.random.default_rng(7)
    ends_at: list[int] = []
    for t in range(steps):
        action = policy(rng)
        out_ref, out = ref.step(action), ours.step(action)
        for name, a, b in zip(("obs", "reward", "terminated", "truncated"), out_ref[:4], out[:4]):
            assert_tree_equal(a, b, f"step {t} {name}")
        assert_info_equal(out_ref[4], out[4], f"step {t} info")
        done = out_ref[2] | out_ref[3]
        ends_at += [t] * int(done.sum())
        if mode == AutoresetMode.DISABLED and done.any():
            obs_ref, info_ref = ref.reset(options={"reset_mask": done.copy()})  # SyncVectorEnv pops the key
            obs, info = ours.reset(options={"reset_mask": done})
            assert_tree_equal(obs_ref, obs, f"step {t} masked reset obs")
            assert_info_equal(info_ref, info, f"step {t} masked reset info")
    ref.close()
    ours.close()
    return ends_at


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_cartpole_list_adapter_equals_sync_vector_env(mode):
    ends = run_side_by_side(cartpole, mode, 400, lambda rng: rng.integers(0, 2, N))
    # many episodes, ending at many different steps (not in lockstep)
    assert len(ends) > 40 and len(set(ends)) > 30


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_dict_obs_goal_env_list_adapter_equals_sync_vector_env(mode):
    ends = run_side_by_side(ToyGoalEnv, mode, 200, lambda rng: rng.uniform(-1, 1, (N, 2)).astype(np.float32))
    assert len(ends) > 40 and len(set(ends)) > 20


def test_list_vec_env_seeds_env_i_with_seed_plus_i():
    venv = ListVecEnv([cartpole() for _ in range(3)])
    obs, infos = venv.reset(seed=10)
    for i in range(3):
        assert np.array_equal(obs[i], cartpole().reset(seed=10 + i)[0])
    assert infos == [{}, {}, {}]


def test_reset_done_resets_only_flagged_envs_with_seed_plus_i():
    venv = ListVecEnv([cartpole for _ in range(4)])  # factories are accepted too
    venv.reset(seed=0)
    venv.step([1, 1, 1, 1])
    before = [env.unwrapped.state.copy() for env in venv.envs]
    reset_obs, reset_infos = venv.reset_done(np.array([False, True, False, True]), seed=50)
    assert reset_obs[0] is None and reset_obs[2] is None
    assert reset_infos[0] == {} and reset_infos[2] == {}
    assert np.array_equal(reset_obs[1], cartpole().reset(seed=51)[0])
    assert np.array_equal(reset_obs[3], cartpole().reset(seed=53)[0])
    assert np.array_equal(venv.envs[0].unwrapped.state, before[0])  # untouched
    obs, rew, term, trunc, infos = venv.step([0, 0, 0, 0])
    assert len(obs) == len(rew) == len(term) == len(trunc) == len(infos) == 4
    # lists and tensors are fine masks too; no True means nothing is reset
    assert venv.reset_done([False] * 4) == ([None] * 4, [{}] * 4)
    assert venv.reset_done(torch.tensor([True, False, False, False]))[0][0] is not None


def test_single_vec_env_is_a_one_env_list():
    venv = SingleVecEnv(cartpole())
    assert venv.n_envs == 1
    obs, infos = venv.reset(seed=4)
    assert np.array_equal(obs[0], cartpole().reset(seed=4)[0])
    obs, rew, term, trunc, infos = venv.step(1)  # the single env's action, not a list
    assert len(obs) == 1 and rew == [1.0]
    assert venv.reset_done([True], seed=9)[0][0] is not None
    assert venv.reset_done([False])[0] == [None]


@pytest.mark.parametrize("dones, error, match", [
    ([True, False], ValueError, r"dones must have shape \(4,\), got \(2,\)"),
    (np.array([1, 0, 0, 1]), ValueError, r"dones must have dtype bool, got int64"),
    ([1, 0, 0, 1], ValueError, r"dones must hold bools"),
    ("1001", TypeError, r"dones must be a list, numpy array or tensor of 4 bools, got str"),
])
def test_reset_done_rejects_bad_masks(dones, error, match):
    venv = ListVecEnv([cartpole() for _ in range(4)])
    venv.reset(seed=0)
    with pytest.raises(error, match=match):
        venv.reset_done(dones)


def test_list_api_rejects_bad_input():
    with pytest.raises(ValueError, match="envs must be a non-empty list"):
        ListVecEnv([])
    with pytest.raises(TypeError, match=r"envs\[1\] must be a gymnasium.Env, got int"):
        ListVecEnv([cartpole(), 3])
    venv = ListVecEnv([cartpole() for _ in range(2)])
    with pytest.raises(TypeError, match=r"seed must be an int \(env i gets seed \+ i\) or None, got 1.5"):
        venv.reset(seed=1.5)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must hold one action per env \(2\), got 3"):
        venv.step([0, 1, 0])
    with pytest.raises(ValueError, match=r"actions must hold one action per env \(2\), got 1"):
        venv.step([0])


def test_batched_list_env_rejects_wrong_number_of_actions():
    venv = make_list_vec([cartpole for _ in range(3)])
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must have shape \(3,\) \(num_envs=3\), got \(2,\)"):
        venv.step(torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"actions must have shape \(3,\) \(num_envs=3\), got \(\)"):
        venv.step(torch.tensor(1))  # one action is not broadcast to every env
