"""Every controller runs in numpy on CPU (robot.apply_action): its numpy results must
carry the same bits as its torch results (the end-effector ones for every shipped robot,
whose chain caches FK between the calls)."""
import numpy as np
import pytest
import torch

import robosim
from robosim.agents import Robot, get_robot_spec
from robosim.agents.controllers import GripperController, make_arm_controller
from robosim.agents.kinematics import SerialChain


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


@pytest.mark.parametrize("robot", robosim.list_robots())
def test_end_effector_controllers_give_the_same_bits_in_numpy_and_torch(robot):
    spec = get_robot_spec(robot)
    chain = SerialChain(Robot(spec, spec.control_modes[0]).urdf_path, spec.root_link, spec.tcp_link, spec.tcp_offset)
    g = torch.Generator().manual_seed(5)
    qpos = (torch.rand(64, chain.dof, generator=g) - 0.5) * 4
    limits = torch.stack([qpos.min(0).values + 0.3, qpos.max(0).values - 0.3], dim=1)   # some targets clamp
    for mode, width in (("pd_ee_delta_pos", 3), ("pd_ee_delta_pose", 6)):
        controller = make_arm_controller(mode, limits, chain)
        action = torch.rand(64, width, generator=g) * 2 - 1
        chain.forget()
        from_torch = controller.targets(action, qpos)
        chain.forget()
        from_numpy = controller.targets(action.numpy(), qpos.numpy())
        assert isinstance(from_numpy, np.ndarray) and from_numpy.dtype == np.float32
        assert torch.equal(from_torch, torch.from_numpy(from_numpy)), mode
        # one env alone: the same bits as inside the batch (the Python-float FK path)
        chain.forget()
        assert np.array_equal(controller.targets(action[5:6].numpy(), qpos[5:6].numpy()), from_numpy[5:6]), mode
        # the kept FK answers a second call with the same q: still the same targets
        assert np.array_equal(controller.targets(action.numpy(), qpos.numpy()), from_numpy), mode
