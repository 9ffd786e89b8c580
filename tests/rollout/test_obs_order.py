"""One observation key order: a state_dict env's observation space, the layout a policy
checkpoint saves (flatten_space_keys) and flatten_obs all walk the obs in its own
insertion order, and flattening the state_dict gives the `state` observation bit for bit."""
from __future__ import annotations

import torch

import robosim
from robosim.core.tree import flatten_obs
from robosim.rollout.checkpoint import flatten_space_keys, obs_paths


def test_state_dict_space_layout_and_flatten_follow_the_obs_order():
    env = robosim.make("PickCube-v1", num_envs=2, obs_mode="state_dict")
    state_env = robosim.make("PickCube-v1", num_envs=2, obs_mode="state")
    try:
        obs, _ = env.reset(seed=3)
        state, _ = state_env.reset(seed=3)
        action = torch.linspace(-0.5, 0.5, env.single_action_space.shape[0]).repeat(2, 1)
        for _ in range(3):
            obs, *_ = env.step(action)
            state, *_ = state_env.step(action)
        names = [name for name, _ in flatten_space_keys(env.single_observation_space)]
        assert names[:3] == ["agent/qpos", "agent/qvel", "extra/tcp_pose"]   # not sorted: "extra/is_grasped" next
        assert names[3] == "extra/is_grasped" and names == obs_paths(obs)
        assert list(env.single_observation_space.spaces) == ["agent", "extra"]
        assert list(env.observation_space.spaces["extra"].spaces) == list(obs["extra"])   # batched space too
        flat = flatten_obs(obs)
        assert flat.dtype == torch.float32 and torch.equal(flat, state)
        widths = [int(torch.tensor(shape).prod()) for _, shape in flatten_space_keys(env.single_observation_space)]
        assert sum(widths) == flat.shape[1] == state_env.single_observation_space.shape[0]
    finally:
        env.close()
        state_env.close()


def test_goal_conditioned_space_keeps_the_obs_order():
    env = robosim.make("Reach-v1", num_envs=1)
    try:
        obs, _ = env.reset(seed=0)
        assert list(obs) == ["observation", "achieved_goal", "desired_goal"]
        assert list(env.single_observation_space.spaces) == list(obs)
        assert obs_paths(obs) == [name for name, _ in flatten_space_keys(env.single_observation_space)]
    finally:
        env.close()
