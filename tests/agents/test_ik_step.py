"""The IK step (damped least squares): it solves its defining system, and env i's step
does not depend on the batch around it (the seeding contract)."""
from __future__ import annotations

import torch

from robosim.agents.controllers import damped_least_squares


def test_the_step_solves_the_damped_normal_equations_row_by_row():
    gen = torch.Generator().manual_seed(0)
    for k in (3, 6):
        jac = torch.randn(33, k, 7, dtype=torch.float64, generator=gen)
        error = torch.randn(33, k, dtype=torch.float64, generator=gen)
        step = damped_least_squares(jac, error, damping=0.05)
        # step = J^T y with (J J^T + d^2 I) y = error: y is recovered from the step's image
        lhs = jac @ step.unsqueeze(-1)                                     # J J^T y
        y = torch.linalg.lstsq(jac.transpose(1, 2), step.unsqueeze(-1)).solution
        torch.testing.assert_close(lhs + 0.05**2 * y, error.unsqueeze(-1), atol=1e-9, rtol=0)
        for n in (1, 2, 8, 9, 32):
            assert torch.equal(damped_least_squares(jac[:n], error[:n]), step[:n])
        assert torch.equal(damped_least_squares(jac[20:21], error[20:21]), step[20:21])


def test_a_policy_output_that_requires_grad_steps_an_ee_env():
    import robosim

    env = robosim.make("PickCube-v1", num_envs=2, control_mode="pd_ee_delta_pose")
    try:
        env.reset(seed=0)
        weight = torch.ones(env.single_action_space.shape[0], requires_grad=True)
        obs, reward, *_ = env.step(torch.full((2, weight.shape[0]), 0.1) * weight)
        assert not obs.requires_grad and not reward.requires_grad and torch.isfinite(obs).all()
    finally:
        env.close()
