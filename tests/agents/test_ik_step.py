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
