"""Every controller runs in the step-math body of its device (robosim.agents.step_math):
the NumpyBody on CPU and the TorchBody elsewhere. The two agree: bit for bit where the
math is elementwise float32 (the joint and gripper controllers), and within float32
rounding of float64 steps that agree within 1e-9 rad for the end-effector ones (every
shipped robot, whose chain caches FK between the calls)."""
import numpy as np
import pytest
import torch

import robosim
import robosim.agents
from robosim.agents import Robot, get_robot_spec
from robosim.agents.controllers import DLS_DAMPING, GripperController, make_arm_controller
from robosim.agents.kinematics import SerialChain
from robosim.agents.step_math import NUMPY, TORCH

# the fixed-base arms (hands and mobile bases: tests/agents/test_hands_and_mobile.py)
ARMS = [n for n in robosim.list_robots() if not robosim.agents.get_robot_spec(n).is_hand
        and robosim.agents.get_robot_spec(n).mobile_base is None]


def _random_inputs(rows: int, dof: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    limits = torch.sort(torch.rand(dof, 2, generator=g) * 6 - 3, dim=1).values
    action = torch.rand(rows, dof, generator=g) * 2.2 - 1.1      # some entries past +-1
    qpos = torch.rand(rows, dof, generator=g) * 7 - 3.5          # some outside the limits
    return limits, action, qpos


def test_a_controller_runs_in_the_body_of_its_device():
    limits = torch.zeros(7, 2)
    assert make_arm_controller("pd_joint_delta_pos", limits, chain=None).body is NUMPY
    assert make_arm_controller("pd_joint_delta_pos", limits.to("meta"), chain=None).body is TORCH


def test_joint_controllers_give_the_same_bits_in_both_bodies():
    limits, action, qpos = _random_inputs(4096, 7, seed=3)
    for mode in ("pd_joint_delta_pos", "pd_joint_pos"):
        from_torch = make_arm_controller(mode, limits, chain=None, body=TORCH).targets(action, qpos)
        from_numpy = make_arm_controller(mode, limits, chain=None, body=NUMPY).targets(action.numpy(), qpos.numpy())
        assert isinstance(from_numpy, np.ndarray) and from_numpy.dtype == np.float32
        assert torch.equal(from_torch, torch.from_numpy(from_numpy)), mode
        # the clamp is active on part of the batch, so both branches of it are compared
        assert (from_torch == limits[:, 1]).any() and (from_torch == limits[:, 0]).any()


def test_the_gripper_width_gives_the_same_bits_for_both_kinds():
    action = torch.linspace(-1, 1, 10001).reshape(-1, 1)
    for closed, open_, fingers in ((-0.01, 0.04, 2), (0.0, 0.8, 6), (0.5, -0.3, 1)):
        gripper = GripperController(closed, open_, fingers)
        from_numpy = gripper.width(action.numpy())
        assert from_numpy.shape == (10001, 1) and from_numpy.dtype == np.float32
        assert torch.equal(gripper.width(action), torch.from_numpy(from_numpy))
        targets = NUMPY.drive_targets(np.zeros((10001, 7), np.float32), from_numpy, 7 + fingers)
        assert torch.equal(torch.from_numpy(targets), TORCH.drive_targets(torch.zeros(10001, 7), gripper.width(action),
                                                                         7 + fingers))
        assert (targets[:, 7:] == from_numpy).all()


@pytest.mark.parametrize("robot", ARMS)
def test_end_effector_controllers_agree_between_the_bodies(robot):
    spec = get_robot_spec(robot)
    chain = SerialChain(Robot(spec, spec.control_modes[0]).urdf_path, spec.root_link, spec.tcp_link, spec.tcp_offset)
    g = torch.Generator().manual_seed(5)
    qpos = (torch.rand(64, chain.dof, generator=g) - 0.5) * 4
    limits = torch.stack([qpos.min(0).values + 0.3, qpos.max(0).values - 0.3], dim=1)   # some targets clamp
    for mode, width in (("pd_ee_delta_pos", 3), ("pd_ee_delta_pose", 6)):
        action = torch.rand(64, width, generator=g) * 2 - 1
        chain.forget()
        from_torch = make_arm_controller(mode, limits, chain, body=TORCH).targets(action, qpos)
        controller = make_arm_controller(mode, limits, chain, body=NUMPY)
        chain.forget()
        from_numpy = controller.targets(action.numpy(), qpos.numpy())
        assert isinstance(from_numpy, np.ndarray) and from_numpy.dtype == np.float32
        # float64 steps within 1e-9 rad, then each rounded to float32 (|q| < 3: one ulp < 2.4e-7)
        torch.testing.assert_close(from_torch, torch.from_numpy(from_numpy), atol=1e-9 + 2.4e-7, rtol=0)
        assert (from_numpy == limits[:, 1].numpy()).any()
        # one env alone: the same bits as inside the batch (the Python-float FK path)
        chain.forget()
        assert np.array_equal(controller.targets(action[5:6].numpy(), qpos[5:6].numpy()), from_numpy[5:6]), mode
        # the kept FK answers a second call with the same q: still the same targets
        assert np.array_equal(controller.targets(action.numpy(), qpos.numpy()), from_numpy), mode


@pytest.mark.parametrize("robot", ARMS)
def test_the_ik_steps_of_the_bodies_agree_within_1e_9_rad(robot):
    spec = get_robot_spec(robot)
    chain = SerialChain(Robot(spec, spec.control_modes[0]).urdf_path, spec.root_link, spec.tcp_link, spec.tcp_offset)
    q = (torch.rand(64, chain.dof, generator=torch.Generator().manual_seed(8), dtype=torch.float64) - 0.5) * 4
    error = torch.rand(64, 6, generator=torch.Generator().manual_seed(9), dtype=torch.float64) * 0.2 - 0.1
    jac = chain.jacobian_of(chain.values_torch(q, jacobian=True))
    step_torch = TORCH.damped_least_squares(jac, error, DLS_DAMPING)
    step_numpy = NUMPY.damped_least_squares(jac.numpy(), error.numpy(), DLS_DAMPING)
    assert step_torch.abs().max() > 1e-3    # a real step, not a trivial agreement
    torch.testing.assert_close(step_torch, torch.from_numpy(step_numpy), atol=1e-9, rtol=0)


def test_an_end_effector_controller_without_a_chain_is_refused():
    with pytest.raises(ValueError, match="chain must be the arm's SerialChain.*pd_ee_delta_pose.*None"):
        make_arm_controller("pd_ee_delta_pose", torch.zeros(7, 2), chain=None)
