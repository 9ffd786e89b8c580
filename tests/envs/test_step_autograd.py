"""BaseEnv.reset/step run their tensor math below torch's autograd layer
(robosim.core.dispatch.below_autograd). What a user gets back must still be ordinary
tensors: not inference tensors, writable in place, usable to train a network, and
autograd must work again after the call."""
from __future__ import annotations

import pytest
import torch

import robosim


@pytest.fixture(scope="module")
def env():
    e = robosim.make("PickCube-v1", num_envs=2)
    yield e
    e.close()


def test_a_policy_output_that_requires_grad_steps_and_the_results_train_a_network(env):
    obs, _ = env.reset(seed=0)
    net = torch.nn.Linear(obs.shape[1], env.single_action_space.shape[0])
    action = torch.tanh(net(obs))
    assert action.requires_grad
    obs, reward, terminated, truncated, info = env.step(action)
    for name, value in {"obs": obs, "reward": reward, "terminated": terminated, "truncated": truncated,
                        "success": info["success"], "elapsed_steps": info["elapsed_steps"]}.items():
        assert not value.is_inference(), name
        assert value.grad_fn is None and not value.requires_grad, name
    obs[:, 0] += 1.0     # writable in place
    reward.mul_(2.0)
    loss = (net(obs) ** 2).sum(dim=1).mul(reward).sum()
    loss.backward()
    assert net.weight.grad is not None and torch.isfinite(net.weight.grad).all()
    assert float(net.weight.grad.abs().sum()) > 0


def test_autograd_records_again_after_reset_and_step(env):
    env.reset(seed=1)
    env.step(torch.zeros(2, env.single_action_space.shape[0]))
    x = torch.ones(3, requires_grad=True)
    y = (x * x).sum()
    assert y.grad_fn is not None
    y.backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0))


def test_a_failing_step_leaves_autograd_recording(env):
    env.reset(seed=2)
    with pytest.raises(ValueError, match="action"):
        env.step(torch.zeros(2, 99))
    x = torch.ones(2, requires_grad=True)
    assert (x * 3).sum().grad_fn is not None


def test_stepping_below_autograd_gives_the_bits_of_a_plain_step(env):
    """The guard skips dispatch layers only: the same seeded run through the undecorated
    BaseEnv.step (functools.wraps keeps it as __wrapped__) gives the same bits."""
    plain = robosim.make("PickCube-v1", num_envs=2)
    try:
        gen = torch.Generator().manual_seed(5)
        actions = [torch.rand(2, env.single_action_space.shape[0], generator=gen) * 2 - 1 for _ in range(15)]
        env.reset(seed=7)
        plain.reset(seed=7)
        undecorated = type(plain).step.__wrapped__
        for action in actions:
            guarded, unguarded = env.step(action), undecorated(plain, action)
            for a, b in zip(guarded[:4], unguarded[:4]):
                assert torch.equal(a, b)
        assert torch.equal(env.get_state(), plain.get_state())
    finally:
        plain.close()
