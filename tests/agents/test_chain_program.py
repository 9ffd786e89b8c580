"""The compiled FK/Jacobian program of every shipped robot: one env alone gives the
same bits as that env inside a batch (the Python-float and numpy-column paths), torch
arguments (the GPU path) agree with numpy ones, and the Jacobian is the derivative of
the forward kinematics (central differences)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import robosim
import robosim.agents
from robosim.agents import Robot, get_robot_spec
from robosim.agents.chain_program import compile_chain
from robosim.agents.kinematics import SerialChain

# the fixed-base arms (hands and mobile bases: tests/agents/test_hands_and_mobile.py)
ARMS = [n for n in robosim.list_robots() if not robosim.agents.get_robot_spec(n).is_hand
        and robosim.agents.get_robot_spec(n).mobile_base is None]


@pytest.fixture(scope="module", params=ARMS)
def chain(request) -> SerialChain:
    spec = get_robot_spec(request.param)
    return SerialChain(Robot(spec, spec.control_modes[0]).urdf_path, spec.root_link, spec.tcp_link, spec.tcp_offset)


def random_q(chain: SerialChain, n: int, seed: int = 0) -> torch.Tensor:
    return (torch.rand(n, chain.dof, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) - 0.5) * 5


def test_one_env_alone_is_bit_identical_to_the_same_env_in_a_batch(chain):
    q = random_q(chain, 33)
    jac, pos, rot = chain.jacobian(q)
    fpos, frot = SerialChain.forward(chain, q.clone())
    assert torch.equal(fpos, pos) and torch.equal(frot, rot)
    for i in (0, 7, 32):
        chain.forget()
        one_jac, one_pos, one_rot = chain.jacobian(q[i:i + 1])
        assert torch.equal(one_jac, jac[i:i + 1]) and torch.equal(one_pos, pos[i:i + 1])
        assert torch.equal(one_rot, rot[i:i + 1])
        chain.forget()
        assert torch.equal(chain.forward(q[i:i + 1])[0], pos[i:i + 1])


def test_torch_arguments_agree_with_numpy_arguments(chain):
    fn = compile_chain(chain._links, jacobian=True)
    q = random_q(chain, 16, seed=1)
    args_t = [col for pair in zip(torch.cos(q).unbind(1), torch.sin(q).unbind(1)) for col in pair]
    qn = q.numpy()
    args_n = [np.ascontiguousarray(col) for pair in zip(np.cos(qn).T, np.sin(qn).T) for col in pair]
    for t, n in zip(fn(*args_t), fn(*args_n)):
        np.testing.assert_allclose(np.broadcast_to(np.asarray(t), (16,)), np.broadcast_to(n, (16,)), atol=1e-14, rtol=0)


def test_the_jacobian_is_the_derivative_of_the_forward_kinematics(chain):
    q = random_q(chain, 4, seed=2)
    jac, _, _ = chain.jacobian(q)
    h = 1e-6
    for j in range(chain.dof):
        step = torch.zeros_like(q)
        step[:, j] = h
        p_plus, r_plus = chain.forward(q + step)
        p_minus, r_minus = chain.forward(q - step)
        linear = (p_plus - p_minus) / (2 * h)
        turn = r_plus @ r_minus.transpose(1, 2)           # I + 2h [w]x + O(h^2) symmetric terms
        skew = (turn - turn.transpose(1, 2)) / (4 * h)
        angular = torch.stack([skew[:, 2, 1], skew[:, 0, 2], skew[:, 1, 0]], dim=1)
        torch.testing.assert_close(jac[:, :3, j], linear, atol=1e-7, rtol=0)
        torch.testing.assert_close(jac[:, 3:, j], angular, atol=1e-7, rtol=0)


def test_a_q_of_the_wrong_width_is_refused(chain):
    with pytest.raises(ValueError,
                       match=rf"q must be \(B, {chain.dof}\) joint positions, got shape \(2, {chain.dof + 1}\)"):
        chain.forward(torch.zeros(2, chain.dof + 1, dtype=torch.float64))


def test_the_jacobian_program_gives_the_fk_program_s_pose_bit_for_bit(chain):
    q = random_q(chain, 9, seed=3)
    qn = q.numpy()
    args = [np.ascontiguousarray(col) for pair in zip(np.cos(qn).T, np.sin(qn).T) for col in pair]
    fk, fk_and_jacobian = compile_chain(chain._links, jacobian=False)(*args), compile_chain(chain._links, True)(*args)
    assert len(fk) == 12
    for a, b in zip(fk, fk_and_jacobian[:12]):
        assert np.array_equal(np.broadcast_to(a, (9,)), np.broadcast_to(b, (9,)))


def test_once_a_jacobian_was_asked_for_the_step_s_fk_serves_the_next_ik(chain):
    q = random_q(chain, 4, seed=4)
    chain.jacobian(q)                      # an end-effector controller drives the chain
    chain.forget()
    chain.forward(q, version=7)            # evaluate / obs at the step's physics version
    values = chain._last[3]
    jac = chain.jacobian(q, version=7)[0]  # the next step's IK, same version: no second evaluation
    assert chain._last[3] is values and jac.shape == (4, 6, chain.dof)


def test_the_kept_evaluation_answers_only_the_same_bits_of_q(chain):
    q = random_q(chain, 3, seed=6).numpy()
    chain.forget()
    first = chain.values_numpy(q)
    assert chain.values_numpy(q.copy()) is first                    # the same bits: reused
    chain.forward(torch.from_numpy(q.copy()))
    assert chain._last[3] is first                                  # the tensor API shares it
    nudged = q.copy()
    nudged[1, 0] += 1e-9
    second = chain.values_numpy(nudged)                             # one entry moved: evaluated again
    assert second is not first and not np.array_equal(second[1], first[1])
    assert np.array_equal(second[[0, 2]], first[[0, 2]])
    assert chain.values_numpy(nudged.astype(np.float32)) is not second   # float32 q widens to other bits
