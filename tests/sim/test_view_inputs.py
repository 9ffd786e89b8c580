"""Batched views: bad poses given to `ActorView.set_pose` raise a named ValueError before
anything moves, and `ArticulationView.link_velocity` matches finite differences of link
poses."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from robosim.sim import SimScene
from robosim.sim.objects import ArticulationModel, Box, Joint, Link, RigidObject

N = 2
DT = 0.01


def pendulum() -> ArticulationModel:
    """A free root with a swinging arm: both links move under gravity."""
    joint = Joint("revolute", pose_in_parent=(0.0, 0.0, 0.0), axis=(0, 1, 0))
    return ArticulationModel([Link("hub", [Box(0.03)]),
                              Link("arm", [Box((0.1, 0.01, 0.01), pose=(0.1, 0, 0))], parent="hub", joint=joint)],
                             pose=(0.0, 0.5, 1.0), fix_root=False)


@pytest.fixture(scope="module")
def scene():
    sim = SimScene(N, int(1 / DT))
    cube = sim.add_object("cube", RigidObject([Box(0.02)], pose=(0.0, 0.0, 0.02)))
    arm = sim.add_articulation("pendulum", pendulum())
    sim.finalize()
    yield sim, cube, arm
    sim.close()


@pytest.mark.parametrize("pose, message", [
    (torch.tensor([[0.0, 0.0, 0.1, 2.0, 0.0, 0.0, 0.0]] * N), "unit norm"),
    (torch.zeros(N, 3), r"pose must have shape \(2, 7\).*got shape \(2, 3\)"),
    (torch.zeros(N + 1, 7), r"got shape \(3, 7\)"),
    (torch.tensor([[0.0, 0.0, float("nan"), 1.0, 0.0, 0.0, 0.0]] * N), r"pose must be finite, got \[0.0, 0.0, nan"),
    (torch.tensor([[0.0, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0], [float("inf"), 0.0, 0.1, 1.0, 0.0, 0.0, 0.0]]),
     r"pose must be finite.*in row 1"),
    (torch.tensor([[0.0, 0.0, 0.1, float("nan"), 0.0, 0.0, 0.0]] * N), "pose must be finite"),
])
def test_set_pose_rejects_bad_poses_before_moving(scene, pose, message):
    _, cube, _ = scene
    before = cube.pose()
    with pytest.raises(ValueError, match=message):
        cube.set_pose(pose)
    assert torch.equal(cube.pose(), before)


def test_set_pose_accepts_one_row_per_env_idx(scene):
    _, cube, _ = scene
    cube.set_pose(torch.tensor([[0.1, 0.0, 0.02, 1.0, 0.0, 0.0, 0.0]]), torch.tensor([1]))
    assert cube.pose()[1, 0].item() == pytest.approx(0.1, abs=1e-5)   # float32 world offset


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w1, x1, y1, z1 = a.T
    w2, x2, y2, z2 = b.T
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], axis=-1)


def test_link_velocity_matches_finite_differences_of_link_poses(scene):
    """Linear: the change of the centre of mass (link pose * cmass_local_pose) over one
    step; angular: from the change of link orientation. Both agree with the velocity
    after the step (PhysX integrates positions with it) within 2% of its size."""
    sim, _, arm = scene
    arm.set_qvel(torch.tensor([[2.0]] * N))
    for _ in range(5):
        sim.step()
    k = arm.link_names.index("arm")
    cmass = np.array(arm.links[0][k].cmass_local_pose.p)     # same model in every env
    assert arm.link_velocity().shape == (N, len(arm.link_names), 6)

    def com_and_quat():
        pose = arm.link_pose("arm").numpy().astype(np.float64)
        w, x, y, z = pose[:, 3:].T
        rot = np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], 1)
        return pose[:, :3] + rot @ cmass, pose[:, 3:]

    p0, q0 = com_and_quat()
    sim.step()
    p1, q1 = com_and_quat()
    vel = arm.link_velocity()[:, k].numpy()
    linear = (p1 - p0) / DT
    dq = _quat_mul(q1, q0 * np.array([1, -1, -1, -1]))          # q1 * conj(q0)
    dq *= np.sign(dq[:, :1])
    angular = 2 * dq[:, 1:] / DT                                # small-angle rotation vector / dt
    scale = np.linalg.norm(vel, axis=1, keepdims=True)
    assert np.abs(linear - vel[:, :3]).max() <= 0.02 * scale.max()
    assert np.abs(angular - vel[:, 3:]).max() <= 0.02 * scale.max()
    assert np.linalg.norm(vel[:, 3:], axis=1).min() > 0.5          # it really swings


@pytest.mark.parametrize("env_idx, error, message", [
    ([-1], ValueError, r"env_idx must hold ints in \[0, 2\), got \[-1\]"),
    ([N], ValueError, r"env_idx must hold ints in \[0, 2\), got \[2\]"),
    ([0.7], TypeError, "env_idx must hold ints.*got dtype torch.float"),
    ([True], TypeError, "env_idx must hold ints.*got dtype torch.bool"),
])
def test_wrench_env_idx_is_checked_before_anything_is_held(scene, env_idx, error, message):
    """These used to hold the wrench on another env ([-1] on the last, [True] on env 1)."""
    sim, cube, _ = scene
    sim.wrenches.clear()
    with pytest.raises(error, match=message):
        sim.wrenches.set(cube, torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]), env_idx)
    assert torch.equal(sim.wrenches.get(cube), torch.zeros(N, 6))


@pytest.mark.parametrize("value", [1e30, -2e6, float("nan")])
def test_wrench_beyond_the_bound_is_refused(scene, value):
    """PhysX silently drops a 1e30 N force (it used to be reported held, with no effect)."""
    from robosim.sim.wrenches import MAX_WRENCH

    sim, cube, _ = scene
    sim.wrenches.clear()
    with pytest.raises(ValueError, match=r"wrench components must be finite and within \+-1e\+06"):
        sim.wrenches.set(cube, torch.tensor([[0.0, 0.0, value, 0.0, 0.0, 0.0]]), [0])
    assert torch.equal(sim.wrenches.get(cube), torch.zeros(N, 6))
    sim.wrenches.set(cube, torch.tensor([[0.0, 0.0, MAX_WRENCH, 0.0, 0.0, 0.0]]), [0])   # the bound itself is fine
    assert sim.wrenches.get(cube)[:, 2].tolist() == [MAX_WRENCH, 0.0]
    sim.wrenches.clear()
