"""grasp_rotation (robosim.envs.solutions) as docs/writing-tasks.md states it: float64
(N, 3, 3) downward grasps (tcp z along env -z) whose tcp x axis points along the
object's yaw folded to [-symmetry / 2, symmetry / 2)."""
from __future__ import annotations

import math

import torch

from robosim.envs.solutions import grasp_rotation


def expected(yaw: float) -> torch.Tensor:
    """Rz(yaw) @ diag(1, -1, -1), written out: x = (cos, sin, 0), y = (sin, -cos, 0), z = -e_z."""
    c, s = math.cos(yaw), math.sin(yaw)
    return torch.tensor([[c, s, 0.0], [s, -c, 0.0], [0.0, 0.0, -1.0]], dtype=torch.float64)


def test_a_cube_folds_every_quarter_turn_and_a_bar_every_half_turn():
    yaw = 1.1                                             # in [-pi/2, pi/2) but not in [-pi/4, pi/4)
    yaws = torch.tensor([yaw, yaw + math.pi / 2, yaw - math.pi, yaw + math.pi], dtype=torch.float64)
    cube = grasp_rotation(yaws)
    assert cube.dtype == torch.float64 and cube.shape == (4, 3, 3)
    for rot in cube:
        torch.testing.assert_close(rot, expected(yaw - math.pi / 2))
    bar = grasp_rotation(yaws, symmetry=math.pi)
    for i in (0, 2, 3):                                   # half turns apart
        torch.testing.assert_close(bar[i], expected(yaw))
    torch.testing.assert_close(bar[1], expected(yaw + math.pi / 2 - math.pi))   # a quarter turn is a different grasp
