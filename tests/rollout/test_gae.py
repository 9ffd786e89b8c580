"""GAE against a plain-Python reference (forward sums over each episode) on hand-built
episodes whose terminations and truncations sit at known steps."""
from __future__ import annotations

import random

import pytest
import torch

from robosim.rollout import compute_gae


def reference_gae(r, v, nv, term, trunc, gamma, lam):
    """A_t = sum_k (gamma lam)^k delta_{t+k} up to the end of t's episode (or the rollout),
    delta_t = r_t + gamma * V(next) * (not terminated) - v_t; plain Python, one env."""
    T = len(r)
    delta = [r[t] + (0.0 if term[t] else gamma * nv[t]) - v[t] for t in range(T)]
    adv = []
    for t in range(T):
        total, k = 0.0, 0
        while t + k < T:
            total += (gamma * lam) ** k * delta[t + k]
            if term[t + k] or trunc[t + k]:
                break
            k += 1
        adv.append(total)
    return adv


def test_hand_computed_episode_values():
    # env 0: rewards 1, 1, 1 and terminates at t=2; then a new episode starts at t=3.
    # gamma 0.5, lambda 1, values 0: A_0 = 1 + 0.5 + 0.25, A_1 = 1.5, A_2 = 1, A_3 = 2 + 0.5 * 4 (bootstrap)
    # env 1: truncated at t=1 with V(final obs) = 10: A_1 = 3 + 0.5 * 10, A_0 = 1 + 0.5 * 8
    rewards = torch.tensor([[1.0, 1.0], [1.0, 3.0], [1.0, 0.0], [2.0, 0.0]])
    values = torch.zeros(4, 2)
    next_values = torch.tensor([[0.0, 0.0], [0.0, 10.0], [7.0, 0.0], [4.0, 0.0]])
    terminated = torch.tensor([[False, False], [False, False], [True, False], [False, False]])
    truncated = torch.tensor([[False, False], [False, True], [False, False], [False, False]])
    adv, ret = compute_gae(rewards, values, next_values, terminated, truncated, gamma=0.5, gae_lambda=1.0)
    assert adv[:, 0].tolist() == [1.75, 1.5, 1.0, 4.0]
    assert adv[:2, 1].tolist() == [5.0, 8.0]
    assert torch.equal(ret, adv + values)


@pytest.mark.parametrize("gamma,lam", [(0.99, 0.95), (0.9, 1.0), (0.8, 0.0)])
def test_random_episodes_match_the_reference(gamma, lam):
    rng = random.Random(7)
    T, N = 23, 5
    r = [[rng.uniform(-1, 1) for _ in range(N)] for _ in range(T)]
    v = [[rng.uniform(-2, 2) for _ in range(N)] for _ in range(T)]
    nv = [[rng.uniform(-2, 2) for _ in range(N)] for _ in range(T)]
    term = [[rng.random() < 0.1 for _ in range(N)] for _ in range(T)]
    trunc = [[(not term[t][n]) and rng.random() < 0.1 for n in range(N)] for t in range(T)]
    adv, ret = compute_gae(torch.tensor(r), torch.tensor(v), torch.tensor(nv), torch.tensor(term),
                           torch.tensor(trunc), gamma, lam)
    assert any(map(any, term)) and any(map(any, trunc))
    for n in range(N):
        def col(rows, n=n):
            return [row[n] for row in rows]

        expected = reference_gae(col(r), col(v), col(nv), col(term), col(trunc), gamma, lam)
        assert adv[:, n].tolist() == pytest.approx(expected, abs=1e-5)
        assert ret[:, n].tolist() == pytest.approx([a + b for a, b in zip(expected, col(v))], abs=1e-5)


def test_truncation_bootstraps_and_termination_does_not():
    r, v = torch.zeros(1, 1), torch.zeros(1, 1)
    nv = torch.full((1, 1), 3.0)
    term_adv, _ = compute_gae(r, v, nv, torch.tensor([[True]]), torch.tensor([[False]]), 0.9, 0.95)
    trunc_adv, _ = compute_gae(r, v, nv, torch.tensor([[False]]), torch.tensor([[True]]), 0.9, 0.95)
    assert term_adv.item() == 0.0
    assert trunc_adv.item() == pytest.approx(2.7)


def test_bad_inputs_name_the_argument():
    x = torch.zeros(3, 2)
    b = torch.zeros(3, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match="next_values must have shape \\(3, 2\\)"):
        compute_gae(x, x, torch.zeros(3, 1), b, b)
    with pytest.raises(ValueError, match="gamma must be a number in \\[0, 1\\], got 1.5"):
        compute_gae(x, x, x, b, b, gamma=1.5)
    with pytest.raises(TypeError, match="terminated must be a torch.Tensor"):
        compute_gae(x, x, x, [[0]], b)
