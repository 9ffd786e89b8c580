"""BaseEnv.observe(): the observation of the current state without stepping, equal to
what reset and step returned for that state (observation noise included), changing
nothing."""
from __future__ import annotations

import pytest
import torch

import robosim

NOISE = {"noise": {"mode": "step", "target": "observation", "property": "observation_noise",
                   "dist": {"uniform": [-0.05, 0.05]}}}


def _actions(env, seed: int, steps: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.rand(env.num_envs, env.single_action_space.shape[0], generator=gen) * 2 - 1 for _ in range(steps)]


def test_observe_equals_what_reset_and_step_returned_and_changes_nothing():
    """Two envs alike but for observation noise on one: the noisy env's observe() is its
    own noisy reset/step observation (the same draw), not the clean one."""
    envs = [robosim.make("PushCube-v1", num_envs=2, obs_mode="state", randomization=r, seed=3) for r in (None, NOISE)]
    try:
        for env in envs:
            obs, info = env.reset(seed=[3, 4])
            again, again_info = env.observe()
            assert torch.equal(again, obs)
            assert torch.equal(again_info["success"], info["success"])
            assert torch.equal(again_info["elapsed_steps"], info["elapsed_steps"])
        returned = []
        for env in envs:
            for action in _actions(env, 0, 3):
                obs, *_ = env.step(action)
            returned.append(obs)
            state, steps = env.get_state().clone(), env.elapsed_steps.clone()
            for _ in range(2):   # twice: nothing advanced between the calls either
                again, again_info = env.observe()
                assert torch.equal(again, obs)
                assert set(again_info) >= {"success", "fail", "elapsed_steps", "is_success"}
                assert again_info["elapsed_steps"].tolist() == [3, 3]
            assert torch.equal(env.get_state(), state) and torch.equal(env.elapsed_steps, steps)
        assert torch.equal(envs[0].get_state(), envs[1].get_state())   # the noise is in the observation only
        assert 0 < float((returned[1] - returned[0]).abs().max()) <= 0.05
    finally:
        for env in envs:
            env.close()


def test_observe_after_set_state_is_the_observation_of_the_written_state():
    """A second env given the first's state by set_state observes what the first's step
    returned; a step after observe() is the step of a twin that did not observe."""
    kwargs = dict(num_envs=2, obs_mode="state", physics_isolation="separate", seed=5)
    source, target, twin = (robosim.make("PushCube-v1", **kwargs) for _ in range(3))
    try:
        source.reset(seed=[5, 6])
        for action in _actions(source, 1, 4):
            obs, *_ = source.step(action)
        for env in (target, twin):
            env.reset(seed=[7, 8])
            env.set_state(source.get_state())
        observed, info = target.observe()
        assert torch.equal(observed, obs)
        assert info["elapsed_steps"].tolist() == [0, 0]   # set_state writes the state, not the step count
        action = _actions(source, 2, 1)[0]
        assert torch.equal(target.step(action)[0], twin.step(action)[0])
    finally:
        for env in (source, target, twin):
            env.close()


def test_observe_on_a_closed_env_is_refused():
    env = robosim.make("Reach-v1", num_envs=1, obs_mode="state")
    env.reset(seed=0)
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.observe()
