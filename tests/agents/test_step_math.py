"""The two step-math bodies (robosim.agents.step_math): one is chosen per device, they
agree within 1e-9 m and 1e-9 rad in float64, and each is deterministic on its own."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import robosim
import robosim.agents
from robosim.agents import Robot, get_robot_spec
from robosim.agents.kinematics import SerialChain
from robosim.agents.step_math import NUMPY, TORCH, NumpyBody, TorchBody, step_math

# the fixed-base arms (hands and mobile bases: tests/agents/test_hands_and_mobile.py)
ARMS = [n for n in robosim.list_robots() if not robosim.agents.get_robot_spec(n).is_hand
        and robosim.agents.get_robot_spec(n).mobile_base is None]

BODIES = {"numpy": NUMPY, "torch": TORCH}


def test_the_body_is_chosen_by_the_device():
    assert isinstance(step_math("cpu"), NumpyBody) and isinstance(step_math(torch.device("cpu")), NumpyBody)
    assert isinstance(step_math("meta"), TorchBody) and isinstance(step_math(torch.device("cuda", 0)), TorchBody)


@pytest.fixture(scope="module", params=ARMS)
def chain(request) -> SerialChain:
    spec = get_robot_spec(request.param)
    return SerialChain(Robot(spec, spec.control_modes[0]).urdf_path, spec.root_link, spec.tcp_link, spec.tcp_offset)


def _q(chain: SerialChain, n: int, seed: int) -> torch.Tensor:
    return (torch.rand(n, chain.dof, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) - 0.5) * 5


def _run(body, chain: SerialChain, q: torch.Tensor) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
    """FK + Jacobian values, one IK step and the tcp pose, by `body`, as CPU arrays."""
    chain.forget()
    values = body.chain_values(chain, body.array(q), None, jacobian=True)
    error = body.array(torch.full((q.shape[0], 6), 0.01, dtype=torch.float64))
    step = body.damped_least_squares(chain.jacobian_of(values), error, 0.05)
    tcp = body.tcp_pose(values, None, body.array(torch.tensor([0.1, -0.2, 0.3], dtype=torch.float64)))
    as_np = (lambda a: a) if body is NUMPY else (lambda a: a.numpy())
    return as_np(values).copy(), as_np(step).copy(), tcp.clone()


def test_the_bodies_agree_within_1e_9(chain):
    q = _q(chain, 64, seed=1)
    values_np, step_np, tcp_np = _run(NUMPY, chain, q)
    values_t, step_t, tcp_t = _run(TORCH, chain, q)
    # positions (m), rotation entries and Jacobian entries (m/rad, unitless), IK step (rad)
    np.testing.assert_allclose(values_t, values_np, atol=1e-9, rtol=0)
    np.testing.assert_allclose(step_t, step_np, atol=1e-9, rtol=0)
    assert tcp_np.dtype == tcp_t.dtype == torch.float32 and tcp_np.shape == (64, 7)
    torch.testing.assert_close(tcp_t, tcp_np, atol=1e-6, rtol=0)   # float32 roundings of values that agree


@pytest.mark.parametrize("name", BODIES)
def test_each_body_gives_the_same_bits_for_the_same_inputs(chain, name):
    body, q = BODIES[name], _q(chain, 16, seed=2)
    first, again = _run(body, chain, q), _run(body, chain, q.clone())
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(first, again))


def test_the_numpy_body_s_env_i_does_not_depend_on_the_batch(chain):
    q = _q(chain, 16, seed=3)
    batch = _run(NUMPY, chain, q)
    for i in (0, 9, 15):
        alone = _run(NUMPY, chain, q[i:i + 1])
        assert all(np.array_equal(np.asarray(a), np.asarray(b)[i:i + 1]) for a, b in zip(alone, batch)), i
