"""BatchedEnv (robosim.envs.protocol): BaseEnv and its forwarding wrappers satisfy it, its
header rebuilds the env, and the recorder refuses what does not satisfy it."""
from __future__ import annotations

import json

import pytest
import torch

import robosim
from robosim.envs.protocol import BatchedEnv
from robosim.record.wrapper import RecordEpisode


def test_base_env_header_rebuilds_the_same_env(tmp_path):
    env = robosim.make("PushCube-v1", num_envs=2, seed=[5, 6], control_mode="pd_joint_delta_pos")
    try:
        assert isinstance(env, BatchedEnv)
        header = env.header()
        json.dumps(header)   # JSON-able as it is
        assert header["task_id"] == "PushCube-v1" and header["num_envs"] == 2
        assert header["control_freq"] == 20 and header["action_dim"] == env.single_action_space.shape[0]
        assert header["env_spec"]["seed"] == [5, 6]
        assert header["env_spec"]["control_mode"] == "pd_joint_delta_pos"
        env.reset(seed=[5, 6])
        state = env.get_state()
        assert header["state_dim"] == state.shape[1]
    finally:
        env.close()
    again = robosim.make(robosim.EnvSpec.from_dict(header["env_spec"]))
    try:
        again.reset(seed=[5, 6])
        assert torch.equal(again.get_state(), state)
    finally:
        again.close()


def test_the_recorder_refuses_what_is_not_a_batched_env(tmp_path):
    class HalfEnv:   # reset and step, no header or spaces
        num_envs = 1

        def reset(self, *, seed=None, options=None):
            return None, {}

        def step(self, action):
            return None, None, None, None, {}

    assert not isinstance(HalfEnv(), BatchedEnv)
    with pytest.raises(TypeError, match="BatchedEnv.*got HalfEnv"):
        RecordEpisode(HalfEnv(), trajectory=str(tmp_path / "t.h5"))
    assert not (tmp_path / "t.h5").exists()
