"""robosim.core.rotations against rotations written out by hand (quarter and half turns
about the axes, whose matrices and quaternions are exact), and its batch-size
independence."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from robosim.core.rotations import (
    axis_angle_matrix,
    check_unit_quats,
    matmul3,
    matrix_to_quat,
    matvec3,
    quat_to_matrix,
    quat_yaw,
    rotation_between,
    rotation_log,
    rpy_to_matrix,
    wrap_angle,
    yaw_quat,
    yaw_then_quat,
)

H = math.sqrt(0.5)
# (name, wxyz quaternion, matrix) of quarter turns about +x, +y, +z and half turns (each of
# Shepperd's four branches: the largest of |w|, |x|, |y|, |z| picks the formula)
QUARTER_TURNS = [
    ("x90", [H, H, 0.0, 0.0], [[1, 0, 0], [0, 0, -1], [0, 1, 0]]),
    ("y90", [H, 0.0, H, 0.0], [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]),
    ("z90", [H, 0.0, 0.0, H], [[0, -1, 0], [1, 0, 0], [0, 0, 1]]),
    ("x180", [0.0, 1.0, 0.0, 0.0], [[1, 0, 0], [0, -1, 0], [0, 0, -1]]),
    ("y180", [0.0, 0.0, 1.0, 0.0], [[-1, 0, 0], [0, 1, 0], [0, 0, -1]]),
    ("z180", [0.0, 0.0, 0.0, 1.0], [[-1, 0, 0], [0, -1, 0], [0, 0, 1]]),
    ("identity", [1.0, 0.0, 0.0, 0.0], [[1, 0, 0], [0, 1, 0], [0, 0, 1]]),
]
IDS = [name for name, _, _ in QUARTER_TURNS]


def t(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


@pytest.mark.parametrize("name, quat, matrix", QUARTER_TURNS, ids=IDS)
def test_quaternion_to_matrix_and_back(name, quat, matrix):
    torch.testing.assert_close(quat_to_matrix(t([quat])), t([matrix]), atol=1e-15, rtol=0)
    torch.testing.assert_close(matrix_to_quat(t([matrix])), t([quat]), atol=1e-15, rtol=0)
    np.testing.assert_allclose(matrix_to_quat(np.array([matrix], dtype=np.float64)), [quat], atol=1e-15, rtol=0)


def test_quat_to_matrix_normalizes_and_matrix_to_quat_picks_w_at_least_zero():
    torch.testing.assert_close(quat_to_matrix(t([[2 * H, 0.0, 0.0, 2 * H]])), t([[[0, -1, 0], [1, 0, 0], [0, 0, 1]]]),
                               atol=1e-15, rtol=0)
    # -q is the same rotation: the matrix of (-H, 0, 0, -H) comes back as (H, 0, 0, H)
    torch.testing.assert_close(matrix_to_quat(quat_to_matrix(t([[-H, 0.0, 0.0, -H]]))), t([[H, 0.0, 0.0, H]]),
                               atol=1e-15, rtol=0)


def test_axis_angle_and_rpy_give_the_hand_written_quarter_turns():
    z90 = t([[0, -1, 0], [1, 0, 0], [0, 0, 1]])
    x90 = t([[1, 0, 0], [0, 0, -1], [0, 1, 0]])
    torch.testing.assert_close(axis_angle_matrix(t([0.0, 0.0, 1.0]), t(math.pi / 2)), z90, atol=1e-15, rtol=0)
    torch.testing.assert_close(rpy_to_matrix(0.0, 0.0, math.pi / 2), z90, atol=1e-15, rtol=0)
    torch.testing.assert_close(rpy_to_matrix(math.pi / 2, 0.0, 0.0), x90, atol=1e-15, rtol=0)
    # URDF rpy is fixed-axis: roll first, then yaw about the parent z -> Rz @ Rx
    torch.testing.assert_close(rpy_to_matrix(math.pi / 2, 0.0, math.pi / 2), t([[0, 0, 1], [1, 0, 0], [0, 1, 0]]),
                               atol=1e-15, rtol=0)


def test_matmul3_and_matvec3():
    z90, x90 = t([[0, -1, 0], [1, 0, 0], [0, 0, 1]]), t([[1, 0, 0], [0, 0, -1], [0, 1, 0]])
    assert torch.equal(matmul3(z90, x90), t([[0, 0, 1], [1, 0, 0], [0, 1, 0]]))
    assert torch.equal(matvec3(z90, t([1.0, 0.0, 0.0])), t([0.0, 1.0, 0.0]))
    assert torch.equal(matvec3(x90, t([0.0, 1.0, 0.0])), t([0.0, 0.0, 1.0]))


def test_rotation_log_of_hand_written_turns():
    cases = [([[0, -1, 0], [1, 0, 0], [0, 0, 1]], [0.0, 0.0, math.pi / 2]),
             ([[1, 0, 0], [0, -1, 0], [0, 0, -1]], [math.pi, 0.0, 0.0]),
             ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], [0.0, 0.0, 0.0])]
    for matrix, vector in cases:
        torch.testing.assert_close(rotation_log(t(matrix)), t(vector), atol=1e-12, rtol=0)


def test_yaw_helpers():
    torch.testing.assert_close(yaw_quat(t([math.pi / 2, 0.0])), t([[H, 0, 0, H], [1, 0, 0, 0]]), atol=1e-15, rtol=0)
    torch.testing.assert_close(quat_yaw(t([[H, 0, 0, H], [0, 0, 0, 1], [H, H, 0, 0], [H, 0, 0, -H]])),
                               t([math.pi / 2, math.pi, 0.0, -math.pi / 2]), atol=1e-15, rtol=0)
    # a quarter turn about z applied after one about x: (H,0,0,H) * (H,H,0,0) = (1/2, 1/2, 1/2, 1/2)
    torch.testing.assert_close(yaw_then_quat(t([math.pi / 2]), t([[H, H, 0, 0]])), t([[0.5, 0.5, 0.5, 0.5]]),
                               atol=1e-15, rtol=0)
    torch.testing.assert_close(yaw_then_quat(t([math.pi / 2]), t([[1.0, 0, 0, 0]])), t([[H, 0, 0, H]]),
                               atol=1e-15, rtol=0)


def test_wrap_angle_to_minus_pi_inclusive_pi_exclusive():
    torch.testing.assert_close(wrap_angle(t([1.5 * math.pi, math.pi, -math.pi, 0.25, -2.5 * math.pi])),
                               t([-0.5 * math.pi, -math.pi, -math.pi, 0.25, -0.5 * math.pi]), atol=1e-12, rtol=0)


def test_results_do_not_depend_on_the_batch_size():
    gen = torch.Generator().manual_seed(1)
    q = torch.randn(33, 4, generator=gen)
    q = q / q.norm(dim=1, keepdim=True)
    m = quat_to_matrix(q)
    for k in (0, 7, 32):
        assert torch.equal(quat_to_matrix(q[k:k + 1]), m[k:k + 1])
        assert torch.equal(matrix_to_quat(m[k:k + 1]), matrix_to_quat(m)[k:k + 1])
        assert torch.equal(rotation_log(m[k:k + 1]), rotation_log(m)[k:k + 1])


def test_numpy_arguments_give_the_torch_results_and_do_not_depend_on_the_batch_size():
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(33, 4, generator=gen, dtype=torch.float64)
    m = quat_to_matrix(q / q.norm(dim=1, keepdim=True))
    v = torch.randn(33, 3, generator=gen, dtype=torch.float64)
    mn, vn = m.numpy(), v.numpy()
    np.testing.assert_allclose(matrix_to_quat(mn), matrix_to_quat(m).numpy(), atol=1e-15, rtol=0)
    np.testing.assert_allclose(matmul3(mn, mn[::-1]), matmul3(m, m.flip(0)).numpy(), atol=1e-15, rtol=0)
    np.testing.assert_allclose(matvec3(mn, vn), matvec3(m, v).numpy(), atol=1e-15, rtol=0)
    for k in (0, 7, 32):
        assert np.array_equal(matrix_to_quat(mn[k:k + 1]), matrix_to_quat(mn)[k:k + 1])
        assert np.array_equal(matvec3(mn[k:k + 1], vn[k:k + 1]), matvec3(mn, vn)[k:k + 1])


def test_one_numpy_matrix_gives_the_bits_of_its_row_in_a_batch():
    """A (1, 3, 3) float64 matrix takes matrix_to_quat's Python-float path; its bits must
    be those of the same matrix inside a batch (the numpy path), on every branch."""
    gen = torch.Generator().manual_seed(3)
    q = torch.randn(2000, 4, generator=gen, dtype=torch.float64)
    turns = [np.diag(d) for d in ([1.0, 1, 1], [1.0, -1, -1], [-1.0, 1, -1], [-1.0, -1, 1])]
    near_half_turns = [quat_to_matrix(torch.tensor([[1e-9, *axis]], dtype=torch.float64)).numpy()[0]
                       for axis in ([1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [0.6, 0.8, 0])]
    mats = np.concatenate([quat_to_matrix(q / q.norm(dim=1, keepdim=True)).numpy(), np.stack(turns + near_half_turns)])
    batch = matrix_to_quat(mats)
    branches = set()
    for k in range(len(mats)):
        one = matrix_to_quat(mats[k:k + 1])
        assert one.shape == (1, 4) and one.dtype == np.float64
        assert np.array_equal(one, batch[k:k + 1]), (k, one, batch[k])
        branches.add(int(np.argmax(np.abs(batch[k]))))
    assert branches == {0, 1, 2, 3}


def test_check_unit_quats_returns_norms_or_names_the_row():
    assert check_unit_quats("pose", np.array([0.0, 0.6, 0.8, 0.0]), 1e-3) == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(ValueError, match=r"pose quaternion must have unit norm \(\+-0.001\), got norm 2$"):
        check_unit_quats("pose", np.array([2.0, 0.0, 0.0, 0.0]), 1e-3)
    with pytest.raises(ValueError, match=r"poses quaternion must have unit norm \(\+-0.01\), got norm 0.5 in row 2"):
        check_unit_quats("poses", np.array([[1.0, 0, 0, 0], [0, 0, 0, 1.005], [0, 0.5, 0, 0]]), 1e-2)
    assert np.isnan(check_unit_quats("pose", np.array([[np.nan, 0, 0, 0]]), 1e-3)).all()   # finiteness: the caller's


def test_rotation_between_and_folded_angles():
    x, y, z = t([[1.0, 0, 0]]), t([[0, 1.0, 0]]), t([[0, 0, 1.0]])
    torch.testing.assert_close(rotation_between(x, y), t([[[0, -1, 0], [1, 0, 0], [0, 0, 1]]]), atol=1e-15, rtol=0)
    torch.testing.assert_close(rotation_between(z, x), t([[[0, 0, 1], [0, 1, 0], [-1, 0, 0]]]), atol=1e-15, rtol=0)
    torch.testing.assert_close(rotation_between(z, z), t([[[1, 0, 0], [0, 1, 0], [0, 0, 1]]]), atol=0, rtol=0)
    torch.testing.assert_close(wrap_angle(t([0.75 * math.pi, math.pi / 4, 0.1]), math.pi / 2),
                               t([-0.25 * math.pi, -0.25 * math.pi, 0.1]), atol=1e-12, rtol=0)
    torch.testing.assert_close(wrap_angle(t([0.75 * math.pi, -0.75 * math.pi]), math.pi),
                               t([-0.25 * math.pi, 0.25 * math.pi]), atol=1e-12, rtol=0)
