"""The joint-space and gripper controllers run in numpy on CPU (robot.apply_action):
their numpy results must carry the same bits as their torch results."""
import numpy as np
import torch

from robosim.agents.controllers import GripperController, make_arm_controller


def _random_inputs(rows: int, dof: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    limits = torch.sort(torch.rand(dof, 2, generator=g) * 6 - 3, dim=1).values
    action = torch.rand(rows, dof, generator=g) * 2.2 - 1.1      # some entries past +-1
    qpos = torch.rand(rows, dof, generator=g) * 7 - 3.5          # some outside the limits
    return limits, action, qpos


def test_joint_controllers_give_the_same_bits_in_numpy_and_torch():
    limits, action, qpos = _random_inputs(4096, 7, seed=3)
    for mode in ("pd_joint_delta_pos", "pd_joint_pos"):
        controller = make_arm_controller(mode, limits, chain=None)
        assert controller.elementwise
        from_torch = controller.targets(action, qpos)
        from_numpy = controller.targets(action.numpy(), qpos.numpy())
        assert isinstance(from_numpy, np.ndarray) and from_numpy.dtype == np.float32
        assert torch.equal(from_torch, torch.from_numpy(from_numpy)), mode
        # the clamp is active on part of the batch, so both branches of it are compared
        assert (from_torch == limits[:, 1]).any() and (from_torch == limits[:, 0]).any()


def test_gripper_controller_gives_the_same_bits_in_numpy_and_torch():
    action = torch.linspace(-1, 1, 10001).reshape(-1, 1)
    for closed, open_, fingers in ((-0.01, 0.04, 2), (0.0, 0.8, 6), (0.5, -0.3, 1)):
        gripper = GripperController(closed, open_, fingers)
        from_torch = gripper.targets(action)
        from_numpy = gripper.targets(action.numpy())
        assert from_numpy.shape == (10001, fingers) and from_numpy.dtype == np.float32
        assert torch.equal(from_torch, torch.from_numpy(from_numpy))
