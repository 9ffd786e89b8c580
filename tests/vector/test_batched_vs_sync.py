"""robosim's natively batched vector env against gymnasium's own SyncVectorEnv over
num_envs=1 robosim envs, in all three autoreset modes, step for step.

Seeding contract: env i of a batch seeded s starts exactly like a 1-env batch seeded
s + i, and SyncVectorEnv seeds its env i with s + i, so both sides start from the same
states and autoreset into the same episodes. After physics steps the two may differ
in the last float32 bits: in the batch, env i sits at its own world offset inside one
shared PhysX scene, while each 1-env scene has its env at the origin, so world-frame
arithmetic rounds differently before poses are brought back to the env frame. Floats
are therefore compared with a small tolerance; flags and masks exactly. Reach-v1 is
contact-free, so no such rounding difference grows into a different episode.
"""
from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import robosim
from robosim.vector import BatchedVectorEnv, TorchToNumpy, UnbatchedEnv

N, MAX_STEPS, STEPS, ATOL = 4, 12, 200, 1e-5


@pytest.fixture(scope="module")
def envs():
    batched = robosim.make("Reach-v1", num_envs=N, max_episode_steps=MAX_STEPS)
    singles = [robosim.make("Reach-v1", num_envs=1, max_episode_steps=MAX_STEPS) for _ in range(N)]
    yield batched, singles
    batched.close()
    for env in singles:
        env.close()


def assert_close_tree(a, b, where):
    if isinstance(a, dict):
        assert set(a) == set(b), where
        for k in a:
            assert_close_tree(a[k], b[k], f"{where}/{k}")
        return
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == np.bool_ or b.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        assert np.array_equal(a, b), f"{where}: {a} != {b}"
    else:
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=0, atol=ATOL, err_msg=where)


def assert_info_close(ref: dict, ours: dict, where: str, keys=None):
    """Keys gymnasium reports (all of them, or `keys`) match where gymnasium's mask is set."""
    for key in keys or [k for k in ref if not k.startswith("_")]:
        mask = ref[f"_{key}"]
        if f"_{key}" in ours:
            assert np.array_equal(mask, ours[f"_{key}"]), f"{where}: _{key} {mask} != {ours[f'_{key}']}"
        rows = np.flatnonzero(mask)
        if key == "final_obs":
            for i in rows:
                assert_close_tree(ref[key][i], ours[key][i], f"{where}/final_obs[{i}]")
        elif isinstance(ref[key], dict):
            assert_info_close(ref[key], ours[key], f"{where}/{key}")
        else:
            assert_close_tree(ref[key][rows], np.asarray(ours[key])[rows], f"{where}/{key}")


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_batched_vector_env_equals_sync_vector_env_of_single_envs(envs, mode):
    batched, singles = envs
    ours = TorchToNumpy(BatchedVectorEnv(batched, autoreset_mode=mode))
    ref = SyncVectorEnv([lambda env=env: UnbatchedEnv(env) for env in singles], autoreset_mode=mode)
    assert ours.metadata["autoreset_mode"] == ref.metadata["autoreset_mode"] == mode
    assert ours.single_observation_space == ref.single_observation_space
    assert ours.single_action_space == ref.single_action_space

    obs, _ = ours.reset(seed=21)
    obs_ref, _ = ref.reset(seed=21)
    assert_close_tree(obs_ref, obs, "reset obs")
    rng = np.random.default_rng(3)
    terminations = truncations = 0
    end_steps = set()
    for t in range(STEPS):
        # a hesitant reach: random gain toward the goal, so successes come at many times
        gain = rng.uniform(0.0, 0.35, (N, 1))
        move = np.clip(gain * (obs["desired_goal"] - obs["achieved_goal"]) / 0.1, -1, 1)
        action = np.concatenate([move, rng.uniform(-1, 1, (N, 1))], axis=1).astype(np.float32)
        obs, reward, terminated, truncated, info = ours.step(action)
        obs_ref, reward_ref, terminated_ref, truncated_ref, info_ref = ref.step(action)
        where = f"{mode.value} step {t}"
        assert_close_tree(obs_ref, obs, f"{where} obs")
        assert_close_tree(reward_ref, reward, f"{where} reward")
        assert np.array_equal(terminated_ref, terminated), f"{where} terminated"
        assert np.array_equal(truncated_ref, truncated), f"{where} truncated"
        assert ("final_obs" in info) == ("final_obs" in info_ref), where
        if "final_obs" in info_ref:
            assert_info_close(info_ref, info, f"{where} info", keys=["final_obs", "final_info"])
        assert_info_close(info_ref, info, f"{where} info", keys=["success", "fail", "elapsed_steps", "distance"])
        done = terminated | truncated
        terminations, truncations = terminations + terminated.sum(), truncations + (truncated & ~terminated).sum()
        end_steps |= {t} if done.any() else set()
        if mode == AutoresetMode.DISABLED and done.any():
            obs, _ = ours.reset(options={"reset_mask": done})
            obs_ref, _ = ref.reset(options={"reset_mask": done.copy()})
            assert_close_tree(obs_ref, obs, f"{where} masked reset obs")
    # episodes both succeeded and timed out, ending at many different steps
    assert terminations >= 10 and truncations >= 10, (terminations, truncations)
    assert len(end_steps) >= 30
